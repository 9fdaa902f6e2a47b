"""Communication counted, not estimated: a TorchDispatchMode that sees every c10d and
functional collective a step issues. Bytes per call are nccl-tests' size ``S`` (all_gather: the
gathered output; reduce_scatter: the input; send: the bytes sent, receives counted as ``recv``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench.advise.calls import Counted


def _bytes(x: Any) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, list | tuple):
        return sum(_bytes(y) for y in x)
    return 0


# op name (without namespace/overload) -> (collective type, bytes of the call's payload)
Rule = tuple[str, Callable[[tuple[Any, ...]], int]]
RULES: dict[str, Rule] = {
    # c10d ops (ProcessGroup calls: DDP, FSDP2, ZeroRedundancyOptimizer, pipelining, p2p)
    "allreduce_": ("all_reduce", lambda a: _bytes(a[0])),
    "allreduce_coalesced_": ("all_reduce", lambda a: _bytes(a[0])),
    "broadcast_": ("broadcast", lambda a: _bytes(a[0])),
    "_allgather_base_": ("all_gather", lambda a: _bytes(a[0])),
    "allgather_": ("all_gather", lambda a: _bytes(a[0])),
    "allgather_into_tensor_coalesced_": ("all_gather", lambda a: _bytes(a[0])),
    "_reduce_scatter_base_": ("reduce_scatter", lambda a: _bytes(a[1])),
    "reduce_scatter_": ("reduce_scatter", lambda a: _bytes(a[1])),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", lambda a: _bytes(a[1])),
    "alltoall_base_": ("all_to_all", lambda a: _bytes(a[1])),
    "send": ("send", lambda a: _bytes(a[0])),
    "recv_": ("recv", lambda a: _bytes(a[0])),
    # functional collectives (DTensor)
    "all_reduce": ("all_reduce", lambda a: _bytes(a[0])),
    "all_reduce_": ("all_reduce", lambda a: _bytes(a[0])),
    "all_reduce_coalesced": ("all_reduce", lambda a: _bytes(a[0])),
    "all_gather_into_tensor": ("all_gather", lambda a: _bytes(a[0]) * int(a[1])),
    "all_gather_into_tensor_coalesced": ("all_gather", lambda a: _bytes(a[0]) * int(a[1])),
    "reduce_scatter_tensor": ("reduce_scatter", lambda a: _bytes(a[0])),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter", lambda a: _bytes(a[0])),
    "all_to_all_single": ("all_to_all", lambda a: _bytes(a[0])),
}
NAMESPACES = ("c10d", "_c10d_functional")


class CommCounter(TorchDispatchMode):
    """``with CommCounter() as c: step()``; then ``c.count``. Costs a Python call per op, so
    the harness counts one untimed step, never the timed ones."""

    def __init__(self) -> None:
        super().__init__()
        self.count = Counted()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if func.namespace in NAMESPACES:
            rule = RULES.get(func.overloadpacket.__name__)
            if rule is not None:
                self.count.add(rule[0], rule[1](args))
        return func(*args, **(kwargs or {}))
