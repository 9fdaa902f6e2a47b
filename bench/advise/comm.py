"""Communication models: what a rank issues per step, as :class:`~bench.advise.calls.Call`
lists from a :class:`CommContext`: its data strategy's (``Strategy.calls``, in its file under
:mod:`bench.training.strategies`) over the data group, and the tensor, context and pipeline
axes' (here), each on the rank's own stages, tensor shards and context chunk. The rules:
docs/advise.md (Communication per step).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from bench.advise.calls import Call
from bench.advise.layout import Layout
from bench.advise.shape import Shape, local_params
from bench.training.analytic import Param, Precision
from bench.training.stages import local_stages, rank_pieces, stage_starts
from bench.training.strategy import strategies


@dataclass(frozen=True)
class Bytes:
    """Element sizes: parameters, gradients (as reduced) and activations."""

    param: int = 4
    grad: int = 4
    act: int = 4

    @classmethod
    def of(cls, prec: Precision) -> Bytes:
        """A precision's: activations as the parameters."""
        return cls(prec.param_bytes, prec.grad_bytes, prec.param_bytes)


@dataclass(frozen=True)
class CommContext:
    shape: Shape
    layout: Layout
    batch: int  # samples per data-parallel replica per step
    bytes: Bytes = Bytes()
    pp: int = 0  # the rank's index in its pipeline group
    server: int | None = None  # ps: this rank is server s (None: a worker)

    @functools.cached_property
    def stage_starts(self) -> tuple[int, ...]:
        """First piece of each stage, then the number of pieces."""
        return stage_starts(self.shape.cut_sizes, self.layout.stages)

    @property
    def my_stages(self) -> list[int]:
        """This rank's stages: pp, pp + p, ... (the interleaved layout)."""
        return local_stages(self.layout.stages_per_rank, self.pp, self.layout.pipeline)

    @property
    def my_pieces(self) -> frozenset[int]:
        lay = self.layout
        return rank_pieces(self.shape.cut_sizes, lay.stages_per_rank, self.pp, lay.pipeline)

    @functools.cached_property
    def params(self) -> tuple[Param, ...]:
        """The rank's parameters (its stages), with tensor-parallel local shapes."""
        return local_params(self.shape, self.layout.tensor, self.my_pieces)

    @property
    def microbatch(self) -> int:
        return self.batch // self.layout.microbatches

    @property
    def tokens(self) -> int:
        """Positions of each sample on this rank: its context chunk of the sequence."""
        return self.shape.tokens_per_sample // self.layout.context


def representative_stages(shape: Shape, layout: Layout) -> list[int]:
    """One pipeline index per distinct kind of rank: ranks whose stages hold pieces of the same
    sizes and FLOPs, and are alike in being first or last, issue the same calls and compute."""
    return list(_representatives(shape, layout.pipeline, layout.stages_per_rank))


@functools.lru_cache(maxsize=4096)
def _representatives(shape: Shape, pipeline: int, per_rank: int) -> tuple[int, ...]:
    seen: dict[tuple[object, ...], int] = {}
    for pp in range(pipeline):
        mine = local_stages(per_rank, pp, pipeline)
        sig = (tuple((shape.piece_sizes[i], shape.piece_flops[i])
                     for i in sorted(rank_pieces(shape.cut_sizes, per_rank, pp, pipeline))),
               0 in mine, pipeline * per_rank - 1 in mine)
        seen.setdefault(sig, pp)
    return tuple(seen.values())


def tensor_calls(ctx: CommContext) -> list[Call]:
    """The layout's tensor axis: Megatron pairs as DTensor ``ColwiseParallel`` /
    ``RowwiseParallel`` shard them over the model's ``tp_plan`` (docs/advise.md), per microbatch,
    exposed in full."""
    m, rows = ctx.layout.microbatches, ctx.microbatch * ctx.tokens * ctx.bytes.act
    return [Call("all_reduce", rows * width, k * m, "tensor", phase, False)
            for phase, width, k in _tensor_widths(ctx.shape, ctx.my_pieces)]


@functools.lru_cache(maxsize=65536)
def _tensor_widths(shape: Shape, pieces: frozenset[int]) -> tuple[tuple[str, int, int], ...]:
    """(phase, features, all_reduces per microbatch) of :func:`tensor_calls` on ``pieces``."""
    widths: dict[tuple[str, int], int] = {}
    for piece, lin in shape.linears:
        if piece not in pieces:
            continue
        if lin.style == "rowwise":
            key = ("forward", lin.out_features)
        elif piece != 0:
            key = ("backward", lin.in_features)
        else:
            continue
        widths[key] = widths.get(key, 0) + 1
    return tuple((phase, width, k) for (phase, width), k in widths.items())


def pipeline_calls(ctx: CommContext) -> list[Call]:
    """The layout's pipeline axis: torch.distributed.pipelining between stages, per microbatch and
    boundary, a send forward, one backward and their mirror receives; exposed in full. Under
    the software's ``pipeline_scatter_gather`` (Megatron-LM's scatter/gather optimization,
    Narayanan et al. 2021, arXiv 2104.04473, Section 4.1) each tensor rank sends 1/t of the
    boundary and the receiving stage all-gathers it over its tensor group."""
    m, last, c = ctx.layout.microbatches, ctx.layout.stages - 1, ctx.layout.context
    starts, unit = ctx.stage_starts, ctx.microbatch * ctx.bytes.act
    split = ctx.layout.tensor if ctx.shape.software.pipeline_scatter_gather else 1
    out = []

    def gathered(n: int, phase: str) -> list[Call]:
        # after the stage's receive, not part of its layers' forward: not rerun by recomputation
        return [Call("all_gather", n, m, "tensor", phase, False, rerun=False)] if split > 1 \
            else []

    for s in ctx.my_stages:
        if s != last:  # output forward, its gradient back
            n = unit * (ctx.shape.boundary_elements(starts[s + 1]) // c)
            out += [Call("send", n // split, m, "pipeline", "forward", False),
                    Call("recv", n // split, m, "pipeline", "backward", False),
                    *gathered(n, "backward")]
        if s != 0:  # input from the previous stage, its gradient back to it
            n = unit * (ctx.shape.boundary_elements(starts[s]) // c)
            out += [Call("recv", n // split, m, "pipeline", "forward", False),
                    Call("send", n // split, m, "pipeline", "backward", False),
                    *gathered(n, "forward")]
    return out


def context_calls(ctx: CommContext) -> list[Call]:
    """The layout's context axis: Llama 3's all-gather based context parallelism (arXiv
    2407.21783, Section 3.3.2): per transformer block and microbatch, the keys and values of the
    whole sequence all-gathered in the forward (microbatch x sequence x :meth:`Shape.kv_elements`),
    their gradients reduce-scattered in the backward; exposed, as the paper says: "the all-gather
    communication latency is exposed in the critical path"."""
    cfg, m = ctx.shape.model.config, ctx.layout.microbatches
    blocks = sum(1 for i in ctx.my_pieces if 1 <= i <= getattr(cfg, "layers", 0))
    if not blocks:
        return []
    n = ctx.microbatch * ctx.shape.tokens_per_sample * ctx.shape.kv_elements(ctx.layout.tensor) \
        * ctx.bytes.act
    return [Call("all_gather", n, blocks * m, "context", "forward", False),
            Call("reduce_scatter", n, blocks * m, "context", "backward", False)]


def axis_calls(ctx: CommContext) -> list[Call]:
    """The calls of the layout's tensor, context and pipeline axes on the rank."""
    lay = ctx.layout
    return [*(tensor_calls(ctx) if lay.tensor > 1 else []),
            *(context_calls(ctx) if lay.context > 1 else []),
            *(pipeline_calls(ctx) if lay.pipeline > 1 else [])]


def layout_calls(ctx: CommContext) -> list[Call]:
    """A layout's calls on the rank: its data strategy's over the data group (where it has other
    ranks), then its axes'."""
    lay = ctx.layout
    dp = strategies().get(lay.dp).calls(ctx) if lay.replicas > 1 or lay.servers else []
    return [*dp, *axis_calls(ctx)]
