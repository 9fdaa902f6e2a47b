"""``commbench predict``: records like a measured run's (load_results, report, export read
them), values from the cost model, and bad input as one line with exit 2."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bench.cli import main
from bench.costmodel.evaluate import schedule_estimate
from bench.costmodel.model import parse_topology
from bench.costmodel.net import Net
from bench.costmodel.profile import load_profile
from bench.measure import metrics
from bench.store.records import COLLECTIVE_FIELDS, load_results, read_meta
from kernels.algorithm import Problem, get_algorithm

pytestmark = pytest.mark.timeout(120)


def _predict(out: Path, *extra: str) -> int:
    return main(["predict", "--profile", "h100-ib400", "--topology", "4x4:leaf=2",
                 "--world-sizes", "2,16", "--sizes", "4KiB..4MiB:32", "--out", str(out), *extra])


def test_predict_writes_a_run_that_report_and_export_read(tmp_path: Path, capsys) -> None:
    out = tmp_path / "pred"
    assert _predict(out) == 0
    err = capsys.readouterr().err
    assert "predict: p=16 on 4x4 (block, 2 leaves)" in err
    meta = read_meta(out)
    assert meta["status"] == "ok" and meta["predicted"] and meta["profile"]["name"] == "h100-ib400"
    df = load_results(out)
    assert len(df) > 50 and df["predicted"].all() and df["samples_are_summaries"].all()
    assert set(COLLECTIVE_FIELDS) <= set(df.columns)
    assert set(df["collective"]) >= {"all_reduce", "all_gather", "alltoall", "broadcast"}
    native = df[df["algorithm"] == "native"]  # no measured curve: the vendor model on the fabric
    assert len(native) and all(c["from"] == "nccl model" for c in native["vendor_choice"])
    assert "vendor choice: native" in err
    rec = df[(df.collective == "all_reduce") & (df.algorithm == "ring") & (df.world_size == 16)
             & (df.nbytes == 4 << 20)].iloc[0]
    net = Net(parse_topology("4x4:leaf=2").place(16), load_profile("h100-ib400"))
    want = schedule_estimate(get_algorithm("all_reduce", "ring"),
                             Problem(net.placed.topology, 1 << 20, 4, "all_reduce"), net)
    assert rec["time_us_median"] == pytest.approx(want.time_s * 1e6, rel=1e-9)
    assert rec["samples_us"] == [rec["time_us_median"]]
    assert rec["bytes_sent_max"] == want.bytes_sent_max and rec["steps"] == want.steps
    assert rec["busbw_gbps"] == pytest.approx(
        metrics.busbw_gbps("all_reduce", 16, 4 << 20, want.time_s))
    assert rec["profile"]["name"] == "h100-ib400" and rec["ranks_per_node"] == 4
    assert main(["report", str(out), "-o", str(tmp_path / "r.html"), "--max-figures", "1"]) == 0
    assert "all_reduce" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert main(["export", str(out), "--format", "csv"]) == 0


def test_native_from_a_calibrated_curve(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    text = Path(load_profile("h100-ib400").path).read_text(encoding="utf-8")
    prof.write_text(text + "native:\n  all_reduce:\n    native:\n      world_size: 2\n"
                           "      points: [[1024, 2.0], [1048576, 0.5]]\n", encoding="utf-8")
    out = tmp_path / "pred"
    assert main(["predict", "--profile", str(prof), "--topology", "2x4", "--collectives",
                 "all_reduce", "--sizes", "1KiB,32KiB,1MiB,8MiB", "--out", str(out)]) == 0
    df = load_results(out)
    for nbytes, ratio in ((1024, 2.0), (32768, 1.25), (1 << 20, 0.5), (8 << 20, 0.5)):
        at = df[df.nbytes == nbytes]
        best = at[~at.algorithm.str.startswith("native")]["time_us_median"].min()
        native = at[at.algorithm == "native"]["time_us_median"].iloc[0]
        assert native == pytest.approx(ratio * best, rel=1e-9)
    only = tmp_path / "only"  # the reference is every schedule, whichever were asked for
    assert main(["predict", "--profile", str(prof), "--topology", "2x4", "--collectives",
                 "all_reduce", "--algorithms", "native,naive", "--sizes", "1KiB,32KiB,1MiB,8MiB",
                 "--out", str(only)]) == 0
    alone = load_results(only)
    assert set(alone.algorithm) == {"native", "naive"}
    assert list(alone[alone.algorithm == "native"]["time_us_median"]) == pytest.approx(
        list(df[df.algorithm == "native"]["time_us_median"]), rel=1e-12)


@pytest.mark.parametrize(("args", "says"), [
    (["--profile", "nope"], "unknown profile 'nope'"),
    (["--topology", "4y4"], "topology '4y4'"),
    (["--world-sizes", "2,x"], "--world-sizes"),
    (["--world-sizes", "0"], "a world size from 1 to 2^20 ranks"),
    (["--algorithms", "bogus"], "unknown algorithm 'bogus'"),
    (["--collectives", "allfoo"], "unknown collective"),
    (["--sizes", "1KiB..8b"], "--sizes"),
    (["--dtypes", "float128"], "unknown dtype"),
])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys, args: list[str], says: str) -> None:
    base = {"--profile": "h100-ib400", "--topology": "2x4", "--world-sizes": "8",
            "--sizes": "1KiB", "--out": str(tmp_path / "o")}
    base.update(dict(zip(args[::2], args[1::2])))
    argv = ["predict"] + [x for kv in base.items() for x in kv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and err.startswith("commbench: predict:")
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_missing_link_class_names_file_and_class(tmp_path: Path, capsys) -> None:
    prof = tmp_path / "intra-only.yaml"
    prof.write_text("name: x\nlinks:\n  intra: {alpha_s: 1.0e-6, beta_bytes_per_s: 1.0e+10}\n")
    assert main(["predict", "--profile", str(prof), "--topology", "2x4", "--sizes", "1KiB",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(prof) in err and "'inter'" in err
    # one node needs only intra: fine
    assert main(["predict", "--profile", str(prof), "--topology", "1x8", "--sizes", "1KiB",
                 "--collectives", "all_reduce", "--out", str(tmp_path / "ok")]) == 0


def test_existing_results_are_not_overwritten(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "results.jsonl").write_text("")
    assert _predict(out) == 2
    assert "already holds results" in capsys.readouterr().err


def test_report_sets_predictions_beside_measurements(tmp_path: Path) -> None:
    """The Prediction section pairs measured and predicted cases and states the error."""
    from bench.store.records import ResultWriter, write_meta
    from reports.sections.prediction import pair

    pred = tmp_path / "pred"
    assert main(["predict", "--profile", "h100-ib400", "--topology", "1x4", "--collectives",
                 "all_reduce", "--sizes", "1KiB..1MiB:32", "--out", str(pred)]) == 0
    meas = tmp_path / "meas"
    write_meta(meas, {**read_meta(pred), "predicted": False, "run_id": "meas"})
    df = load_results(pred)
    df = df[~df.algorithm.str.startswith("native")].dropna(axis=1, how="all")  # schedules only
    with ResultWriter(meas) as w:
        for rec in df.to_dict("records"):
            t = rec["time_us_median"] * 1.25
            w.write({**{k: v for k, v in rec.items() if k not in ("predicted", "profile",
                                                                  "prediction")},
                     "time_us_median": t, "samples_us": [t], "transport": "mpi"})
    both = pd.concat([load_results(meas), df], ignore_index=True)
    paired = pair(both)
    assert len(paired) == len(df) and (paired["error"] - (1 / 1.25 - 1)).abs().max() < 1e-12
    html = tmp_path / "r.html"
    assert main(["report", str(meas), str(pred), "-o", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    assert 'id="prediction"' in text and "median\n|error| 20 %" in text
