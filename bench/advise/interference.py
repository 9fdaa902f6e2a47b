"""What a concurrent run measured, as pricing inputs (``commbench advise --interference RUN``):
each group's slowdown beside the others, and the measured overlap. docs/advise.md (Measured
interference and overlap).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from bench.advise.calls import GROUPS
from bench.advise.step import Priced, Step
from bench.argtypes import CommbenchError

ALIASES = {"dp": "data", "tp": "tensor", "pp": "pipeline", "ps": "server"}


@dataclass(frozen=True)
class Measured:
    slowdown: dict[str, float] = field(default_factory=dict)  # advise group -> together / alone
    beside: dict[str, tuple[str, ...]] = field(default_factory=dict)  # the groups it ran beside
    overlap: float | None = None  # the fraction hidden, 0..1 (OSU's overlap % / 100)
    source: str = ""

    def apply(self, priced: list[Priced]) -> list[Priced]:
        """``priced`` with each call of a slowed group slowed, when the layout has a call of a
        group it was measured beside."""
        present = {p.call.group for p in priced}
        out = []
        for p in priced:
            s = self.slowdown.get(p.call.group)
            if s is not None and present & set(self.beside.get(p.call.group, ())):
                p = dataclasses.replace(p, seconds=p.seconds * s)
            out.append(p)
        return out

    def overlapped(self, st: Step, priced: list[Priced]) -> Step:
        """``st`` with the overlappable calls exposed by the measured overlap, its bounds
        unchanged: ``compute + bubble + rest + (1 - f) pool + max(0, f pool - compute)``."""
        if self.overlap is None:
            return st
        f = self.overlap
        pool = sum(p.total for p in priced if p.call.overlap)
        if pool <= 0:
            return st
        shown = (1 - f) * pool + max(0.0, f * pool - st.compute)
        exposed: dict[str, float] = {}
        for p in priced:  # the calls never overlapped keep their full time
            share = p.total if not p.call.overlap else shown * p.total / pool
            exposed[p.key] = exposed.get(p.key, 0.0) + share
        return dataclasses.replace(st, exposed=exposed)

    def describe(self) -> str:
        parts = [f"{g} x{s:.3g} beside {'/'.join(self.beside[g])}" for g, s in self.slowdown.items()]
        if self.overlap is not None:
            parts.append(f"overlap {100 * self.overlap:.3g} %")
        return f"measured in {self.source}: " + ("; ".join(parts) or "nothing usable")


def _group(name: str) -> str | None:
    name = ALIASES.get(name, name)
    return name if name in GROUPS else None


def load(run: Path) -> Measured:
    """The slowdowns and overlap of a concurrent run directory (or its results file)."""
    from bench.concurrent.table import group_rows, overlap_rows, slowdowns
    from bench.store.records import iter_records

    recs = list(iter_records(run.parent if run.is_file() else run, samples=False))
    rows = group_rows(recs)
    slow: dict[str, float] = {}
    beside: dict[str, tuple[str, ...]] = {}
    for name, s in slowdowns(rows).items():
        g = _group(name)
        others = {_group(x) for r in rows if r.group == name for x in r.together_with}
        if g is not None:
            slow[g] = s
            beside[g] = tuple(sorted(x for x in others if x is not None))
    ov = overlap_rows(recs)
    vendor = [o for o in ov if o["algorithm"] == "native"] or ov
    frac = None
    if vendor:
        top = max(int(o["nbytes"]) for o in vendor)
        at = [float(o["overlap_pct"]) for o in vendor if int(o["nbytes"]) == top]
        frac = sum(at) / len(at) / 100.0
    if not slow and frac is None:
        raise CommbenchError(f"--interference {run}: no group named {', '.join(GROUPS)} (or dp, tp, "
                             "pp) measured alone and together, and no overlap case")
    return Measured(slow, beside, frac, str(run))
