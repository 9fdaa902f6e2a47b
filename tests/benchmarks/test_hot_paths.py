"""pytest-benchmark benchmarks of the suite's single-process hot paths.

CI runs them once as plain tests (pyproject's addopts has ``--benchmark-disable``); to measure
and compare: ``pytest tests/benchmarks --benchmark-enable --benchmark-autosave`` then
``pytest-benchmark compare``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from bench.store.records import load_results
from kernels.algorithm import Problem, get_algorithm
from kernels.topology import Topology
from reports.data import load_runs
from reports.render import render_html
from reports.sections import Options
from tests.helpers import synthetic


@pytest.mark.parametrize(("collective", "name"), [
    ("all_reduce", "ring"), ("all_reduce", "tree"), ("all_reduce", "halving_doubling"),
    ("all_reduce", "hierarchical"), ("all_gather", "bruck"), ("alltoall", "pairwise")])
def test_schedule_compile(benchmark: BenchmarkFixture, collective: str, name: str) -> None:
    world, count = 64, 1 << 20
    problem = Problem(Topology.blocks(world, 8), count, 4, collective)
    sched = benchmark(get_algorithm(collective, name).schedule, problem, 5)
    sent = sum(s.range.size for st in sched.steps for s in st.sends)
    assert sched.rank == 5 and sched.world == world
    assert sent >= count * (world - 1) // world  # every rank sends at least its share once


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = synthetic.Spec(world_sizes=(2, 4, 8, 16), sizes=tuple(8 * 4**i for i in range(11)),
                          transports=("mpi", "nccl"), samples=100)
    return synthetic.write_run(tmp_path_factory.mktemp("bench") / "run",
                               synthetic.collective_records(spec))


def test_load_results(benchmark: BenchmarkFixture, run: Path) -> None:
    df = benchmark(load_results, run)
    assert len(df) == 2 * 4 * 11 * 4 and len(df["samples_us"].iloc[0]) == 100


def test_render_report(benchmark: BenchmarkFixture, run: Path) -> None:
    data = load_runs([run])
    html = benchmark.pedantic(render_html, (data, Options(max_panels=2)), rounds=1, iterations=1)
    assert html.count("<svg") == 2 * 2 + 2  # busbw + latency per panel, scaling per panel
