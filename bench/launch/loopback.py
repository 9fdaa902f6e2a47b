"""Where a job commbench starts may listen: on one host, loopback only (docs/running.md).

Each launcher family's settings are stated once, in :data:`FAMILIES`; a variable the user set
wins. A job the user starts is not changed: what its ranks listen on is recorded."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

LOOPBACK_IFACE = "lo"


@dataclass(frozen=True)
class Family:
    """What keeps one launcher family's one-host job on loopback, and what nothing can."""

    env: Mapping[str, str]
    why: str  # what the settings reach, for meta.json and ``commbench env``
    left_open: str = ""  # what no setting of the family binds to loopback ("" when nothing)
    opened_by: tuple[str, ...] = ()  # the processes (names) that own what left_open says


_HYDRA_OPEN = ("Hydra's control port listens on every interface: Hydra binds it to INADDR_ANY "
               "and has no setting that binds it elsewhere (-iface and HYDRA_IFACE choose the "
               "address proxies connect to, not the bind)")
_HYDRA = ("mpiexec", "mpiexec.hydra", "hydra_pmi_proxy")
_FABRIC = {  # the netmods MPICH-family builds carry: UCX and libfabric's TCP-based providers
    "UCX_NET_DEVICES": LOOPBACK_IFACE,
    "FI_TCP_IFACE": LOOPBACK_IFACE,
    "FI_SOCKETS_IFACE": LOOPBACK_IFACE,
}

_MPICH = Family(
    env=MappingProxyType({**_FABRIC, "MPIR_CVAR_NEMESIS_TCP_NETWORK_IFACE": LOOPBACK_IFACE}),
    why="the ranks' UCX, libfabric (tcp, sockets) and ch3 TCP listeners on lo",
    left_open=_HYDRA_OPEN, opened_by=_HYDRA)

FAMILIES: Mapping[str, Family] = MappingProxyType({
    "mpich": _MPICH,
    "mvapich": _MPICH,
    "intel": Family(
        env=MappingProxyType({**_FABRIC, "I_MPI_HYDRA_IFACE": LOOPBACK_IFACE}),
        why="the ranks' libfabric (tcp, sockets) listeners on lo; Hydra's proxies connect over lo",
        left_open=_HYDRA_OPEN, opened_by=_HYDRA),
    "openmpi": Family(
        env=MappingProxyType({
            # the TCP BTL listens on every interface whatever btl_tcp_if_include says, and a
            # one-host job moves its bytes over shared memory: leave it out
            "OMPI_MCA_btl": "^tcp",
            "UCX_NET_DEVICES": LOOPBACK_IFACE}),
        why="ranks over shared memory without the TCP BTL (no rank listens); UCX on lo",
        left_open="prterun's out-of-band port listens on every interface (PRRTE binds it to "
                  "INADDR_ANY and in6addr_any; oob_tcp_if_include=lo makes prterun refuse to "
                  "start)", opened_by=("prterun", "mpirun", "mpiexec", "orterun")),
    "torch": Family(
        env=MappingProxyType({"MASTER_ADDR": "127.0.0.1", "GLOO_SOCKET_IFNAME": LOOPBACK_IFACE,
                              "TP_SOCKET_IFNAME": LOOPBACK_IFACE,
                              "NCCL_SOCKET_IFNAME": LOOPBACK_IFACE}),
        why="ranks reach torchrun's store at 127.0.0.1, whose servers listen there (each handed "
            "a socket bound to loopback: bench/training/torchrun.py); gloo, TensorPipe and "
            "NCCL's bootstrap sockets on lo"),
})


@dataclass(frozen=True)
class Confined:
    """A job's environment with its family's loopback settings, and what to record of it."""

    env: dict[str, str]
    family: str
    set_by_commbench: Mapping[str, str]
    set_by_user: Mapping[str, str]  # the family's variables the user had set: theirs are kept

    def as_meta(self) -> dict[str, Any]:
        fam = FAMILIES.get(self.family)
        return {"family": self.family, "where": "loopback" if fam else "unconfined",
                "settings": dict(self.set_by_commbench), "yours": dict(self.set_by_user),
                "reach": fam.why if fam else "", "left_open": fam.left_open if fam else
                f"no loopback settings known for {self.family!r}"}


def confine(env: Mapping[str, str], family: str) -> Confined:
    """``env`` plus ``family``'s loopback settings; a variable already in ``env`` is left as is."""
    fam = FAMILIES.get(family)
    wanted = fam.env if fam else {}
    mine = {k: v for k, v in wanted.items() if k not in env}
    yours = {k: env[k] for k in wanted if k in env}
    return Confined({**env, **mine}, family, MappingProxyType(mine), MappingProxyType(yours))


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1 and IPv4-mapped loopback; a wildcard (0.0.0.0, ::) is not."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


@dataclass(frozen=True, order=True)
class Listener:
    """One listening TCP socket of one process."""

    address: str
    port: int
    pid: int
    name: str

    def __str__(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.port} ({self.name}, pid {self.pid})"

    @property
    def loopback(self) -> bool:
        return is_loopback(self.address)


def listening(pids: Iterable[int]) -> list[Listener]:
    """The listening TCP sockets of the processes ``pids`` (those gone or unreadable skipped),
    read in each process's own network namespace (``/proc/PID/net/tcp*``: psutil reads the
    caller's, where an isolated job's sockets are not)."""
    import psutil

    out: set[Listener] = set()
    for pid in pids:
        try:
            name = psutil.Process(pid).name()
            inodes = {link[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
                      if (link := _readlink(f"/proc/{pid}/fd/{fd}")).startswith("socket:[")}
            for table in ("tcp", "tcp6"):
                with open(f"/proc/{pid}/net/{table}", encoding="ascii") as f:
                    rows = [ln.split() for ln in f.readlines()[1:]]
                out.update(Listener(*_address(r[1]), pid, name) for r in rows
                           if r[3] == _LISTEN and r[9] in inodes)
        except (psutil.Error, OSError):
            continue
    return sorted(out)


_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column (include/net/tcp_states.h)


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _address(field: str) -> tuple[str, int]:
    """``/proc/net/tcp``'s ``ADDR:PORT`` in hex (the address in 32-bit words of host order)."""
    addr, port = field.split(":")
    raw = b"".join(bytes.fromhex(addr[i:i + 8])[::-1] for i in range(0, len(addr), 8))
    return str(ipaddress.ip_address(raw)), int(port, 16)


def exposed(listeners: Iterable[Listener]) -> list[Listener]:
    """The listeners not on loopback."""
    return [s for s in listeners if not s.loopback]


def unexpected(listeners: Iterable[Listener], family: str) -> list[Listener]:
    """The listeners beyond loopback that the family's ``left_open`` does not explain: any
    socket that no process the family names owns. A rank forked by Hydra inherits Hydra's
    listening socket (the same address and port in every rank), so ownership goes by socket,
    not by the process that holds it."""
    fam = FAMILIES.get(family)
    wide = exposed(listeners)
    theirs = {(s.address, s.port) for s in wide if fam and s.name.startswith(fam.opened_by)}
    return [s for s in wide if (s.address, s.port) not in theirs]


OVERRIDE = ("a variable of these set in your environment wins (another interface); under your "
            "own mpiexec/srun/torchrun nothing is changed and what the job listens on is recorded "
            "in meta.json")


def by_host(hosts: list[str], per_rank: list[list[str]]) -> dict[str, list[str]]:
    """Every rank's listeners (``str(Listener)``), merged by host: meta.json's ``listening``."""
    out: dict[str, set[str]] = {}
    for host, seen in zip(hosts, per_rank):
        out.setdefault(host, set()).update(seen)
    return {h: sorted(v) for h, v in sorted(out.items())}


def interfaces() -> dict[str, list[str]]:
    """Every interface of this host and its addresses (for ``commbench env``)."""
    import socket

    import psutil

    fams = (socket.AF_INET, socket.AF_INET6)
    return {name: [a.address for a in addrs if a.family in fams]
            for name, addrs in sorted(psutil.net_if_addrs().items())}


# the processes between a rank and the user's shell that belong to the launch
LAUNCHER_NAMES = ("mpiexec", "mpirun", "mpiexec.hydra", "hydra_pmi_proxy",
                  "prterun", "prted", "orted", "srun", "slurmstepd", "torchrun", "pmi_proxy")


def of_this_rank() -> list[Listener]:
    """What a rank of the user's own job listens on: this process, and the launcher processes
    above it on this host (mpiexec, its proxy, srun's step daemon, ...)."""
    import psutil

    pids = [os.getpid()]
    try:
        for parent in psutil.Process().parents():
            name = parent.name()
            if not name.startswith(LAUNCHER_NAMES):
                break
            pids.append(parent.pid)
    except psutil.Error:
        pass
    return listening(pids)
