"""Run directories: a fresh one, or one to finish with ``--resume RUN`` (the same scenario, by
the hash in its ``meta.json``). docs/results.md, "Resume"."""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.argtypes import UsageError
from bench.launch import inflight
from bench.store import kinds
from bench.store.records import META, StoreError, heal, iter_records, read_meta

LOCK = ".commbench.lock"  # held by the self-launcher of the run
RESUME_ENV = "COMMBENCH_RESUME"  # set for the ranks of a resumed run: skip cases with a record
CaseKey = tuple[Any, ...]
SCENARIO_FILE = "scenario.yaml"  # in every self-launched run directory


class RunDirError(UsageError, ValueError):
    """A run directory that cannot be used; ``str()`` is one line, exit 2."""


def scenario_hash(scenario: dict[str, Any]) -> str:
    """sha256 of the validated scenario (``model_dump(mode="json")``), key order aside."""
    text = json.dumps(scenario, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def safe_name(name: str) -> str:
    """A scenario name as one path component: ``/``, spaces, ``..`` and the like become ``_``."""
    out = re.sub(r"[^A-Za-z0-9._+-]+", "_", name).strip("._") or "run"
    return out[:80]


def default_run_dir(name: str) -> Path:
    """``runs/<local time>-<name>``."""
    return Path("runs") / f"{dt.datetime.now():%Y%m%d-%H%M%S}-{safe_name(name)}"


def fresh(out: Path | None, name: str) -> Path:
    """The run directory of a new run; refuses one that already holds something."""
    run_dir = out or default_run_dir(name)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"--out {run_dir}: exists and is not a directory")
    if run_dir.is_dir() and any(run_dir.iterdir()):
        raise RunDirError(f"--out {run_dir}: not empty (finish that run with --resume {run_dir}, "
                          "or choose another --out)")
    return run_dir


def resumable(run_dir: Path, scenario: dict[str, Any], out: Path | None) -> dict[str, Any]:
    """RUN's meta when ``--resume RUN`` may finish it with ``scenario``; else :class:`RunDirError`."""
    if out is not None and out.resolve() != run_dir.resolve():
        raise RunDirError(f"--out {out} and --resume {run_dir}: a resumed run stays where it is")
    if not (run_dir / META).is_file():
        raise RunDirError(f"--resume {run_dir}: not a commbench run directory (no {META})")
    try:
        meta = read_meta(run_dir)
    except StoreError as e:
        raise RunDirError(f"--resume: {e}") from None
    if meta.get("source") != "commbench":
        raise RunDirError(f"--resume {run_dir}: imported from {meta.get('source')!r}; "
                          "only commbench runs can be resumed")
    stored = meta.get("scenario")
    old = meta.get("scenario_hash") or scenario_hash(stored or {})
    if isinstance(stored, dict):  # a key added to scenarios since, left unset, changes nothing
        scenario = {k: v for k, v in scenario.items() if k in stored or v is not None}
    new = scenario_hash(scenario)
    if old != new:
        raise RunDirError(f"--resume {run_dir}: made from another scenario (hash {old[:12]}, "
                          f"this one {new[:12]}); resume it with the scenario it was made from")
    return meta


def run_meta(scenario: Any, source: Path, run_id: str,
             mpi: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new run's ``meta.json``: the scenario (and its hash), where and when, the environment."""
    from bench.store import meta

    dump = scenario.model_dump(mode="json")
    return kinds.meta(run_id=run_id, source="commbench", scenario=dump,
                      scenario_hash=scenario_hash(dump), scenario_path=str(source),
                      **meta.environment(mpi))


def recorded_sizes(run_dir: Path) -> tuple[int, ...]:
    """The world sizes a run was launched with (``()`` when unknown), for ``--resume``."""
    try:
        return tuple(int(w) for w in read_meta(run_dir).get("world_sizes") or ())
    except (StoreError, OSError, TypeError, ValueError):
        return ()


@dataclass(frozen=True)
class RunPlan:
    """A checked run directory: new (``old`` is None) or one to finish (``old``: its meta)."""

    run_dir: Path
    old: dict[str, Any] | None

    @property
    def resuming(self) -> bool:
        return self.old is not None

    def lock(self) -> int:
        """Hold the run directory for this process; :class:`RunDirError` when another holds it."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.run_dir / LOCK, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RunDirError(f"{self.run_dir}: in use by another commbench run") from None
        return fd

    def open(self, scenario: Any, source: Path, sizes: tuple[int, ...],
             mpi: dict[str, Any] | None = None) -> dict[str, Any]:
        """The meta to write; a resumed run's last line cut short is cut off first."""
        if self.old is None:
            info = run_meta(scenario, source, self.run_dir.name, mpi)
            info["world_sizes"] = list(sizes)
            return info
        dropped = heal(self.run_dir)
        if dropped:
            print(f"commbench: {self.run_dir}/results.jsonl: cut off a last line cut short "
                  f"({dropped} bytes)", flush=True)
        inflight.clear(self.run_dir)
        info = dict(self.old)
        info.setdefault("resumed", []).append({"at": kinds.now(), "argv": sys.argv,
                                               "world_sizes": list(sizes)})
        return info


def plan_run(scenario: Any, out: Path | None, resume: Path | None) -> RunPlan:
    """Where a run goes: ``--resume RUN`` (checked), else a new, empty ``--out`` or the default."""
    if resume is not None:
        return RunPlan(resume, resumable(resume, scenario.model_dump(mode="json"), out))
    return RunPlan(fresh(out, scenario.name), None)


def collective_key(collective: str, algorithm: str, transport: str, world_size: int,
                   ranks_per_node: int, nbytes: int, dtype: str, op: str) -> CaseKey:
    from kernels.collective import canonical  # "allreduce" and "all_reduce" are one collective

    return (canonical(collective), algorithm, transport, int(world_size), int(ranks_per_node),
            int(nbytes), dtype, op)


def done_training(run_dir: Path) -> frozenset[CaseKey]:
    """The training cases of RUN that have a record (measured or failed)."""
    return frozenset((r.get("strategy"), r.get("model"), r.get("world_size"))
                     for r in _records(run_dir) if r.get("kind") == "training")


def _records(run_dir: Path) -> Iterable[dict[str, Any]]:
    return iter_records(run_dir, samples=False, on_bad=lambda *_: None)


def write_yaml(sc: Any, run_dir: Path) -> Path:
    """``sc`` as the run directory's scenario file: loaded, it is ``sc`` again (the same cases;
    its ranks read it)."""
    path = run_dir / SCENARIO_FILE
    dump = {"kind": sc.kind, **sc.model_dump(mode="json", exclude_defaults=True)}
    path.write_text(yaml.safe_dump(dump, sort_keys=False))
    return path
