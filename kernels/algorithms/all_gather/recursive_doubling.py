"""Recursive doubling all_gather: exchange with partner v xor d, d = 1, 2, 4, ... (any p)."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import BLOCKS, Compiled
from kernels.phases import Fold, Moves, calls, node_order, post
from kernels.schedule import StepBuilder


def _sent(problem: Problem, rank: int) -> int:
    f = Fold(node_order(problem.topology))
    v, extra = f.virtual(rank)
    if extra:
        return problem.block
    held = sum(f.size(*f.span(v, d)) for d in f.distances)
    return (held + (problem.world - 1 if v < f.rem else 0)) * problem.block


def recursive(x: Ctx, reduce: bool) -> Estimate | str:
    """Power-of-two p, log2 p steps: sum over d = 1..p/2 of C(d, d B) (doubling), or over
    d = p/2..1 of (C(d, d B) + γ d B) (halving, ``reduce``); the blocks of an aligned group
    travel as one message."""
    why = x.need(pow2_p=True, leaves="pow2", contiguous=True)
    if why:
        return why
    t, inter = x.halving(x.b, reduce=reduce, down=reduce)
    return estimate(t, x.p.bit_length() - 1, (x.p - 1) * x.b, inter)


def _closed(x: Ctx) -> Estimate | str:
    return recursive(x, reduce=False)


def _steps(pr: Problem) -> list[Moves]:
    """The algorithm, step by step (block r is rank r's)."""
    f, p = Fold(node_order(pr.topology)), pr.world
    extra = [f.order[2 * v] for v in range(f.rem)]
    fold = [[(x, f.keeper(v), [x]) for v, x in enumerate(extra)]] if f.rem else []
    unfold = [[(f.keeper(v), x, [q for q in range(p) if q != x])
               for v, x in enumerate(extra)]] if f.rem else []
    return [*fold, *([(f.keeper(v), f.keeper(v ^ d), f.group(*f.span(v, d))) for v in range(f.pp)]
                     for d in f.distances), *unfold]


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (block r is atom r), compiled with numpy."""
    return Compiled(pr.world, pr.count, tuple(calls(m, False) for m in _steps(pr)))


@algorithm("recursive_doubling", "all_gather", sent=_sent, closed=_closed,
           shape=BLOCKS.generated(_generate))
def recursive_doubling(problem: Problem, b: StepBuilder) -> None:
    """log2(p') steps that double what each rank holds; a non-power of two folds extra ranks in.

    Ranks in node order; p' = 2^floor(log2 p), rem = p - p'. If rem > 0, a first step sends the
    block of each extra rank (the first of each of the first rem pairs) to its partner, the
    keeper, and a last step sends the keeper's whole output but that block back. In between,
    the p' virtual ranks (a keeper stands for its pair) run log2(p') steps: at distance d,
    virtual rank v swaps with v xor d the blocks of its aligned group of d virtual ranks.
    Elements sent per rank (c = n/p): (p-1)*c when p is a power of two. Otherwise c for an
    extra rank; c * (sum over d of the real ranks in v's d-group: d plus the pairs among them)
    for the others, plus (p-1)*c for a keeper.
    """
    for moves in _steps(problem):
        post(b, problem.blocks(), moves, reduce=False)
