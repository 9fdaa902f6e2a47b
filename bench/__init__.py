"""commbench: communication benchmarks for distributed deep learning (see docs/design.md).
Importing it has no side effect: what must precede numpy's, BLAS's and MPI's threads is done
first by :func:`bench.cli.main`."""
