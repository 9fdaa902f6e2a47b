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
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from bench.launch import isolate, loopback
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


@dataclass(frozen=True)
class Watched:
    """What a watch of a job saw: its listeners read through each process (in whatever network
    namespace it runs), those the watcher's own namespace shows for the job's processes (what is
    reachable from outside), the job's network namespaces and the interfaces in them, and how
    many rank processes ran."""

    seen: list[loopback.Listener]
    outside: list[str]
    namespaces: dict[str, frozenset[str]]
    ranks: int


def _interfaces(pid: int) -> frozenset[str]:
    with open(f"/proc/{pid}/net/dev", encoding="ascii") as f:
        return frozenset(ln.split(":")[0].strip() for ln in f.readlines()[2:])


def _watch(cmd: list[str], env: dict[str, str] | None = None) -> Watched:
    """Run ``cmd`` to its end, reading the listening sockets of it and every descendant every
    50 ms, from inside each process's namespace and from this one."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env or clean_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen: set[loopback.Listener] = set()
    outside: set[str] = set()
    namespaces: dict[str, frozenset[str]] = {}
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
                    cmdline = p.cmdline()  # not the helper that enters the job's namespace
                    # (a fork not yet exec'd still shows its parent's command line)
                    rank = (p.pid != proc.pid and "bench" in cmdline and cmdline != cmd
                            and isolate.__name__ not in cmdline)
                    if rank:
                        ranks.add(p.pid)
                    if rank or p.name().startswith(loopback.LAUNCHER_NAMES):  # the job's own
                        namespaces[os.readlink(f"/proc/{p.pid}/ns/net")] = _interfaces(p.pid)
                except (psutil.Error, OSError):
                    continue
            seen.update(loopback.listening(p.pid for p in procs))
            pids = {p.pid for p in procs}
            outside.update(f"{c.laddr.ip}:{c.laddr.port} (pid {c.pid})"
                           for c in psutil.net_connections(kind="tcp")
                           if c.status == psutil.CONN_LISTEN and c.pid in pids)
            time.sleep(0.05)
        rc = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 0, proc.stderr.read() if proc.stderr else ""
    return Watched(sorted(seen), sorted(outside), namespaces, len(ranks))


def _private(w: Watched) -> None:
    """Nothing of the job is reachable from outside: no listener seen from this namespace, and
    every process of the job in a namespace of its own whose only interface is lo."""
    assert w.outside == [], w.outside
    assert w.namespaces and HERE not in w.namespaces, w.namespaces
    assert set(w.namespaces.values()) == {frozenset({"lo"})}, w.namespaces


HERE = os.readlink("/proc/self/ns/net")


def _only_what_the_launcher_cannot_bind(seen: list[loopback.Listener], family: str) -> None:
    assert loopback.unexpected(seen, family) == [], [str(s) for s in seen]


def _run(python: Path, tmp_path: Path, *more: str, env: dict[str, str] | None = None,
         prefix: tuple[str, ...] = ()) -> tuple[Watched, Path]:
    (tmp_path / "s.yaml").write_text(COLLECTIVE.format(world=2))
    out = tmp_path / "run"
    w = _watch([*prefix, str(python), "-m", "bench", "run", str(tmp_path / "s.yaml"), "--out",
                str(out), "--no-progress", "--no-report", *more], env)
    return w, out


def test_a_self_launched_mpich_jobs_ranks_listen_on_loopback_only(tmp_path: Path) -> None:
    w, out = _run(Path(sys.executable), tmp_path)
    seen = w.seen
    assert w.ranks >= 2  # the ranks were seen running, not only the parent
    _private(w)  # Hydra's control port included: it listens in the job's own namespace
    _only_what_the_launcher_cannot_bind(seen, "mpich")
    assert [s for s in seen if s.name == "python"]  # the ranks' netmod listens: on loopback
    meta = read_meta(out)
    assert meta["listen"]["where"] == "loopback" and meta["listen"]["family"] == "mpich"
    assert meta["listen"]["settings"]["FI_SOCKETS_IFACE"] == "lo"
    assert meta["listen"]["left_open"].startswith("Hydra's control port")
    assert meta["isolation"] == {"isolated": True, "why": isolate.ISOLATED}
    from reports.render import render_report

    page = render_report([out], tmp_path / "r.html").read_text()
    assert f"<dt>isolation</dt><dd>on ({isolate.ISOLATED})</dd>" in page
    assert not [w for w in meta["warnings"] if "beyond loopback" in w]
    recorded = [s for j in meta["jobs"] for s in j.get("listening", [])]
    assert any(s.startswith("127.") and "(python," in s for s in recorded), recorded  # the job's own


@pytest.mark.slow  # make test runs it; make test-fast keeps the MPICH job's case
def test_open_mpi_ranks_listen_nowhere(ompi_python: Path, tmp_path: Path) -> None:  # noqa: F811
    """Open MPI's ranks open no listener at all (no TCP BTL on one host); prterun's port, which
    PRRTE always binds to every interface, is the one door left, and the run names it."""
    w, out = _run(ompi_python, tmp_path)
    seen = w.seen
    assert w.ranks >= 2
    _private(w)  # prterun's port too
    _only_what_the_launcher_cannot_bind(seen, "openmpi")
    assert [s for s in seen if s.name == "python"] == []
    meta = read_meta(out)
    assert meta["listen"]["family"] == "openmpi" and meta["listen"]["settings"]["OMPI_MCA_btl"] == "^tcp"
    assert "prterun's out-of-band port" in meta["listen"]["left_open"]
    assert not [w for w in meta["warnings"] if "beyond loopback" in w]


@pytest.mark.slow  # make test runs it; make test-fast keeps the MPICH job's case
def test_a_probes_ranks_listen_on_loopback_only(tmp_path: Path) -> None:
    out = tmp_path / "probe"
    w = _watch([sys.executable, "-m", "bench", "probe", "-n", "4", "--sizes", "8B,1KiB",
                "--repeats", "3", "--out", str(out), "--no-progress"])
    assert w.ranks >= 4
    _private(w)
    _only_what_the_launcher_cannot_bind(w.seen, "mpich")
    assert read_meta(out)["listen"]["where"] == "loopback"


@pytest.mark.training
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="training needs torch")
def test_a_training_jobs_ranks_listen_on_loopback_only(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TRAINING)
    out, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    w = _watch([sys.executable, "-m", "bench", "run", str(tmp_path / "t.yaml"), "--out", str(out),
                "--no-progress", "--no-report"], env={**clean_env(), "TMPDIR": str(tmp)})
    seen = w.seen
    assert w.ranks >= 2
    _private(w)
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
    w = _watch([mpiexec(), "-n", "2", "-launcher", "fork", "-hosts", "localhost", sys.executable,
                "-m", "bench", "run", str(tmp_path / "s.yaml"), "--out", str(out), "--no-progress",
                "--no-report"])
    wide = loopback.exposed(w.seen)
    assert wide, [str(s) for s in w.seen]
    assert w.outside and set(w.namespaces) == {HERE}  # never wrapped: reachable from here
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
    assert facts["isolation"] == f"isolation: on ({isolate.ISOLATED})"


@pytest.mark.slow  # make test runs it; make test-fast keeps the MPICH job's case
def test_no_isolate_runs_the_job_in_this_namespace(tmp_path: Path) -> None:
    w, out = _run(Path(sys.executable), tmp_path, "--no-isolate")
    assert w.outside and set(w.namespaces) == {HERE}  # Hydra's port: reachable, as before
    assert read_meta(out)["isolation"] == {"isolated": False, "why": "turned off by --no-isolate"}


def test_where_the_kernel_refuses_the_run_completes_and_says_why(tmp_path: Path) -> None:
    """A user namespace whose limit of nested user namespaces is 0 (a per-namespace kernel
    setting) refuses the job's namespace: the run goes on in its own, and says so."""
    if subprocess.run(["unshare", "-r", "true"], capture_output=True).returncode != 0:
        pytest.skip("this kernel allows no user namespace here, so the refusal cannot be staged")
    limit = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\""
    w, out = _run(Path(sys.executable), tmp_path, prefix=("unshare", "-r", "sh", "-c", limit, "sh"))
    assert w.ranks >= 2 and set(w.namespaces) == {HERE}
    meta = read_meta(out)
    assert meta["status"] == "ok" and meta["isolation"]["isolated"] is False
    assert meta["isolation"]["why"] == (
        "the kernel refused a private namespace (unshare(CLONE_NEWUSER|CLONE_NEWNET|CLONE_NEWNS): "
        "No space left on device): the job runs in this host's network namespace, its listeners as "
        "without isolation")


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


def test_the_namespaces_hosts_file_names_loopback_and_this_host() -> None:
    assert isolate.hosts("127.0.0.1 localhost\n", "vm") == (
        "127.0.0.1 localhost\n# commbench: the job's private namespace reaches only lo\n"
        "::1 localhost\n::ffff:127.0.0.1 localhost\n127.0.0.1 vm\n")
    full = "127.0.0.1 localhost vm\n::1 localhost  # v6\n::ffff:127.0.0.1 localhost\n"
    assert isolate.hosts(full, "vm") == full
