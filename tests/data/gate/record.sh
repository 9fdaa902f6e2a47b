#!/usr/bin/env bash
# Records the gate's test runs: three baseline runs of scenario.yaml, then two with all_reduce ring
# slowed 1.3x and 2x by the test plugin (tests/plugins/commbench_slowdown). Run from the repository
# root: bash tests/data/gate/record.sh; keeps results.jsonl and meta.json of each run.
set -euo pipefail
here=tests/data/gate
run() {  # NAME [FACTOR]
  local out; out=$(mktemp -d)
  PYTHONPATH=tests/plugins COMMBENCH_PLUGINS=commbench_slowdown COMMBENCH_SLOWDOWN="${2:-1}" \
    .venv/bin/commbench run "$here/scenario.yaml" --out "$out/run" --no-report >/dev/null
  mkdir -p "$here/$1" && cp "$out/run/results.jsonl" "$out/run/meta.json" "$here/$1/"
  rm -rf "$out"
}
run base1; run base2; run base3; run slow1.3 1.3; run slow2 2
