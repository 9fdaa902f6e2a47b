"""Nothing measured is a failure (docs/failures.md): why cases were left out, kept beside a run's
records so that a run that recorded nothing ends failed with its reason in one line; and the
check that refuses, before anything launches, a scenario whose every transport needs a GPU on a
host without one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kernels.transports import TRANSPORTS

SKIPPED = "skipped.txt"  # in the run directory: one reason a line, each once
ALLOW = "--allow-empty"  # the flag that accepts a run that measured nothing


def note(run_dir: Path, line: str) -> None:
    """Keep ``line`` (why a transport or case was left out) once; rank 0 writes it."""
    if line not in reasons(run_dir):
        with (run_dir / SKIPPED).open("a", encoding="utf-8") as f:
            f.write(line.replace("\n", " ") + "\n")


def reasons(run_dir: Path) -> list[str]:
    path = run_dir / SKIPPED
    try:
        return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except OSError:
        return []


def empty_reason(run_dir: Path) -> str:
    """The one line a run that recorded nothing fails with: the first reason kept, and how many."""
    why = reasons(run_dir)
    first = why[0] if why else "every case was skipped"
    more = f" (and {len(why) - 1} more in {run_dir / SKIPPED})" if len(why) > 1 else ""
    return f"nothing measured: {first}{more}; {ALLOW} accepts an empty run"


def device_only_without_gpu(transports: Sequence[str], gpus: int) -> str | None:
    """Why a self-launched run of ``transports`` would measure nothing here: every one of them
    keeps its buffers on a GPU and ``gpus`` (the GPUs visible) is 0. None: something can run."""
    if gpus or not transports or not all(TRANSPORTS.get(t).device for t in transports):
        return None
    names = ", ".join(transports)
    return (f"nothing to measure: transport{'s' if len(transports) > 1 else ''} {names} "
            f"need{'' if len(transports) > 1 else 's'} a GPU and none is visible here "
            f"(nvidia-smi, CUDA_VISIBLE_DEVICES); -t mpi runs on the CPU, {ALLOW} runs anyway")
