"""Each benchmark's results file, ``benchmarks/results/<name>.md``: what the benchmark printed on
its last clean run, under the command that printed it, the date and the host. A run that fails
leaves the file as it was; in a multi-rank job only rank 0 writes it."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

RESULTS = Path(__file__).resolve().parent / "results"
RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "RANK")  # MPICH, Open MPI, torchrun


class _Tee(io.TextIOBase):
    def __init__(self, *streams: TextIO) -> None:
        self._streams = streams

    def write(self, s: str) -> int:
        for f in self._streams:
            f.write(s)
        return len(s)

    def flush(self) -> None:
        for f in self._streams:
            f.flush()


def page(name: str, argv: list[str], printed: str, when: dt.date) -> str:
    """The results file's text: a title, the command, its date and host, what it printed."""
    command = " ".join(["python -m", f"benchmarks.{name}", *argv])
    return (f"# benchmarks.{name}\n\n`{command}`, {when.isoformat()}, on {platform.node()} "
            f"({os.cpu_count()} logical cores):\n\n```text\n{printed.rstrip()}\n```\n")


def _rank0() -> bool:
    return all(os.environ.get(v, "0") == "0" for v in RANK_VARS)


def run(script: str, main: Callable[[], int | None]) -> int:
    """Run a benchmark's ``main``, printing as usual; on a clean end (exit status 0), replace
    ``results/<name of script>.md`` with what it printed. Returns the exit status."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, buf)):
        status = main() or 0
    if status == 0 and _rank0():
        name = Path(script).stem
        RESULTS.mkdir(exist_ok=True)
        text = page(name, sys.argv[1:], buf.getvalue(), dt.datetime.now(dt.timezone.utc).date())
        (RESULTS / f"{name}.md").write_text(text, encoding="utf-8")
    return status
