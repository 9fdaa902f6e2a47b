"""What NCCL chose, read from its own debug log: real log text pasted in public issues (sources in
the fixtures' first lines, tests/data/nccl/), both spellings NCCL has used; the rank's log read
as it grows; a vendor record annotated from it; and an NCCL variant run for real on a GPU."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from bench.collective import nccl_log
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "nccl"


def test_newer_spelling_names_call_algorithm_protocol_and_channels() -> None:
    log = nccl_log.parse((DATA / "tuning-2.29.log").read_text())
    assert [(c.func, c.nbytes, c.algorithm, c.protocol, c.channels) for c in log.choices] == [
        ("Broadcast", 32768, "RING", "SIMPLE", 1), ("Broadcast", 65536, "RING", "SIMPLE", 2),
        ("Broadcast", 131072, "RING", "SIMPLE", 4), ("Broadcast", 262144, "RING", "SIMPLE", 4),
        ("Broadcast", 134217728, "RING", "SIMPLE", 4)]
    assert all(c.estimate_us is None for c in log.choices)
    assert nccl_log.chosen(log, "AllReduce") == []  # the calls are broadcasts


def test_older_spelling_maps_enum_numbers_and_reads_channels_and_settings() -> None:
    log = nccl_log.parse((DATA / "tuning-2.2x.log").read_text())
    assert [(c.func, c.nbytes, c.algorithm, c.protocol, c.estimate_us) for c in log.choices] == [
        (None, 128, "TREE", "LL", 25.214764), (None, 128, "TREE", "LL", 25.214764),
        (None, 128, "TREE", "LL", 25.214764), (None, 262144, "TREE", "LL128", 54.707825),
        (None, 8589934592, "RING", "SIMPLE", 86069.96875)]
    assert log.channels == {"coll": 16, "collnet": 16, "nvls": 16, "p2p": 16}
    assert log.settings == {"NCCL_ALGO": "Tree"}
    # lines naming no call count as any call's; repeats of one choice are one
    assert nccl_log.chosen(log, "AllReduce") == [
        {"algorithm": "TREE", "protocol": "LL", "nbytes": 128},
        {"algorithm": "TREE", "protocol": "LL128", "nbytes": 262144},
        {"algorithm": "RING", "protocol": "SIMPLE", "nbytes": 8589934592}]


def test_an_enum_number_past_the_table_is_kept_as_a_number() -> None:
    log = nccl_log.parse("NCCL INFO 64 Bytes -> Algo 9 proto 7 time 1.0")
    assert (log.choices[0].algorithm, log.choices[0].protocol) == ("#9", "#7")


def test_rank_log_reads_whole_lines_as_the_file_grows(tmp_path: Path) -> None:
    pattern = str(tmp_path / "job.%h.%p.log")
    log = nccl_log.RankLog.of_this_process({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": pattern})
    assert log is not None
    assert log.path == tmp_path / f"job.{socket.gethostname().split('.')[0]}.{os.getpid()}.log"
    assert log.take().choices == ()  # no file yet
    lines = (DATA / "tuning-2.29.log").read_text().splitlines(keepends=True)
    log.path.write_text("".join(lines[:6]) + lines[6][:20])  # the last line still being written
    assert [c.nbytes for c in log.take().choices] == [32768]
    with log.path.open("a") as f:
        f.write(lines[6][20:] + "NCCL INFO NCCL_PROTO set by environment to Simple\n")
    assert [c.nbytes for c in log.take().choices] == [65536]
    assert log.settings == {"NCCL_PROTO": "Simple"}
    assert log.take().choices == ()


def test_no_rank_log_without_info_or_a_file() -> None:
    assert nccl_log.RankLog.of_this_process({"NCCL_DEBUG_FILE": "/tmp/x.%p"}) is None
    assert nccl_log.RankLog.of_this_process({"NCCL_DEBUG": "WARN", "NCCL_DEBUG_FILE": "x"}) is None
    assert nccl_log.RankLog.of_this_process({"NCCL_DEBUG": "INFO"}) is None


def test_debug_env_leaves_the_users_settings(tmp_path: Path) -> None:
    env = nccl_log.debug_env({"NCCL_DEBUG_SUBSYS": "ALL"}, tmp_path, "p8-env1")
    assert env == {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": str(tmp_path / "p8-env1.%h.%p.log")}


def test_a_vendor_record_on_nccl_gets_the_choice_of_its_group(tmp_path: Path) -> None:
    from bench.collective.runner import _annotate
    from bench.collective.scenario import parse_scenario
    from bench.measure.case import Group

    sc = parse_scenario({
        "name": "n", "transports": ["nccl"], "sizes": ["8MiB"], "dtypes": ["float32"],
        "algorithms": ["ring", {"native": {"name": "nccl-tree", "env": {"NCCL_ALGO": "Tree"}}}]},
        "s.yaml")
    log = nccl_log.RankLog(tmp_path / "rank0.log")
    log.path.write_text("NCCL INFO NCCL_ALGO set by environment to Tree\n"
                        "NCCL INFO AllReduce: 8388608 Bytes -> Algo TREE proto SIMPLE "
                        "channel{Lo..Hi}={0..15}\n")
    g = Group("all_reduce", "nccl", 8, 8, 8 << 20, 2 << 20, "float32", "sum",
              ("ring", "nccl-tree"), bases=(("nccl-tree", "native"),))
    records = [{"algorithm": "ring"}, {"algorithm": "nccl-tree"}]
    _annotate(sc, g, "nccl", records, log)
    assert records[0] == {"algorithm": "ring"}  # a schedule: NCCL chose nothing for it
    assert records[1] == {
        "algorithm": "nccl-tree", "variant_of": "native", "settings": {"NCCL_ALGO": "Tree"},
        "nccl_chosen": [{"algorithm": "TREE", "protocol": "SIMPLE", "nbytes": 8 << 20,
                         "channels": 16}],
        "nccl_settings": {"NCCL_ALGO": "Tree"}}


@pytest.mark.gpu
@pytest.mark.mpi
def test_nccl_variant_records_what_nccl_chose(tmp_path: Path) -> None:
    """On a GPU: NCCL_ALGO=Ring NCCL_PROTO=Simple as a variant of native; its record says NCCL
    took the settings and, on two GPUs, ran Ring/Simple."""
    from kernels.transports.gpu import probe_cupy

    cupy, why = probe_cupy()
    if cupy is None:
        pytest.skip(why or "no CUDA device")
    from bench.store.records import load_results
    from tests.conftest import commbench

    gpus = cupy.cuda.runtime.getDeviceCount()
    (tmp_path / "s.yaml").write_text(
        f"name: nccl-variants\ntransports: [nccl]\nworld_sizes: [{min(gpus, 2)}]\n"
        "sizes: [1MiB]\ntiming: {warmup: 1, iters: 4, repetitions: 1}\n"
        "algorithms: [native, {native: {name: nccl-ring-simple, "
        "env: {NCCL_ALGO: Ring, NCCL_PROTO: Simple}}}]\n")
    res = commbench("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "run"),
                    "--no-progress", "--no-report", timeout=280)
    assert res.returncode == 0, res.stderr
    df = load_results(tmp_path / "run").set_index("algorithm")
    rec = df.loc["nccl-ring-simple"]
    assert rec["settings"] == {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}
    assert rec["nccl_settings"]["NCCL_ALGO"] == "Ring"  # NCCL says it took the setting
    if gpus >= 2:  # one rank: NCCL copies without tuning, and logs no choice
        assert {(c["algorithm"], c["protocol"]) for c in rec["nccl_chosen"]} == {("RING", "SIMPLE")}
    assert isinstance(df.loc["native", "nccl_chosen"], list)  # the default's choice, logged too
