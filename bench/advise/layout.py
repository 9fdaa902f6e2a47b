"""One parallel layout: data x tensor x context x pipeline degrees, the data strategy (``dp``, a
registered strategy whose ``calls`` it runs over the data group), microbatches, the pipeline
schedule and the knobs; its validity and its rank groups. Ranks are ordered tensor fastest, then
context, data, pipeline (Megatron-LM's ``tp-cp-ep-dp-pp``, megatron/core/parallel_state.py):
``r = ((pp * data + dp) * context + cp) * tensor + tp``; expert groups are ``expert``
consecutive members of a data group (DeepSpeed-MoE's and Megatron's). docs/advise.md (Layout and groups).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.argtypes import CommbenchError
from bench.training.stages import SCHEDULES
from bench.training.strategy import strategies

if TYPE_CHECKING:
    from bench.training.scenario import StrategySpec

AMPS = ("fp32", "bf16", "fp16")  # autocast precision (bench.training.options); fp32: none
# activation recomputation: none, the attention core of each layer (Korthikanti et al. 2022,
# arXiv 2205.05198, Section 5), every piece
RECOMPUTES = ("none", "selective", "full")


@dataclass(frozen=True)
class Layout:
    data: int = 1
    tensor: int = 1
    pipeline: int = 1
    dp: str = "ddp"  # the strategy over the data group (ddp, zero1..3, ps, ...): its calls
    microbatches: int = 1
    schedule: str = "1f1b"
    stages_per_rank: int = 1  # interleaved: virtual stages per rank (v)
    bucket_mb: float = 25.0  # DDP / zero1 gradient buckets
    hook: str = "default"  # DDP: default, fp16, bf16 or a commbench all_reduce algorithm
    checkpoint: bool = False  # activation checkpointing of every piece (full recomputation)
    selective: bool = False  # selective recomputation: each layer's attention core only
    amp: str = "fp32"  # autocast precision with fp32 master weights (bench.training.options)
    servers: int = 0  # ps: parameter-server ranks beside the ``data`` workers (0: no ps)
    expert: int = 1  # expert parallelism: experts sharded over groups of this many data ranks
    context: int = 1  # context parallelism: each sequence over this many ranks (bench.advise.comm)

    def __post_init__(self) -> None:
        for k in ("data", "tensor", "pipeline", "microbatches", "stages_per_rank", "expert",
                  "context"):
            if getattr(self, k) < 1:
                raise CommbenchError(f"{k} degree must be >= 1, got {getattr(self, k)}")
        if self.schedule not in SCHEDULES:
            raise CommbenchError(f"unknown schedule {self.schedule!r}; valid: {', '.join(SCHEDULES)}")
        if self.amp not in AMPS:
            raise CommbenchError(f"unknown amp {self.amp!r}; valid: {', '.join(AMPS)}")
        if self.data % self.expert:
            raise CommbenchError(f"expert degree {self.expert} does not divide the data degree "
                                 f"{self.data}")
        if self.checkpoint and self.selective:
            raise CommbenchError("full and selective recomputation exclude each other")
        if self.servers and (self.tensor > 1 or self.pipeline > 1):
            raise CommbenchError("server ranks serve pure data parallelism: no tensor or pipeline "
                                 "with them")
        if self.context > 1 and (self.servers or self.expert > 1):
            raise CommbenchError("context parallelism runs beside a data strategy over whole "
                                 "weights: no parameter servers or expert parallelism with it")

    @property
    def world(self) -> int:
        return self.data * self.context * self.tensor * self.pipeline + self.servers

    @property
    def replicas(self) -> int:
        """Ranks of one tensor and pipeline index holding the same weights (data x context): the
        data group the data strategy reduces gradients and shards over."""
        return self.data * self.context

    @property
    def stages(self) -> int:
        return self.pipeline * self.stages_per_rank

    @property
    def zero(self) -> int:
        """The ZeRO stage of the data strategy (0: none)."""
        return strategies().get(self.dp).zero

    @property
    def recompute(self) -> str:
        """One of :data:`RECOMPUTES`."""
        return "full" if self.checkpoint else "selective" if self.selective else "none"

    def recomputing(self, recompute: str) -> Layout:
        """The layout with another recomputation (one of :data:`RECOMPUTES`)."""
        if recompute not in RECOMPUTES:
            raise CommbenchError(f"unknown recomputation {recompute!r}; valid: {', '.join(RECOMPUTES)}")
        return dataclasses.replace(self, checkpoint=recompute == "full",
                                   selective=recompute == "selective")

    @property
    def options(self) -> str:
        """The knobs as training labels them: ``ckpt``, ``sel``, ``amp=bf16``."""
        return ",".join([*(["ckpt"] if self.checkpoint else []),
                         *(["sel"] if self.selective else []),
                         *([f"amp={self.amp}"] if self.amp != "fp32" else [])])

    @property
    def label(self) -> str:
        opts = self.options
        parts = [f"dp={self.data}"]
        if self.replicas > 1 or self.servers:  # ddp[ring], zero3[ckpt,amp=bf16], ps[servers=2]
            inner = [*strategies().get(self.dp).layout_label(self), *([opts] if opts else [])]
            parts.append(f"{self.dp}[{','.join(inner)}]" if inner else self.dp)
        elif opts:
            parts.append(f"[{opts}]")
        if self.tensor > 1:
            parts.append(f"tp={self.tensor}")
        if self.context > 1:
            parts.append(f"cp={self.context}")
        if self.pipeline > 1:
            v = f",v={self.stages_per_rank}" if self.schedule == "interleaved" else ""
            parts.append(f"pp={self.pipeline}[{self.schedule},m={self.microbatches}{v}]")
        return " ".join(parts)

    def rank(self, dp: int, tp: int, pp: int, cp: int = 0) -> int:
        return ((pp * self.data + dp) * self.context + cp) * self.tensor + tp

    def group(self, axis: str, dp: int = 0, tp: int = 0, pp: int = 0) -> list[int]:
        """The ranks of ``axis`` ("data": the data and context indices together, "tensor",
        "context", "pipeline"; "expert": ``expert`` consecutive data indices, "expert_data": the
        data indices ``expert`` apart) through the given coordinates (context index 0)."""
        e, first, c = self.expert, dp - dp % self.expert, self.context
        n = {"data": self.replicas, "tensor": self.tensor, "context": c,
             "pipeline": self.pipeline, "expert": e, "expert_data": self.data // e}[axis]
        at = {"data": lambda i: self.rank(i // c, tp, pp, i % c),
              "tensor": lambda i: self.rank(dp, i, pp),
              "context": lambda i: self.rank(dp, tp, pp, i),
              "pipeline": lambda i: self.rank(dp, tp, i),
              "expert": lambda i: self.rank(first + i, tp, pp),
              "expert_data": lambda i: self.rank(dp % e + i * e, tp, pp)}[axis]
        return [at(i) for i in range(n)]


def as_layout(spec: StrategySpec, world: int) -> Layout:
    """The layout of a training strategy (with its options and knobs) at ``world`` ranks;
    ValueError for checkpointing of a piece list or a fraction, which the advice does not model."""
    lay = spec.strategy.layout(spec.options, world)
    if spec.checkpoint not in (True, False):
        raise CommbenchError(f"checkpoint {spec.checkpoint!r}: the advice models every piece or none")
    return dataclasses.replace(lay, checkpoint=bool(spec.checkpoint), amp=spec.precision)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]
