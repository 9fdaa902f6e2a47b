"""Progress on rank 0: one tqdm bar on a terminal, counting the cases of the whole run (a
self-launched run's launcher tells each job where the run stands: :data:`PROGRESS_ENV`). In logs
(CI, files) the table's rows are the progress: nothing more is printed."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from tqdm import tqdm

TTY_ENV = "COMMBENCH_TTY"  # set by the launcher when the user's terminal is a TTY
PROGRESS_ENV = "COMMBENCH_PROGRESS"  # "DONE/TOTAL": the run's cases before this job, and all


def of_run(env: dict[str, str] | os._Environ[str]) -> tuple[int, int] | None:
    """(cases before this job, cases of the run) from the launcher; None in the user's own job."""
    try:
        done, total = (int(x) for x in env.get(PROGRESS_ENV, "").split("/"))
    except ValueError:
        return None
    return (done, total) if 0 <= done <= total else None


class Progress:
    def __init__(self, total: int, enabled: bool, out: TextIO = sys.stderr, done: int = 0) -> None:
        tty = out.isatty() or os.environ.get(TTY_ENV) == "1"
        self._bar = tqdm(total=total, initial=done, file=out, unit="case", leave=False,
                         dynamic_ncols=True, disable=not (enabled and tty))

    def start(self, label: str) -> None:
        self._bar.set_description_str(label, refresh=True)

    def advance(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()
