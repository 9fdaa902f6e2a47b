"""The MPI eager/rendezvous switch fitted from ping-pong latencies (bench/costmodel/eager.py): a
known threshold is recovered exactly, a curve without a step gives no switch (and the profile
says why), ``commbench calibrate`` writes the ``mpi`` keys and reads them back, and the
evaluator prices a message above the fitted threshold with the fitted handshake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.cli import main
from bench.costmodel.eager import fit_switch
from bench.costmodel.evaluate import schedule_estimate
from bench.costmodel.model import parse_topology
from bench.costmodel.net import Net
from bench.costmodel.profile import load_profile
from bench.store.records import SCHEMA_VERSION, ResultWriter, write_meta
from kernels.algorithm import Problem, get_algorithm

ALPHA, BETA = 20e-6, 1e9  # s, B/s
LIMIT, RDV, COPY = 65536, 30e-6, 0.5e-9  # eager limit (B), handshake (s), eager copy (s/B)
SIZES = [8, 1024, 4096, 16384, 32768, 49152, 65536, 81920, 131072, 262144, 1 << 20]


def _latency(n: float, step: bool = True) -> float:
    extra = (RDV if n > LIMIT else COPY * n) if step else 0.0
    return ALPHA + n / BETA + extra


def _noisy(step: bool, sigma: float, seed: int, pairs: int = 2,
           at: list[int] = SIZES) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    sizes = [float(n) for n in at for _ in range(pairs)]
    return sizes, [_latency(n, step) * float(rng.lognormal(0, sigma)) for n in sizes]


def test_known_threshold_is_recovered_exactly() -> None:
    sw = fit_switch([float(n) for n in SIZES], [_latency(n) for n in SIZES])
    assert sw.mpi is not None and sw.mpi.eager_limit == LIMIT
    assert sw.mpi.rendezvous == pytest.approx(RDV, rel=1e-6)
    assert sw.mpi.eager_per_byte == pytest.approx(COPY, rel=1e-6)
    assert (sw.alpha, sw.beta) == (pytest.approx(ALPHA, rel=1e-6), pytest.approx(BETA, rel=1e-6))
    # with 2 % noise on every point of two pairs: still exactly that break, and significant
    sw = fit_switch(*_noisy(True, 0.02, seed=3))
    assert sw.mpi is not None and sw.mpi.eager_limit == LIMIT
    assert sw.how["p_bonferroni"] < 0.05 and sw.how["candidates"] == len(SIZES) - 5


def test_no_step_no_switch() -> None:
    sw = fit_switch(*_noisy(False, 0.02, seed=3))
    assert sw.mpi is None and sw.how["why"].startswith("no significant step")
    assert sw.beta == pytest.approx(BETA, rel=0.1)
    sw = fit_switch([8.0, 1024.0, 65536.0], [_latency(n) for n in (8, 1024, 65536)])
    assert sw.mpi is None and not sw.tested and "too few" in sw.how["why"]


def _probe_run(tmp: Path, step: bool, at: list[int] = SIZES) -> Path:
    out = tmp / f"{'step' if step else 'flat'}{len(at)}"
    write_meta(out, {"schema_version": SCHEMA_VERSION, "run_id": out.name, "status": "ok"})
    sizes, lat = _noisy(step, 0.01, seed=5, at=at)
    recs: list[dict[str, Any]] = [
        {"schema_version": SCHEMA_VERSION, "kind": "probe", "status": "ok", "phase": "tournament",
         "src": 0, "dst": 1, "link_class": "inter", "flows": 1, "world_size": 2, "nbytes": int(n),
         "latency_us_median": t * 1e6, "uni_gbps": BETA / 1e9} for n, t in zip(sizes, lat)]
    with ResultWriter(out) as w:
        for r in recs:
            w.write(r)
    return out


def test_calibrate_writes_the_switch_and_the_evaluator_prices_it(tmp_path: Path, capsys) -> None:
    out = tmp_path / "p.yaml"
    assert main(["calibrate", str(_probe_run(tmp_path, True)), "-o", str(out)]) == 0
    assert "MPI switch from 22 ping-pong points (inter): eager limit 65536 B" in \
        capsys.readouterr().err
    prof = load_profile(out)  # the round trip: keys and their account
    m = prof.mpi
    assert m is not None and m.eager_limit == LIMIT
    assert m.rendezvous == pytest.approx(RDV, rel=0.2)
    fitted = prof.fitted or {}
    assert fitted["mpi"]["link_class"] == "inter" and "change point" in fitted["mpi"]["method"]
    assert "mpi.eager_limit_bytes" in fitted["parameters"]
    link = prof.links["inter"]
    assert (link.alpha, link.beta) == (fitted["mpi"]["link"]["alpha_s"],
                                       fitted["mpi"]["link"]["beta_bytes_per_s"])
    # ring all_reduce on 2 nodes: 2 steps of one message of half the buffer per rank
    net = Net(parse_topology("2x1").place(2), prof)
    ring = get_algorithm("all_reduce", "ring")
    for count, extra in ((LIMIT // 2, m.eager_per_byte * LIMIT),  # 65536 B: eager, at the limit
                         (LIMIT // 2 + 2, m.rendezvous)):  # 65540 B: above it, the handshake
        n = 2 * count  # bytes of one message: half of count float32 (blocks of equal size)
        pr = Problem(net.placed.topology, count, 4, "all_reduce", 0)
        want = 2 * (link.alpha + n / link.beta + extra) + prof.gamma * n
        assert schedule_estimate(ring, pr, net).time_s == pytest.approx(want, rel=1e-12)
    # no step: no keys, and the profile says why; --no-mpi-switch: none either
    assert main(["calibrate", str(_probe_run(tmp_path, False)), "-o", str(out)]) == 0
    prof = load_profile(out)
    assert prof.mpi is None and (prof.fitted or {})["not_fitted"]["mpi"].startswith("no significant")
    assert main(["calibrate", str(_probe_run(tmp_path, True)), "--no-mpi-switch",
                 "-o", str(out)]) == 0
    assert load_profile(out).mpi is None
    # a probe at two sizes cannot tell: a base's switch is kept, and the profile says so
    base = tmp_path / "base.yaml"
    base.write_text("name: b\nlinks: {inter: {alpha_s: 1.0e-5, beta_bytes_per_s: 1.0e+9}}\n"
                    "mpi: {eager_limit_bytes: 4096, rendezvous_s: 1.0e-5}\n")
    assert main(["calibrate", str(_probe_run(tmp_path, True, [8, 1 << 20])), "--base", str(base),
                 "-o", str(out)]) == 0
    prof = load_profile(out)
    assert prof.mpi is not None and prof.mpi.eager_limit == 4096
    assert (prof.fitted or {})["mpi"]["why"].endswith("the base's switch kept")
