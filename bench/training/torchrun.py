"""``python -m bench.training.torchrun ARGS`` is ``python -m torch.distributed.run ARGS``
without the report torch adds when a rank fails (the rank and the self-launcher have said it in
one line); exit code 0, or 1 when a rank failed. Where ``MASTER_ADDR`` is loopback, every store
server the agent starts listens on 127.0.0.1 only (torch binds a ``TCPStore`` server to every
interface unless handed a listening socket, ``master_listen_fd``)."""

from __future__ import annotations

import logging
import os
import socket
import sys
from typing import Any

from bench.launch.loopback import is_loopback

# the agent's per-rank lines on a failure ("failed (exitcode: 1) local_rank: 0 ...", "Sending
# process N closing signal SIGTERM"): said once, by the self-launcher
QUIET = "torch.distributed.elastic.multiprocessing.api"


def _stores_on_loopback() -> None:
    """Make every ``TCPStore`` server this process starts listen on 127.0.0.1 (the name in
    ``torch.distributed`` and in each of its modules that imported it)."""
    import torch.distributed as dist

    real = dist.TCPStore

    class LoopbackStore(real):  # type: ignore[misc, valid-type]
        def __init__(self, host_name: str, port: int, world_size: int | None = None,
                     is_master: bool = False, *args: Any, **kw: Any) -> None:
            if is_master and kw.get("master_listen_fd") is None:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sock.listen(socket.SOMAXCONN)
                port = sock.getsockname()[1]
                kw["master_listen_fd"] = sock.detach()  # the store's from here on
            super().__init__(host_name, port, world_size, is_master, *args, **kw)

    for mod in [dist, *(m for n, m in list(sys.modules.items())
                        if n.startswith("torch.distributed.") and m is not None)]:
        if getattr(mod, "TCPStore", None) is real:
            mod.TCPStore = LoopbackStore


def main(argv: list[str] | None = None) -> int:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    if is_loopback(os.environ.get("MASTER_ADDR", "")):
        _stores_on_loopback()
    logging.getLogger(QUIET).setLevel(logging.CRITICAL)
    try:
        run(parse_args(sys.argv[1:] if argv is None else argv))
    except ChildFailedError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
