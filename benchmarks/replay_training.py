"""Benchmark: the suite's training strategies recorded with the torch profiler and replayed.

    .venv/bin/python -m benchmarks.replay_training [--world-sizes 2,4] [--fixtures DIR]

Runs ``commbench run`` of ddp, zero2, tensor and pipeline (gpipe) on ``mlp`` with
``COMMBENCH_TRACE_DIR`` set (the counted step under the profiler, one trace per rank), imports
each case's traces (``commbench import torch-profiler``) and checks that the replay's calls and
bytes per rank equal what the training record counted, exactly. Then, per strategy at the
largest world size: the replay run on MPI (step communication per group) and priced by
``commbench predict --replay`` at 8x the ranks (per-group times summing to the step). With
``--fixtures DIR`` the traces, cut to their communication events, and the records' counts are
written there (tests/data/replay: the tests' recorded fixtures).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from bench.argtypes import OneLineParser, out_dir, world_list
from bench.replay.scenario import ReplayScenario
from benchmarks import results

STRATEGIES = {"ddp": "ddp", "zero2": "zero2", "tensor": "tensor", "pipeline": "pipeline:gpipe"}
KEEP = ("c10d::", "_c10d_functional::", "gloo:", "nccl:", "record_param_comms")
PROFILE, TOPOLOGY = "h100-ib400", "4x8"


def trim(doc: dict[str, Any]) -> dict[str, Any]:
    """A Kineto trace cut to what the importer reads: its job and its communication events."""
    keep = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith(KEEP)]
    return {"schemaVersion": doc.get("schemaVersion"), "distributedInfo": doc["distributedInfo"],
            "traceEvents": keep}


def counted(sc: ReplayScenario) -> list[dict[str, dict[str, int]]]:
    """Per rank, what training counts (:mod:`bench.training.comm`): ``{"bytes": {op: B},
    "calls": {op: n}}``, a send counted as ``send`` on its sender and ``recv`` on the other."""
    out: list[dict[str, dict[str, int]]] = [{"bytes": {}, "calls": {}}
                                            for _ in range(sc.world_size)]
    for c in sc.calls:
        for r in c.group:
            op = c.op if c.op != "send" else ("send" if r == c.root else "recv")
            out[r]["bytes"][op] = out[r]["bytes"].get(op, 0) + c.nbytes
            out[r]["calls"][op] = out[r]["calls"].get(op, 0) + 1
    return out


def differences(sc: ReplayScenario, rec: Mapping[str, Any]) -> list[str]:
    """Whether a replay makes the communication a training record counted: one line per
    disagreement in each rank's bytes by operation (``comm_by_type_by_rank``) or rank 0's calls
    by operation (``comm_calls_by_type``); empty when they are equal."""
    got = counted(sc)
    out = []
    want_bytes = rec.get("comm_by_type_by_rank") or []
    if len(want_bytes) != sc.world_size:
        return [f"the record counts {len(want_bytes)} ranks, the replay has {sc.world_size}"]
    for r, (mine, theirs) in enumerate(zip(got, want_bytes)):
        if mine["bytes"] != dict(theirs):
            out.append(f"rank {r}: replay bytes {mine['bytes']} != counted {dict(theirs)}")
    calls = dict(rec.get("comm_calls_by_type") or {})
    if got[0]["calls"] != calls:
        out.append(f"rank 0: replay calls {got[0]['calls']} != counted {calls}")
    return out


def commbench(*args: str, env: dict[str, str] | None = None) -> str:
    got = subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                         env=env, check=False)
    if got.returncode:
        raise SystemExit(f"commbench {' '.join(args)}: exit {got.returncode}\n{got.stderr[-2000:]}")
    return got.stdout + got.stderr


def main() -> int:
    from bench.scenario_base import load_scenario

    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world-sizes", type=world_list, default=[2, 4],
                    help="ranks of each training case (default 2,4)")
    ap.add_argument("--fixtures", type=out_dir, default=None,
                    help="also write the traces, cut, and the records' counts here")
    args = ap.parse_args()
    worlds = list(args.world_sizes)
    tmp = Path(tempfile.mkdtemp(prefix="replay-training-"))
    scenario = tmp / "training.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "replay-training", "kind": "training", "models": ["mlp"],
        "strategies": list(STRATEGIES.values()), "world_sizes": worlds, "batch_size": 8,
        "steps": 2, "warmup": 1, "reference": False, "case_timeout_s": 300}))
    env = dict(os.environ, COMMBENCH_TRACE_DIR=str(tmp / "traces"))
    commbench("run", str(scenario), "--out", str(tmp / "training"), "--no-report",
              "--no-progress", env=env)
    recs = [json.loads(x) for x in (tmp / "training" / "results.jsonl").read_text().splitlines()]
    print(f"# mlp, {', '.join(STRATEGIES)} at {','.join(map(str, worlds))} ranks (gloo, CPU): the replay's "
          "calls and bytes per rank against the training record's counted step")
    print(f"{'strategy':>9} {'p':>2} {'calls r0':>9} {'bytes by rank (replay = counted)':>40}  agree")
    bad = 0
    for rec in recs:
        name = rec["strategy"].split("[")[0]
        w = rec["world_size"]
        traces = sorted((tmp / "traces").glob(f"{name}-mlp-p{w}-rank*.json"))
        out = tmp / f"{name}-p{w}.yaml"
        commbench("import", "torch-profiler", *map(str, traces), "--out", str(out))
        sc = load_scenario(out)
        diff = differences(sc, rec)
        bad += bool(diff)
        per = [sum(v for k, v in c["bytes"].items() if k != "recv") for c in counted(sc)]
        print(f"{name:>9} {w:>2} {sum(counted(sc)[0]['calls'].values()):>9} "
              f"{per!s:>40}  {'yes' if not diff else 'NO: ' + '; '.join(diff)}")
        if args.fixtures is not None:
            _fixture(args.fixtures, name, w, traces, rec)
    top = max(worlds)
    print(f"\n# replayed at p={top} on mpi (native), and predicted at p={8 * top} "
          f"({PROFILE}, topology {TOPOLOGY})")
    for name in STRATEGIES:
        yaml_ = tmp / f"{name}-p{top}.yaml"
        for line in commbench("run", str(yaml_), "--out", str(tmp / f"run-{name}"),
                              "--no-report", "--no-progress").splitlines():
            if line.startswith("# replay step") or line.startswith("#   by"):
                print(f"{name:>9} measured  {line.lstrip('# ')}")
        for line in commbench("predict", "--replay", str(yaml_), "--profile", PROFILE,
                              "--topology", TOPOLOGY, "--world-sizes", str(8 * top), "--out",
                              str(tmp / f"pred-{name}")).splitlines():
            if "replay step" in line or line.startswith("#   by"):
                print(f"{name:>9} predicted {line.lstrip('# ')}")
        pred = json.loads((tmp / f"pred-{name}" / f"replay-p{8 * top}.json").read_text())
        for s in pred:
            total = sum(s["by_group"].values())
            print(f"{name:>9} predicted sum of groups {total:.3f} us = step {s['step_us']:.3f} us: "
                  f"{'yes' if abs(total - s['step_us']) <= 1e-9 * s['step_us'] else 'NO'}")
    return 1 if bad else 0


def _fixture(where: Path, name: str, w: int, traces: list[Path], rec: dict[str, Any]) -> None:
    where.mkdir(parents=True, exist_ok=True)
    for t in traces:
        (where / t.name).write_text(json.dumps(trim(json.loads(t.read_text())), separators=(",", ":")))
    keep = {k: rec[k] for k in ("strategy", "world_size", "comm_by_type_by_rank",
                                "comm_calls_by_type")}
    (where / f"{name}-mlp-p{w}.record.json").write_text(json.dumps(keep) + "\n")


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
