"""``commbench list``: collectives with their algorithms, transports and shipped scenarios;
``list models`` and ``list profiles``: the reference models and the cost-model profiles;
``--markdown`` prints the docs' algorithm tables from the registry (a test holds the docs to it)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import yaml

from bench.argtypes import in_path
from bench.commands import register
from kernels import collective as coll
from kernels.algorithm import algorithms_of
from kernels.transports import TRANSPORTS

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", nargs="?", choices=("models", "profiles"), default=None,
                   help="models: the reference models and what each config sets; profiles: the "
                        "cost-model profiles, what each sets and its source (default: "
                        "collectives, algorithms, transports and scenarios)")
    p.add_argument("--scenarios", type=in_path, default=SCENARIO_DIR,
                   help="folder of scenario files to list (default: the shipped ones)")
    p.add_argument("--markdown", action="store_true",
                   help="print the collectives and algorithms as the Markdown tables of the docs")


def handle(args: argparse.Namespace) -> int:
    if args.markdown:
        print(markdown(), end="")
        return 0
    if args.what is not None:
        print("\n".join(models() if args.what == "models" else profiles()))
        return 0
    print("collectives and their algorithms:")
    for name in coll.names():
        c = coll.resolve(name)
        aliases = f" (also {', '.join(c.aliases)})" if c.aliases else ""
        print(f"  {name}{aliases}: {c.summary}; busbw factor {c.busbw_formula}")
        for a in algorithms_of(name):
            print(f"    {a.name:<20} {a.summary}")
    print("transports:")
    for name in TRANSPORTS.names():
        print(f"  {name:<18} {TRANSPORTS.get(name).summary}")
    print(f"scenarios ({args.scenarios}):")
    for path in sorted(args.scenarios.glob("*.yaml")):
        print(f"  {path.name:<18} {_description(path)}")
    return 0


def markdown() -> str:
    """One table per collective: algorithm, its summary, and the steps and bytes its docstring
    states (the text after the summary line, joined)."""
    out = ["| collective | size reported | busbw factor | what it does |", "| --- | --- | --- | --- |"]
    for name in coll.names():
        c = coll.resolve(name)
        out.append(f"| `{name}` | {c.size_is} | {c.busbw_formula} | {c.summary} |")
    for name in coll.names():
        out += ["", f"### {name}", "", "| algorithm | what it does | steps and bytes sent per rank |",
                "| --- | --- | --- |"]
        for a in algorithms_of(name):
            body = " ".join(" ".join(a.doc.splitlines()[1:]).split())
            out.append(f"| `{a.name}` | {a.summary} | {body.replace('|', '/') or '—'} |")
    return "\n".join(out) + "\n"


def _description(path: Path) -> str:
    import yaml

    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return "(unreadable)"
    return str(raw.get("description", "")).strip().splitlines()[0] if isinstance(raw, dict) \
        and raw.get("description") else ""



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
    root = Path(__file__).resolve().parents[2]
    return str(path.resolve().relative_to(root)) if path.resolve().is_relative_to(root) else str(path)


register("list", "list collectives, algorithms, transports and scenarios; list models, list "
         "profiles", configure, handle,
         example="", offline=True)
