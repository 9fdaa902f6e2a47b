"""``commbench run`` spelled as nccl-tests and OSU spell it: the axis flags make the scenario (alone
or over a file's keys), the run directory keeps the equivalent ``scenario.yaml`` that reruns the
same cases, ``--resume`` needs no scenario argument, and bad flags are one line, exit 2."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench.collective import flags
from bench.collective.scenario import ScenarioError, load_scenario
from bench.store.records import iter_records
from bench.store.resume import write_yaml
from tests.conftest import commbench

FLAGS = ["-c", "all_reduce,all_gather", "-b", "8", "-e", "64K", "-f", "8192", "-n", "2",
         "-a", "ring,native", "-w", "1", "-i", "3", "--no-progress"]


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    flags.add_flags(p)
    return p.parse_args(list(argv))


def _keys(run: Path) -> list[tuple[object, ...]]:
    return sorted((r["collective"], r["algorithm"], r["world_size"], r["nbytes"], r["dtype"],
                   r["op"]) for r in iter_records(run))


def test_flags_set_the_scenario_keys_alone_and_over_a_file(tmp_path: Path) -> None:
    sc = flags.scenario_from(None, _args("-c", "all_reduce", "-b", "8", "-e", "1M", "-f", "2",
                                         "-n", "2,4", "-d", "float32,int32", "-o", "sum,max",
                                         "-a", "ring,tree,native", "--check", "0", "-x", "2",
                                         "-i", "7"), "command line")
    assert sc.collectives == ["all_reduce"] and sc.world_sizes == [2, 4]
    assert sc.byte_sizes()[0] == 8 and sc.byte_sizes()[-1] == 1 << 20 and len(sc.byte_sizes()) == 18
    assert sc.dtypes == ["float32", "int32"] and sc.ops == ["sum", "max"] and sc.check is False
    assert (sc.timing.warmup, sc.timing.iters) == (2, 7)
    base = load_scenario("scenarios/quick.yaml")
    over = flags.scenario_from(base.model_dump(mode="json"), _args("-e", "512", "-n", "2"),
                               "scenarios/quick.yaml")
    assert over.world_sizes == [2] and over.byte_sizes() == [8, 64, 512]
    assert over.collectives == base.collectives and over.timing == base.timing
    again = load_scenario(write_yaml(sc, tmp_path))
    assert again.model_dump(mode="json") == sc.model_dump(mode="json")


@pytest.mark.parametrize(("argv", "words"), [
    (["-c", "all_reduce", "-b", "1M", "-e", "8"], "below min"),
    (["-c", "no_such_collective", "-b", "8", "-e", "8"], "no_such_collective"),
    (["-c", "all_reduce", "-b", "8", "-e", "8", "-n", "0"], "world_sizes"),
    (["-c", "all_reduce", "-b", "8", "-e", "8", "-n", "two"], "world_sizes"),
    (["-c", "all_reduce", "-b", "8x", "-e", "8"], "sizes"),
    (["-c", "all_reduce", "-b", "8", "-e", "8", "-f", "1"], "factor"),
    (["-c", "all_reduce", "-b", "8", "-e", "8", "--check", "maybe"], "check"),
    ([], "give a scenario file"),
])
def test_bad_flags_are_one_line_exit_2(argv: list[str], words: str) -> None:
    res = commbench("run", *argv, "--no-progress", timeout=60)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("commbench: ") and words in lines[0], lines[0]


def test_flags_on_a_training_scenario_are_refused() -> None:
    with pytest.raises(ScenarioError, match="of kind 'training'"):
        flags.scenario_from({"kind": "training"}, _args("-b", "8"), "t.yaml")


@pytest.mark.slow
@pytest.mark.mpi
def test_a_flag_run_leaves_a_scenario_that_reruns_it_and_resumes_without_one(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    res = commbench("run", *FLAGS, "--out", str(first))
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1].endswith("report.html")
    assert len(_keys(first)) == 2 * 2 * 2  # 2 collectives x 2 algorithms x 8 B, 64 KiB
    res = commbench("run", str(first / "scenario.yaml"), "--out", str(second), "--no-progress",
                    "--no-report")
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == str(second)  # --no-report: the run dir is last
    assert not (second / "report.html").exists()
    assert _keys(second) == _keys(first)
    # the last two cases lost: --resume alone (no scenario argument) runs exactly them again
    lines = (first / "results.jsonl").read_text().splitlines(keepends=True)
    (first / "results.jsonl").write_text("".join(lines[:-2]))
    res = commbench("run", "--resume", str(first), "--no-progress", "--no-report")
    assert res.returncode == 0, res.stderr[-2000:]
    assert _keys(first) == _keys(second)
