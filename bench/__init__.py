"""commbench: the harness, the runner and everything that runs (see docs/design.md)."""

import os as _os
import sys as _sys

from bench.signals import arm_if_rank_of_users_job as _arm

# Before numpy, BLAS or MPI start threads: a rank of the user's own MPI job takes SIGTERM/SIGHUP
# in a thread of its own, so a time limit still leaves an interrupted run (bench/signals.py).
_arm(_sys.argv, _os.environ)
