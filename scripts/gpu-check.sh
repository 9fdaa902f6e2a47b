#!/usr/bin/env bash
# GPU check, about 5 minutes on one GPU: the GPU/MPI stack (`commbench env`), the CuPy API check and
# the GPU-marked exact tests, a device-to-device copy bandwidth (the ceiling for one GPU), and a
# short sweep with every device transport that can run on the GPUs present (nccl, nccl-graph,
# mpi-cupy, cuda-ipc; the others skip with a reason).
#     PYTHON=python3 scripts/gpu-check.sh [RUN_DIR]
#     TRAINING=1 PYTHON=python3 scripts/gpu-check.sh [RUN_DIR]   # + the training GPU checks (~5 min)
# Works from a plain checkout with an existing Python; nothing is downloaded. It needs numpy,
# mpi4py, CuPy and pytest; the sweep also needs the CLI's packages (pyyaml, pydantic, psutil,
# orjson, tqdm, scipy, pandas). What is missing is named first; the stages that need it are
# skipped, saying so, and the script exits 1. With COMMBENCH_WHEELS=DIR, missing packages are
# installed from the wheels in DIR (pip --no-index) into RUN_DIR/deps, for this run only.
# mpiexec: $MPIEXEC, else the one on PATH, else the mpich wheel's next to the interpreter; the
# first that starts two mpi4py ranks which see each other is used.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
OUT=${1:-runs/gpu-check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
STATUS=0
T0=$SECONDS
stage() { echo "== [$((SECONDS - T0)) s] $*"; }

# Python modules by stage (import name=pip distribution).
CORE="numpy=numpy mpi4py=mpi4py cupy=cupy-cuda12x"
TESTS="pytest=pytest"
CLI="yaml=pyyaml pydantic=pydantic psutil=psutil orjson=orjson tqdm=tqdm scipy=scipy pandas=pandas"
missing() {  # prints "module=dist" for each one that does not import
  $PY - "$@" <<'PYEOF'
import importlib, sys, warnings
warnings.simplefilter("ignore")
for pair in sys.argv[1:]:
    mod = pair.split("=")[0]
    try:
        importlib.import_module(mod)
    except Exception:
        print(pair)
PYEOF
}

stage "python: $($PY -c 'import sys; print(sys.executable, sys.version.split()[0])')"
MISSING=$(missing $CORE $TESTS $CLI)
if [ -n "$MISSING" ] && [ -n "${COMMBENCH_WHEELS:-}" ]; then
  dists=$(for p in $MISSING; do echo "${p#*=}"; done | grep -v '^cupy' | tr '\n' ' ')
  if [ -n "$dists" ]; then
    DEPS="$(cd "$OUT" && pwd)/deps"
    stage "installing from $COMMBENCH_WHEELS into $DEPS: $dists"
    $PY -m pip install -q --no-index --find-links "$COMMBENCH_WHEELS" --target "$DEPS" $dists \
      || echo "gpu-check: pip could not install all of: $dists" >&2
    export PYTHONPATH="$PYTHONPATH:$DEPS"
    MISSING=$(missing $CORE $TESTS $CLI)
  fi
fi
has() { for m in "$@"; do case " $MISSING " in *" $m="*) return 1;; esac; done; return 0; }
if [ -n "$MISSING" ]; then
  echo "gpu-check: MISSING python packages (import=pip name): $(echo $MISSING)" | tee "$OUT/missing.txt"
  has yaml pydantic psutil orjson tqdm scipy pandas || \
    echo "gpu-check: the sweep is skipped (commbench run needs them); COMMBENCH_WHEELS=DIR installs from wheels"
  STATUS=1
fi
if ! has numpy mpi4py; then
  echo "gpu-check: numpy and mpi4py are required for everything here" >&2
  exit 2
fi

stage "commbench env"
timeout 60 $PY -m bench.commands.env 2>&1 | tee "$OUT/env.txt"

wheel_mpiexec=$($PY -c 'import pathlib, sys; print(pathlib.Path(sys.executable).parent / "mpiexec")')
MPI_RUN=""
for cand in ${MPIEXEC:-} "$(command -v mpiexec || true)" "$wheel_mpiexec"; do
  [ -n "$cand" ] && [ -x "$cand" ] || continue
  if timeout 60 "$cand" -n 2 $PY -c 'from mpi4py import MPI; assert MPI.COMM_WORLD.size == 2' \
      >/dev/null 2>&1; then MPI_RUN=$cand; break; fi
done
if [ -z "$MPI_RUN" ]; then
  echo "gpu-check: no mpiexec starts mpi4py ranks here (set MPIEXEC=...)" >&2
  exit 2
fi
stage "mpiexec: $MPI_RUN"
export COMMBENCH_MPIEXEC=$MPI_RUN

NGPU=0
has cupy && NGPU=$($PY -W ignore -c 'import cupy; print(cupy.cuda.runtime.getDeviceCount() if cupy.cuda.is_available() else 0)' 2>/dev/null || echo 0)
stage "GPUs visible: $NGPU"

if has pytest cupy; then
  # Only the GPU test files: collecting all of tests/ would fail on the CLI's missing packages.
  stage "CuPy API check and GPU-marked tests"
  timeout 170 $PY -m pytest -q tests/kernels/test_gpu_api.py tests/kernels/test_gpu_device.py -p no:cacheprovider \
    -o addopts=-ra --durations=5 2>&1 | tee "$OUT/pytest-gpu.txt" | tail -30
  [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
else
  stage "GPU tests skipped: pytest or CuPy missing"
fi

if [ "$NGPU" -ge 1 ]; then
  stage "device-to-device copy bandwidth (CUDA events, 256 MiB, one direction)"
  timeout 60 $PY -W ignore - <<'PYEOF' | tee "$OUT/copy-bandwidth.txt"
import cupy as cp
n = 256 << 20
a, b = cp.ones(n // 4, cp.float32), cp.empty(n // 4, cp.float32)
start, stop = cp.cuda.Event(), cp.cuda.Event()
cp.copyto(b, a)
start.record()
for _ in range(20):
    cp.copyto(b, a)
stop.record()
stop.synchronize()
ms = cp.cuda.get_elapsed_time(start, stop) / 20
print(f"d2d_copy_gbps {n / ms / 1e6:.1f}")
PYEOF
fi

# World sizes: one rank per GPU up to 8 where there are several; 2 and 4 ranks sharing one GPU
# otherwise (nccl then skips, saying why).
if [ "$NGPU" -ge 2 ]; then W=$(( NGPU < 8 ? NGPU : 8 )); else W=4; fi
SIZES="[2, $W]"; [ "$W" -eq 2 ] && SIZES="[2]"
cat > "$OUT/gpu-check.yaml" <<YEOF
name: gpu-check
description: Short GPU sweep of scripts/gpu-check.sh.
transports: [nccl, nccl-graph, mpi-cupy, cuda-ipc]
world_sizes: $SIZES
ranks_per_node: [auto]
sizes: [8B, 64KiB, 4MiB, 64MiB, 256MiB]
algorithms: [native, ring, tree, halving_doubling, hierarchical]
dtypes: [float32]
ops: [sum]
timing: {warmup: 2, time_budget_ms: 30, min_iters: 5, max_iters: 200, repetitions: 2}
check: true
case_timeout_s: 120
YEOF
if has yaml pydantic psutil orjson tqdm scipy pandas cupy; then
  stage "sweep: $W ranks, world sizes $SIZES -> $OUT/run"
  timeout 170 "$MPI_RUN" -n "$W" $PY -m bench run "$OUT/gpu-check.yaml" --out "$OUT/run" \
    --no-progress 2>&1 | tee "$OUT/sweep.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
else
  stage "sweep skipped: missing $(echo $MISSING)"
fi

if [ -f "$OUT/run/results.jsonl" ]; then
  stage "ring vs native busbw at >= 64 MiB, and cuda-ipc ring vs the copy ceiling"
  $PY - "$OUT" <<'PYEOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
recs = [json.loads(x) for x in (out / "run" / "results.jsonl").read_text().splitlines() if x]
copy = out / "copy-bandwidth.txt"
ceiling = float(copy.read_text().split()[-1]) if copy.exists() and copy.read_text().split() else None
best = {}
for r in recs:
    if r["nbytes"] >= 64 << 20:
        best[(r["transport"], r["world_size"], r["nbytes"], r["algorithm"])] = r["busbw_gbps"]
for (t, p, n, alg), bw in sorted(best.items()):
    if alg != "ring":
        continue
    native = best.get((t, p, n, "native"))
    ratio = f"{bw / native:.2f}x native" if native else "no native"
    roof = f", {bw / ceiling:.2f}x copy" if ceiling and t == "cuda-ipc" else ""
    print(f"{t:>11} p={p} {n >> 20:>4} MiB ring busbw {bw:8.2f} GB/s ({ratio}{roof})")
wrong = sum(r["wrong"] or 0 for r in recs)
print(f"{len(recs)} records, {wrong} wrong elements")
sys.exit(1 if wrong else 0)
PYEOF
  [ $? -eq 0 ] || STATUS=1
fi
# Training on the GPU (issue: the NCCL path of the strategies), about 5 more minutes on one GPU:
# TRAINING=1 scripts/gpu-check.sh
if [ "${TRAINING:-0}" = 1 ]; then
  if has pytest yaml pydantic psutil orjson tqdm scipy pandas && $PY -c 'import torch' 2>/dev/null; then
    stage "training device tests (every strategy at one rank on CUDA, refusals, gloo on a GPU host)"
    timeout 300 $PY -m pytest -q tests/training/test_training_device.py -p no:cacheprovider -o addopts=-ra \
      --durations=5 2>&1 | tee "$OUT/pytest-training.txt" | tail -20
    [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
    if $PY -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      stage "training smoke: scenarios/training-gpu-1.yaml -> $OUT/training"
      timeout 300 $PY -m bench run scenarios/training-gpu-1.yaml --out "$OUT/training" --no-progress \
        2>&1 | tee "$OUT/training.txt" | tail -25
      [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
    else
      stage "training smoke skipped: torch sees no CUDA device"
    fi
  else
    stage "training skipped: torch or the CLI's packages missing"
    STATUS=1
  fi
fi
[ "$NGPU" -ge 1 ] || echo "== no CUDA device here: the GPU tests and device transports skipped (see reasons above)"
stage "run directory: $OUT (status $STATUS)"
exit $STATUS
