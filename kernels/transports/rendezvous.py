"""Where torch.distributed ranks started by MPI meet: rank 0's address and a free port.

On a single host everything stays on loopback: the address is 127.0.0.1, the probe for a free
port binds there, and gloo's own sockets are pinned to ``lo`` (unless the user chose an
interface), so nothing listens on an external interface.
"""

from __future__ import annotations

import os
import socket
from typing import Any

LOOPBACK = "127.0.0.1"


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def rendezvous(comm: Any) -> tuple[str, int, list[str]]:
    """(address, port, hostname of every rank), the same on every rank of ``comm``."""
    hosts: list[str] = comm.allgather(socket.gethostname())
    single = len(set(hosts)) == 1
    if single:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if comm.rank == 0:
        host = LOOPBACK if single else hosts[0]
        addr = (host, free_port(LOOPBACK if single else ""))
    else:
        addr = None
    host, port = comm.bcast(addr, root=0)
    return host, port, hosts
