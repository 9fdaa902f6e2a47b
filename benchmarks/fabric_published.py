"""Benchmark: the vendor model (``commbench predict``'s ``native`` on a fabric preset) against
published NCCL all_reduce figures of 8-GPU H100/H200 nodes.

    .venv/bin/python -m benchmarks.fabric_published

Per published figure: the preset and topology that match its machine, the size (8 GiB unless the
source used another), the NCCL settings it ran under (default, NCCL_ALGO forced, NVLS off), the
predicted busbw and algorithm/protocol the model chose, the error, and whether the figure was
used to fit a preset parameter (``fit``), states the parameter's source (``src``: the per-NIC
figure comes from the same maintainers' statement as the 396 GB/s) or is held out (``held``).
Default cases go through :func:`bench.costmodel.predict.predict` (what ``commbench predict``
records); forced and disabled ones through :func:`bench.costmodel.vendor.choose.choose`.
Target: every figure within 15 %, and NVLS on 1 node of 8, NVLSTree on 2 nodes, Ring on 4.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from bench.argtypes import OneLineParser
from bench.costmodel.model import parse_topology
from bench.costmodel.predict import predict
from bench.costmodel.profile import load_profile
from bench.costmodel.vendor.choose import choose
from bench.measure import metrics
from benchmarks import results

GiB = 1 << 30
NCCL_TESTS_309 = "NVIDIA/nccl-tests#309 (HGX H100, 8 GPU-NIC pairs of 400G IB per node)"
STAS = ("stas00/ml-engineering, network/benchmarks (AWS p5en: 8x H200, 16x 200G EFA, "
        "NCCL 2.27)")
MAINTAINERS = "NCCL maintainers, NVIDIA/nccl-tests#319 and #290 (~46-48 GB/s per NDR NIC)"


@dataclass(frozen=True)
class Figure:
    busbw: float  # GB/s, published
    profile: str
    topology: str
    setting: str  # default | ring (NCCL_ALGO=ring) | nvlstree (forced) | nvls-off
    expect: str  # the algorithm NCCL used there
    role: str  # fit | src | held
    source: str
    nbytes: int = 8 * GiB


FIGURES = (
    Figure(480.0, "h100-ib400", "1x8", "default", "NVLS", "held", NCCL_TESTS_309),
    Figure(470.0, "h100-ib400", "2x8", "default", "NVLSTree", "held", NCCL_TESTS_309),
    Figure(365.84, "h100-ib400", "4x8", "default", "Ring", "held", NCCL_TESTS_309),
    Figure(364.65, "p5en-h200-efa", "4x8", "ring", "Ring", "held", STAS),
    Figure(364.87, "p5en-h200-efa", "4x8", "default", "Ring", "held", STAS),
    Figure(310.07, "p5en-h200-efa", "4x8", "nvlstree", "NVLSTree", "held", STAS),
    Figure(463.55, "p5en-h200-efa", "2x8", "default", "NVLSTree", "held", STAS),
    Figure(482.05, "p5en-h200-efa", "1x8", "default", "NVLS", "held", STAS, 16 * GiB),
    *(Figure(bw, "h200-ib400", f"1x{n}", "default", "NVLS" if n > 4 else "NVLS|Ring",
             "fit" if n == 8 else "held", STAS + ", one node at 8 GiB, NVLS on")
      for n, bw in zip(range(4, 9), (363.3, 414.2, 435.6, 460.0, 473.1))),
    *(Figure(bw, "h200-ib400", f"1x{n}", "nvls-off", "Ring", "fit" if n == 8 else "held",
             STAS + ", one node at 8 GiB, NVLS off")
      for n, bw in zip(range(4, 9), (363.3, 364.4, 365.1, 365.7, 365.6))),
    Figure(396.0, "h100-ib400", "2x8", "ring", "Ring", "src", MAINTAINERS),
)
NOTES = """
# Calibration, honestly: three achievable-bandwidth parameters come from published figures,
# all others are spec-sheet values. ring_efficiency (0.8124 of the 450 GB/s NVLink4 port) is
# fitted on the 8-GPU NVLS-off point (365.6) and nvls (304 GB/s per port) on the 8-GPU NVLS
# point (473.1), both from the p5en one-node series; the per-NIC 47 GB/s comes from the NCCL
# maintainers' 46-48 GB/s statement, the source of the 396 figure too (role src). The 4..7-GPU
# ring points are held out but weakly: the model's one-node ring busbw is flat in the GPU count
# (the NVSwitch port bounds it), as the published series is. At 4 GPUs NVLS and Ring tie
# within 0.2 % in the model (it picks Ring; NCCL's NVLS-on figure equals its ring figure).
# Largest held-out misses: NVLSTree on 2 nodes (+8 to +9 %: the model takes the slower of the
# NVLS and network parts as pipelined perfectly) and NVLSTree forced on 4 nodes (-8 %: derated
# as Tree, 0.92 x 0.85). The 396 GB/s ring over 8 NDR NICs is NIC-bound in NCCL's statement;
# here a 2x8 ring is NVLink-bound at 365 (-8 %), which the 4-node figures (365.84, 364.65)
# support. Sizes: 8 GiB except the p5en one-node 482.05 (16 GiB).
"""
SETTINGS = {"default": {}, "ring": {"only": "Ring"}, "nvlstree": {"only": "NVLSTree"},
            "nvls-off": {"disable": ("NVLS",)}}


def modelled(f: Figure) -> tuple[float, str]:
    """Predicted busbw (GB/s) and the algorithm/protocol chosen."""
    prof, cluster = load_profile(f.profile), parse_topology(f.topology)
    placed = cluster.place(cluster.world)
    if f.setting == "default":
        pred = next(iter(predict(prof, placed, "all_reduce", [f.nbytes], "float32", ["native"])))
        assert pred.estimate is not None and pred.choice is not None, pred.why
        bw = metrics.busbw_gbps("all_reduce", placed.world, pred.nbytes, pred.estimate.time_s)
        return bw, f"{pred.choice['algorithm']}/{pred.choice['protocol']}"
    assert prof.fabric is not None
    c = choose(placed, prof.fabric, "all_reduce", f.nbytes, **SETTINGS[f.setting])
    assert not isinstance(c, str), c
    return c.busbw / 1e9, c.label


def main() -> int:
    OneLineParser(description=__doc__.splitlines()[0]).parse_args()
    print("# all_reduce busbw (GB/s), published vs the vendor model of commbench predict")
    print(f"{'profile':<14} {'topo':<5} {'size':>6} {'setting':<9} {'published':>9} "
          f"{'model':>7} {'error':>7} {'chose':<16} {'want':<9} {'role':<4}")
    errs: dict[str, list[float]] = {"fit": [], "src": [], "held": []}
    bad = 0
    for f in FIGURES:
        bw, label = modelled(f)
        err = bw / f.busbw - 1
        errs[f.role].append(abs(err))
        ok_alg = label.split("/")[0] in f.expect.split("|")
        bad += (not ok_alg) + (abs(err) > 0.15)
        print(f"{f.profile:<14} {f.topology:<5} {f.nbytes // GiB:>4}Gi {f.setting:<9} "
              f"{f.busbw:>9.2f} {bw:>7.1f} {err:>+6.1%} {label:<16} "
              f"{f.expect + ('' if ok_alg else ' !'):<9} {f.role:<4}")
    print()
    for role, what in (("fit", "fitted points (ring_efficiency, nvls)"),
                       ("src", "from the per-NIC statement's own source"),
                       ("held", "held out")):
        e = errs[role]
        print(f"# {what}: {len(e)} figures, |error| median {statistics.median(e):.1%}, "
              f"worst {max(e):.1%}")
    print("# sources:")
    for s in dict.fromkeys(f.source.split(", one node")[0] for f in FIGURES):
        print(f"#   {s}")
    print(NOTES.rstrip())
    print(f"# {bad} figures off target (|error| > 15 % or another algorithm than NCCL's)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
