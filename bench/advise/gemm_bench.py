"""The achieved-compute curve measured on this device (``commbench gemm``): the model's own GEMM
shapes timed with torch, ``seconds = FLOPs / rate + t0`` fitted, written into a profile.
docs/advise.md (Measuring compute).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.advise.achieved import Gemm, block_gemms
from bench.advise.shape import Shape
from bench.argtypes import CommbenchError
from bench.costmodel.profile import Profile

WARMUP = 3  # untimed calls per shape (the first call on a device also starts its thread pool)


@dataclass(frozen=True)
class Point:
    gemm: Gemm
    seconds: float  # the fastest of the timed calls

    @property
    def rate(self) -> float:
        return self.gemm.flops / self.seconds


@dataclass(frozen=True)
class Fit:
    rate: float  # FLOP/s of a large GEMM (the curve's asymptote)
    latency: float  # s per call
    peak: float  # the profile's flops_per_s after the fit

    @property
    def efficiency(self) -> float:
        return self.rate / self.peak

    def point_efficiency(self, p: Point) -> float:
        return p.rate / self.peak


def model_gemms(shape: Shape, tensors: list[int], micro: int) -> list[Gemm]:
    """The distinct GEMM shapes of one block (piece 1) and the last piece (the LM head) at each
    tensor degree, for ``micro`` samples, in order of first appearance."""
    last = shape.model.num_pieces - 1
    out: dict[Gemm, None] = {}
    for t in tensors:
        for piece in dict.fromkeys((min(1, last), last)):
            for g in block_gemms(shape, t, piece, micro):
                out.setdefault(dataclasses.replace(g, scores=False), None)
    return list(out)


def resolve_device(name: str) -> str:
    """``auto``: cuda where torch sees one, else cpu; ``cuda`` without one is a ValueError."""
    import torch

    has = torch.cuda.is_available()
    if name == "cuda" and not has:
        raise CommbenchError("--device cuda: torch sees no CUDA device (use --device cpu or auto)")
    return "cuda" if name == "auto" and has else ("cpu" if name == "auto" else name)


def time_gemm(g: Gemm, device: str, repeats: int) -> Point:
    """The fastest of ``repeats`` timed calls after :data:`WARMUP` untimed ones (CUDA:
    synchronized after each): the device's throughput on the shape, not the scheduler's noise."""
    import torch

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(g.batch, g.m, g.k, device=device, dtype=dtype, generator=gen)
    b = torch.randn(g.batch, g.k, g.n, device=device, dtype=dtype, generator=gen)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(WARMUP):
        torch.matmul(a, b)
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        torch.matmul(a, b)
        sync()
        times.append(time.perf_counter() - t)
    return Point(g, min(times))


def fit(points: list[Point], peak: float | None) -> Fit:
    """``seconds = FLOPs / rate + t0`` by Theil-Sen (the median of the pairwise slopes, the
    median intercept): a shape slowed by a busy machine moves it less than least squares. A
    negative intercept is noise: then the rate is the median of the points' rates, t0 = 0."""
    xs, ys = [p.gemm.flops for p in points], [p.seconds for p in points]
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs))
              for j in range(i + 1, len(xs)) if xs[j] != xs[i]]
    slope = statistics.median(slopes) if slopes else 0.0
    t0 = statistics.median(y - slope * x for x, y in zip(xs, ys)) if slope > 0 else -1.0
    if t0 < 0:
        rate, t0 = statistics.median(p.rate for p in points), 0.0
    else:
        rate = 1.0 / slope
    return Fit(rate, t0, max(peak or 0.0, rate, max(p.rate for p in points)))


def fitted_profile(base: Profile, points: list[Point], f: Fit, device: str, name: str
                   ) -> dict[str, Any]:
    """The base profile with the fitted curve and the timed shapes, as YAML."""
    dev = {**base.device, "flops_per_s": f.peak, "gemm_efficiency": round(f.efficiency, 6),
           "gemm_latency_s": f.latency,
           "compute_source": f"commbench gemm on {device}: {len(points)} GEMM shapes timed, "
                             f"seconds = FLOPs / {f.rate:.4g} + {f.latency:.3g}",
           "gemm_points": [[p.gemm.m, p.gemm.n, p.gemm.k, p.gemm.batch, p.seconds]
                           for p in points]}
    dev.setdefault("attention", "flash")
    out = dataclasses.replace(base, name=name, device=dev).as_yaml()
    out["source"] = f"{base.source}; device compute measured by commbench gemm".lstrip("; ")
    return out


def write_yaml(data: dict[str, Any], path: Path) -> Path:
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100))
    return path
