"""Algorithms, one file each, in a folder per collective (``all_reduce/ring.py``, ...).

Nothing lists them: discovery (``kernels.collective.COLLECTIVES``) imports every module below
this package, and each registers itself with ``@algorithm(name, collective)``.
"""
