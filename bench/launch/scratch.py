"""A self-launched job's temporary directory (why: docs/failures.md).

Every job gets a directory of its own, made inside the temporary directory commbench itself
would use (``TMPDIR`` or the system's), and handed to the job's processes as ``TMPDIR``. What the
launcher and the ranks put there — Open MPI's session directory (``ompi.<pid>``: PMIx's
rendezvous sockets, hwloc's and PMIx's shared-memory backing files), torchrun's
``torchelastic_*`` log tree — is removed with it once the job is over, however it ended. A
launcher that is killed never removes its own: a stale ``ompi.<pid>`` left by one makes a later
``prterun`` that is given the same pid fail ("The PMIx server's listener thread failed to
start"), and torchrun leaves its tree even after a clean exit.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "cb"  # short: Open MPI's PMIx socket paths sit under it and must stay under 108 bytes


@contextlib.contextmanager
def job_tmpdir() -> Iterator[Path]:
    """A new empty directory for one job's temporary files, removed with its contents on exit."""
    path = Path(tempfile.mkdtemp(prefix=PREFIX))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
