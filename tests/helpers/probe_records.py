"""Synthetic link-probe records for the probe's tests: what a probe of a layout measures when
the α-β model times it, with seeded log-normal noise, an injected slow node or link, or stalled
pairs; and a probe run directory holding them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.measure.pairs import rounds
from bench.probe.links import Layout, flows, from_launch
from bench.probe.record import Samples, Settings, pair_record
from bench.store.records import SCHEMA_VERSION, ResultWriter, write_meta

ALPHA = {"intra": 2e-6, "inter": 2e-5}  # s
BETA = {"intra": 8e9, "inter": 1e9}  # bytes/s
SETTINGS = Settings((8, 4 << 20), repeats=10, window=16, warmup=1)


class SlowNode:
    """A LinkDelay: every message to or from ``node`` waits ``extra_s`` more."""

    def __init__(self, layout: Layout, node: int, extra_s: float) -> None:
        self.layout, self.node, self.extra_s = layout, node, extra_s

    def delay_s(self, src: int, dst: int, nbytes: int, flows: int = 1) -> float:
        hit = self.node in (self.layout.node_of[src], self.layout.node_of[dst])
        return self.extra_s if hit else 0.0

    def describe(self) -> dict[str, object]:
        return {"emulated": True, "emulation": {"slow_node": self.node}}


def synthetic(layout: Layout, seed: int = 1, noise: float = 0.05, delay: SlowNode | None = None,
              slow_link: tuple[int, int] | None = None, factor: float = 2.0,
              stalled: tuple[tuple[int, int], ...] = ()) -> list[dict[str, object]]:
    """Records of a probe of ``layout`` as the α-β model times it, each sample times a
    log-normal noise factor; ``delay`` adds its wait before every message, ``slow_link``
    makes one link ``factor`` times as slow, ``stalled`` pairs have every sample 20 times as
    long (ranks descheduled for the whole pair)."""
    rng = np.random.default_rng(seed)
    out = []
    w = SETTINGS.window
    for i, rnd in enumerate(rounds(layout.world)):
        load = flows(layout, rnd)
        for a, b in rnd:
            cls = layout.link_class(a, b)
            for n in SETTINGS.sizes:
                d = delay.delay_s(a, b, n) if delay else 0.0
                f = factor if slow_link == (a, b) else 1.0
                msg = f * (ALPHA[cls] + n / BETA[cls]) + d
                base = {"latency_us": msg, "uni_us": w * (msg - f * ALPHA[cls] - d) + f * ALPHA[cls]
                        + w * d, "bi_us": w * (msg - f * ALPHA[cls] - d) + f * ALPHA[cls] + w * d}
                stall = 20.0 if (a, b) in stalled else 1.0
                s = {k: tuple(stall * float(v) * 1e6 * rng.lognormal(0, noise, SETTINGS.repeats))
                     for k, v in base.items()}
                out.append(pair_record(layout, a, b, load[(a, b)], i,
                                       Samples(n, s["latency_us"], s["uni_us"], s["bi_us"]),
                                       SETTINGS, {"run_id": "synthetic"}))
    return out



LAYOUT = from_launch(["h"] * 16, 2)  # 8 virtual nodes of 2 ranks


def probe_run(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    run = tmp_path / "probe"
    write_meta(run, {"schema_version": SCHEMA_VERSION, "run_id": "probe", "source": "commbench",
                     "scenario": {"name": "probe", "kind": "probe", "threshold": 0.25}})
    with ResultWriter(run, durable=False) as wr:
        for r in records:
            wr.write(r)
    return run

