"""Joining the job's process group from whatever launched us: torchrun (RANK, WORLD_SIZE,
MASTER_ADDR/PORT set), or mpiexec/srun (rank and size from the MPI environment; rank 0's host
and a free port shared over mpi4py)."""

from __future__ import annotations

import datetime as dt
import os

import torch
import torch.distributed as dist

from kernels.transports.rendezvous import rendezvous

MPI_RANK_VARS = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                 ("SLURM_PROCID", "SLURM_NTASKS"))
LOCAL_RANK_VARS = ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")


def in_torch_job() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def _from_mpi() -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    host, port, hosts = rendezvous(comm)
    local = hosts[: comm.rank].count(hosts[comm.rank])
    os.environ.update(RANK=str(comm.rank), WORLD_SIZE=str(comm.size), MASTER_ADDR=host,
                      MASTER_PORT=str(port), LOCAL_RANK=str(local),
                      LOCAL_WORLD_SIZE=str(hosts.count(hosts[comm.rank])))


def init_from_env(backend: str, timeout_s: float) -> tuple[torch.device, str]:
    """Initialise the default process group; returns (device, backend)."""
    if not in_torch_job():
        _from_mpi()
    local = next((int(os.environ[v]) for v in LOCAL_RANK_VARS if v in os.environ), 0)
    cuda = torch.cuda.is_available() and backend != "gloo"
    if backend == "auto":
        backend = "nccl" if cuda else "gloo"
    device = torch.device("cuda", local % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group(backend, timeout=dt.timedelta(seconds=timeout_s),
                            device_id=device if cuda else None)
    return device, backend
