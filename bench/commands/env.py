"""``commbench env``: the GPU and MPI stack this machine offers, and which transports can run; a
probe that fails says why in its section. ``python -m bench.commands.env`` prints the same without
the rest of the CLI's dependencies (scripts/gpu-check.sh)."""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

from bench.argtypes import OneLineParser
from bench.commands import register

Facts = dict[str, Any]


def _python() -> Facts:
    import numpy

    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "platform": platform.platform()}


def _mpi() -> Facts:
    import mpi4py
    from mpi4py import MPI

    from kernels.transports.mpi_cupy import detect_awareness

    aware = detect_awareness()
    return {"mpi4py": mpi4py.__version__,
            "library": MPI.Get_library_version().strip().splitlines()[0],
            "mpi_standard": "{}.{}".format(*MPI.Get_version()),
            "cuda_aware": aware.aware, "cuda_aware_how": aware.how}


def _driver() -> Facts:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"nvidia-smi": "not found"}
    # compute_mode: "Exclusive_Process" lets only one rank use a GPU (mpi-cupy / cuda-ipc share one)
    res = subprocess.run([smi, "--query-gpu=index,name,driver_version,memory.total,compute_mode",
                          "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        return {"nvidia-smi": f"failed: {(res.stderr or res.stdout).strip()[:200]}"}
    return {"gpus": [line.strip() for line in res.stdout.strip().splitlines()]}


def _cupy() -> Facts:
    try:
        import cupy
    except ImportError:
        return {"cupy": "not installed (pip install -e '.[gpu]')"}
    out: Facts = {"cupy": cupy.__version__, "cuda_available": bool(cupy.cuda.is_available())}
    if not out["cuda_available"]:
        return out
    rt = cupy.cuda.runtime
    out["cuda_runtime"] = rt.runtimeGetVersion()
    out["cuda_driver"] = rt.driverGetVersion()
    devices = []
    for i in range(rt.getDeviceCount()):
        props = rt.getDeviceProperties(i)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        devices.append(f"{i}: {name}, {props['totalGlobalMem'] / 2**30:.1f} GiB, "
                       f"sm_{props['major']}{props['minor']}, "
                       f"{cupy.cuda.Device(i).pci_bus_id}")
    out["devices"] = devices
    out["p2p"] = [f"{a}->{b}: {rt.deviceCanAccessPeer(a, b)}"
                  for a in range(len(devices)) for b in range(len(devices)) if a != b]
    return out


def _nccl() -> Facts:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from cupy.cuda import nccl
    except ImportError:
        return {"nccl": "CuPy not installed"}
    if not getattr(nccl, "available", False):
        return {"nccl": "not loadable by CuPy (pip install nvidia-nccl-cu12, or -cu13 for cupy-cuda13x)"}
    return {"nccl": nccl.get_version(), "nccl_build": nccl.get_build_version()}


def _torch() -> Facts:
    try:
        import torch
    except ImportError:
        return {"torch": "not installed"}
    out: Facts = {"torch": torch.__version__, "cuda": bool(torch.cuda.is_available())}
    if out["cuda"]:
        out["torch_nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    return out


def _transports() -> Facts:
    """Which device transports would run here (one rank): the skip reason or "ok"."""
    from kernels.transports import TRANSPORTS
    from kernels.transports.gpu import probe_cupy

    out: Facts = {}
    for spec in (TRANSPORTS.get(n) for n in TRANSPORTS.names()):
        if spec.device:
            why = probe_cupy(need_nccl=spec.needs_nccl)[1]
            out[spec.name] = why or ("ok" + (f" ({spec.scope})" if spec.scope else ""))
    return out


def _network() -> Facts:
    """Interfaces and InfiniBand ports with their rates (:mod:`bench.costmodel.launch`)."""
    from bench.costmodel.launch import network_facts

    return network_facts()


def _listening() -> Facts:
    """Where a run would listen (:mod:`bench.launch.loopback`), and this host's interfaces."""
    from bench.launch import isolate, launcher, loopback

    mpi = launcher.probe_library()
    try:
        how = launcher.find_mpiexec(mpi).path
    except launcher.LaunchError as e:
        how = f"cannot self-launch: {e}"
    out: Facts = {}
    for label, family in (("collective and probe runs", mpi.family), ("training runs", "torch")):
        fam = loopback.FAMILIES.get(family)
        if fam is None:
            out[label] = f"not confined: no loopback settings known for {family!r}"
            continue
        out[label] = f"loopback: {fam.why}"
        out[f"{label}: left open"] = fam.left_open or "nothing"
        out[f"{label}: settings"] = [f"{k}={v}" for k, v in fam.env.items()]
    out["collective launcher"] = how
    out["isolation"] = isolate.decide().line  # where a self-launched one-host job runs
    out["override"] = loopback.OVERRIDE
    out["interfaces"] = [f"{name}: {', '.join(addrs) or 'no address'}"
                         for name, addrs in loopback.interfaces().items()]
    return out


PROBES: dict[str, Callable[[], Facts]] = {
    "python": _python, "mpi": _mpi, "driver": _driver, "cupy": _cupy, "nccl": _nccl,
    "torch": _torch, "transports": _transports, "network": _network, "listening": _listening,
}


def collect(probes: dict[str, Callable[[], Facts]] = PROBES) -> dict[str, Facts]:
    out: dict[str, Facts] = {}
    for name, probe in probes.items():
        try:
            out[name] = probe()
        except Exception as e:  # one broken section must not hide the others
            out[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    return out


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="one JSON object instead of text")


def handle(args: argparse.Namespace) -> int:
    facts = collect()
    if args.json:
        print(json.dumps(facts, indent=1, default=str))
        return 0
    for section, values in facts.items():
        print(f"{section}:")
        for key, value in values.items():
            if isinstance(value, list):
                print(f"  {key}:" + ("" if value else " none"))
                for item in value:
                    print(f"    {item}")
            else:
                print(f"  {key}: {value}")
    return 0


register("env", "the GPU/MPI stack: GPUs, driver, CUDA, NCCL, CuPy, MPI (CUDA-aware?)",
         configure, handle, example="--json")


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m bench.commands.env",
                      description="commbench env without the rest of the CLI")
    configure(p)
    return handle(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
