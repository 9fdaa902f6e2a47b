"""reduce_scatter: rank r ends with block r of the reduction of every rank's buffer
(nccl-tests reduce_scatter).

Size: the input buffer, n = p blocks of c = n/p elements (n rounded down to a multiple of p).
busbw = algbw * (p-1)/p. In place (NCCL's layout): rank r's output is block r of its input.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from kernels.collective import Collective, Result, VendorArgs, register


def _result(n: int, p: int, rank: int, root: int, start: int, stop: int) -> Result:
    return Result(rank * (n // p) + np.arange(start, stop, dtype=np.int64), None)


def _mpi(a: VendorArgs) -> Callable[[], None]:
    return partial(a.handle.Reduce_scatter_block, a.send, a.recv, a.op)


def _torch(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    # reduce_scatter_single (torch >= 2.13) is reduce_scatter_tensor's new name
    fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return partial(fn, a.recv, a.send, op=a.op, group=a.handle)


def _nccl(a: VendorArgs) -> Callable[[], None]:
    h = a.handle
    return partial(h.comm.reduceScatter, a.send.data.ptr, a.recv.data.ptr, a.recv.size, h.dtype,
                   a.op, h.stream)


register(Collective(
    name="reduce_scatter", order=2, summary="rank r gets block r of the reduction of all ranks' buffers",
    aliases=("reducescatter",), reduces=True, divides=True,
    busbw=lambda p: (p - 1) / p, busbw_formula="(p-1)/p",
    size_is="the input buffer (p blocks of n/p elements)",
    out_count=lambda n, p: n // p, inplace_at=lambda n, p, r: (0, r * (n // p)),
    result=_result, vendor={"mpi": _mpi, "torch": _torch, "nccl": _nccl},
    # NCCL's in place (recvbuff = sendbuff + rank * recvcount; MPI's is block 0) is _nccl on the
    # in-place views
    vendor_inplace={"nccl": _nccl},
    vendor_names={"mpi": "Reduce_scatter_block", "nccl": "ReduceScatter"},
))
