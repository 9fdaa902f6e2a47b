"""A self-launched job's own ``TMPDIR``, removed with what the launcher and ranks left there (Open
MPI's ``ompi.<pid>``, torchrun's ``torchelastic_*``) once the job is over (why: docs/failures.md)."""

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
