"""DDP communication hooks: DDP's compression hooks, and commbench's AllReduce algorithms run
on the torch p2p transport with a plan compiled once per bucket buffer (DDP rebuilds its buckets
after the first step: a new buffer gets a new plan, the timed steps plan nothing)."""

import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from kernels.algorithm import Problem, get_algorithm
from kernels.ops import OPS
from kernels.topology import Topology
from kernels.transports.base import Plan
from kernels.transports.torch_p2p import TorchP2PTransport


def job_topology(world: int) -> Topology:
    """Nodes of LOCAL_WORLD_SIZE consecutive ranks (torchrun's placement), else one node."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    return Topology.blocks(world, local) if local >= 1 and world % local == 0 else Topology.flat(world)


class ScheduleHook:
    """State of the commbench-algorithm hook: transport, topology and the compiled plans."""

    def __init__(self, algorithm: str, device: torch.device) -> None:
        self.algorithm = get_algorithm("all_reduce", algorithm)
        self.transport = TorchP2PTransport(None, device)
        self.topology = job_topology(self.transport.size)
        self._plans: dict[int, tuple[tuple[int, int], Plan]] = {}  # bucket -> (buffer, plan)

    def plan(self, index: int, buf: torch.Tensor) -> Plan:
        key = (buf.data_ptr(), buf.numel())
        cached = self._plans.get(index)
        if cached is not None and cached[0] == key:
            return cached[1]
        if cached is not None:
            cached[1].close()
        sched = self.algorithm.schedule(Problem(self.topology, buf.numel(), buf.element_size()),
                                        self.transport.rank)
        plan = self.transport.compile(sched, buf, torch.empty_like(buf), OPS["sum"])
        self._plans[index] = (key, plan)
        return plan


def schedule_hook(state: ScheduleHook, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket with the state's commbench algorithm (annotations must stay real
    types: DDP checks them, so this module does not use postponed annotations)."""
    buf = bucket.buffer()
    buf.div_(state.transport.size)
    state.plan(bucket.index(), buf).run()
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    fut.set_result(buf)
    return fut


def install_hook(model: DDP, hook: str, device: torch.device, compressed: bool) -> None:
    """Register ``hook`` on ``model`` (nothing for DDP's default); ``compressed``: one of DDP's
    compression hooks (fp16_compress_hook, bf16_compress_hook)."""
    if compressed:
        model.register_comm_hook(None, getattr(default_hooks, f"{hook}_compress_hook"))
    elif hook != "default":
        model.register_comm_hook(ScheduleHook(hook, device), schedule_hook)
