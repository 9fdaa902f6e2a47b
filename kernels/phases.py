"""Pieces shared by several algorithms (not algorithms of their own): ranks in node order, one
message per run of adjacent blocks, the power-of-two :class:`Fold` of recursive doubling and
halving, which rank of a node holds which block in the hierarchical algorithms (that of local
index j: local index j mod l on a node of l ranks), PAT's steps, and one step of moves both
as builder calls (:func:`post`) and compiled with numpy (:func:`calls`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kernels.compiled import CStep, runs
from kernels.schedule import Range, StepBuilder
from kernels.topology import Topology


def node_order(topology: Topology) -> list[int]:
    return [r for node in topology.nodes() for r in node]


def move_runs(b: StepBuilder, src: int, dst: int, ranges: Iterable[Range], *, reduce: bool,
              step: int) -> None:
    """Move ``ranges`` (same positions on both ranks), one message per run of adjacent ones."""
    out: list[Range] = []
    for r in sorted((r for r in ranges if r.size), key=lambda r: r.start):
        if out and out[-1].stop == r.start:
            out[-1] = Range(out[-1].start, r.stop)
        else:
            out.append(r)
    for r in out:
        b.move(src, dst, r, reduce=reduce, step=step)


@dataclass(frozen=True, slots=True)
class Fold:
    """Virtual rank v < rem stands for the pair ``order[2v]`` (the extra rank, idle in between)
    and ``order[2v+1]`` (its keeper, which does the work); v >= rem for ``order[v + rem]``."""

    order: Sequence[int]

    @property
    def pp(self) -> int:
        return 1 << (len(self.order).bit_length() - 1)

    @property
    def rem(self) -> int:
        return len(self.order) - self.pp

    @property
    def distances(self) -> list[int]:
        """1, 2, 4, ..., p'/2: the partner distances of recursive doubling."""
        return [1 << k for k in range(self.pp.bit_length() - 1)]

    def span(self, v: int, d: int) -> tuple[int, int]:
        """The aligned group of d virtual ranks that holds v."""
        return v & -d, (v & -d) + d

    def keeper(self, v: int) -> int:
        return self.order[2 * v + 1] if v < self.rem else self.order[v + self.rem]

    def group(self, lo: int, hi: int) -> list[int]:
        """The real ranks of virtual ranks lo..hi-1."""
        return list(self.order[lo + min(lo, self.rem):hi + min(hi, self.rem)])

    def size(self, lo: int, hi: int) -> int:
        return hi - lo + min(hi, self.rem) - min(lo, self.rem)

    def virtual(self, rank: int) -> tuple[int, bool]:
        """(virtual rank, whether ``rank`` is an extra rank) of a real rank."""
        q = self.order.index(rank)
        return (q // 2, q % 2 == 0) if q < 2 * self.rem else (q - self.rem, False)


def holders(topology: Topology) -> list[list[list[int]]]:
    """``[k][i]``: the ranks whose blocks local index i of node k holds (j mod l_k == i)."""
    nodes = topology.nodes()
    return [[[r for other in nodes for j, r in enumerate(other) if j % len(node) == i]
             for i in range(len(node))] for node in nodes]


def held(topology: Topology, rank: int) -> int:
    """How many blocks ``rank`` holds: the sum over nodes m of ceil((l_m - i) / l_k)."""
    sizes = [len(n) for n in topology.nodes()]
    lk, i = sizes[topology.node_of[rank]], topology.local_index(rank)
    return sum(-((i - lm) // lk) for lm in sizes)


def span(blocks: Sequence[Range], lo: int, hi: int) -> Range:
    """Blocks ``lo..hi-1`` (contiguous) as one element range."""
    return Range(blocks[lo].start, blocks[hi - 1].stop)


def pat_dims(p: int) -> list[int]:
    """0, 1, ..., ceil(log2 p) - 1: the dimensions (distances 2^d) of PAT's steps."""
    return list(range((p - 1).bit_length()))


def pat_offsets(p: int, d: int) -> list[int]:
    """Block offsets s a rank holds before PAT all_gather's step at distance 2^d and passes on
    (those reduce_scatter's step at 2^d reduces in): multiples of 2^(d+1) with s + 2^d < p.
    Block offset s' reaches its rank at the step of its lowest set bit, after hops along its
    higher bits, so every offset below p arrives exactly once and none beyond is sent."""
    return list(range(0, p - (1 << d), 2 << d))


def pat_step(order: np.ndarray, d: int, gather: bool) -> CStep:
    """PAT's step at distance 2^d on the symbolic build (block r is atom r), generated: member
    i sends member i - 2^d (``gather``) the blocks of members i + s, or member to = i + 2^d
    its partial sums of the blocks of members to + s (s in :func:`pat_offsets`), one message
    per run of adjacent blocks."""
    p = order.size
    i = np.arange(p)
    to = (i - (1 << d)) % p if gather else (i + (1 << d)) % p
    offs = np.asarray(pat_offsets(p, d), np.int64)
    atom = order[((i if gather else to)[:, None] + offs[None, :]) % p].ravel()
    g = np.repeat(i, offs.size)
    return runs(order[g], order[to][g], g, atom, not gather)


Moves = list[tuple[int, int, Sequence[int]]]  # one step's (src, dst, block indices), posted in order


def post(b: StepBuilder, blocks: Sequence[Range], moves: Moves, *, reduce: bool) -> None:
    """One step of ``moves``, each a :func:`move_runs` of its blocks (:func:`calls` compiles
    the same step with numpy)."""
    st = b.step()
    for src, dst, group in moves:
        move_runs(b, src, dst, [blocks[q] for q in group], reduce=reduce, step=st)


def calls(moves: Sequence[tuple[int, int, Sequence[int]]], reduce: bool) -> CStep:
    """A step of :func:`move_runs` calls ``(src, dst, blocks)`` on the symbolic build (block r
    is atom r), in posting order, generated."""
    sizes = np.asarray([len(blk) for _, _, blk in moves], np.int64)
    atom = np.fromiter((q for _, _, blk in moves for q in blk), np.int64, int(sizes.sum()))
    key = np.repeat(np.arange(len(moves)), sizes)
    src, dst = (np.asarray([m[x] for m in moves], np.int64)[key] for x in (0, 1))
    return runs(src, dst, key, atom, reduce)


def hop_moves(nodes: Sequence[Sequence[int]], shift: int) -> Moves:
    """Every node k passes node k+1 (mod N) the blocks of node k - ``shift``'s ranks, the j-th
    from its holder on k (local index j mod l_k) to its holder on k+1 (j mod l_(k+1)); one move
    per pair of holders, posted where its first block is (:func:`node_hops` generates it)."""
    pairs: dict[tuple[int, int], list[int]] = {}
    for k, node in enumerate(nodes):
        nxt = nodes[(k + 1) % len(nodes)]
        for j, r in enumerate(nodes[(k - shift) % len(nodes)]):
            pairs.setdefault((node[j % len(node)], nxt[j % len(nxt)]), []).append(r)
    return [(src, dst, group) for (src, dst), group in pairs.items()]


def node_hops(nodes: Sequence[Sequence[int]], shift: int, reduce: bool) -> CStep:
    """Every node k passes node k+1 (mod N) the blocks of node k - ``shift``'s ranks, each from
    its holder on k to its holder on k+1 (the j-th rank of the owner's: local index j mod l_k to
    j mod l_(k+1)), on the symbolic build, generated; a pair's blocks posted where its first
    block is."""
    n = len(nodes)
    size = np.asarray([len(node) for node in nodes], np.int64)
    start, flat = np.cumsum(size) - size, np.asarray([r for node in nodes for r in node], np.int64)
    owner = (np.arange(n) - shift) % n
    k = np.repeat(np.arange(n), size[owner])
    j = np.arange(k.size) - np.repeat(np.cumsum(size[owner]) - size[owner], size[owner])
    nxt = (k + 1) % n
    src, dst = flat[start[k] + j % size[k]], flat[start[nxt] + j % size[nxt]]
    _, first, inv = np.unique(src * flat.size + dst, return_index=True, return_inverse=True)
    return runs(src, dst, first[inv], flat[start[owner[k]] + j], reduce)
