"""reduce: the root ends with the reduction of every rank's buffer (nccl-tests reduce, root 0).

Size: the buffer (n elements). busbw = algbw (factor 1). In place: the root's output is its
input buffer; other ranks have no output (their buffers may be used as scratch).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from kernels.collective import Collective, Result, VendorArgs, register


def _result(n: int, p: int, rank: int, root: int, start: int, stop: int) -> Result:
    return Result(np.arange(start, stop, dtype=np.int64), None)


def _mpi(a: VendorArgs) -> Callable[[], None]:
    return partial(a.handle.Reduce, a.send, a.recv, a.op, a.root)


def _torch(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    work = a.recv if a.recv is not None else a.send

    def run() -> None:  # torch reduces in place: the root copies its input first (counted)
        if a.recv is not None:
            a.recv.copy_(a.send)
        dist.reduce(work, a.root, op=a.op, group=a.handle)

    return run


def _nccl(a: VendorArgs) -> Callable[[], None]:
    h = a.handle
    recv = a.recv.data.ptr if a.recv is not None else a.send.data.ptr  # ignored off the root
    return partial(h.comm.reduce, a.send.data.ptr, recv, a.send.size, h.dtype, a.op, a.root,
                   h.stream)


def _mpi_inplace(a: VendorArgs) -> Callable[[], None]:
    from mpi4py import MPI

    if a.recv is not None:  # the root reduces into its own buffer
        return partial(a.handle.Reduce, MPI.IN_PLACE, a.recv, a.op, a.root)
    return partial(a.handle.Reduce, a.send, None, a.op, a.root)


def _torch_inplace(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    return partial(dist.reduce, a.send, a.root, op=a.op, group=a.handle)


def _nccl_inplace(a: VendorArgs) -> Callable[[], None]:
    h = a.handle
    return partial(h.comm.reduce, a.send.data.ptr, a.send.data.ptr, a.send.size, h.dtype, a.op,
                   a.root, h.stream)


register(Collective(
    name="reduce", order=4, summary="the root gets the reduction of all ranks' buffers",
    reduces=True, rooted=True,
    size_is="the buffer (n elements)",
    result=_result, has_output=lambda rank, root: rank == root,
    vendor={"mpi": _mpi, "torch": _torch, "nccl": _nccl},
    vendor_inplace={"mpi": _mpi_inplace, "torch": _torch_inplace, "nccl": _nccl_inplace},
    vendor_names={"mpi": "Reduce", "nccl": "Reduce"},
))
