"""A user's own layouts, priced beside the ranking (``advise --compare``): ``tp=8,pp=8,dp=24``
names degrees and, optionally, knobs; a key given again starts the next layout
(``tp=8,pp=8,dp=24,tp=4,pp=8,dp=48``). What is not named is the search's choice: the fastest
variant of the named degrees that fits, else the one nearest to fitting. docs/advise.md
(Compare).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from types import MappingProxyType

from bench.advise.layout import RECOMPUTES, Layout

# key -> (Layout field, parser): degrees, the data strategy, micro-batches, schedule, knobs
INT_KEYS = {"dp": "data", "tp": "tensor", "pp": "pipeline", "cp": "context", "m": "microbatches",
            "v": "stages_per_rank", "ep": "expert"}
TEXT_KEYS = {"strategy": "dp", "schedule": "schedule", "recompute": "recompute"}
EXAMPLE = "tp=8,pp=8,dp=24"

Spec = Mapping[str, object]  # Layout field (or "recompute") -> value


def _value(key: str, text: str) -> object:
    if key in INT_KEYS:
        if not text.isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"--compare {key}={text}: a whole number >= 1")
        return int(text)
    if key == "recompute" and text not in RECOMPUTES:
        raise argparse.ArgumentTypeError(f"--compare recompute={text}: one of "
                                         f"{', '.join(RECOMPUTES)}")
    return text


def parse_compare(text: str) -> list[Spec]:
    """The layouts of one ``--compare`` value; ArgumentTypeError (one line) for a bad one."""
    out: list[dict[str, object]] = []
    for part in text.split(","):
        key, eq, val = part.strip().partition("=")
        if not eq or key not in {**INT_KEYS, **TEXT_KEYS} or not val:
            raise argparse.ArgumentTypeError(
                f"--compare {part.strip()!r}: KEY=VALUE with KEY one of "
                f"{', '.join([*INT_KEYS, *TEXT_KEYS])} (e.g. {EXAMPLE})")
        field = INT_KEYS.get(key) or TEXT_KEYS[key]
        if not out or field in out[-1]:
            out.append({})
        out[-1][field] = _value(key, val)
    return [MappingProxyType(s) for s in out]


parse_compare.__name__ = "layout list"
parse_compare.example = EXAMPLE  # type: ignore[attr-defined]


def matches(spec: Spec, lay: Layout) -> bool:
    """Whether ``lay`` is one of the variants ``spec`` names."""
    return all((lay.recompute if k == "recompute" else getattr(lay, k)) == v
               for k, v in spec.items())


def label(spec: Spec) -> str:
    """The spec as the user wrote it (keys in the flag's names)."""
    back = {v: k for k, v in {**INT_KEYS, **TEXT_KEYS}.items()}
    return ",".join(f"{back[k]}={v}" for k, v in spec.items())


def chosen(results: list, fits: Callable[[object], bool]):  # type: ignore[no-untyped-def]
    """The fastest of ``results`` that fits, else the one with the least memory (None: none)."""
    fit = [r for r in results if fits(r)]
    if fit:
        return min(fit, key=lambda r: r.step.time)
    return min(results, key=lambda r: (r.memory.total, r.step.time)) if results else None
