"""sendrecv: every rank sends its buffer to rank r+1 and receives rank r-1's (nccl-tests
sendrecv, a ring shift; at p = 1 a rank sends to itself).

Size: the buffer (n elements). busbw = algbw (factor 1). Separate send and receive buffers.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from kernels.collective import Collective, Result, VendorArgs, nccl_p2p, register


def _result(n: int, p: int, rank: int, root: int, start: int, stop: int) -> Result:
    return Result(np.arange(start, stop, dtype=np.int64),
                  np.full(stop - start, (rank - 1) % p, np.int64))


def _mpi(a: VendorArgs) -> Callable[[], None]:
    nxt, prv = (a.rank + 1) % a.world, (a.rank - 1) % a.world
    return partial(a.handle.Sendrecv, a.send, nxt, 0, a.recv, prv, 0)


def _torch(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    nxt, prv = (a.rank + 1) % a.world, (a.rank - 1) % a.world
    if a.world == 1:
        return partial(a.recv.copy_, a.send)  # gloo and NCCL refuse a send to oneself
    ops = [dist.P2POp(dist.isend, a.send, group=a.handle, group_peer=nxt),
           dist.P2POp(dist.irecv, a.recv, group=a.handle, group_peer=prv)]

    def run() -> None:
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    return run


def _nccl(a: VendorArgs) -> Callable[[], None]:
    nxt, prv = (a.rank + 1) % a.world, (a.rank - 1) % a.world
    nbytes = a.send.size * a.send.itemsize
    return nccl_p2p(a.handle, [(nxt, a.send.data.ptr, nbytes)], [(prv, a.recv.data.ptr, nbytes)])


register(Collective(
    name="sendrecv", order=6, summary="each rank sends its buffer to rank r+1, receives rank r-1's",
    aliases=("send_recv", "p2p"), reduces=False,
    size_is="the buffer (n elements sent and received per rank)",
    inplace_at=None, result=_result, vendor={"mpi": _mpi, "torch": _torch, "nccl": _nccl},
    vendor_names={"mpi": "Sendrecv"},
))
