"""The in-flight marker: rank 0 writes ``inflight.json`` before each case and removes it when its
job ends cleanly; one left behind names the case a failed, hung or interrupted job was in."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

INFLIGHT = "inflight.json"


def write_json(path: Path, data: dict[str, Any], tmp: Path) -> None:
    """``data`` into ``path`` atomically, through ``tmp`` (a reader never sees half of it)."""
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def mark(run_dir: Path, case: str, timeout_s: float, **extra: Any) -> None:
    write_json(run_dir / INFLIGHT, {"case": case, "timeout_s": timeout_s, "since": time.time(),
                                    "pid": os.getpid(), **extra}, run_dir / (INFLIGHT + ".tmp"))


def clear(run_dir: Path) -> None:
    (run_dir / INFLIGHT).unlink(missing_ok=True)
    (run_dir / (INFLIGHT + ".tmp")).unlink(missing_ok=True)


def read(run_dir: Path) -> dict[str, Any] | None:
    """The marker (left in place), or None when no case is in flight."""
    return read_json(run_dir / INFLIGHT)


def take(run_dir: Path) -> dict[str, Any] | None:
    """The marker a job left behind (removed), or None when no case was in flight."""
    data = read(run_dir)
    clear(run_dir)
    return data
