"""Count matrices of an uneven all-to-all: ``C[src][dst]`` elements that rank src sends rank dst.

A matrix is named by a :class:`CountSpec` (``zipf,s=1.2,seed=3``; the kinds and their parameters:
docs/collectives.md, "alltoallv and its count matrices") and made for a size ``n`` and a world
``p`` by :func:`matrix`, deterministically, scaled so that its busiest line (row or column sum)
is exactly ``n``: nccl-tests' ``alltoallv_perf`` measure (``AlltoAllvGetBw``). Each kind is one
generator registered below with :func:`kind`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kernels.registry import Registry

QUANTUM = 1 << 20  # float weights are quantized to integers with this busiest line
MAX_N = 1 << 42  # n * quantized weight stays within int64


@dataclass(frozen=True)
class Generator:
    """One kind: its parameters with their defaults (their types follow the defaults), and
    ``make(n, p, params, rng)``: the p x p int64 matrix with busiest line n."""

    name: str
    defaults: Mapping[str, object]
    make: Callable[[int, int, Mapping[str, object], np.random.Generator], np.ndarray]


KINDS: Registry[Generator] = Registry("count matrix kind")


def kind(name: str, **defaults: object) -> Callable[[Callable], Callable]:
    def deco(fn: Callable) -> Callable:
        KINDS.add(name, Generator(name, {"seed": 0, **defaults}, fn))
        return fn

    return deco


@dataclass(frozen=True, slots=True)
class CountSpec:
    """A count matrix by name: its kind and the parameters given (as text, checked by
    :meth:`parse`)."""

    kind: str = "uniform"
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> CountSpec:
        """``kind[,key=value...]``; unknown kinds or keys and bad values raise ValueError."""
        head, *rest = [t.strip() for t in text.split(",")] if text.strip() else ["uniform"]
        gen = KINDS.get(head)
        params = []
        for item in rest:
            key, eq, value = item.partition("=")
            if not eq or key.strip() not in gen.defaults:
                raise ValueError(f"count matrix {head}: bad parameter {item!r}; "
                                 f"valid: {', '.join(gen.defaults)}")
            params.append((key.strip(), value.strip()))
        spec = cls(head, tuple(sorted(params)))
        spec.values()  # types checked now
        return spec

    @property
    def text(self) -> str:
        return ",".join([self.kind, *(f"{k}={v}" for k, v in self.params)])

    def values(self) -> dict[str, object]:
        gen = KINDS.get(self.kind)
        out = dict(gen.defaults)
        for k, v in self.params:
            want = type(gen.defaults[k])
            try:
                out[k] = want(v)
            except ValueError:
                raise ValueError(f"count matrix {self.kind}: {k}={v!r} is not a {want.__name__}"
                                 ) from None
        return out


@functools.lru_cache(maxsize=64)
def matrix(text: str, n: int, p: int) -> np.ndarray:
    """The count matrix ``text`` (:meth:`CountSpec.parse`) for size n at p ranks (read-only)."""
    if not 0 <= n < MAX_N:
        raise ValueError(f"count matrix size {n} outside [0, {MAX_N})")
    spec = CountSpec.parse(text)
    vals = spec.values()
    out = KINDS.get(spec.kind).make(n, p, vals, np.random.default_rng(int(vals["seed"])))
    out = np.asarray(out, dtype=np.int64)
    out.setflags(write=False)
    return out


def busiest(c: np.ndarray) -> int:
    """The largest row or column sum (the size every matrix is scaled to)."""
    return int(max(c.sum(axis=1).max(), c.sum(axis=0).max())) if c.size else 0


def scale(w: np.ndarray, n: int) -> np.ndarray:
    """Non-negative weights to integer counts whose busiest line is exactly n: floors of
    n w / M (M the weights' busiest line), the busiest line topped up to n by largest
    remainders; each top-up lands where the other line's floors sum below n by more than its
    fraction, so no line exceeds n."""
    w = np.asarray(w)
    if np.any(w < 0):
        raise ValueError("count matrix weights must be >= 0")
    if busiest(w) == 0:
        raise ValueError("count matrix is all zero")
    if not np.issubdtype(w.dtype, np.integer) or busiest(w) > QUANTUM:
        w = np.floor(w.astype(np.float64) * QUANTUM / float(busiest(w))).astype(np.int64)
    w = w.astype(np.int64)
    m = busiest(w)
    c, rem = (n * w) // m, (n * w) % m
    rows, cols = w.sum(axis=1), w.sum(axis=0)
    idx: tuple[int | slice, int | slice] = ((int(np.argmax(rows)), slice(None))
                                            if rows.max() >= cols.max()
                                            else (slice(None), int(np.argmax(cols))))
    seg = c[idx]  # a view of the busiest line
    short = n - int(seg.sum())
    order = np.argsort(-rem[idx], kind="stable")[:short]
    seg[order] += 1
    return c


def circulant(row: np.ndarray, n: int) -> np.ndarray:
    """Row weights by distance (dst - src) mod p, rounded once by largest remainders to sum to
    n and shifted per source: every row and every column sums to n."""
    p = len(row)
    w = np.asarray(row, dtype=np.float64)
    exact = w * n / w.sum()
    base = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - base), kind="stable")[: n - int(base.sum())]
    base[order] += 1
    src, dst = np.indices((p, p))
    return base[(dst - src) % p]


def counts_from_routing(tokens: Sequence[Sequence[int]], experts: int) -> np.ndarray:
    """Tokens per (source rank, destination rank): rank r routed its tokens to the experts in
    ``tokens[r]`` (top-k choices flattened); experts are sharded in contiguous blocks of
    ``experts / p`` over the p = len(tokens) ranks, as expert parallelism places them."""
    p = len(tokens)
    if p < 1 or experts < 1 or experts % p:
        raise ValueError(f"routing of {experts} experts over {p} ranks: experts must be a "
                         f"positive multiple of the ranks")
    out = np.zeros((p, p), dtype=np.int64)
    for r, chosen in enumerate(tokens):
        e = np.asarray(chosen, dtype=np.int64)
        if e.size and (e.min() < 0 or e.max() >= experts):
            raise ValueError(f"routing: rank {r} names an expert outside 0..{experts - 1}")
        out[r] = np.bincount(e // (experts // p), minlength=p)
    return out


@kind("uniform")
def _uniform(n: int, p: int, v: Mapping[str, object], rng: np.random.Generator) -> np.ndarray:
    return circulant(np.ones(p), n)


@kind("distance", spread=1.0)
def _distance(n: int, p: int, v: Mapping[str, object], rng: np.random.Generator) -> np.ndarray:
    s = float(v["spread"])  # type: ignore[arg-type]
    if not 0.0 <= s <= 1.0:
        raise ValueError(f"count matrix distance: spread={s} outside [0, 1]")
    if p == 1:
        return np.array([[n]])
    d = np.arange(p, dtype=np.float64)
    return circulant((1 - s) / p + s * d / (p * (p - 1) / 2), n)


@kind("zipf", s=1.0)
def _zipf(n: int, p: int, v: Mapping[str, object], rng: np.random.Generator) -> np.ndarray:
    popularity = rng.permutation(p)  # peer j is the popularity[j]-th hottest
    w = 1.0 / (popularity + 1.0) ** float(v["s"])  # type: ignore[arg-type]
    return scale(np.tile(w, (p, 1)), n)


@kind("hot", fraction=0.5, peer=-1)
def _hot(n: int, p: int, v: Mapping[str, object], rng: np.random.Generator) -> np.ndarray:
    f, h = float(v["fraction"]), int(v["peer"])  # type: ignore[arg-type]
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"count matrix hot: fraction={f} outside [0, 1]")
    if h >= p:
        raise ValueError(f"count matrix hot: peer={h} outside the {p} ranks")
    h = int(rng.integers(p)) if h < 0 else h
    w = np.full((p, p), (1 - f) / p)
    w[:, h] += f
    return scale(w, n)


@kind("zero_rows", rows=1)
def _zero_rows(n: int, p: int, v: Mapping[str, object], rng: np.random.Generator) -> np.ndarray:
    k = min(int(v["rows"]), p - 1)  # type: ignore[arg-type]
    c = circulant(np.ones(p), n)
    c[rng.permutation(p)[:k]] = 0
    return c


@kind("trace", path="")
def _trace(n: int, p: int, v: Mapping[str, object], rng: np.random.Generator) -> np.ndarray:
    raw = json.loads(Path(str(v["path"])).read_text())
    if len(raw["tokens"]) != p:
        raise ValueError(f"count matrix trace {v['path']}: {len(raw['tokens'])} ranks, not {p}")
    return scale(counts_from_routing(raw["tokens"], int(raw["experts"])), n)


@kind("explicit", rows="")
def _explicit(n: int, p: int, v: Mapping[str, object], rng: np.random.Generator) -> np.ndarray:
    rows = [[int(x) for x in r.split()] for r in str(v["rows"]).split("/")]
    if len(rows) != p or any(len(r) != p for r in rows):
        raise ValueError(f"count matrix explicit: rows={v['rows']!r} is not {p} x {p}")
    return scale(np.array(rows, dtype=np.int64), n)
