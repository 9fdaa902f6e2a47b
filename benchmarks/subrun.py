"""What the accuracy benchmarks share: ``commbench`` commands run from this checkout, a fresh
output directory (``--out``, by default under runs/ named by time), and the load to print."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bench(who: str, *args: str) -> None:
    """``python -m bench ARGS`` from this checkout; a failure ends ``who`` with its last lines."""
    res = subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
        raise SystemExit(f"{who}: {' '.join(args[:2])} failed ({res.returncode}): " + " | ".join(tail))


def fresh_dir(who: str, out: Path) -> Path:
    """``out`` resolved and created; refused when it already holds something."""
    out = out.resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{who}: {out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    return out


def add_out(ap: argparse.ArgumentParser, name: str) -> None:
    """``--out DIR``, by default ``runs/<time>-NAME``."""
    ap.add_argument("--out", type=Path,
                    default=Path(f"runs/{time.strftime('%Y%m%d-%H%M%S')}-{name}"))


def load() -> str:
    """The load averages over 1, 5 and 15 minutes, for progress lines."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())
