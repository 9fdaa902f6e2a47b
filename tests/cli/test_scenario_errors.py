"""Every malformed scenario gives one line naming file and key, exit 2, no traceback.

The whole table is checked in-process (the loader's one-line error); a sample and the file-type
cases also go through the CLI, so the exit code and the single stderr line are held too."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from bench.collective.scenario import ScenarioError, check_memory, load_scenario
from tests.conftest import commbench

GOOD = """\
name: t
world_sizes: [1, 2]
sizes: [8B, 1KiB]
algorithms: [ring, native]
"""

# (scenario text, words the one-line error must contain)
BAD = [
    ("name: t\nsizes: [8B]\nalgorithms: [rign]\n", ["algorithms", "rign", "valid:", "ring"]),
    (GOOD + "bogus: 1\n", ["bogus", "unknown key"]),
    (GOOD.replace("[8B, 1KiB]", "[8X]"), ["sizes", "8X"]),
    (GOOD.replace("[8B, 1KiB]", "[-5]"), ["sizes"]),
    (GOOD.replace("[8B, 1KiB]", "{min: 1MiB, max: 8B}"), ["sizes", "below min"]),
    (GOOD.replace("[8B, 1KiB]", "{min: 8B, max: 1MiB, factor: 1}"), ["sizes.factor"]),
    (GOOD.replace("[8B, 1KiB]", "{min: 8B, max: 1MiB, step: 2}"), ["sizes.step", "unknown key"]),
    (GOOD.replace("[8B, 1KiB]", "[2B]"), ["sizes", "smaller than one element"]),
    (GOOD.replace("[8B, 1KiB]", "[1TiB]"), ["sizes", "available"]),
    (GOOD + "ranks_per_node: [2]\nworld_sizes: [3]\n", ["world_sizes"]),  # duplicate key
    (GOOD.replace("world_sizes: [1, 2]", "world_sizes: [3]") + "ranks_per_node: [2]\n",
     ["ranks_per_node", "does not divide", "3"]),
    (GOOD.replace("world_sizes: [1, 2]", "world_sizes: [0]"), ["world_sizes.0"]),
    (GOOD.replace("world_sizes: [1, 2]", "world_sizes: two"), ["world_sizes"]),
    (GOOD + "dtypes: [float128]\n", ["dtypes", "float128", "valid:"]),
    (GOOD + "ops: [avg]\n", ["ops", "avg", "valid:"]),
    (GOOD + "transports: [carrier-pigeon]\n", ["transports", "carrier-pigeon"]),
    (GOOD + "timing: {iters: many}\n", ["timing.iters"]),
    (GOOD + "timing: {min_iters: 10, max_iters: 5}\n", ["timing", "max_iters"]),
    (GOOD + "timing: {warmup: -1}\n", ["timing.warmup"]),
    (GOOD + "timing: {speed: fast}\n", ["timing.speed", "unknown key"]),
    (GOOD + "kind: quantum\n", ["kind", "quantum"]),
    (GOOD + "collective: alltoallz\n", ["collective", "alltoallz", "valid:", "all_gather"]),
    (GOOD + "collectives: [all_gather, allgather]\n", ["collectives", "twice"]),
    (GOOD + "collectives: []\n", ["collectives"]),
    (GOOD + "expect: [{collective: all_reduce, busbw_gbps: 5, pct_of_expected: 70}]\n",
     ["expect.0", "exactly one of busbw_gbps and pct_of_expected"]),
    (GOOD + "expect: [{collective: all_reduc, busbw_gbps: 5}]\n", ["expect.0.collective",
                                                                  "all_reduc"]),
    (GOOD + "expect: [{collective: all_reduce, min_size: 4MiB, max_size: 1MiB, busbw_gbps: 5}]\n",
     ["expect.0", "below min_size"]),
    (GOOD + "expect: [{collective: all_reduce, busbw_gbps: -1}]\n", ["expect.0.busbw_gbps"]),
    (GOOD + "expect: [{collective: all_reduce, floor: 3}]\n", ["expect.0.floor", "unknown key"]),
    (GOOD + "collectives: 5\n", ["collectives"]),
    (GOOD + "collective: allreduce\ncollectives: [all_gather]\n", ["collective", "not both"]),
    (GOOD.replace("[ring, native]", "[tree]") + "collectives: [all_gather]\n",
     ["algorithms", "tree", "all_gather", "valid:"]),
    (GOOD.replace("[ring, native]", "{all_gather: [tree]}") + "collectives: [all_gather]\n",
     ["algorithms.all_gather", "tree", "valid:"]),
    (GOOD.replace("[ring, native]", "{broadcast: [native]}") + "collectives: [all_gather]\n",
     ["algorithms", "broadcast", "not one of"]),
    (GOOD.replace("[ring, native]", "{teleport: [native]}"), ["algorithms", "teleport"]),
    (GOOD.replace("[ring, native]", "sometimes"), ["algorithms"]),
    (GOOD.replace("[ring, native]", "all") + "collectives: [broadcast]\nroot: 2\n",
     ["root", "outside world size 1"]),
    (GOOD + "root: -1\n", ["root"]),
    (GOOD.replace("[ring, native]", "all") + "collectives: [all_gather]\nops: [prod]\n",
     ["ops", "do not reduce"]),
    (GOOD.replace("[8B, 1KiB]", "[16Mb]"), ["sizes", "bits", "16MiB"]),
    (GOOD.replace("[8B, 1KiB]", "{min: 8B, max: 1GiB, factor: 1.0000001}"),
     ["sizes", "at most 1000"]),
    (GOOD.replace("[8B, 1KiB]", "{min: 8B}"), ["sizes.max"]),
    (GOOD.replace("[8B, 1KiB]", "{min: 8B, max: 1MiB, factor: two}"), ["sizes.factor"]),
    (GOOD.replace("world_sizes: [1, 2]", "world_sizes: [1, 1]"), ["world_sizes", "twice"]),
    (GOOD + "ranks_per_node: [0]\n", ["ranks_per_node"]),
    (GOOD + "timing: {repetitions: 0}\n", ["timing.repetitions"]),
    (GOOD + "check: maybe\n", ["check"]),
    (GOOD + "transports: [mpi, mpi]\n", ["transports", "twice"]),
    (GOOD + "ops: [sum, sum]\n", ["ops", "twice"]),
    (GOOD + "dtypes: float32\n", ["dtypes"]),
    (GOOD + "name: [a, b]\n", ["name"]),
    ("", ["mapping"]),
    ("name: t\n", ["sizes"]),
    ("name: &a [*a]\n", ["name"]),
    (GOOD + "algorithms: [ring, ring]\n", ["algorithms"]),
    (GOOD.replace("algorithms: [ring, native]", "algorithms: []"), ["algorithms"]),
    ("- just\n- a list\n", ["mapping"]),
    ("name: [unclosed\n", ["YAML", "line"]),
    (GOOD + "case_timeout_s: 0\n", ["case_timeout_s"]),
]


@pytest.mark.parametrize(("text", "words"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_malformed_scenario_in_process(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        sc = load_scenario(path)
        check_memory(sc, str(path), 1, psutil.virtual_memory().available)
    line = str(err.value)
    assert "\n" not in line and str(path) in line
    for w in words:
        assert w in line, (w, line)


def test_enough_malformed_scenarios_are_tried() -> None:
    assert len(BAD) >= 40


CLI_SAMPLE = [BAD[0], BAD[8], BAD[10], next(b for b in BAD if "alltoallz" in b[0])]


@pytest.mark.parametrize(("text", "words"), CLI_SAMPLE, ids=[f"cli{i}" for i in range(len(CLI_SAMPLE))])
def test_malformed_scenario(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    res = commbench("run", str(path), "--out", str(tmp_path / "run"), timeout=60)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert str(path) in lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    res = commbench("run", str(tmp_path / "nope.yaml"))
    assert res.returncode == 2
    assert "no such scenario file" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_bad_world_sizes_flag(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(GOOD)
    res = commbench("run", str(tmp_path / "s.yaml"), "--world-sizes", "2,x")
    assert res.returncode == 2 and "--world-sizes" in res.stderr


@pytest.mark.parametrize(("content", "words"), [
    (None, ["is a directory"]),
    (b"\x7fELF\x02\x01\x00\x00binary", ["binary"]),
    ("name: t\nsizes: [8B]\n".encode("utf-16"), ["UTF-16", "UTF-8"]),
    (b"name: \xff\xfe t\n", ["not UTF-8"]),
], ids=["directory", "binary", "utf16", "latin1"])
def test_not_a_scenario_file(tmp_path: Path, content: bytes | None, words: list[str]) -> None:
    path = tmp_path / "s.yaml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    res = commbench("run", str(path), "--out", str(tmp_path / "run"), timeout=60)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
