"""Floors (``expect:``, bench/measure/floors.py) on recorded records: which case an entry
covers, which falls below it, what the record and the run's line say, and that the run fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.launch.selflaunch import Sweep
from bench.measure import floors
from bench.measure.floors import Floor
from bench.store.records import SCHEMA_VERSION


def rec(nbytes: int, busbw: float, collective: str = "all_reduce", **more: Any) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "kind": "collective", "status": "ok",
            "collective": collective, "algorithm": "ring", "world_size": 8, "nbytes": nbytes,
            "busbw_gbps": busbw, **more}


FLOORS = [Floor(collective="allreduce", min_size="1MiB", max_size="64MiB", busbw_gbps=10),
          Floor(collective="all_gather", pct_of_expected=70)]


def test_a_case_below_the_floor_that_covers_it_fails_naming_its_hosts() -> None:
    r = rec(4 << 20, 3.25)
    assert floors.hold(r, FLOORS, ["tu-1", "tu-0", "tu-1"])
    assert r["status"] == floors.BELOW
    assert r["floor"] == {"expect": "all_reduce 1MiB-64MiB: 10 GB/s busbw", "got": 3.25,
                          "hosts": ["tu-0", "tu-1"]}
    assert r["reason"] == ("all_reduce 4MiB ring p=8 on tu-0, tu-1: 3.25 GB/s below the floor "
                           "(all_reduce 1MiB-64MiB: 10 GB/s busbw)")


def test_cases_met_uncovered_unmeasurable_or_already_failed_are_left_alone() -> None:
    for r in (rec(4 << 20, 12.0), rec(512 << 10, 1.0), rec(128 << 20, 1.0),
              rec(4 << 20, 1.0, "broadcast"), rec(4 << 20, 1.0, status="wrong"),
              rec(1 << 20, 1.0, "all_gather"),  # no prediction: no percentage to hold
              rec(1 << 20, 1.0, "all_gather", pct_of_expected=80.0)):
        before = dict(r)
        assert not floors.hold(r, FLOORS, ["h"]) and r == before
    r = rec(1 << 20, 1.0, "all_gather", pct_of_expected=55.5)
    assert floors.hold(r, FLOORS, ["h"]) and r["floor"]["got"] == 55.5


def test_the_run_fails_and_says_each_case_below_its_floor(tmp_path: Path, capsys: Any) -> None:
    below = rec(4 << 20, 3.25)
    floors.hold(below, FLOORS, ["tu-3"])
    (tmp_path / "results.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in (rec(4 << 20, 12.0), below)))
    sweep = Sweep(tmp_path, {})
    assert sweep._finish() == 1
    assert sweep.info["status"] == "failed" and sweep.info["reason"] == "1 case below its floor (expect:)"
    assert "commbench: below its floor: all_reduce 4MiB ring p=8 on tu-3: 3.25 GB/s" in \
        capsys.readouterr().err
