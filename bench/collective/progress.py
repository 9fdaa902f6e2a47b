"""Progress on rank 0: a tqdm bar on a terminal, plain lines in logs (CI, files)."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from tqdm import tqdm

TTY_ENV = "COMMBENCH_TTY"  # set by the launcher when the user's terminal is a TTY


class Progress:
    def __init__(self, total: int, enabled: bool, out: TextIO = sys.stderr) -> None:
        tty = out.isatty() or os.environ.get(TTY_ENV) == "1"
        self._bar = tqdm(total=total, file=out, unit="case", leave=False, dynamic_ncols=True,
                         disable=not (enabled and tty))
        self._plain = enabled and not tty
        self._out, self._total, self._done = out, total, 0

    def start(self, label: str) -> None:
        if self._plain:
            self._out.write(f"[{self._done + 1}/{self._total}] {label}\n")
            self._out.flush()
        self._bar.set_description_str(label, refresh=True)

    def advance(self, n: int = 1) -> None:
        self._done += n
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()
