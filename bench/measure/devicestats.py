"""What the harness records from a device transport: CUDA-event times (max over ranks per
iteration, as host times) and GPU memory. A transport opts in with ``device_clock()`` and
``memory()``; host transports have neither. docs/gpu.md, "Timing and memory on GPUs"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mpi4py import MPI

from bench.measure.ranks import worst_over_ranks
from bench.measure.stats import summarize

TIMER_DEVICE = ("; device_time_us_*: CUDA events recorded on the transport's stream just before "
                "and after each iteration, max over ranks per iteration")


class DeviceClock(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...

    def elapsed_us(self) -> float:
        """Device time between the last start and stop (waits for the stop event)."""
        ...


def has_clock(transport: Any) -> bool:
    return callable(getattr(transport, "device_clock", None))


def clock_of(transport: Any) -> DeviceClock | None:
    return transport.device_clock() if has_clock(transport) else None


def memory_of(transport: Any) -> dict[str, int] | None:
    fn = getattr(transport, "memory", None)
    return dict(fn()) if callable(fn) else None


def memory_fields(before: Mapping[str, int], compiled: Mapping[str, int],
                  after: Mapping[str, int]) -> dict[str, int]:
    """This rank's ``gpu_mem_*`` fields of a group (docs/gpu.md) from three snapshots: before its
    buffers were allocated, after every plan was compiled, after timing."""
    return {
        "gpu_mem_case_bytes": max(0, compiled["held"] - before["held"]),
        "gpu_mem_held_bytes": max(compiled["held"], after["held"]),
        "gpu_mem_pool_reserved_bytes": after["pool_reserved"],
        "gpu_mem_transport_bytes": after["transport"],
        "gpu_mem_device_used_bytes": max(compiled["device_used"], after["device_used"]),
        "gpu_mem_device_total_bytes": after["device_total"],
    }


def record_fields(ctl: MPI.Comm, device_us: list[float] | None,
                  memory: Mapping[str, int] | None) -> dict[str, Any]:
    """Collective over ``ctl``: the device fields of one record on rank 0, ``{}`` elsewhere.
    Every rank passes None or not alike (they run the same transport)."""
    out: dict[str, Any] = {}
    if device_us is not None:
        worst = worst_over_ranks(ctl, device_us)
        if worst is not None:
            out.update(summarize(worst).as_dict("device_time_us_"))
            out["device_samples_us"] = [round(x, 3) for x in worst.tolist()]
    if memory is not None:
        for key in sorted(memory):
            value = ctl.reduce(int(memory[key]), op=MPI.MAX, root=0)
            if ctl.rank == 0:
                out[key] = value
    return out
