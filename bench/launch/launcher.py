"""Which MPI, which mpiexec: self-launch under the MPI mpi4py was built with (docs/running.md).

The library is read in a child interpreter, so the parent never initialises MPI. MPICH-family
jobs use Hydra's ``-launcher fork``, not ``mpiexec.gforker``: gforker has no control port and
exits 0 when a rank is killed, so a dead rank would pass for a finished job."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MPI_ENV_MARKERS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                   "MV2_COMM_WORLD_SIZE", "MPI_LOCALRANKID", "SLURM_STEP_ID")
WORKER_ENV = "COMMBENCH_WORKER"
MPIEXEC_ENV = "COMMBENCH_MPIEXEC"

# family -> the launcher kind that starts its ranks
LAUNCHER_OF = {"mpich": "hydra", "intel": "hydra", "mvapich": "hydra", "openmpi": "openmpi"}
FAMILY_NAMES = {"mpich": "MPICH", "intel": "Intel MPI", "mvapich": "MVAPICH",
                "openmpi": "Open MPI", "unknown": "an unknown MPI"}
# what the library's version text (lower case) says -> its family, first match wins; MPICH's
# derivatives that keep its name (Cray MPICH, ...) are MPICH
FAMILY_MARKS = (("open mpi", "openmpi"), ("intel(r) mpi", "intel"), ("intel mpi", "intel"),
                ("mvapich", "mvapich"), ("mpich", "mpich"))
# what ``mpiexec --version`` says -> its launcher kind
KIND_MARKS = (("open mpi", "openmpi"), ("openrte", "openmpi"), ("prrte", "openmpi"),
              ("hydra", "hydra"), ("intel(r) mpi", "hydra"))

_PROBE = """\
import json, mpi4py
mpi4py.rc.initialize = False
mpi4py.rc.finalize = False
from mpi4py import MPI
print(json.dumps({"library": MPI.Get_library_version(), "vendor": list(map(str, MPI.get_vendor())),
                  "standard": ".".join(map(str, MPI.Get_version()))}))
"""


class LaunchError(RuntimeError):
    """No way to self-launch (no mpi4py, no matching mpiexec); ``str()`` is one line."""


def inside_mpi_job() -> bool:
    """True when a launcher (mpiexec, srun, ...) started this process as an MPI rank."""
    if "SLURM_STEP_ID" in os.environ and "SLURM_PROCID" not in os.environ:
        return False
    return any(k in os.environ for k in MPI_ENV_MARKERS)


def _marked(text: str, marks: tuple[tuple[str, str], ...]) -> str:
    return next((name for mark, name in marks if mark in text.lower()), "unknown")


def library_family(version: str) -> str:
    """``mpich``, ``intel``, ``mvapich``, ``openmpi`` or ``unknown`` from the library's version."""
    return _marked(version, FAMILY_MARKS)


def launcher_kind(version_output: str) -> str:
    """``hydra``, ``openmpi`` or ``unknown`` from ``mpiexec --version``."""
    return _marked(version_output, KIND_MARKS)


@dataclass(frozen=True)
class MpiInfo:
    """The MPI behind mpi4py, for ``meta.json``."""

    library: str  # the first line of MPI_Get_library_version (no trailing NUL)
    family: str
    vendor: str
    standard: str

    def as_meta(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def probe_library(python: str = sys.executable) -> MpiInfo:
    """Ask a child interpreter which MPI its mpi4py loads (MPI is not initialised there)."""
    try:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=60,
                             env={k: v for k, v in os.environ.items() if k != WORKER_ENV})
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LaunchError(f"cannot ask mpi4py which MPI it uses: {e}") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise LaunchError(f"mpi4py cannot load an MPI library: {last}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return info_from(data["library"], data["vendor"], data["standard"])


def info_from(library: str, vendor: list[str], standard: str) -> MpiInfo:
    text = library.replace("\x00", "").strip()
    first = (text.splitlines() or [""])[0].strip()
    return MpiInfo(first, library_family(text), " ".join(vendor), standard)


@dataclass(frozen=True)
class Mpiexec:
    path: str
    kind: str  # hydra | openmpi
    version: str  # the first line of its --version
    family: str = "unknown"  # the MPI library's family (bench.launch.loopback settings)

    def command(self, world: int) -> list[str]:
        """mpiexec and its options for ``world`` ranks on this host only."""
        if self.kind == "openmpi":
            root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
            return [self.path, "-n", str(world), "--host", f"localhost:{world}", "--oversubscribe",
                    "--bind-to", "none", *root]
        return [self.path, "-n", str(world), "-launcher", "fork", "-hosts", "localhost"]


def _candidates() -> list[str]:
    forced = os.environ.get(MPIEXEC_ENV)
    if forced:
        return [forced]
    here = Path(sys.executable).parent
    found = [str(here / n) for n in ("mpiexec", "mpirun") if (here / n).exists()]
    found += [p for p in (shutil.which("mpiexec"), shutil.which("mpirun")) if p]
    return list(dict.fromkeys(found))


def _describe(path: str) -> Mpiexec:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        text = out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LaunchError(f"{path}: cannot run it ({e})") from None
    lines = [" ".join(ln.split()) for ln in text.splitlines() if ln.strip()]
    kind = launcher_kind(text)
    version = lines[0] if lines else "unknown version"
    if kind == "hydra" and version.startswith("HYDRA build details"):  # MPICH, MVAPICH
        number = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Version:")), "")
        version = f"Hydra {number}".strip()
    return Mpiexec(path, kind, version)


def find_mpiexec(mpi: MpiInfo) -> Mpiexec:
    """The mpiexec that launches ranks of ``mpi``'s family; LaunchError (one line) otherwise."""
    want = LAUNCHER_OF.get(mpi.family)
    cands = _candidates()
    if not cands:
        raise LaunchError(f"no mpiexec found for {mpi.library or 'mpi4py'}: put its mpiexec on PATH "
                          f"or set {MPIEXEC_ENV} (pip install mpich gives one)")
    seen = [_describe(c) for c in cands]
    for m in seen:
        if want is None or m.kind == want:
            return dataclasses.replace(m, family=mpi.family)
    m = seen[0]
    theirs = {"hydra": "MPICH-family (Hydra)", "openmpi": "Open MPI"}.get(m.kind, "an unknown MPI")
    raise LaunchError(f"{m.path} is {theirs}'s mpiexec but mpi4py uses {FAMILY_NAMES[mpi.family]} "
                      f"({mpi.library}); ranks would not join one job: set {MPIEXEC_ENV} to "
                      f"{FAMILY_NAMES[mpi.family]}'s mpiexec")


def oversubscribed(local_ranks: int) -> bool:
    """The one rule, for every launch mode: more ranks on a host than its logical cores."""
    import psutil

    return local_ranks > (psutil.cpu_count(logical=True) or 1)
