"""The in-flight marker: rank 0 writes ``inflight.json`` before each case and removes it when its
job ends cleanly; one left behind names the case a failed, hung or interrupted job was in."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

INFLIGHT = "inflight.json"


def mark(run_dir: Path, case: str, timeout_s: float, **extra: Any) -> None:
    tmp = run_dir / (INFLIGHT + ".tmp")
    tmp.write_text(json.dumps({"case": case, "timeout_s": timeout_s, "since": time.time(),
                               "pid": os.getpid(), **extra}))
    os.replace(tmp, run_dir / INFLIGHT)


def clear(run_dir: Path) -> None:
    (run_dir / INFLIGHT).unlink(missing_ok=True)
    (run_dir / (INFLIGHT + ".tmp")).unlink(missing_ok=True)


def read(run_dir: Path) -> dict[str, Any] | None:
    """The marker (left in place), or None when no case is in flight."""
    try:
        data = json.loads((run_dir / INFLIGHT).read_text())
    except (OSError, ValueError):
        data = None
    return data if isinstance(data, dict) else None


def take(run_dir: Path) -> dict[str, Any] | None:
    """The marker a job left behind (removed), or None when no case was in flight."""
    data = read(run_dir)
    clear(run_dir)
    return data
