"""Benchmark: the vendor model (``commbench predict``'s ``native`` on a fabric preset) against
published NCCL figures, every one in ``benchmarks/fabric_published.yaml`` with its source.

    .venv/bin/python -m benchmarks.fabric_published

Per figure: the preset and topology of its machine, the size, the NCCL setting it ran under
(default; ``ring``/``tree``/``nvlstree``: NCCL_ALGO forced; ``nvls-off``), the published value,
the prediction, the error (predicted / published - 1 on the published metric), the algorithm and
protocol NCCL's model picked (and the one the source says it used), and the figure's role:
``fit`` (a preset parameter was fitted on it), ``src`` (a parameter came from the same source's
statement), ``calib`` (the calibrated profile was fitted on it) or ``held`` (kept aside).
Default cases go through :func:`bench.costmodel.predict.predict` (what ``commbench predict``
records); forced and disabled ones through :func:`bench.costmodel.vendor.choose.choose`.
Target: |error| <= 15 % at >= 1 MiB and <= 25 % below, and NCCL's algorithm where the source
names it. The profile ``calibrated:P`` is P refitted (:mod:`bench.costmodel.fabric_fit`) on the
figures of P marked ``fit`` or ``held`` on topologies of fewer GPUs than the figure's.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from bench.argtypes import OneLineParser
from bench.costmodel.fabric_fit import Point, fit_profile
from bench.costmodel.model import parse_topology
from bench.costmodel.predict import predict
from bench.costmodel.profile import Profile, load_profile
from bench.costmodel.vendor.choose import choose, fastest
from bench.measure import metrics
from bench.units import parse_size
from benchmarks import results

YAML = Path(__file__).with_suffix(".yaml")
SETTINGS = {"default": {}, "ring": {"only": "Ring"}, "tree": {"only": "Tree", "disable": ("NVLS",)},
            "nvlstree": {"only": "NVLSTree"}, "nvls-off": {"disable": ("NVLS",)}}
MiB = 1 << 20


@dataclass(frozen=True)
class Figure:
    source: str
    collective: str
    nbytes: int
    metric: str  # busbw | time_us | bidir
    value: float
    profile: str
    topology: str
    role: str  # fit | src | calib | held
    setting: str = "default"
    expect: str = ""  # the algorithm(s) NCCL used, | between alternatives

    @property
    def world(self) -> int:
        return parse_topology(self.topology).world


def load(path: Path = YAML) -> tuple[dict[str, str], tuple[Figure, ...]]:
    raw = yaml.safe_load(path.read_text())
    figs = tuple(Figure(f["source"], f["collective"], parse_size(str(f["size"])), f["metric"],
                        float(f["value"]), f["profile"], str(f["topology"]), f["role"],
                        f.get("setting", "default"), f.get("expect", ""))
                 for f in raw["figures"])
    return raw["sources"], figs


def _value(metric: str, collective: str, world: int, nbytes: int, time_s: float) -> float:
    if metric == "time_us":
        return time_s * 1e6
    if metric == "bidir":
        return 2 * nbytes / time_s / 1e9
    return metrics.busbw_gbps(collective, world, nbytes, time_s)


def modelled_on(prof: Profile, f: Figure) -> tuple[float, str]:
    """The figure's metric predicted on ``prof``, and the algorithm/protocol chosen."""
    cluster = parse_topology(f.topology)
    placed = cluster.place(cluster.world)
    if f.setting == "default":
        dtype = "float32" if f.nbytes % 4 == 0 else "float16"
        pred = next(iter(predict(prof, placed, f.collective, [f.nbytes], dtype, ["native"])))
        assert pred.estimate is not None and pred.choice is not None, pred.why
        t, label = pred.estimate.time_s, f"{pred.choice['algorithm']}/{pred.choice['protocol']}"
        nbytes = pred.nbytes
    else:
        assert prof.fabric is not None
        c = choose(placed, prof.fabric, f.collective, f.nbytes, **SETTINGS[f.setting])
        assert not isinstance(c, str), c
        t, label, nbytes = c.time_s, c.label, f.nbytes
    return _value(f.metric, f.collective, placed.world, nbytes, t), label


@cache
def _calibrated(name: str, below: int) -> Profile:
    """``name`` refitted on its default all_reduce busbw figures of fewer than ``below`` GPUs."""
    base = load_profile(name)
    _, figs = load()
    pts = [Point(parse_topology(f.topology), f.collective, f.nbytes, f.value)
           for f in figs if f.profile == name and f.metric == "busbw" and f.world < below
           and f.setting == "default" and f.collective == "all_reduce" and f.nbytes >= MiB]
    return fit_profile(base, pts)


PRESET_FITS = (  # (preset, parameter, topology, setting): the preset states what these print
    ("gb200-nvl72", "ring_efficiency", "18x4:domain=18", "default"),
    ("gb200-nvl72", "nic_efficiency", "3x4", "nvls-off"),
)


def preset_fits(figs: tuple[Figure, ...]) -> list[str]:
    """Each preset parameter fitted on its figures, as the preset's comment states it."""
    out = []
    for name, key, topo, setting in PRESET_FITS:
        pts = [Point(parse_topology(f.topology), f.collective, f.nbytes, f.value) for f in figs
               if f.profile == name and f.topology == topo and f.setting == setting]
        got = fit_profile(load_profile(name), pts, [key]).fitted or {}
        out.append(f"# {name}: {key} = {got['fabric'][key]} (fitted on {len(pts)} figures of "
                   f"{topo}, {setting})")
    return out


def profile_of(f: Figure) -> Profile:
    kind, _, name = f.profile.rpartition(":")
    return _calibrated(name, f.world) if kind == "calibrated" else load_profile(name)


def modelled(f: Figure) -> tuple[float, str]:
    return modelled_on(profile_of(f), f)


def main() -> int:
    OneLineParser(description=__doc__.splitlines()[0]).parse_args()
    sources, figs = load()
    print("# published NCCL figures against the vendor model of commbench predict "
          "(error = predicted / published - 1)")
    print(f"{'source':<16} {'collective':<14} {'profile':<22} {'topology':<16} {'size':>7} "
          f"{'setting':<8} {'metric':<7} {'published':>9} {'model':>9} {'error':>7} "
          f"{'chose':<16} {'want':<9} role")
    errs: dict[tuple[str, bool], list[float]] = {}
    bad = 0
    for f in figs:
        got, label = modelled(f)
        err = got / f.value - 1
        big = f.nbytes >= MiB
        errs.setdefault((f.role, big), []).append(abs(err))
        ok_alg = not f.expect or label.split("/")[0] in f.expect.split("|")
        off = abs(err) > (0.15 if big else 0.25)
        bad += (not ok_alg) + off
        print(f"{f.source:<16} {f.collective:<14} {f.profile:<22} {f.topology:<16} "
              f"{_size(f.nbytes):>7} {f.setting:<8} {f.metric:<7} {f.value:>9.2f} {got:>9.2f} "
              f"{err:>+6.1%}{'!' if off else ' '} {label:<16} "
              f"{(f.expect or '-') + ('' if ok_alg else ' !'):<9} {f.role}")
    print()
    for (role, big), e in sorted(errs.items()):
        print(f"# {role:<5} {'>= 1 MiB' if big else '<  1 MiB'}: {len(e):>2} figures, |error| "
              f"median {statistics.median(e):.1%}, worst {max(e):.1%}")
    print("# preset parameters fitted here (the presets state these values):")
    for line in preset_fits(figs):
        print(line)
    cal = {f.profile for f in figs if f.profile.startswith("calibrated:")}
    for name in sorted(cal):
        below = min(f.world for f in figs if f.profile == name)
        print(f"# {name}: {_calibrated(name.split(':', 1)[1], below).fitted} (fitted on the "
              f"default all_reduce figures >= 1 MiB of fewer than {below} GPUs)")
    print()
    print("# NCCL's pick at scale (all_reduce, 256 MiB, h100-ib400, N x 8, leaves of 32 nodes, "
          "2:1 above them): the model's pick, its predicted busbw, and the fastest")
    for nodes in (1, 2, 4, 8, 16, 64, 256, 1024):
        spec = f"{nodes}x8:leaf=32:oversub=2"
        pl = parse_topology(spec).place(nodes * 8)
        fab = load_profile("h100-ib400").fabric
        assert fab is not None
        c, best = choose(pl, fab, "all_reduce", 256 * MiB), fastest(pl, fab, "all_reduce",
                                                                      256 * MiB)
        assert not isinstance(c, str) and not isinstance(best, str)
        print(f"#   {spec:<24} {c.label:<16} {c.busbw / 1e9:7.1f} GB/s   fastest {best.label:<16}"
              f" {best.busbw / 1e9:7.1f}")
    print("# sources:")
    for key, text in sources.items():
        print(f"#   {key}: {text}")
    print(f"# {bad} figures off target (|error| > 15 % at >= 1 MiB, > 25 % below, or another "
          "algorithm than NCCL's)")
    return 0


def _size(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return f"{n >> k}{unit}"
    return f"{n}B"


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
