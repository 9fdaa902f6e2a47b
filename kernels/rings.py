"""Ring phases (the ``ring`` algorithms', and building blocks for plugins) and the channels of
the rail-aligned rings, generated with numpy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kernels.chunks import split
from kernels.compiled import Compiled, CStep, Shape, messages
from kernels.schedule import Range, StepBuilder
from kernels.topology import Topology

if TYPE_CHECKING:
    from kernels.problem import Problem


def reduce_scatter(
    b: StepBuilder, members: Sequence[int], chunks: Sequence[Range], steps: Sequence[int]
) -> None:
    """In ``len(members)-1`` steps, member ``i`` ends owning chunk ``(i+1) % m`` fully reduced.

    Step ``s``: member ``i`` sends chunk ``(i-s) % m`` to member ``i+1``, which reduces it in.
    """
    m = len(members)
    for s, st in zip(range(m - 1), steps):
        for i, r in enumerate(members):
            b.move(r, members[(i + 1) % m], chunks[(i - s) % m], reduce=True, step=st)


def all_gather(
    b: StepBuilder, members: Sequence[int], chunks: Sequence[Range], steps: Sequence[int]
) -> None:
    """Inverse of :func:`reduce_scatter`'s ownership: member ``i`` starts owning chunk
    ``(i+1) % m``; after ``m-1`` copy steps every member holds every chunk."""
    m = len(members)
    for s, st in zip(range(m - 1), steps):
        for i, r in enumerate(members):
            b.move(r, members[(i + 1) % m], chunks[(i + 1 - s) % m], reduce=False, step=st)


def open_steps(b: StepBuilder, n: int) -> list[int]:
    return [b.step() for _ in range(n)]


# Channels exist to spread a step's node-crossing flows over a node's NICs (rails), one per rank
# at most, so a channel per rank of the largest node; beyond 8 (the NICs of the largest GPU
# nodes modelled) a channel only adds messages. On one node there is no NIC to spread over.
MAX_CHANNELS = 8


def channels(node_sizes: Sequence[int]) -> int:
    """k, the number of rail-aligned ring channels on nodes of these sizes: 1 on one node, else
    the largest node's ranks, at most :data:`MAX_CHANNELS`."""
    return 1 if len(node_sizes) < 2 else min(max(node_sizes), MAX_CHANNELS)


def channel_ring(nodes: Sequence[Sequence[int]], c: int) -> list[int]:
    """Channel c's ring: each node's ranks from local index c+1 round to c (mod its size), nodes
    in order, so the ring leaves every node from local index c (its rail) and enters the next
    one at c+1. Inside a node every channel follows the same cycle a -> a+1 with one edge cut."""
    return [node[(c + 1 + i) % len(node)] for node in nodes for i in range(len(node))]


def pieces(problem: Problem) -> list[Range]:
    """The atoms of :data:`CHANNEL_GATHER` / :data:`CHANNEL_SCATTER` on the real buffer: piece c
    of block j (each block cut into k near-equal pieces, one per channel) is atom j k + c."""
    k = channels_of(problem.topology)
    return [r for blk in problem.blocks() for r in split(blk.size, k, blk.start)]


def channels_of(topology: Topology) -> int:
    return channels([len(node) for node in topology.nodes()])


def _piece_atoms(pr: Problem, n: int) -> np.ndarray:
    """Real elements per atom of :data:`CHANNEL_GATHER` / :data:`CHANNEL_SCATTER`: each of the
    p blocks cut in k pieces."""
    return np.tile([c.size for c in split(n // pr.world, channels_of(pr.topology))], pr.world)


def ring_steps(ring: np.ndarray, atom: np.ndarray, gather: bool, width: int = 1
               ) -> list[CStep]:
    """:func:`all_gather` (``gather``) or :func:`reduce_scatter` on k rings at once, compiled
    without building them: ``ring[c]`` ring c's members, ``atom[c, x]`` the first of the
    ``width`` atoms of its chunk x. Step s: member i sends chunk (i + 1 - s) mod p (gather) or
    (i - s) mod p (reduced) to member i + 1; a sender posts its rings in order."""
    k, p = ring.shape
    i, c = np.arange(p), np.broadcast_to(np.arange(k)[:, None], (k, p)).ravel()
    dst, red = ring[:, (i + 1) % p].ravel(), np.full(k * p, not gather)
    out = []
    for s in range(p - 1):
        lo = atom[:, (i + 1 - s) % p if gather else (i - s) % p].ravel()
        out.append(messages(ring.ravel(), dst, lo, lo + width, red, c))
    return out


def _rings(problem: Problem) -> np.ndarray:
    nodes = problem.topology.nodes()
    return np.asarray([channel_ring(nodes, c) for c in range(channels_of(problem.topology))],
                      np.int64)


def channel_compiled(problem: Problem, gather: bool) -> Compiled:
    """k rings at once over the p blocks (all_gather if ``gather``, else reduce_scatter),
    ring c carrying piece c of every block around :func:`channel_ring` ``c`` (``problem.count``
    = k p atoms, atom j k + c being piece c of block j; :func:`pieces`), generated: chunk x of
    ring c is piece c of block ``ring[c][x - 1]``, so member i's own piece is the one
    all_gather starts and reduce_scatter ends it owning."""
    ring = _rings(problem)
    k, p = ring.shape
    atom = ring[:, (np.arange(p) - 1) % p] * k + np.arange(k)[:, None]
    return Compiled(p, problem.count, tuple(ring_steps(ring, atom, gather)))


def channel_all_reduce(problem: Problem) -> Compiled:
    """``all_reduce/ring_channels``'s symbolic build (k p atoms, chunk x of ring c atom c p + x),
    generated: every ring's reduce-scatter steps, then every ring's all-gather steps."""
    ring = _rings(problem)
    k, p = ring.shape
    atom = np.arange(k * p, dtype=np.int64).reshape(k, p)
    return Compiled(p, problem.count, (*ring_steps(ring, atom, False),
                                       *ring_steps(ring, atom, True)))


# Symbolic builds of the channel rings: k*p chunks of the buffer (all_reduce), or each of the p
# blocks in k pieces (all_gather, reduce_scatter; generated with numpy where no hot bytes count).
CHANNEL_CHUNKS = Shape(count=lambda pr: channels_of(pr.topology) * pr.world,
                       generate=channel_all_reduce)
CHANNEL_GATHER = Shape(count=lambda pr: channels_of(pr.topology) * pr.world, atoms=_piece_atoms,
                       generate=lambda pr: channel_compiled(pr, True))
CHANNEL_SCATTER = Shape(count=lambda pr: channels_of(pr.topology) * pr.world, atoms=_piece_atoms,
                        generate=lambda pr: channel_compiled(pr, False))
