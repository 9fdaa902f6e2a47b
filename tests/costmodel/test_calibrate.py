"""``commbench calibrate``: recovers known α, β, γ and o from records the model generated with
noise; says what it fitted and how well (in percent), warns of a poor fit, keeps parameters
within plausible bounds; never fits predicted records; too few points is one line, exit 2."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.cli import main
from bench.costmodel.calibrate import model_times, point
from bench.costmodel.profile import Link, Profile, load_profile
from bench.store.records import SCHEMA_VERSION, ResultWriter, write_meta
from kernels import collective as coll

pytestmark = pytest.mark.timeout(120)

TRUTH = Profile("truth", "", "test", {"intra": Link(3e-6, 8e9), "inter": Link(12e-6, 1.5e9)},
                gamma=4e-10, overhead=6e-7, hot=1e-10)
# a loaded host as one emulated node sees it: o large beside α (the scheduler, not the wire)
# (its copies priced like the base the tests fit it from, emulated-slow)
HOST = Profile("host", "", "test", {"intra": Link(20e-6, 2e9)}, gamma=1e-9, overhead=30e-6,
               hot=1e-9,  # sending what a rank just wrote: 3x a clean byte, as on this VM
               device=load_profile("emulated-slow").device)
ONE_MESSAGE = (("all_reduce", ("ring", "halving_doubling")),  # one message per rank and step
               ("all_gather", ("ring", "recursive_doubling")),
               ("reduce_scatter", ("ring", "recursive_halving")))
MANY_MESSAGES = (("all_gather", ("direct",)), ("alltoall", ("direct",)))  # p - 1 in one step
CLEAN = (("alltoall", ("pairwise",)),)  # one message per step, never what it wrote: β apart from h
NOISE = 0.03  # lognormal sigma of the synthetic "measurements"
TOLERANCE = 0.10  # recovered parameters within 10% (seen: within 2%)


def _run(tmp: Path, name: str, recs: list[dict[str, Any]]) -> Path:
    out = tmp / name
    write_meta(out, {"schema_version": SCHEMA_VERSION, "run_id": name, "status": "ok"})
    with ResultWriter(out) as w:
        for r in recs:
            w.write(r)
    return out


def _record(c: str, a: str, p: int, rpn: int, nb: int) -> dict[str, Any]:
    count = coll.resolve(c).round_count(nb // 4, p)
    return {"schema_version": SCHEMA_VERSION, "kind": "collective", "status": "ok",
            "collective": c, "algorithm": a, "transport": "mpi", "world_size": p,
            "ranks_per_node": rpn, "count": count, "nbytes": count * 4,
            "dtype": "float32", "op": "sum", "root": None}


def _generate(truth: Profile, layouts: tuple[tuple[int, int], ...],
              cases: tuple[tuple[str, tuple[str, ...]], ...], sizes: tuple[int, ...],
              seed: int = 7, noise: float = NOISE) -> list[dict[str, Any]]:
    """Records of every (nodes, ranks per node) x case x size, timed by ``truth`` with
    log-normal noise; ``native`` is a vendor call 20 % faster than the ring."""
    rng = np.random.default_rng(seed)
    recs = []
    for nodes, rpn in layouts:
        for c, algs in cases:
            for a in algs:
                for nb in sizes:
                    r = _record(c, a, nodes * rpn, rpn, nb)
                    pt = point({**r, "algorithm": "ring" if a == "native" else a})
                    t = 1e-6 if isinstance(pt, str) else model_times([pt], truth)[0]  # str: 1 rank
                    t *= 0.8 if a == "native" else 1.0
                    r["time_us_median"] = t * 1e6 * float(np.exp(rng.normal(0, noise)))
                    r["time_us_mean"] = 1.5 * r["time_us_median"]  # a heavy tail
                    recs.append(r)
    return recs


def _synthetic(seed: int = 7) -> list[dict[str, Any]]:
    return _generate(TRUTH, ((1, 2), (1, 4), (2, 2), (2, 4), (4, 2)),
                     (("all_reduce", ("ring", "tree", "halving_doubling", "native")),
                      ("all_gather", ("ring", "direct")), ("alltoall", ("direct",))),
                     tuple(1 << k for k in range(10, 25, 3)), seed)


def test_recovers_known_parameters(tmp_path: Path, capsys) -> None:
    run = _run(tmp_path, "synthetic", _synthetic())
    out = tmp_path / "fitted.yaml"
    assert main(["calibrate", str(run), "-o", str(out)]) == 0
    assert "calibrate:" in capsys.readouterr().err
    prof = load_profile(out)
    for cls in ("intra", "inter"):
        assert prof.links[cls].alpha == pytest.approx(TRUTH.links[cls].alpha, rel=TOLERANCE)
        assert prof.links[cls].beta == pytest.approx(TRUTH.links[cls].beta, rel=TOLERANCE)
    assert prof.gamma == pytest.approx(TRUTH.gamma, rel=TOLERANCE)
    assert prof.overhead == pytest.approx(TRUTH.overhead, rel=TOLERANCE)
    assert "spine" not in prof.links  # never crossed, no base: left out, not invented
    fitted = prof.fitted or {}
    assert fitted["runs"] == [str(run)] and "spine.alpha" in fitted["not_fitted"]
    res = fitted["residuals"]
    assert res["points"] == 5 * 6 * 5 and res["median_abs_error_pct"] < 100 * 2 * NOISE
    assert res["worst_abs_error_pct"] < 100 * 6 * NOISE
    curve = prof.native["all_reduce"]["native"]
    assert (curve["world_size"], curve["ranks_per_node"], len(curve["points"])) == (8, 4, 5)
    assert all(r > 0.7 for _, r in curve["points"])  # 0.8 x ring, and the ring >= the best
    from bench.costmodel.predict import native_ratio

    assert sorted(curve["by_world_size"], key=int) == ["2", "4", "8"]  # one curve per world size
    two = dict((n, r) for n, r in curve["by_world_size"]["2"]["points"])
    n0 = min(two)
    assert native_ratio(prof, "all_reduce", "native", n0, 2) == pytest.approx(two[n0])
    four = dict((n, r) for n, r in curve["by_world_size"]["4"]["points"])
    assert native_ratio(prof, "all_reduce", "native", n0, 3) == pytest.approx(four[n0])  # nearest
    assert native_ratio(prof, "all_reduce", "native", n0) == pytest.approx(dict(curve["points"])[n0])
    # the mean curve (what advise prices a step's sum of calls at) beside the median one
    assert native_ratio(prof, "all_reduce", "native", n0, 2, "mean") == pytest.approx(
        1.5 * two[n0], rel=1e-3)


def test_base_profile_fills_what_runs_cannot_see(tmp_path: Path) -> None:
    intra_only = [r for r in _synthetic() if r["ranks_per_node"] == r["world_size"]]
    run = _run(tmp_path, "one-node", intra_only)
    out = tmp_path / "fitted.yaml"
    assert main(["calibrate", str(run), "-o", str(out), "--base", "h100-ib400"]) == 0
    prof, base = load_profile(out), load_profile("h100-ib400")
    assert prof.links["inter"] == base.links["inter"] and prof.links["spine"] == base.links["spine"]
    assert prof.links["intra"].beta == pytest.approx(TRUTH.links["intra"].beta, rel=TOLERANCE)
    assert prof.device == base.device and prof.nics_per_node == base.nics_per_node


def test_too_few_points_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    run = _run(tmp_path, "tiny", _synthetic()[:2])
    assert main(["calibrate", str(run), "-o", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "measured points" in err and "need at least" in err
    assert not (tmp_path / "x.yaml").exists()
    assert main(["calibrate", str(tmp_path / "missing"), "-o", str(tmp_path / "x.yaml")]) == 2


def test_a_predicted_run_is_never_fitted(tmp_path: Path, capsys) -> None:
    pred = _run(tmp_path, "pred", [{**r, "predicted": True} for r in _synthetic()])
    out = tmp_path / "x.yaml"
    assert main(["calibrate", str(pred), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(pred) in err[0] and "175 predicted records" in err[0], err
    assert not out.exists()
    measured = _run(tmp_path, "measured", _synthetic())
    assert main(["calibrate", str(measured), str(pred), "-o", str(out)]) == 0
    assert f"175 predicted records of {pred} not used" in capsys.readouterr().err
    assert (load_profile(out).fitted or {})["residuals"]["points"] == 150


def _one_node(cases: tuple[tuple[str, tuple[str, ...]], ...]) -> list[dict[str, Any]]:
    return _generate(HOST, ((1, 4), (1, 8)), cases, tuple((16 << 10) << (2 * k) for k in range(5)))


def test_one_node_fit_sets_o_to_0_when_it_is_not_separable(tmp_path: Path, capsys) -> None:
    """The documented host fit (an emulated 1x8 run, --base emulated-slow, whose o is 2 ms):
    with one message per rank and step, o + α is one per-message cost: the base's o is not
    kept, α carries it, and the profile times the runs as they were measured."""
    run = _run(tmp_path, "host", _one_node(ONE_MESSAGE))
    out = tmp_path / "host.yaml"
    assert main(["calibrate", str(run), "--base", "emulated-slow", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    prof = load_profile(out)
    intra, want = prof.links["intra"], HOST.links["intra"]
    assert prof.overhead == 0.0 and "set to 0" in (prof.fitted or {})["not_fitted"]["overhead"]
    assert intra.alpha == pytest.approx(want.alpha + HOST.overhead, rel=TOLERANCE)
    assert intra.beta == pytest.approx(want.beta, rel=TOLERANCE)
    assert prof.gamma == pytest.approx(HOST.gamma, rel=TOLERANCE)
    assert prof.links["inter"] == load_profile("emulated-slow").links["inter"]
    assert (prof.fitted or {})["residuals"]["median_abs_error_pct"] < 100 * 2 * NOISE
    base_o = load_profile("emulated-slow").overhead
    assert f"o {base_o:.3g} s of emulated-slow not kept" in err and "warning" not in err


def test_one_node_fit_recovers_o_from_multi_message_steps(tmp_path: Path, capsys) -> None:
    run = _run(tmp_path, "host", _one_node(ONE_MESSAGE + MANY_MESSAGES + CLEAN))
    out = tmp_path / "host.yaml"
    assert main(["calibrate", str(run), "--base", "emulated-slow", "-o", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    prof = load_profile(out)
    assert prof.overhead == pytest.approx(HOST.overhead, rel=TOLERANCE)
    assert prof.links["intra"].alpha == pytest.approx(HOST.links["intra"].alpha, rel=TOLERANCE)
    assert prof.links["intra"].beta == pytest.approx(HOST.links["intra"].beta, rel=TOLERANCE)
    assert prof.gamma == pytest.approx(HOST.gamma, rel=TOLERANCE)
    assert prof.hot == pytest.approx(HOST.hot, rel=TOLERANCE)


def _probe(alpha: dict[str, float], beta: dict[str, float], sizes: tuple[int, int] = (8, 4 << 20),
           pairs: int = 5) -> list[dict[str, Any]]:
    """Probe records as bench/probe/fit.py reads them: one-way latency α + n/β at the smallest
    size, unidirectional bandwidth β at the largest, ``pairs`` pairs per class."""
    out = []
    for cls in alpha:
        for i in range(pairs):
            for n in sizes:
                out.append({"schema_version": SCHEMA_VERSION, "kind": "probe", "status": "ok",
                            "phase": "tournament", "src": 2 * i, "dst": 2 * i + 1,
                            "link_class": cls, "flows": 1, "world_size": 16, "nbytes": n,
                            "latency_us_median": (alpha[cls] + n / beta[cls]) * 1e6,
                            "uni_gbps": beta[cls] / 1e9})
    return out


def test_probe_and_sweep_agree_with_the_sweep(tmp_path: Path, capsys) -> None:
    """A probe taken under other conditions than the sweep (16 ranks on 2 cores: α 100 times,
    β a fifth) used to be held, and the profile was 20 times off the sweep; now the probe
    starts the fit, the sweep's points set what they see, and the move is said."""
    sweep = _run(tmp_path, "sweep", _synthetic())
    links = TRUTH.links
    slow = _run(tmp_path, "probe", _probe({c: 100 * v.alpha for c, v in links.items()},
                                          {c: v.beta / 5 for c, v in links.items()}))
    out = tmp_path / "both.yaml"
    assert main(["calibrate", str(slow), str(sweep), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    prof = load_profile(out)
    for cls in ("intra", "inter"):
        assert prof.links[cls].alpha == pytest.approx(links[cls].alpha, rel=TOLERANCE)
        assert prof.links[cls].beta == pytest.approx(links[cls].beta, rel=TOLERANCE)
    assert prof.overhead == pytest.approx(TRUTH.overhead, rel=TOLERANCE)
    fitted = prof.fitted or {}
    assert fitted["residuals"]["median_abs_error_pct"] < 100 * 2 * NOISE
    assert "the sweep moved intra.alpha from the probe's 0.0003 to" in err and "warning" not in err
    assert sorted(fitted["probe"]["parameters"]) == [
        "inter.alpha", "inter.beta", "intra.alpha", "intra.beta"]
    # a probe that agrees (its latency is the model's o + α of one message): nothing moves far
    alike = _run(tmp_path, "alike", _probe({c: v.alpha + TRUTH.overhead for c, v in links.items()},
                                           {c: v.beta for c, v in links.items()}))
    assert main(["calibrate", str(alike), str(sweep), "-o", str(out)]) == 0
    assert "moved" not in capsys.readouterr().err
    assert load_profile(out).links["intra"].alpha == pytest.approx(links["intra"].alpha,
                                                                   rel=TOLERANCE)


def _ci_like(truth: Profile) -> list[dict[str, Any]]:
    """Like scenarios/ci.yaml (1 and 2 ranks on one host, 1 KiB to 4 MiB), all_gather too."""
    return _generate(truth, ((1, 1), (1, 2)),
                     (("all_reduce", ("native", "ring", "tree", "halving_doubling")),
                      ("all_gather", ("ring",))),
                     tuple(1 << k for k in range(10, 23, 4)))


def test_a_parameter_the_runs_push_out_of_range_stays_at_its_bound(tmp_path: Path, capsys) -> None:
    """Times that show no transfer cost (an all_gather as fast at 4 MiB as at 1 KiB) push β
    past any link: it is held at 1 TB/s and said to be there. World size 1 is not a point."""
    truth = Profile("t", "", "test", {"intra": Link(5e-6, 1e14)}, gamma=5e-10)
    run = _run(tmp_path, "ci", _ci_like(truth))
    out = tmp_path / "ci.yaml"
    assert main(["calibrate", str(run), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    prof = load_profile(out)
    assert prof.links["intra"].beta == pytest.approx(1e12, rel=1e-2)
    assert prof.gamma == pytest.approx(truth.gamma, rel=TOLERANCE)
    assert (prof.fitted or {})["at_bound"] == {"intra.beta": "upper bound 1e+12 B/s"}
    assert "intra.beta is at its upper bound 1e+12 B/s" in err
    assert "20 records not used: world size 1: no message crosses a link" in err
    one = _run(tmp_path, "one", [r for r in _ci_like(truth) if r["world_size"] == 1])
    assert main(["calibrate", str(one), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(one) in err[0] and "world size 1" in err[0], err


def test_a_poor_fit_is_warned_in_one_line_in_percent(tmp_path: Path, capsys) -> None:
    recs = _synthetic()
    rng = np.random.default_rng(3)
    for r in recs:  # times unrelated to the model: off by a factor of up to ~20 either way
        r["time_us_median"] *= float(np.exp(rng.normal(0, 1.5)))
    run = _run(tmp_path, "noisy", recs)
    out = tmp_path / "noisy.yaml"
    assert main(["calibrate", str(run), "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    warn = [line for line in err if "warning" in line]
    med = (load_profile(out).fitted or {})["residuals"]["median_abs_error_pct"]
    assert med > 25 and len(warn) == 1 and str(out) in warn[0] and str(run) in warn[0]
    said = re.search(r"median \|error\| ([0-9.]+) %", warn[0])
    assert said is not None and float(said.group(1)) == pytest.approx(med, abs=0.5)


def test_copies_priced_at_the_canary_memcpy_bandwidth(tmp_path: Path, capsys) -> None:
    """Local copies (Bruck's rotations) cost 2n / memory bandwidth; the runs' drift canary
    measured it, so the fit neither invents it nor leaves copies free."""
    import json
    from dataclasses import replace

    truth = replace(TRUTH, device={"memory_bandwidth_bytes_per_s": 4e9})
    recs = _generate(truth, ((1, 4), (2, 2)), (("all_gather", ("ring", "bruck")),
                                               ("alltoall", ("bruck", "pairwise")),
                                               ("all_reduce", ("ring", "halving_doubling"))),
                     tuple(1 << k for k in range(12, 25, 3)))
    run = _run(tmp_path, "copies", recs)
    (run / "canary.jsonl").write_text("".join(
        json.dumps({"when": w, "memcpy_GBps": v}) + "\n"
        for w, v in (("start", [3.9, 4.1, 4.0]), ("end", [4.0, 2.0]))))
    out = tmp_path / "fitted.yaml"
    assert main(["calibrate", str(run), "-o", str(out)]) == 0
    prof = load_profile(out)
    assert prof.device["memory_bandwidth_bytes_per_s"] == pytest.approx(4.0e9)  # median of 5
    assert "median of 5 drift-canary memcpy readings" in (prof.fitted or {})["copy_bandwidth"]
    assert (prof.fitted or {})["residuals"]["median_abs_error_pct"] < 100 * 2 * NOISE
    assert prof.links["intra"].beta == pytest.approx(truth.links["intra"].beta, rel=TOLERANCE)
