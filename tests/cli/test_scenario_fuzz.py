"""Property-based fuzzing of the scenario loader and the size parser: any input gives a result or
a one-line error (ScenarioError / ValueError naming the cause), never another exception, never a
hang. Examples are bounded so the file runs in seconds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.collective.scenario import ScenarioError, load_scenario, parse_scenario
from bench.units import parse_size

pytestmark = pytest.mark.timeout(180)
FAST = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])

KEYS = ["name", "kind", "collective", "collectives", "transports", "world_sizes", "ranks_per_node",
        "sizes", "algorithms", "root", "dtypes", "ops", "timing", "hugepages", "thread_level",
        "check", "case_timeout_s", "description", "bogus"]
WORDS = ["all_reduce", "allgather", "alltoall", "broadcast", "ring", "tree", "native", "bruck",
         "all", "auto", "mpi", "torch", "float32", "float16", "sum", "prod", "8B", "1GiB", "16Mb",
         "-3", "0", "1e9", "osu", "on", "off", "single", "", "x" * 50]
scalars = st.one_of(st.integers(-10, 10**12), st.floats(allow_nan=True), st.booleans(), st.none(),
                    st.sampled_from(WORDS), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5),
    st.dictionaries(st.sampled_from(["min", "max", "factor", "iters", "warmup", "style",
                                     "all_reduce", "broadcast", "repetitions", *WORDS]), inner,
                    max_size=4)), max_leaves=12)
scenarios = st.dictionaries(st.sampled_from(KEYS), values, max_size=10)


def _one_line(e: Exception) -> None:
    text = str(e)
    assert text and "\n" not in text, repr(text)


@FAST
@given(st.one_of(st.text(max_size=30), st.integers(-10, 10**15), st.booleans()))
def test_parse_size_returns_bytes_or_one_line(value: Any) -> None:
    try:
        n = parse_size(value)
    except ValueError as e:
        _one_line(e)
    else:
        assert isinstance(n, int) and n >= 1


@FAST
@given(scenarios)
def test_any_mapping_is_a_scenario_or_one_line(raw: dict[str, Any]) -> None:
    try:
        parse_scenario(raw, "fuzz.yaml")
    except ScenarioError as e:
        _one_line(e)
        assert str(e).startswith("fuzz.yaml:")


@settings(max_examples=200)
@given(st.binary(max_size=300))
def test_any_file_is_a_scenario_or_one_line(tmp_path_factory: pytest.TempPathFactory,
                                            content: bytes) -> None:
    path: Path = tmp_path_factory.mktemp("fuzz") / "s.yaml"
    path.write_bytes(content)
    try:
        load_scenario(path)
    except ScenarioError as e:
        _one_line(e)
