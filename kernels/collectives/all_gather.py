"""all_gather: every rank ends with every rank's block, in rank order (nccl-tests all_gather).

Size: the output buffer, n = p blocks of c = n/p elements (n rounded down to a multiple of p).
busbw = algbw * (p-1)/p. In place (NCCL's layout): rank r's input is block r of its output.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from kernels.collective import Collective, Result, VendorArgs, register


def _result(n: int, p: int, rank: int, root: int, start: int, stop: int) -> Result:
    k = np.arange(start, stop, dtype=np.int64)
    c = n // p
    return Result(k % c, k // c)


def _mpi(a: VendorArgs) -> Callable[[], None]:
    return partial(a.handle.Allgather, a.send, a.recv)


def _torch(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    return partial(dist.all_gather_into_tensor, a.recv, a.send, group=a.handle)


def _nccl(a: VendorArgs) -> Callable[[], None]:
    h = a.handle
    return partial(h.comm.allGather, a.send.data.ptr, a.recv.data.ptr, a.send.size, h.dtype,
                   h.stream)


def _mpi_inplace(a: VendorArgs) -> Callable[[], None]:
    from mpi4py import MPI  # MPI's in-place all_gather reads block r of recv: this layout

    return partial(a.handle.Allgather, MPI.IN_PLACE, a.recv)


register(Collective(
    name="all_gather", order=1, summary="every rank gets every rank's block, in rank order",
    aliases=("allgather",), reduces=False, divides=True,
    busbw=lambda p: (p - 1) / p, busbw_formula="(p-1)/p",
    size_is="the output buffer (p blocks of n/p elements)",
    in_count=lambda n, p: n // p, inplace_at=lambda n, p, r: (r * (n // p), 0),
    result=_result, vendor={"mpi": _mpi, "torch": _torch, "nccl": _nccl},
    # NCCL's in place (sendbuff = recvbuff + rank * sendcount) is _nccl on the in-place views
    vendor_inplace={"mpi": _mpi_inplace, "nccl": _nccl},
    vendor_names={"mpi": "Allgather", "nccl": "AllGather"},
))
