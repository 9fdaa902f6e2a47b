"""A GEMM's time from its tiles and waves (NVIDIA, "Matrix Multiplication Background" user's
guide, sections "Tile quantization" and "Wave quantization"): the output is cut into tiles of
``rows x columns``, partial tiles computed whole; the tiles run on the device's SMs one per SM
at a time, in waves, the last wave as long as a full one. Each tile of a k-deep product costs
2 x rows x columns x k FLOPs at an SM's share of the large-GEMM rate, scaled down for a tile
whose operand reuse, rows x columns / (rows + columns) FLOPs per 16-bit operand byte, is below
the device's ``gemm_tile_reuse`` (a small tile reloads its operands from L2 more often). The
library picks the tile of least time among the profile's ``gemm_tiles``. Keys: docs/advise.md
(Compute).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Tiles:
    sms: int  # device.sm_count
    shapes: tuple[tuple[int, int], ...]  # device.gemm_tiles: (rows, columns) of an output tile
    reuse: float = 0.0  # device.gemm_tile_reuse: FLOPs per operand byte a tile needs to run at
    # full rate (0: every tile at full rate)

    def __post_init__(self) -> None:
        if self.sms < 1 or not self.shapes or any(r < 1 or c < 1 for r, c in self.shapes):
            raise ValueError(f"device.sm_count {self.sms} and gemm_tiles {self.shapes}: "
                             f"positive counts and at least one tile")
        if self.reuse < 0:
            raise ValueError(f"device.gemm_tile_reuse must be >= 0, got {self.reuse}")

    @staticmethod
    def count(m: int, n: int, rows: int, cols: int, batch: int = 1) -> int:
        """Tiles of ``rows x cols`` covering an ``m x n`` output, ``batch`` times."""
        return math.ceil(m / rows) * math.ceil(n / cols) * batch

    def waves(self, tiles: int) -> int:
        """Rounds of one tile per SM that ``tiles`` take."""
        return math.ceil(tiles / self.sms)

    def rate(self, rows: int, cols: int) -> float:
        """A tile's share of the full per-SM rate, in (0, 1]."""
        if not self.reuse:
            return 1.0
        return min(1.0, rows * cols / (rows + cols) / self.reuse)

    def seconds(self, m: int, n: int, k: int, batch: int, sm_rate: float) -> float:
        """The compute time of the GEMM at ``sm_rate`` FLOP/s per SM, on its fastest tile."""
        return min(self.waves(self.count(m, n, r, c, batch)) * 2.0 * r * c * k
                   / (sm_rate * self.rate(r, c)) for r, c in self.shapes)

    def tile_of(self, m: int, n: int, k: int, batch: int = 1) -> tuple[int, int]:
        """The tile :meth:`seconds` runs on (the first of equals)."""
        return min(self.shapes, key=lambda s: self.waves(self.count(m, n, *s, batch))
                   * s[0] * s[1] / self.rate(*s))


def parse_tiles(text: str) -> tuple[tuple[int, int], ...]:
    """``device.gemm_tiles``: ``256x128,128x128,...``; ValueError naming the key."""
    out = []
    for part in str(text).split(","):
        r, x, c = part.strip().partition("x")
        if not x or not r.isdigit() or not c.isdigit():
            raise ValueError(f"device.gemm_tiles: {part.strip()!r} is not ROWSxCOLUMNS "
                             f"(e.g. 256x128)")
        out.append((int(r), int(c)))
    return tuple(out)
