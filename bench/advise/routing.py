"""Routing statistics of a mixture-of-experts model, as the advice prices its all-to-alls: the
(sent, received) fractions of the assignments (tokens x top_k) on the rank priced, per MoE
layer; skewed by an ``imbalance`` (max / mean tokens per expert, capacity-clipped) or measured
(:meth:`Routing.of_counts`). docs/advise.md (Mixture of experts).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from bench.argtypes import CommbenchError


@dataclass(frozen=True)
class Routing:
    imbalance: float = 1.0  # skewed form: max / mean tokens per expert (1: uniform)
    measured: tuple[tuple[Fraction, Fraction], ...] = ()  # per MoE layer: (sent, received)

    def __post_init__(self) -> None:
        if self.imbalance < 1:
            raise CommbenchError(f"imbalance is max/mean tokens per expert: >= 1, got {self.imbalance}")

    def fractions(self, layer: int, experts: int, ep: int, capacity_factor: float
                  ) -> tuple[Fraction, Fraction]:
        """(sent, received) of MoE layer ``layer`` (0-based) on the rank priced, each a fraction
        of the assignments the rank routes, with ``experts`` sharded over ``ep`` ranks."""
        if self.measured:
            return self.measured[layer]
        return _skewed(self.imbalance, experts, ep, capacity_factor)

    @classmethod
    def of_counts(cls, kept: list[list[list[int]]], rank: int, ep: int, assignments: int
                  ) -> Routing:
        """Rank ``rank``'s fractions from ``kept[layer][rank][expert]`` (assignments each rank
        dispatched to each expert, after capacity), EP groups of ``ep`` consecutive ranks,
        ``assignments`` routed per rank (its tokens x top_k)."""
        group = range(rank - rank % ep, rank - rank % ep + ep)
        out = []
        for layer in kept:
            held = len(layer[rank]) // ep
            mine = slice(rank % ep * held, rank % ep * held + held)
            received = sum(sum(layer[src][mine]) for src in group)
            out.append((Fraction(sum(layer[rank]), assignments), Fraction(received, assignments)))
        return cls(measured=tuple(out))


def of_record(rec: dict[str, Any]) -> Routing:
    """The skewed routing of a training record's router: the median over its steps of
    ``moe_imbalance`` (uniform for a record without one)."""
    steps = sorted(rec.get("moe_imbalance") or [1.0])
    return Routing(imbalance=max(1.0, steps[len(steps) // 2]))


@functools.lru_cache(maxsize=1024)  # the same for every layer of every layout searched
def _skewed(imbalance: float, experts: int, ep: int, capacity_factor: float
            ) -> tuple[Fraction, Fraction]:
    rho, cap = Fraction(imbalance), Fraction(capacity_factor)
    hot = min(rho, cap)
    others = (experts - rho) / (experts - 1) if experts > 1 else Fraction(0)
    held = experts // ep
    return 1 - max(Fraction(0), rho - cap) / experts, (hot + (held - 1) * others) / held
