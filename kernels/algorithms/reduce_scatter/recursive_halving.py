"""Recursive halving reduce_scatter: halve the blocks still reduced with partner v xor d (any p)."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.all_gather.recursive_doubling import recursive
from kernels.closed import Ctx, Estimate
from kernels.compiled import BLOCKS, Compiled
from kernels.phases import Fold, Moves, calls, node_order, post
from kernels.schedule import StepBuilder


def _sent(problem: Problem, rank: int) -> int:
    f = Fold(node_order(problem.topology))
    v, extra = f.virtual(rank)
    if extra:
        return problem.count
    given = sum(f.size(*f.span(v ^ d, d)) for d in f.distances)
    return (given + (v < f.rem)) * problem.block


def _closed(x: Ctx) -> Estimate | str:
    return recursive(x, reduce=True)  # halving: the same steps as doubling's, reversed, reduced


def _steps(pr: Problem) -> list[tuple[Moves, bool]]:
    """The algorithm, step by step (block r is rank r's), each step's moves and whether they
    reduce."""
    f, p = Fold(node_order(pr.topology)), pr.world
    extra = [f.order[2 * v] for v in range(f.rem)]
    fold = [([(x, f.keeper(v), range(p)) for v, x in enumerate(extra)], True)] if f.rem else []
    unfold = [([(f.keeper(v), x, [x]) for v, x in enumerate(extra)], False)] if f.rem else []
    return [*fold, *(([(f.keeper(v), f.keeper(v ^ d), f.group(*f.span(v ^ d, d)))
                       for v in range(f.pp)], True) for d in reversed(f.distances)), *unfold]


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (block r is atom r), compiled with numpy."""
    return Compiled(pr.world, pr.count, tuple(calls(m, red) for m, red in _steps(pr)))


@algorithm("recursive_halving", "reduce_scatter", sent=_sent, closed=_closed,
           shape=BLOCKS.generated(_generate))
def recursive_halving(problem: Problem, b: StepBuilder) -> None:
    """log2(p') steps that halve what each rank reduces; a non-power of two folds extra ranks in.

    Ranks in node order; p' = 2^floor(log2 p), rem = p - p'. If rem > 0, a first step sends the
    whole buffer of each extra rank (the first of each of the first rem pairs) to its partner,
    the keeper, which reduces it in, and a last step sends the extra rank its finished block.
    In between, the p' virtual ranks (a keeper stands for its pair and both blocks) run log2(p')
    steps at distances d = p'/2, ..., 1: virtual rank v sends v xor d the blocks of v xor d's
    aligned group of d virtual ranks and reduces in those of its own. Elements sent per rank
    (c = n/p): (p-1)*c when p is a power of two. Otherwise n for an extra rank; c * (sum over d
    of the real ranks in v xor d's d-group: d plus the pairs among them) for the others, plus c
    for a keeper.
    """
    for moves, reduce in _steps(problem):
        post(b, problem.blocks(), moves, reduce=reduce)
