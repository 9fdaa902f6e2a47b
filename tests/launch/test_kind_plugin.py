"""A real scenario kind written in a package of its own (a ``COMMBENCH_PLUGINS`` package, one
folder of the shape every kind has: ``__init__`` registering it, ``scenario.py``, ``launch.py``):
its scenario, its measurement through the harness, its records. ``commbench run`` runs it under
mpiexec; SIGTERM ends it with exit 143 and an ``interrupted`` run; ``--resume`` runs only the
cases without a record, through the one resume mechanism of the MPI-job base."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.store.records import iter_records, read_meta
from tests.conftest import ROOT, clean_env

PKG = "sumskind"
SIZES = [64, 1024, 16384]

INIT = '''"""The sums kind: an all-reduce at a few sizes (a kind written outside commbench)."""
from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("sums", f"{__name__}.scenario:SumsScenario", f"{__name__}.launch:run"))
'''

SCENARIO = '''from typing import Literal

from bench.scenario_base import Frozen


class SumsScenario(Frozen):
    name: str = "sums"
    kind: Literal["sums"] = "sums"
    world_size: int = 2
    sizes: list[int] = [64]
    gate: str = ""  # while this file exists, the job waits after each case

    @property
    def world_sizes(self) -> list[int]:
        return [self.world_size]
'''

LAUNCH = '''import time
from dataclasses import dataclass
from pathlib import Path

from bench.launch.mpijob import MpiJob, MpiKind, sweep_or_job


def run(args, sc, sizes=()):
    return sweep_or_job(SumsKind, args, sc, sc.world_size)


@dataclass
class SumsJob(MpiJob):
    def record_key(self, rec):
        return ("sums", rec["nbytes"]) if rec.get("kind") == "collective" else None

    def cases(self, world):
        return [("sums", n) for n in self.sc.sizes]

    def measure(self, comm, run_dir, run_id):
        from bench.measure import harness
        from bench.measure.case import Group, Timing
        from bench.measure.recording import recording, topology_for
        from kernels.transports import TRANSPORTS

        transport = TRANSPORTS.get("mpi").create(comm)
        with recording(comm, run_dir) as (dog, writer):
            env = harness.Env(comm, transport, topology_for(comm, comm.size),
                              {"run_id": run_id, "scenario": self.sc.name}, dog.where)
            for n in self.sc.sizes:
                if ("sums", n) in self.done:
                    continue
                g = Group("all_reduce", "mpi", comm.size, comm.size, n, n // 4, "float32",
                          "sum", ("ring",))
                dog.arm_case(g.label(), 60.0, world_size=comm.size)
                records = harness.measure(env, g, Timing(warmup=1, iters=3, repetitions=1), True)
                dog.disarm()
                for rec in records:  # rank 0's (the others have none)
                    writer.write(rec)
                while self.sc.gate and Path(self.sc.gate).exists():
                    time.sleep(0.05)
        transport.close()


class SumsKind(MpiKind):
    what = "sums run"
    job = SumsJob
'''


def _env(tmp_path: Path) -> dict[str, str]:
    return {**clean_env(), "COMMBENCH_PLUGINS": PKG, "PYTHONPATH": str(tmp_path)}


def _records(run_dir: Path) -> list[dict[str, object]]:
    return list(iter_records(run_dir, samples=False))


@pytest.mark.mpi
def test_a_kind_in_its_own_package_runs_is_interrupted_and_resumes(tmp_path: Path) -> None:
    pkg = tmp_path / PKG
    pkg.mkdir()
    (pkg / "__init__.py").write_text(INIT)
    (pkg / "scenario.py").write_text(SCENARIO)
    (pkg / "launch.py").write_text(LAUNCH)
    gate = tmp_path / "gate"
    gate.write_text("")
    (tmp_path / "s.yaml").write_text(f"kind: sums\nsizes: {json.dumps(SIZES)}\ngate: {gate}\n")
    run_dir = tmp_path / "run"
    with (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "bench", "run", str(tmp_path / "s.yaml"),
                                 "--out", str(run_dir), "--no-progress", "--no-report"], cwd=ROOT,
                                env=_env(tmp_path), text=True, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True)
    deadline = time.monotonic() + 120
    while not ((run_dir / "results.jsonl").exists() and _records(run_dir)):
        assert proc.poll() is None, (tmp_path / "err.txt").read_text()
        assert time.monotonic() < deadline, "no record within 120 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # the job waits at the gate after its first case
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert "interrupted by SIGTERM" in (tmp_path / "err.txt").read_text()
    assert read_meta(run_dir)["status"] == "interrupted"
    first = _records(run_dir)
    assert [r["nbytes"] for r in first] == SIZES[:1]

    gate.unlink()
    res = subprocess.run([sys.executable, "-m", "bench", "run", "--resume", str(run_dir),
                          "--no-progress", "--no-report"], cwd=ROOT, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    after = _records(run_dir)
    assert sorted(r["nbytes"] for r in after) == SIZES  # each case once: only the missing ran
    assert after[0] == first[0]
    assert all(r["kind"] == "collective" and r["status"] == "ok" and r["wrong"] == 0
               for r in after)
    assert read_meta(run_dir)["status"] == "ok"

    again = subprocess.run([sys.executable, "-m", "bench", "run", "--resume", str(run_dir),
                            "--no-progress", "--no-report"], cwd=ROOT, env=_env(tmp_path),
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"nothing to resume: every case of {run_dir} has a record" in again.stderr
    assert len(_records(run_dir)) == len(SIZES)
