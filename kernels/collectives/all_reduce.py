"""all_reduce: every rank ends with the reduction of every rank's buffer (nccl-tests all_reduce).

Size: the buffer (n elements, in and out). busbw = algbw * 2(p-1)/p. In place: input and output
are the same n elements.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from kernels.collective import Collective, Result, VendorArgs, register


def _result(n: int, p: int, rank: int, root: int, start: int, stop: int) -> Result:
    return Result(np.arange(start, stop, dtype=np.int64), None)


def _mpi(a: VendorArgs) -> Callable[[], None]:
    return partial(a.handle.Allreduce, a.send, a.recv, a.op)


def _torch(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    def run() -> None:  # torch has no out-of-place all_reduce: the copy is part of its cost
        a.recv.copy_(a.send)
        dist.all_reduce(a.recv, op=a.op, group=a.handle)

    return run


def _nccl(a: VendorArgs) -> Callable[[], None]:
    h = a.handle
    return partial(h.comm.allReduce, a.send.data.ptr, a.recv.data.ptr, a.recv.size, h.dtype, a.op,
                   h.stream)


def _mpi_inplace(a: VendorArgs) -> Callable[[], None]:
    from mpi4py import MPI

    return partial(a.handle.Allreduce, MPI.IN_PLACE, a.recv, a.op)


def _torch_inplace(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    return partial(dist.all_reduce, a.recv, op=a.op, group=a.handle)


def _nccl_inplace(a: VendorArgs) -> Callable[[], None]:
    h = a.handle
    return partial(h.comm.allReduce, a.recv.data.ptr, a.recv.data.ptr, a.recv.size, h.dtype, a.op,
                   h.stream)


register(Collective(
    name="all_reduce", order=0, summary="every rank gets the reduction of all ranks' buffers",
    aliases=("allreduce",), reduces=True,
    busbw=lambda p: 2 * (p - 1) / p, busbw_formula="2(p-1)/p",
    size_is="the buffer (n elements per rank, in and out)",
    result=_result, vendor={"mpi": _mpi, "torch": _torch, "nccl": _nccl},
    vendor_inplace={"mpi": _mpi_inplace, "torch": _torch_inplace, "nccl": _nccl_inplace},
    vendor_names={"mpi": "Allreduce", "nccl": "AllReduce"},
))
