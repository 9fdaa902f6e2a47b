"""Every malformed scenario gives one line naming file and key, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    (GOOD + "collective: alltoall\n", ["collective"]),
    (GOOD + "algorithms: [ring, ring]\n", ["algorithms"]),
    (GOOD.replace("algorithms: [ring, native]", "algorithms: []"), ["algorithms"]),
    ("- just\n- a list\n", ["mapping"]),
    ("name: [unclosed\n", ["YAML", "line"]),
    (GOOD + "case_timeout_s: 0\n", ["case_timeout_s"]),
]


@pytest.mark.parametrize(("text", "words"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
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
