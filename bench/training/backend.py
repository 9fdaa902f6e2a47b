"""Which backend a training job's ranks use, decided before anything starts; torch is imported
only to count GPUs (a launcher that asks for gloo never imports it). docs/training.md (Backend
and device)."""

from __future__ import annotations

import os

from bench.scenario_base import ScenarioError


def in_torch_job() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def visible_gpus() -> int:
    """GPUs this process may use (0 without CUDA); imports torch."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def pick_backend(backend: str, local_world: int, gpus: int) -> str:
    """``gloo`` or ``nccl`` for ``local_world`` ranks on a host that shows each of them ``gpus``
    GPUs (all ranks seeing the same ones). Raises :class:`ScenarioError` (one line) when
    ``nccl`` cannot give every rank a GPU of its own."""
    if backend == "gloo" or (backend == "auto" and not 0 < local_world <= gpus):
        return "gloo"
    if gpus == 0:
        import torch

        raise ScenarioError(
            f"backend nccl needs CUDA GPUs and torch sees none here (torch {torch.__version__}, "
            f"CUDA build: {torch.version.cuda or 'no'}); use backend: gloo or auto to run on CPU")
    if local_world > gpus:
        raise ScenarioError(
            f"{local_world} ranks on this host but {gpus} GPU(s): backend nccl needs a GPU per rank "
            f"(NCCL cannot put two ranks on one GPU); use world sizes <= {gpus}, or backend: gloo "
            "to run the ranks on CPU")
    return "nccl"
