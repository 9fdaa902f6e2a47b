"""Self-launch picks one rank per visible GPU for device transports, one per core otherwise."""

from __future__ import annotations

import psutil
import pytest

from bench.collective.launch import default_world_size
from bench.collective.scenario import parse_scenario


def _scenario(transport: str) -> object:
    return parse_scenario({"name": "t", "sizes": ["1KiB"], "algorithms": ["ring"],
                           "transports": [transport]})


def test_device_transport_uses_visible_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,3")
    assert default_world_size(_scenario("nccl")) == 3


def test_no_visible_gpu_falls_back_to_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert default_world_size(_scenario("nccl")) == psutil.cpu_count(logical=True)


def test_host_transport_uses_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,3")
    assert default_world_size(_scenario("mpi")) == psutil.cpu_count(logical=True)
