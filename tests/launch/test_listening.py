"""A one-host job commbench starts opens no door it does not need: every listening socket of
every rank, read with psutil while the job runs, is on loopback (127.0.0.0/8, ::1) — under
MPICH, Open MPI, torchrun and for the probe. What no setting of the launcher binds (Hydra's
control port, prterun's out-of-band port: each binds every interface) is the only thing beyond
loopback, owned by the launcher, and named in meta.json; a training job has nothing beyond it
(torchrun's stores are handed a socket bound to loopback); the settings are in
meta.json, a variable the user set wins, and a user's own launcher is recorded, not changed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bench.launch import loopback
from bench.store.records import read_meta
from tests.conftest import ROOT, clean_env, mpiexec
from tests.launch.test_openmpi import ompi_python  # noqa: F401 (a fixture: .venv-openmpi, or a skip)

pytestmark = pytest.mark.mpi

COLLECTIVE = """\
name: listen
collectives: [all_reduce, all_gather]
algorithms: {{all_reduce: [ring, native], all_gather: [ring]}}
world_sizes: [{world}]
sizes: [8B, 64KiB, 1MiB]
timing: {{warmup: 2, iters: 20}}
"""

TRAINING = """\
name: listen-training
kind: training
models: [mlp]
strategies: [ddp]
world_sizes: [2]
batch_size: 8
steps: 3
warmup: 2
backend: gloo
"""


def _watch(cmd: list[str], env: dict[str, str] | None = None,
           ) -> tuple[int, list[loopback.Listener], int]:
    """Run ``cmd`` to its end, reading the listening sockets of it and every descendant every
    50 ms: (exit code, every listener seen, how many rank processes were seen)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env or clean_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen: set[loopback.Listener] = set()
    ranks: set[int] = set()
    deadline = time.monotonic() + 240
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                procs = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
            except psutil.NoSuchProcess:
                break
            for p in procs:
                try:
                    if p.pid != proc.pid and "bench" in p.cmdline():
                        ranks.add(p.pid)
                except psutil.Error:
                    continue
            seen.update(loopback.listening(p.pid for p in procs))
            time.sleep(0.05)
        rc = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 0, proc.stderr.read() if proc.stderr else ""
    return rc, sorted(seen), len(ranks)


def _only_what_the_launcher_cannot_bind(seen: list[loopback.Listener], family: str) -> None:
    assert loopback.unexpected(seen, family) == [], [str(s) for s in seen]


def _run(python: Path, tmp_path: Path, world: int = 2) -> tuple[list[loopback.Listener], int, Path]:
    (tmp_path / "s.yaml").write_text(COLLECTIVE.format(world=world))
    out = tmp_path / "run"
    _, seen, ranks = _watch([str(python), "-m", "bench", "run", str(tmp_path / "s.yaml"),
                             "--out", str(out), "--no-progress", "--no-report"])
    return seen, ranks, out


def test_a_self_launched_mpich_jobs_ranks_listen_on_loopback_only(tmp_path: Path) -> None:
    seen, ranks, out = _run(Path(sys.executable), tmp_path)
    assert ranks >= 2  # the ranks were seen running, not only the parent
    _only_what_the_launcher_cannot_bind(seen, "mpich")
    assert [s for s in seen if s.name == "python"]  # the ranks' netmod listens: on loopback
    meta = read_meta(out)
    assert meta["listen"]["where"] == "loopback" and meta["listen"]["family"] == "mpich"
    assert meta["listen"]["settings"]["FI_SOCKETS_IFACE"] == "lo"
    assert meta["listen"]["left_open"].startswith("Hydra's control port")
    assert not [w for w in meta["warnings"] if "beyond loopback" in w]
    recorded = [s for j in meta["jobs"] for s in j.get("listening", [])]
    assert any(s.startswith("127.") and "(python," in s for s in recorded), recorded  # the job's own


@pytest.mark.slow  # make test runs it; make test-fast keeps the MPICH job's case
def test_open_mpi_ranks_listen_nowhere(ompi_python: Path, tmp_path: Path) -> None:  # noqa: F811
    """Open MPI's ranks open no listener at all (no TCP BTL on one host); prterun's port, which
    PRRTE always binds to every interface, is the one door left, and the run names it."""
    seen, ranks, out = _run(ompi_python, tmp_path)
    assert ranks >= 2
    _only_what_the_launcher_cannot_bind(seen, "openmpi")
    assert [s for s in seen if s.name == "python"] == []
    meta = read_meta(out)
    assert meta["listen"]["family"] == "openmpi" and meta["listen"]["settings"]["OMPI_MCA_btl"] == "^tcp"
    assert "prterun's out-of-band port" in meta["listen"]["left_open"]
    assert not [w for w in meta["warnings"] if "beyond loopback" in w]


@pytest.mark.slow  # make test runs it; make test-fast keeps the MPICH job's case
def test_a_probes_ranks_listen_on_loopback_only(tmp_path: Path) -> None:
    out = tmp_path / "probe"
    _, seen, ranks = _watch([sys.executable, "-m", "bench", "probe", "-n", "4", "--sizes",
                             "8B,1KiB", "--repeats", "3", "--out", str(out), "--no-progress"])
    assert ranks >= 4
    _only_what_the_launcher_cannot_bind(seen, "mpich")
    assert read_meta(out)["listen"]["where"] == "loopback"


@pytest.mark.training
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="training needs torch")
def test_a_training_jobs_ranks_listen_on_loopback_only(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TRAINING)
    out, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    _, seen, ranks = _watch([sys.executable, "-m", "bench", "run", str(tmp_path / "t.yaml"),
                             "--out", str(out), "--no-progress", "--no-report"],
                            env={**clean_env(), "TMPDIR": str(tmp)})
    assert ranks >= 2
    assert list(tmp.iterdir()) == []  # torchrun's torchelastic_* tree went with the job's TMPDIR
    assert loopback.exposed(seen) == [], [str(s) for s in seen]  # torchrun's stores too
    assert [s for s in seen if s.name == "python"]  # gloo's listeners: on loopback
    assert [s for s in seen if s.name == "pt_elastic"]  # the agent's store: on loopback
    meta = read_meta(out)
    assert meta["listen"]["family"] == "torch"
    assert meta["listen"]["settings"]["GLOO_SOCKET_IFNAME"] == "lo"
    assert meta["listen"]["left_open"] == ""


@pytest.mark.slow  # make test runs it; make test-fast keeps the MPICH job's case
def test_a_users_own_launcher_is_recorded_not_changed(tmp_path: Path) -> None:
    """Hydra, started by the user, listens on every interface: commbench leaves it, the watch
    sees it (so the watch can fail), and the run's meta names it."""
    (tmp_path / "s.yaml").write_text(COLLECTIVE.format(world=2))
    out = tmp_path / "job"
    _, seen, _ = _watch([mpiexec(), "-n", "2", "-launcher", "fork", "-hosts", "localhost",
                         sys.executable, "-m", "bench", "run", str(tmp_path / "s.yaml"), "--out",
                         str(out), "--no-progress", "--no-report"])
    wide = loopback.exposed(seen)
    assert wide, [str(s) for s in seen]
    recorded = [s for host in read_meta(out)["listening"].values() for s in host]
    assert {s.split(" (")[0] for s in map(str, wide)} <= {s.split(" (")[0] for s in recorded}


def test_env_says_where_each_kind_of_run_listens() -> None:
    res = subprocess.run([sys.executable, "-m", "bench", "env", "--json"], capture_output=True,
                         text=True, timeout=120, env=clean_env(), cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    facts = json.loads(res.stdout)["listening"]
    mpich, torch = loopback.FAMILIES["mpich"], loopback.FAMILIES["torch"]
    assert facts["collective and probe runs"] == f"loopback: {mpich.why}"
    assert facts["collective and probe runs: left open"] == mpich.left_open
    assert facts["collective and probe runs: settings"] == [f"{k}={v}" for k, v in mpich.env.items()]
    assert facts["training runs: left open"] == "nothing" and torch.left_open == ""
    assert "lo: 127.0.0.1, ::1" in facts["interfaces"]


def test_the_users_variable_wins_and_is_recorded() -> None:
    c = loopback.confine({"UCX_NET_DEVICES": "mlx5_0:1", "PATH": "/bin"}, "mpich")
    assert c.env["UCX_NET_DEVICES"] == "mlx5_0:1" and c.env["FI_TCP_IFACE"] == "lo"
    assert c.set_by_user == {"UCX_NET_DEVICES": "mlx5_0:1"}
    assert "UCX_NET_DEVICES" not in c.set_by_commbench and c.env["PATH"] == "/bin"
    unknown = loopback.confine({}, "unknown")
    assert unknown.env == {} and unknown.as_meta()["where"] == "unconfined"


def test_only_the_launchers_known_port_is_excused() -> None:
    hydra = loopback.Listener("0.0.0.0", 4000, 10, "hydra_pmi_proxy")
    rank = loopback.Listener("192.0.2.2", 4001, 11, "python")
    local = loopback.Listener("127.0.0.1", 4002, 11, "python")
    inherited = loopback.Listener("0.0.0.0", 4000, 11, "python")  # Hydra's socket, forked
    assert loopback.unexpected([hydra, inherited, rank, local], "mpich") == [rank]
    assert loopback.unexpected([inherited], "mpich") == [inherited]  # no Hydra holds it
    assert loopback.unexpected([hydra], "openmpi") == [hydra]  # not Open MPI's launcher
    assert loopback.unexpected([hydra], "unknown") == [hydra]


@pytest.mark.parametrize(("address", "inside"), [
    ("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.2", False), ("fe80::1%eth0", False), ("", False),
])
def test_what_counts_as_loopback(address: str, inside: bool) -> None:
    assert loopback.is_loopback(address) is inside
