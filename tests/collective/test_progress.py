"""One progress count for the whole run: the launcher tells each job how many of the run's cases
(groups) come before it and how many there are (COMMBENCH_PROGRESS), so the bar does not restart
per world size."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.collective.launch import CollectiveKind
from bench.collective.progress import PROGRESS_ENV, of_run
from bench.scenario_base import parse_scenario


def test_the_count_is_read_from_the_launcher_or_not_at_all() -> None:
    assert of_run({PROGRESS_ENV: "3/10"}) == (3, 10)
    for bad in ("", "3", "a/b", "11/10", "-1/10"):
        assert of_run({PROGRESS_ENV: bad}) is None
    assert of_run({}) is None


def test_each_job_starts_where_the_previous_ones_left_the_run(tmp_path: Path) -> None:
    sc = parse_scenario({"collectives": ["all_reduce", "broadcast"], "algorithms": ["native"],
                         "sizes": {"min": 8, "max": 64, "factor": 8}}, "s")
    kind = CollectiveKind(argparse.Namespace(), sc, tmp_path, resuming=False)
    kind.sizes = (1, 2, 4)
    # per world size: 2 collectives x 2 sizes = 4 groups, 12 in the run
    assert [kind._progress(w, 0) for w in (1, 2, 4)] == ["0/12", "4/12", "8/12"]
