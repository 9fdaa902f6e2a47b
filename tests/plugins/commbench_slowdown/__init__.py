"""Test-only commbench plugin: a controlled slowdown of all_reduce ``ring`` (see slow_ring.py)."""
