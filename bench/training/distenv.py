"""Joining the job's process group from whatever launched us: torchrun (RANK, WORLD_SIZE,
MASTER_ADDR/PORT set), or mpiexec/srun (rank and size from the MPI environment; rank 0's host
and a free port shared over mpi4py). The backend and device each rank gets, and TF32 switched
off on GPUs: docs/training.md (Backend and device).
"""

from __future__ import annotations

import datetime as dt
import os

import torch
import torch.distributed as dist

from bench.training.backend import in_torch_job, pick_backend, visible_gpus
from kernels.transports.rendezvous import rendezvous

__all__ = ["fp32_math", "in_torch_job", "init_from_env", "pick_backend", "visible_gpus"]

LOCAL_RANK_VARS = ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")


def fp32_math() -> None:
    """IEEE fp32 for CUDA matmuls and cuDNN convolutions (torch's defaults: matmul fp32, cuDNN
    TF32). The legacy flags set conv and RNN together; mixing them with the per-op
    ``fp32_precision`` API makes torch refuse to read the flags."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def _from_mpi() -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    host, port, hosts = rendezvous(comm)
    local = hosts[: comm.rank].count(hosts[comm.rank])
    os.environ.update(RANK=str(comm.rank), WORLD_SIZE=str(comm.size), MASTER_ADDR=host,
                      MASTER_PORT=str(port), LOCAL_RANK=str(local),
                      LOCAL_WORLD_SIZE=str(hosts.count(hosts[comm.rank])))


def init_from_env(backend: str, timeout_s: float) -> tuple[torch.device, str]:
    """Initialise the default process group; returns (device, backend). Raises
    :class:`ScenarioError` (one line) when the backend cannot run here, and RuntimeError (one
    line) when the process group does not start."""
    torchrun = in_torch_job()
    if not torchrun:
        _from_mpi()
    local = next((int(os.environ[v]) for v in LOCAL_RANK_VARS if v in os.environ), 0)
    local_world = max(int(os.environ.get("LOCAL_WORLD_SIZE", "1")), local + 1)
    gpus = visible_gpus()
    # torchrun's local ranks see the same GPUs; under srun or mpiexec a rank may see only its own
    # (--gpus-per-task): an explicit nccl is left to NCCL, which tells a shared GPU apart
    # ("Duplicate GPU detected", made one line below); auto counts the host's ranks.
    ranks_here = local_world if torchrun or backend == "auto" else 1
    backend = pick_backend(backend, ranks_here, gpus)
    cuda = backend == "nccl"
    device = torch.device("cuda", local % gpus) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
        fp32_math()
    try:  # device_id: NCCL communicators are made now (a bad GPU setup fails here, not later)
        dist.init_process_group(backend, timeout=dt.timedelta(seconds=timeout_s),
                                device_id=device if cuda else None)
    except Exception as e:
        said = " ".join(x.strip() for x in str(e).splitlines() if x.strip())[:500]
        hint = (f" ({local_world} ranks on this host, {gpus} GPU(s) visible to this one)"
                if cuda and local_world > gpus else "")
        raise RuntimeError(f"cannot start the {backend} process group{hint}: "
                           f"{said or type(e).__name__}") from None
    return device, backend
