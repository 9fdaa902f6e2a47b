"""commbench: communication benchmarks for distributed deep learning (see docs/design.md).

Importing ``bench`` or any module of it has no side effect: the one thing that must happen
before numpy, BLAS or MPI start threads (a rank of the user's own MPI job taking SIGTERM/SIGHUP
in a thread of its own) is done by the command line's :func:`bench.cli.main`, first.
"""
