"""torch.distributed transport: commbench schedules over ``batch_isend_irecv`` on torch tensors
(CPU with gloo, CUDA with NCCL), for the collective sweeps (``transport: torch``) and the DDP
comm hook (made from the training job's process group).

Messages between one pair of ranks in one step are told apart by tag = their posting index (the
IR's matching rule), so the backend need not keep order among same-tag messages.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from kernels.collective import Collective, Layout, VendorArgs
from kernels.ops import ReduceOp
from kernels.schedule import Schedule
from kernels.transports.base import Bound, Plan, TransportUnavailable, vendor_call, views
from kernels.transports.rendezvous import rendezvous

# In-place reductions by op name: fn(dst, src, out=dst).
TORCH_OPS: dict[str, Callable[..., torch.Tensor]] = {
    "sum": torch.add, "prod": torch.mul, "max": torch.maximum, "min": torch.minimum}
VENDOR_OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT,
              "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}


class TorchPlan:
    """A schedule bound to tensors: per step a list of P2POps (views made once) and the
    reductions to apply after the step's requests complete."""

    def __init__(self, group: dist.ProcessGroup | None, schedule: Schedule, buf: torch.Tensor,
                 scratch: torch.Tensor | None, op: ReduceOp) -> None:
        self._fn = TORCH_OPS[op.name]
        Pairs = list[tuple[torch.Tensor, torch.Tensor]]
        self._steps: list[tuple[list[dist.P2POp], Pairs, Pairs]] = []
        for st in schedule.steps:
            ops: list[dist.P2POp] = []
            reds: Pairs = []
            seen_recv: dict[int, int] = {}
            for rv in st.recvs:
                a, b = rv.range.start, rv.range.stop
                tag = seen_recv[rv.peer] = seen_recv.get(rv.peer, -1) + 1
                if rv.reduce:
                    assert scratch is not None, "a reducing schedule needs scratch"
                    reds.append((buf[a:b], scratch[a:b]))
                target = scratch[a:b] if rv.reduce and scratch is not None else buf[a:b]
                ops.append(dist.P2POp(dist.irecv, target, group=group, group_peer=rv.peer, tag=tag))
            seen_send: dict[int, int] = {}
            for s in st.sends:
                tag = seen_send[s.peer] = seen_send.get(s.peer, -1) + 1
                ops.append(dist.P2POp(dist.isend, buf[s.range.start:s.range.stop], group=group,
                                      group_peer=s.peer, tag=tag))
            copies = [(buf[c.dst.start:c.dst.stop], buf[c.src.start:c.src.stop]) for c in st.copies]
            if ops or copies:
                self._steps.append((ops, reds, copies))

    def run(self) -> None:
        fn = self._fn
        for ops, reds, copies in self._steps:
            if ops:
                for work in dist.batch_isend_irecv(ops):
                    work.wait()
            for dst, src in reds:
                fn(dst, src, out=dst)
            for dst, src in copies:
                dst.copy_(src)

    def close(self) -> None:
        self._steps = []


class TorchP2PTransport:
    """Tensors on ``device`` moved by torch.distributed point-to-point calls in ``group``."""

    name = "torch"
    family = "torch"

    def __init__(self, group: dist.ProcessGroup | None = None, device: torch.device | None = None,
                 owns_process_group: bool = False) -> None:
        self.group = group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)
        self.device = device or torch.device("cpu")
        self._owns = owns_process_group

    def allocate(self, count: int, dtype: str) -> torch.Tensor:
        return torch.zeros(count, dtype=getattr(torch, dtype), device=self.device)

    def upload(self, buf: torch.Tensor, host: np.ndarray) -> None:
        buf.copy_(torch.from_numpy(np.ascontiguousarray(host)))

    def download(self, buf: torch.Tensor) -> np.ndarray:
        return buf.cpu().numpy()

    def compile(self, schedule: Schedule, buf: torch.Tensor, scratch: torch.Tensor | None,
                op: ReduceOp) -> Plan:
        return TorchPlan(self.group, schedule, buf, scratch, op)

    def vendor(self, spec: Collective, buf: torch.Tensor, layout: Layout, op: ReduceOp | None,
               root: int) -> Plan:
        send, recv = views(buf, layout)
        return Bound(vendor_call(spec, "torch")(VendorArgs(
            self.group, send, recv, VENDOR_OPS[op.name] if op else None, root, self.rank,
            self.size, layout.count)))

    def barrier(self) -> None:
        if self.device.type == "cuda":
            dist.barrier(group=self.group, device_ids=[self.device.index or 0])
        else:
            dist.barrier(group=self.group)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def close(self) -> None:
        if self._owns and dist.is_initialized():
            dist.destroy_process_group()
            self._owns = False


def from_mpi(comm: Any) -> TorchP2PTransport:
    """The transport for collective sweeps: a process group of exactly ``comm``'s ranks,
    rendezvous at rank 0's host on a port it picks (told to the others over MPI)."""
    from mpi4py import MPI

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank = local.rank
    local.Free()
    cuda = torch.cuda.is_available() and os.environ.get("COMMBENCH_TORCH_DEVICE", "auto") != "cpu"
    device = torch.device("cuda", local_rank % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if dist.is_initialized():
        if dist.get_world_size() != comm.size:
            raise TransportUnavailable(
                f"transport torch: a process group of {dist.get_world_size()} ranks exists; "
                f"this case needs {comm.size}")
        return TorchP2PTransport(None, device)
    addr = rendezvous(comm)
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"tcp://{addr[0]}:{addr[1]}",
                            rank=comm.rank, world_size=comm.size,
                            device_id=device if cuda else None)
    return TorchP2PTransport(None, device, owns_process_group=True)
