"""``commbench list``: algorithms, transports and shipped scenarios."""

from __future__ import annotations

import argparse
from pathlib import Path

import kernels.algorithms  # noqa: F401 - registers the algorithms
from bench.commands import register
from kernels.algorithm import ALGORITHMS
from kernels.transports import TRANSPORTS

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenarios", type=Path, default=SCENARIO_DIR,
                   help="folder of scenario files to list (default: the shipped ones)")


def handle(args: argparse.Namespace) -> int:
    print("algorithms:")
    for name in ALGORITHMS.names():
        print(f"  {name:<18} {ALGORITHMS.get(name).summary}")
    print("transports:")
    for name in TRANSPORTS.names():
        print(f"  {name:<18} {TRANSPORTS.get(name).summary}")
    print(f"scenarios ({args.scenarios}):")
    for path in sorted(args.scenarios.glob("*.yaml")):
        print(f"  {path.name:<18} {_description(path)}")
    return 0


def _description(path: Path) -> str:
    import yaml

    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return "(unreadable)"
    return str(raw.get("description", "")).strip().splitlines()[0] if isinstance(raw, dict) \
        and raw.get("description") else ""


register("list", "list algorithms, transports and scenarios", configure, handle)
