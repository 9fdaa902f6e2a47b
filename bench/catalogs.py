"""What ``commbench list models`` and ``list profiles`` print: each reference model's family and
the sizes its config sets, each cost-model profile's file, what it sets and the source it cites."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

PROFILE_PARTS = {"links": "links", "device": "device", "fabric": "fabric", "native": "vendor "
                 "tuning", "mpi": "MPI eager/rendezvous", "slow": "injected slow links",
                 "overhead_s": "per-call overhead", "gamma_s_per_byte": "reduction cost"}


def models() -> list[str]:
    """One line per model: name, family, every size of its config that has no default or
    differs from it (a GPT's default MLP width, ungated, every head its own key/value head)."""
    from bench.models import CATALOG

    out = ["models (bench/models/catalog.py; --model of training scenarios, advise and memory):"]
    for name in CATALOG.names():
        cfg = CATALOG.get(name).config
        sets = " ".join(f"{f.name}={getattr(cfg, f.name)}" for f in dataclasses.fields(cfg)
                        if f.default is dataclasses.MISSING or getattr(cfg, f.name) != f.default)
        out.append(f"  {name:<14} {cfg.family:<8} {sets}")
    return out


def profiles() -> list[str]:
    """One line per shipped profile (name, what it sets), then the source it cites, indented."""
    from bench.costmodel.profile import PRESETS, presets

    out = [f"profiles ({_rel(PRESETS)}; --profile of predict, advise and emulate, or a path):"]
    for name in presets():
        raw = _yaml(PRESETS / f"{name}.yaml")
        out.append(f"  {name:<16} sets {_sets(raw)}")
        out.append(f"  {'':<16} source: {' '.join(str(raw.get('source') or 'not stated').split())}")
    return out


def _sets(raw: dict[str, Any]) -> str:
    parts = []
    for key, word in PROFILE_PARTS.items():
        value = raw.get(key)
        if value is None:
            continue
        if key == "links" and isinstance(value, dict):
            word = f"links ({', '.join(value)})"
        elif key == "device" and isinstance(value, dict) and value.get("name"):
            word = f"device ({value['name']})"
        parts.append(word)
    return ", ".join(parts) or "nothing"


def _yaml(path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _rel(path: Path) -> str:
    root = Path(__file__).resolve().parents[1]
    return str(path.resolve().relative_to(root)) if path.resolve().is_relative_to(root) else str(path)
