"""A throwaway Slurm cluster for tests: munged, slurmctld and slurmd started from a temporary
directory (their own munge key, slurm.conf, state, logs); :meth:`Cluster.stop` ends exactly the
daemons it started. One host: bound to 127.0.0.1 on free ports, with this machine's cores. On a
testbed (:mod:`bench.testbed`): slurmctld on its first host, one slurmd per host (each in its
host's namespaces, with its name and address), client commands run from the first host.

Debian's packages (``slurmctld``, ``slurmd``, ``slurm-client``, ``munge``) are installed with
apt-get when missing and this process is root (``apt-get update`` once first); otherwise
:func:`ensure_slurm` says in one line why it cannot.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from bench.testbed import launch as tb_launch
from bench.testbed.spec import Testbed

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("slurmctld", "slurmd", "srun", "sbatch", "sinfo", "squeue", "scancel", "munged")
NODE = "cbnode"


def missing() -> list[str]:
    return [b for b in BINARIES if not (shutil.which(b) or Path("/usr/sbin", b).exists())]


def ensure_slurm() -> str | None:
    """None when Slurm and munge are there (installing them if root with apt-get), else why not."""
    if not missing():
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return f"Slurm missing ({', '.join(missing())}) and no root apt-get to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]):
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if res.returncode != 0:
            tail = (res.stderr.strip().splitlines() or ["?"])[-1]
            return f"{' '.join(cmd[:2])} failed: {tail}"
    return None if not missing() else f"installed, still missing {', '.join(missing())}"


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _daemon(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class Cluster:
    def __init__(self, root: Path, cpus: int | None = None, testbed: Testbed | None = None) -> None:
        self.root = root
        self.cpus = cpus or os.cpu_count() or 1
        self.testbed = testbed
        self.procs: list[subprocess.Popen[bytes]] = []
        self.conf = root / "slurm.conf"
        self.socket = root / "munge.socket"

    @property
    def env(self) -> dict[str, str]:
        """The environment client commands (srun, sbatch, ...) need to reach this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _write(self) -> None:
        r = self.root
        for d in ("state", "spool", "munge"):
            (r / d).mkdir(parents=True, exist_ok=True)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        ctld, slurmd, lo, hi = (*_free_ports(2), 0, 0)
        tb = self.testbed
        if tb is None:
            ctld_host = "localhost(127.0.0.1)"
            nodes = [f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} "
                     f"CPUs={self.cpus} State=UNKNOWN"]
        else:
            ctld_host = f"{tb.name(0)}({tb.address(0)})"
            nodes = [f"NodeName={tb.name(i)} NodeAddr={tb.address(i)} NodeHostname={tb.name(i)} "
                     f"CPUs={self.cpus} State=UNKNOWN" for i in range(tb.hosts)]
        node_list = ",".join(self.node_names)
        for name in self.node_names:
            (r / "spool" / name).mkdir(parents=True, exist_ok=True)
        node_lines = "\n".join(nodes)
        lo = 20000 + (ctld % 20000)
        hi = lo + 200
        # Job ids new to this machine: MPICH names its shared-memory segments after the PMI job,
        # and a segment left in /dev/shm by a killed rank of an earlier cluster's job of the same
        # id breaks MPI_Init ("Message truncated" in MPIDI_UCX_comm_set_vcis).
        self.conf.write_text(f"""\
ClusterName=commbenchtest
FirstJobId={random.randrange(100_000, 50_000_000)}
SlurmctldHost={ctld_host}
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SrunPortRange={lo}-{hi}
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.socket}
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd-%n.pid
SlurmctldLogFile={r}/slurmctld.log
SlurmdLogFile={r}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=pmi2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
KillOnBadExit=1
KillWait=5
MinJobAge=300
InactiveLimit=0
{node_lines}
PartitionName=debug Nodes={node_list} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
""")

    @property
    def node_names(self) -> list[str]:
        return [NODE] if self.testbed is None else self.testbed.names()

    def on(self, host: int) -> list[str]:
        """The argv prefix that runs a command on the cluster's host ``host`` (none on one host,
        nor for ``host`` -1: this machine itself)."""
        if self.testbed is None or host < 0:
            return []
        return tb_launch.enter(self.testbed, host)

    def _start(self, *cmd: str, host: int = 0, log: str = "") -> None:
        out = (self.root / f"{log or Path(cmd[0]).name}.out").open("ab")
        self.procs.append(subprocess.Popen([*self.on(host), *cmd], stdout=out,
                                           stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))

    def start(self, timeout: float = 60) -> None:
        self._write()
        m = self.root / "munge"
        self._start(_daemon("munged"), "-F", "--force", f"--socket={self.socket}",
                    f"--key-file={m / 'munge.key'}", f"--pid-file={m / 'munged.pid'}",
                    f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}", host=-1)
        self._wait(lambda: self.socket.exists(), timeout, "munged socket")
        self._start(_daemon("slurmctld"), "-D", "-i", "-f", str(self.conf))
        for i, name in enumerate(self.node_names):
            self._start(_daemon("slurmd"), "-D", "-N", name, "-f", str(self.conf), host=i,
                        log=f"slurmd-{name}")
        self._wait(self._idle, timeout, "every node idle in sinfo")

    def _idle(self) -> bool:
        res = self.run("sinfo", "-h", "-N", "-o", "%T", timeout=30)
        return res.returncode == 0 and res.stdout.split() == ["idle"] * len(self.node_names)

    def _wait(self, ok: object, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if callable(ok) and ok():
                return
            dead = [p.args[0] for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{dead[0]} exited; {self.logs()}")
            time.sleep(0.5)
        raise RuntimeError(f"timed out waiting for {what}; {self.logs()}")

    def logs(self, lines: int = 5) -> str:
        out = []
        slurmds = [f"slurmd-{n}.{x}" for n in self.node_names for x in ("log", "out")]
        for f in ("slurmctld.log", "munge/munged.log", "slurmctld.out", *slurmds):
            p = self.root / f
            if p.exists():
                tail = p.read_text(errors="replace").strip().splitlines()[-lines:]
                out.append(f"{f}: " + " | ".join(tail))
        return " || ".join(out)

    def run(self, *cmd: str, timeout: float = 180, **kw: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.on(0), *cmd], capture_output=True, text=True,
                              env={**self.env, **kw.pop("env", {})},  # type: ignore[dict-item]
                              timeout=timeout, **kw)  # type: ignore[call-overload]

    def stop(self) -> None:
        """Cancel every job, then end the daemons this object started (their process groups)."""
        if self.procs:
            self.run("scancel", "--full", "-u", "root", timeout=30)
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=15)
        self.procs = []
