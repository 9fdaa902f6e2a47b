"""One question to ``advise``: a model, a cluster (profile + topology), world sizes, a global
batch, a precision and where compute times come from; answered per world size."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from bench.advise.achieved import Achieved, Efficiency
from bench.advise.comm import Bytes
from bench.advise.compare import Spec, chosen, label, matches
from bench.advise.compute import Compute, Flops
from bench.advise.evaluate import Job, Result, evaluate
from bench.advise.interference import Measured
from bench.advise.layout import Layout
from bench.advise.search import NoFit, Ranked, layouts, search, smallest_fit
from bench.advise.shape import Shape
from bench.advise.software import Software, software_of
from bench.advise.tiles import Tiles, parse_tiles
from bench.advise.timing import Timer
from bench.argtypes import CommbenchError
from bench.costmodel.model import Cluster
from bench.costmodel.profile import Profile, ProfileError
from bench.training.analytic import Precision

MAX_GROWTH = 64  # smallest-fit search: up to 64 x the asked world size


class AdviceError(CommbenchError, ValueError):
    """A question that cannot be answered; one line."""


def device_key(profile: Profile, key: str) -> float:
    """``device.<key>`` of the profile, or ProfileError naming it."""
    v = profile.device.get(key)
    if not v:
        raise ProfileError(f"{profile.path or profile.name}: device.{key} is missing (advise "
                           f"needs it: add it under device:)")
    return float(v)


def device_compute(profile: Profile) -> Compute:
    """As achieved where the profile states ``device.gemm_efficiency``, else FLOPs at
    ``device.flops_per_s`` (the peak: a lower bound on the step)."""
    dev = profile.device
    sixteen = float(dev["flops_16bit_per_s"]) if dev.get("flops_16bit_per_s") else None
    peak = device_key(profile, "flops_per_s")
    if "gemm_efficiency" not in dev:
        return Flops(peak, sixteen)
    try:
        # gemm_sustained: the share of the microbenchmark's rate a training run's GEMMs sustain
        # (fitted: benchmarks/advise_ranking.py --fit; 1 where unstated)
        gemm = float(dev["gemm_efficiency"]) * float(dev.get("gemm_sustained", 1.0))
        eff = Efficiency(peak, gemm, float(dev.get("gemm_latency_s", 0.0)),
                         device_key(profile, "memory_bandwidth_bytes_per_s"),
                         software_of(dev).attention,
                         float(dev.get("memory_efficiency", Efficiency.memory)),
                         _tiles(dev))
    except ValueError as e:
        raise ProfileError(f"{profile.path or profile.name}: {e}") from None
    return Achieved(eff, sixteen)


def _tiles(dev: dict[str, object]) -> Tiles | None:
    """The device's tiles where the profile states ``sm_count`` and ``gemm_tiles``."""
    if "sm_count" not in dev or "gemm_tiles" not in dev:
        return None
    return Tiles(int(dev["sm_count"]), parse_tiles(str(dev["gemm_tiles"])),  # type: ignore[call-overload]
                 float(dev.get("gemm_tile_reuse", 0.0)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Question:
    shape: Shape
    profile: Profile
    cluster: Cluster
    global_batch: int
    precision: Precision
    compute: Compute | None = None  # None: the profile's (device_compute)
    bucket_mb: float = Layout.bucket_mb
    measured: Measured | None = None  # a concurrent run's slowdowns and overlap (--interference)

    @property
    def amps(self) -> tuple[str, ...]:
        """Autocast precisions searched: bf16 beside fp32 for an fp32 question (fp16 prices as
        bf16: the same bytes and throughput); under mixed every layout computes in 16 bits."""
        return ("fp32", "bf16") if self.precision.param_bytes == 4 else ("fp32",)

    @property
    def software(self) -> Software:
        """The profile's training software (:mod:`bench.advise.software`)."""
        return software_of(self.profile.device)

    def jobs(self) -> Callable[[int], Job]:
        limit = device_key(self.profile, "memory_bytes")
        compute = self.compute or device_compute(self.profile)
        timer = Timer(self.profile, self.cluster)
        shape, nbytes = self.shape.under(self.software), Bytes.of(self.precision)
        return functools.cache(lambda batch: Job(shape, batch, self.precision, compute,
                                                 timer, limit, nbytes, self.measured))

    def answer(self, world: int, jobs: Callable[[int], Job] | None = None,
               keep: int | None = None, select: Callable[[Layout], bool] | None = None
               ) -> Ranked:
        """Every layout ranked (:func:`bench.advise.search.search`)."""
        jobs = jobs or self.jobs()
        try:
            ranked = search(jobs, self.shape.model, world, self.global_batch, self.bucket_mb,
                            self.amps, keep, select, self.software.recomputes,
                            self.software.context_parallel)
        except ValueError as e:
            raise AdviceError(str(e)) from None
        if ranked.best is None:
            step = self.cluster.node_sizes[0]
            w = smallest_fit(jobs, self.shape.model, world, self.global_batch, step,
                             world * MAX_GROWTH)
            where = (f"the smallest world size that fits is {w}" if w else
                     f"nothing fits up to {world * MAX_GROWTH} ranks either")
            raise NoFit(f"{self.shape.name} fits no layout at {world} ranks within "
                        f"device.memory_bytes ({jobs(1).memory_limit / 2**30:.0f} GiB) per rank: "
                        f"{where}")
        return ranked

    def compare(self, world: int, spec: Spec, jobs: Callable[[int], Job] | None = None
                ) -> Result:
        """The user's layout ``spec`` (:mod:`bench.advise.compare`) at ``world`` ranks: its
        fastest variant that fits, else the one nearest to fitting; AdviceError where the
        search offers no layout of that description."""
        jobs = jobs or self.jobs()
        found = [evaluate(jobs(b), lay)
                 for lay, b in layouts(self.shape.model, world, self.global_batch, self.bucket_mb,
                                       self.amps, self.software.recomputes,
                                       self.software.context_parallel)
                 if matches(spec, lay)]
        got = chosen(found, lambda r: r.fits)
        if got is None:
            raise AdviceError(f"--compare {label(spec)}: no such layout at {world} ranks with a "
                              f"global batch of {self.global_batch} (degrees must multiply to "
                              f"the world size, the data degree divide the batch, the tensor "
                              f"degree the heads; micro-batches as the search offers them)")
        return got  # type: ignore[no-any-return]
