"""broadcast: every rank ends with the root's buffer (nccl-tests broadcast, root 0).

Size: the buffer (n elements). busbw = algbw (factor 1). One buffer, in place, for the schedules
and the vendor call alike (MPI_Bcast has no separate receive buffer; nccl-tests' in-place column).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from kernels.collective import Collective, Result, VendorArgs, register


def _result(n: int, p: int, rank: int, root: int, start: int, stop: int) -> Result:
    return Result(np.arange(start, stop, dtype=np.int64), np.full(stop - start, root, np.int64))


def _mpi(a: VendorArgs) -> Callable[[], None]:
    return partial(a.handle.Bcast, a.recv, a.root)


def _torch(a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    return partial(dist.broadcast, a.recv, a.root, group=a.handle)


def _nccl(a: VendorArgs) -> Callable[[], None]:
    h = a.handle
    return partial(h.comm.broadcast, a.recv.data.ptr, a.recv.data.ptr, a.recv.size, h.dtype,
                   a.root, h.stream)


register(Collective(
    name="broadcast", order=3, summary="every rank gets the root's buffer",
    aliases=("bcast",), reduces=False, rooted=True,
    size_is="the buffer (n elements)",
    result=_result, has_input=lambda rank, root: rank == root,
    vendor={"mpi": _mpi, "torch": _torch, "nccl": _nccl}, vendor_separate=False,
    vendor_names={"mpi": "Bcast", "nccl": "Broadcast"},
))
