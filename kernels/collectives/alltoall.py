"""alltoall: block j of rank r's input ends as block r of rank j's output (nccl-tests alltoall).

Size: the buffer per rank, n = p blocks of c = n/p elements (n rounded down to a multiple of p).
busbw = algbw * (p-1)/p. Separate input and output buffers for schedules and vendor alike (the
workspace holds the input, then the output).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from kernels.collective import Collective, Result, VendorArgs, nccl_p2p, register


def _result(n: int, p: int, rank: int, root: int, start: int, stop: int) -> Result:
    k = np.arange(start, stop, dtype=np.int64)
    c = n // p
    return Result(rank * c + k % c, k // c)


def _mpi(a: VendorArgs) -> Callable[[], None]:
    return partial(a.handle.Alltoall, a.send, a.recv)


def _torch(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    return partial(dist.all_to_all_single, a.recv, a.send, group=a.handle)


def _nccl(a: VendorArgs) -> Callable[[], None]:
    nbytes = a.send.itemsize * (a.send.size // a.world)  # NCCL has no alltoall: send/recv per peer
    s, r = a.send.data.ptr, a.recv.data.ptr
    return nccl_p2p(a.handle, [(q, s + q * nbytes, nbytes) for q in range(a.world)],
                    [(q, r + q * nbytes, nbytes) for q in range(a.world)])


register(Collective(
    name="alltoall", order=5, summary="block j of rank r goes to block r of rank j",
    aliases=("all_to_all",), reduces=False, divides=True,
    busbw=lambda p: (p - 1) / p, busbw_formula="(p-1)/p",
    size_is="the buffer per rank (p blocks of n/p elements)",
    inplace_at=None, result=_result, vendor={"mpi": _mpi, "torch": _torch, "nccl": _nccl},
    vendor_names={"mpi": "Alltoall"},
))
