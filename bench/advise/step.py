"""Step time of one layout on one rank: compute + exposed communication + the pipeline bubble;
the overlap rule, the bounds and the bubble: docs/advise.md (Overlap, Bubble). Full
recomputation issues the checkpointed pieces' forward calls again in the backward
(:data:`RECOMPUTED_GROUPS`): Megatron-LM's ``CheckpointFunction.backward`` reruns the layers'
``forward``, RowParallelLinear's all-reduce with it (megatron/mpu/random.py, transformer.py);
Korthikanti et al. 2022 (arXiv 2205.05198, Table 4). A stage's sends and ZeRO-3's backward
gathers are not re-issued.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from bench.advise.calls import Call
from bench.advise.compute import BACKWARD

RECOMPUTED_GROUPS = ("tensor", "expert", "context")  # forward calls full recomputation issues again


@dataclass(frozen=True)
class Priced:
    call: Call
    seconds: float  # one call
    algorithm: str  # what runs
    best: str  # the fastest modelled schedule (the recommendation)

    @property
    def total(self) -> float:
        return self.seconds * self.call.calls

    @property
    def key(self) -> str:
        return f"{self.call.op}:{self.call.group}"


@dataclass(frozen=True)
class Step:
    compute: float
    bubble: float
    exposed: dict[str, float]  # by "collective:group" (all_reduce:data, send:pipeline, ...)
    comm: dict[str, float]  # every call, by "collective:group"
    no_overlap: float
    full_overlap: float
    algorithms: dict[str, str] = field(default_factory=dict)  # "collective:group" -> what runs
    best: dict[str, str] = field(default_factory=dict)  # "collective:group" -> fastest schedule
    optimizer: float = 0.0  # the optimizer step, after the last gradient (achieved compute)

    @property
    def time(self) -> float:
        return self.compute + self.bubble + self.optimizer + sum(self.exposed.values())

    @property
    def terms(self) -> dict[str, float]:
        """The step's additive terms, which sum to :attr:`time`: compute, bubble, optimizer and
        the exposed communication of each group (``exposed data``, ``exposed tensor``, ...)."""
        out = {"compute": self.compute, "bubble": self.bubble, "optimizer": self.optimizer}
        for key, t in self.exposed.items():
            name = f"exposed {key.rpartition(':')[2]}"
            out[name] = out.get(name, 0.0) + t
        return out


def differs_most(a: Mapping[str, float], b: Mapping[str, float]) -> str:
    """The term (of :attr:`Step.terms`, or a finer split of them) whose time differs most
    between two steps (a term only one of them has counts as 0 in the other)."""
    return max([*a, *(k for k in b if k not in a)],
               key=lambda k: abs(a.get(k, 0.0) - b.get(k, 0.0)))


def recomputed(priced: list[Priced]) -> list[Priced]:
    """The forward calls full recomputation issues again, in the backward (module docstring)."""
    return [dataclasses.replace(p, call=dataclasses.replace(p.call, phase="backward"))
            for p in priced if p.call.phase == "forward" and p.call.group in RECOMPUTED_GROUPS
            and p.call.rerun]


def bubble(compute: float, microbatches: int, pipeline: int, stages_per_rank: int) -> float:
    """The pipeline bubble of a rank computing ``compute`` (docs/advise.md, Bubble)."""
    return (pipeline - 1) / stages_per_rank * compute / microbatches if pipeline > 1 else 0.0


def step_time(priced: list[Priced], compute: float, microbatches: int, pipeline: int,
              stages_per_rank: int, overlap: bool = True, optimizer: float = 0.0,
              recompute: bool = False) -> Step:
    """The step (docs/advise.md, Overlap); ``recompute``: full recomputation, its calls again."""
    if recompute:
        priced = [*priced, *recomputed(priced)]
    window = compute / microbatches if pipeline > 1 else compute
    phase = {"forward": window * (1 - BACKWARD), "backward": window * BACKWARD}
    exposed: dict[str, float] = {}
    comm: dict[str, float] = {}
    algs: dict[str, str] = {}
    best: dict[str, str] = {}
    hidden_pool = 0.0
    for p in priced:
        comm[p.key] = comm.get(p.key, 0.0) + p.total
        algs.setdefault(p.key, p.algorithm)
        best.setdefault(p.key, p.best)
        if p.call.overlap:
            hidden_pool += p.total
    for ph, room in phase.items() if overlap else ():
        mine = [p for p in priced if p.call.overlap and p.call.phase == ph]
        if not mine:
            continue
        edge = max(mine, key=lambda p: p.seconds)  # the unhideable call: the worst case of one
        rest = sum(p.total for p in mine) - edge.seconds
        for p in mine:  # spread the exposed time over types by their share
            share = p.total / (rest + edge.seconds) if rest + edge.seconds else 0.0
            exposed[p.key] = exposed.get(p.key, 0.0) + share * (
                edge.seconds + max(0.0, rest - room))
    for p in priced:
        if not p.call.overlap or not overlap:
            exposed[p.key] = exposed.get(p.key, 0.0) + p.total
    idle = bubble(compute, microbatches, pipeline, stages_per_rank)
    rest = sum(p.total for p in priced if not p.call.overlap)
    base = compute + idle + optimizer
    return Step(compute, idle, exposed, comm, base + sum(comm.values()),
                base + rest + max(0.0, hidden_pool - compute), algs, best, optimizer)
