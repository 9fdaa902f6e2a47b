"""Replay importers on recorded traces: the suite's training strategies profiled (fixtures cut
to their communication events by ``benchmarks/replay_training.py --fixtures``), flight-recorder
dumps written by torch's own code (``tests/helpers/fr_dump.py``), NCCL COLL lines in the format
of NCCL's ``src/enqueue.cc``; and bad or truncated traces: one line naming the file and the
event, exit 2."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from bench.cli import main
from bench.replay.formats.torch_profiler import RULES
from bench.scenario_base import load_scenario
from bench.training.comm import RULES as TRAINING_RULES
from benchmarks.replay_training import differences

DATA = Path(__file__).parents[1] / "data" / "replay"
CASES = [("ddp", 2), ("zero2", 2), ("tensor", 2), ("pipeline", 2), ("pipeline", 4)]


def imported(tmp_path: Path, fmt: str, *files: Path) -> object:
    out = tmp_path / f"{fmt}.yaml"
    assert main(["import", fmt, *map(str, files), "--out", str(out)]) == 0
    return load_scenario(out)


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, *files: Path) -> str:
    assert main(["import", fmt, *map(str, files), "--out", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and not (tmp_path / "x.yaml").exists()
    return err


@pytest.mark.parametrize(("strategy", "world"), CASES)
def test_training_traces_replay_the_counted_communication(tmp_path: Path, strategy: str,
                                                          world: int) -> None:
    traces = sorted(DATA.glob(f"{strategy}-mlp-p{world}-rank*.json"))
    assert len(traces) == world
    sc = imported(tmp_path, "torch-profiler", *traces)
    rec = json.loads((DATA / f"{strategy}-mlp-p{world}.record.json").read_text())
    assert differences(sc, rec) == []
    assert sc.world_size == world and sc.format == "torch-profiler"


def test_pipeline_sends_are_broadcasts_of_pairs(tmp_path: Path) -> None:
    sc = imported(tmp_path, "torch-profiler", *sorted(DATA.glob("pipeline-mlp-p4-rank*.json")))
    assert {tuple(c.group) for c in sc.calls} == {(0, 1), (1, 2), (2, 3)}
    assert {c.op for c in sc.calls} == {"send"}
    assert {(k.collective, k.group, k.root) for k, _ in sc.cases()} >= {("broadcast", (0, 1), 0),
                                                                         ("broadcast", (0, 1), 1)}


def test_operator_table_is_training_counting() -> None:
    assert set(RULES) == set(TRAINING_RULES)
    assert all(RULES[k][0] == TRAINING_RULES[k][0] for k in RULES)


def test_record_param_comms_events(tmp_path: Path) -> None:
    """NCCL's events, with the argument names libtorch records (ParamCommsUtils)."""
    def ev(i: int, name: str, n_in: int, n_out: int, ranks: str, rank: int = 0) -> dict:
        return {"ph": "X", "name": "record_param_comms", "ts": 10.0 * i, "dur": 1.0, "tid": 1,
                "args": {"Collective name": name, "In msg nelems": n_in, "Out msg nelems": n_out,
                         "dtype": "BFloat16", "Process Group Name": "0",
                         "Process Group Ranks": ranks, "Group size": 2, "Rank": rank}}
    files = []
    for r in range(2):
        doc = {"distributedInfo": {"rank": r, "world_size": 2, "backend": "nccl"},
               "traceEvents": [ev(1, "allreduce", 512, 512, "[0, 1]"),
                               ev(2, "_allgather_base", 256, 512, "[0, 1]"),
                               ev(3, "send" if r == 0 else "recv", 64, 64, "[0, 1]", 1 - r)]}
        files.append(tmp_path / f"t{r}.json")
        files[-1].write_text(json.dumps(doc))
    sc = imported(tmp_path, "torch-profiler", *files)
    assert [(c.op, c.nbytes, c.dtype, c.root) for c in sc.calls] == [
        ("all_reduce", 1024, "bfloat16", None), ("all_gather", 1024, "bfloat16", None),
        ("send", 128, "bfloat16", 0)]
    assert sc.calls[1].gap_us == 9.0


def test_flight_recorder_pickle_and_json_agree(tmp_path: Path) -> None:
    a = imported(tmp_path / "p", "flight-recorder", *sorted((DATA / "fr").glob("*rank_[01]")))
    b = imported(tmp_path / "j", "flight-recorder", *sorted((DATA / "fr").glob("*.json")))
    assert a.calls == b.calls
    assert [(c.op, c.nbytes, c.dtype) for c in a.calls] == [
        ("all_reduce", 4096, "float32"), ("all_gather", 8192, "float32"),
        ("all_reduce", 4096, "float32"), ("broadcast", 4096, "float32"),
        ("all_reduce", 24, "float64")]


def test_nccl_coll_lines(tmp_path: Path) -> None:
    sc = imported(tmp_path, "nccl-coll", DATA / "nccl-coll.log")
    assert [(c.op, c.group, c.nbytes, c.dtype, c.root) for c in sc.calls] == [
        ("all_reduce", [0, 1], 4096, "float32", None),
        ("all_gather", [0, 1], 1024, "bfloat16", None),  # count 256 per rank x 2 ranks
        ("send", [0, 1], 256, "float32", 0)]


def test_truncated_torch_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = sorted(DATA.glob("zero2-mlp-p2-rank*.json"))
    cut = tmp_path / "cut.json"
    cut.write_text(src[1].read_text()[:2000])
    assert "cut.json: not a complete JSON trace" in refused(tmp_path, capsys, "torch-profiler",
                                                            src[0], cut)
    doc = json.loads(src[1].read_text())  # the last call (an event and the one inside) dropped
    starts = sorted(e["ts"] for e in doc["traceEvents"] if e["name"].startswith("c10d::"))
    doc["traceEvents"] = [e for e in doc["traceEvents"]
                          if not (e["name"].startswith("c10d::") and e["ts"] >= starts[-2])]
    short = tmp_path / "short.json"
    short.write_text(json.dumps(doc))
    err = refused(tmp_path, capsys, "torch-profiler", src[0], short)
    assert "zero2-mlp-p2-rank0.json: event" in err and "matches no group" in err


def test_bad_flight_recorder_dumps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = sorted((DATA / "fr").glob("*rank_[01]"))
    cut = tmp_path / "nccl_trace_rank_1"
    cut.write_bytes(src[1].read_bytes()[:300])
    assert "nccl_trace_rank_1: not a complete flight-recorder dump" in refused(
        tmp_path, capsys, "flight-recorder", src[0], cut)
    evil = tmp_path / "e" / "nccl_trace_rank_1"
    evil.parent.mkdir()
    evil.write_bytes(pickle.dumps({"entries": [Path("x")]}))  # a class: refused, never built
    assert "not a complete flight-recorder dump" in refused(tmp_path, capsys, "flight-recorder",
                                                            src[0], evil)
    doc = json.loads((DATA / "fr" / "nccl_trace_rank_1.json").read_text())
    doc["entries"][1]["profiling_name"] = "gloo:gather"
    odd = tmp_path / "o" / "nccl_trace_rank_1.json"
    odd.parent.mkdir()
    odd.write_text(json.dumps(doc))
    assert "nccl_trace_rank_1.json: entry 1 (gloo:gather): collective 'gather'" in refused(
        tmp_path, capsys, "flight-recorder", DATA / "fr" / "nccl_trace_rank_0.json", odd)


def test_bad_nccl_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = (DATA / "nccl-coll.log").read_text().splitlines()
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join([*lines[:5], lines[5][:90]]) + "\n")
    assert "cut.log:6: AllGather: a call line cut short" in refused(tmp_path, capsys, "nccl-coll", cut)
    short = tmp_path / "short.log"
    short.write_text("\n".join(lines[:-1]) + "\n")  # rank 1's receive is missing
    assert "short.log:7: Send: rank 0 sends 1 messages to rank 1, which receives 0" in refused(
        tmp_path, capsys, "nccl-coll", short)
