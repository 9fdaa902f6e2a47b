""""One file" is true for a transport, a report section, a scenario kind and a CLI command: each
test writes that one file in a package of its own (``COMMBENCH_PLUGINS``), with no other edit
anywhere, and sees it discovered and working end to end through ``commbench``. (Algorithms:
tests/kernels/test_plugins.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, mpiexec

TRANSPORT = '''
"""Host buffers over mpi4py's pickled (lowercase) sends: each step's sends as pickled copies,
then its receives one by one in schedule order; vendor calls as the mpi transport's."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.transports import TransportSpec, register

TAG = 11


class PickledPlan:
    def __init__(self, comm: Any, schedule: Any, buf: Any, scratch: Any, op: Any) -> None:
        self.comm, self.buf, self.ufunc, self.steps = comm, buf, op.ufunc, schedule.steps

    def run(self) -> None:
        comm, buf = self.comm, self.buf
        for st in self.steps:
            sent = [comm.isend(buf[s.range.start:s.range.stop].copy(), s.peer, TAG)
                    for s in st.sends]
            for rv in st.recvs:
                dst = buf[rv.range.start:rv.range.stop]
                got = comm.recv(source=rv.peer, tag=TAG)
                if rv.reduce:
                    self.ufunc(dst, got, out=dst)
                else:
                    np.copyto(dst, got)
            for c in st.copies:
                np.copyto(buf[c.dst.start:c.dst.stop], buf[c.src.start:c.src.stop])
            for req in sent:
                req.wait()

    def close(self) -> None:
        pass


class PickledTransport:
    name, family = "mpi-pickle", "mpi"

    def __init__(self, comm: Any) -> None:
        from kernels.transports.mpi import MpiTransport  # MPI starts here, not at discovery

        self._mpi = MpiTransport(comm)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._mpi, attr)

    def compile(self, schedule: Any, buf: Any, scratch: Any, op: Any) -> PickledPlan:
        return PickledPlan(self._mpi.comm, schedule, buf, scratch, op)


register(TransportSpec("mpi-pickle", __name__, "PickledTransport",
                       "mpi4py pickled isend/recv on host buffers", "mpi"))
'''

SECTION = '''
from reports.sections import Section, section


@section("tally", 45)
def build(data, opts):
    return Section("tally", "Tally", "", {"n": len(data.frame)},
                   source="<p id=tally-body>{{ ctx.n|num }} records tallied</p>")
'''

KIND = '''
from typing import Literal

from bench.scenario_base import Frozen, ScenarioKind, register


class EchoScenario(Frozen):
    kind: Literal["echo"] = "echo"
    name: str
    world_sizes: list[int] = [1]
    message: str


def run(args, sc, sizes):
    print(f"echo {sc.message} at {','.join(map(str, sizes))}")
    return 0


register(ScenarioKind("echo", f"{__name__}:EchoScenario", f"{__name__}:run"))
'''

COMMAND = '''
from bench.argtypes import UsageError
from bench.commands import register


def configure(p):
    p.add_argument("--name", required=True, help="who to greet")


def handle(args):
    if not args.name.strip():
        raise UsageError("--name is empty", "greet")
    print(f"hello, {args.name}")
    return 0


register("greet", "greet someone by name", configure, handle, example="--name Ada", offline=True)
'''


def _plugin(tmp_path: Path, package: str, module: str, text: str) -> dict[str, str]:
    """``package/module.py`` holding ``text``, and the environment that names the package."""
    pkg = tmp_path / package
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / f"{module}.py").write_text(text)
    env = clean_env()
    env["PYTHONPATH"] = f"{tmp_path}:{ROOT}"
    env["COMMBENCH_PLUGINS"] = package
    return env


def _commbench(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)


def _records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]


def test_transport_file_is_listed_without_importing_mpi_torch_or_cupy(tmp_path: Path) -> None:
    env = _plugin(tmp_path, "mytransports", "pickled", TRANSPORT)
    listed = _commbench(env, "list")
    assert listed.returncode == 0 and "mpi-pickle" in listed.stdout, listed.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom kernels.transports import TRANSPORTS\n"
         "print(TRANSPORTS.names())\n"
         "print(sorted(m for m in ('mpi4py.MPI', 'torch', 'cupy') if m in sys.modules))"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    names, heavy = probe.stdout.strip().splitlines()
    assert names == str(["mpi", "torch", "nccl", "nccl-graph", "mpi-cupy", "cuda-ipc",
                         "mpi-pickle"]), probe.stderr
    assert heavy == "[]"


@pytest.mark.mpi
@pytest.mark.slow
def test_transport_file_runs_a_scenario_exactly_under_mpiexec(tmp_path: Path) -> None:
    mpiexec()  # skips without the mpich wheel
    env = _plugin(tmp_path, "mytransports", "pickled", TRANSPORT)
    sc = tmp_path / "pickled.yaml"
    sc.write_text("collectives: [all_reduce, all_gather, broadcast]\nalgorithms: [ring, native]\n"
                  "transports: [mpi-pickle]\nworld_sizes: [3]\nsizes: [12B, 1KiB, 48KiB]\n"
                  "dtypes: [float32, int32]\ntiming: {warmup: 1, iters: 2, repetitions: 1}\n")
    res = _commbench(env, "run", str(sc), "--out", str(tmp_path / "run"), "--no-progress",
                     "--no-report")
    assert res.returncode == 0, res.stderr[-2000:]
    recs = _records(tmp_path / "run")
    ran = {(r["collective"], r["algorithm"]) for r in recs}
    assert {("all_reduce", "ring"), ("all_gather", "ring"), ("all_reduce", "native")} <= ran
    assert all(r["transport"] == "mpi-pickle" and r["status"] == "ok" and r["wrong"] == 0
               for r in recs)
    assert len(recs) == len(ran) * 3 * 2  # every size and dtype, none skipped


@pytest.mark.slow
def test_report_section_file_appears_in_its_place_on_the_page(tmp_path: Path) -> None:
    env = _plugin(tmp_path, "mysections", "tally", SECTION)
    run = tmp_path / "run"
    imported = _commbench(env, "import", "osu", str(ROOT / "tests/data/import/osu_allreduce.txt"),
                          "--world-size", "2", "--out", str(run))
    assert imported.returncode == 0, imported.stderr
    res = _commbench(env, "report", str(run))
    assert res.returncode == 0, res.stderr[-2000:]
    html = (run / "report.html").read_text()
    n = len(_records(run))
    assert f'<p id=tally-body>{n} records tallied</p>' in html
    at = [html.index(f'<section id="{s}">') for s in ("choose", "tally", "cases", "method")]
    assert at == sorted(at)  # order 45: after choose (40), before cases (90)


def test_built_in_sections_keep_their_page_order() -> None:
    from reports.sections import SECTIONS

    assert SECTIONS.names() == ["headline", "bringup", "bandwidth", "scaling", "memory", "choose",
                                "concurrent", "strategy", "comparison", "prediction", "probe",
                                "late", "cases", "method"]


def test_scenario_kind_file_is_what_commbench_run_dispatches_to(tmp_path: Path) -> None:
    env = _plugin(tmp_path, "mykinds", "echo", KIND)
    sc = tmp_path / "echo.yaml"
    sc.write_text("kind: echo\nmessage: hi\nworld_sizes: [2, 3]\n")
    res = _commbench(env, "run", str(sc))
    assert res.returncode == 0 and res.stdout == "echo hi at 2,3\n", res.stderr
    res = _commbench(env, "run", str(sc), "--world-sizes", "5")
    assert res.stdout == "echo hi at 5\n", res.stderr
    sc.write_text("kind: echo\nmessage: hi\ncolour: red\n")
    res = _commbench(env, "run", str(sc))
    assert (res.returncode, res.stderr) == (2, f"commbench: {sc}: colour: unknown key\n")
    sc.write_text("kind: nothing\n")
    res = _commbench(env, "run", str(sc))
    assert res.stderr == (f"commbench: {sc}: kind: unknown kind 'nothing'; valid: collective, "
                          "training, probe, bringup, concurrent, replay, echo\n")


def test_command_file_is_listed_by_help_and_runs(tmp_path: Path) -> None:
    env = _plugin(tmp_path, "mycommands", "greet", COMMAND)
    listed = _commbench(env, "--help")
    assert listed.returncode == 0 and "greet someone by name" in listed.stdout
    res = _commbench(env, "greet", "--name", "Ada")
    assert (res.returncode, res.stdout) == (0, "hello, Ada\n"), res.stderr
    bad = _commbench(env, "greet", "--name", " ")  # the one error path: one line, exit 2
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", "commbench: greet: --name is empty\n")
