"""Why the model prefers one priced layout to another, from the two steps: the term that
differs most (compute, recompute, bubble, optimizer, exposed communication by group), every
term of both side by side and their memory per rank. Printed by ``advise --compare`` and by
benchmarks/published_runs.py.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.advise.evaluate import Job, Result, evaluate
from bench.advise.step import differs_most

GIB = 2**30


def terms(res: Result, jobs: Callable[[int], Job], batch: int) -> dict[str, float]:
    """:attr:`Step.terms` of a priced layout, its compute split into the compute without
    recomputation (the same layout priced without it) and the ``recompute`` it adds;
    ``batch``: the global batch."""
    out = dict(res.step.terms)
    if res.layout.recompute != "none":
        plain = evaluate(jobs(batch // res.layout.data), res.layout.recomputing("none"))
        out["recompute"] = out["compute"] - plain.step.compute
        out["compute"] = plain.step.compute
    return out


def why(mine: Result, other: Result, jobs: Callable[[int], Job], batch: int) -> str:
    """One line: what makes ``other``'s step differ from ``mine`` (the term that differs most,
    then every term, seconds, ``mine``/``other``, and memory)."""
    tp, to = terms(mine, jobs, batch), terms(other, jobs, batch)
    keys = [k for k in dict.fromkeys([*tp, *to]) if tp.get(k, 0.0) or to.get(k, 0.0)]
    side = ", ".join(f"{k} {tp.get(k, 0.0):.3g}/{to.get(k, 0.0):.3g}" for k in keys)
    most = differs_most(tp, to)
    d = to.get(most, 0.0) - tp.get(most, 0.0)
    return (f"why {other.layout.label}: {most} {d:+.3g} s; step {mine.step.time:.3g}/"
            f"{other.step.time:.3g} s = {side}; memory {mine.memory.total / GIB:.0f}/"
            f"{other.memory.total / GIB:.0f} GiB")
