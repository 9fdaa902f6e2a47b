"""Ratios against the vendor collective from a run's records (issue targets of the core slice).

    python -m benchmarks.vs_native runs/<id>

For each world size > 1: at sizes >= 1 MiB, ring busbw / native busbw (target >= 0.95); at sizes
<= 4 KiB, the best commbench algorithm's median time / native's (target <= 2).
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench.argtypes import OneLineParser
from bench.store.records import StoreError, load_results
from bench.units import format_size
from benchmarks import results


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.vs_native", description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a run directory")
    args = ap.parse_args(argv)
    try:
        df = load_results(args.run)
    except (StoreError, OSError) as e:
        print(f"commbench: vs_native: {e}", file=sys.stderr)
        return 2
    if df.empty:
        print(f"commbench: vs_native: {args.run}: no records", file=sys.stderr)
        return 2
    df = df[(df["kind"] == "collective") & (df["status"] == "ok") & (df["world_size"] > 1)]
    for (p, dtype, op), g in df.groupby(["world_size", "dtype", "op"]):
        t = g.pivot_table(index="nbytes", columns="algorithm", values="time_us_median")
        print(f"# p={p} {dtype} {op}")
        print(f"{'size':>8} {'ring/native busbw':>18} {'best/native time':>17}  best")
        for nbytes, row in t.iterrows():
            if 4096 < nbytes < 1 << 20:
                continue
            ours = row.drop("native")
            best = ours.idxmin()
            ring = f"{row['native'] / row['ring']:.3f}" if nbytes >= 1 << 20 else "-"
            lat = f"{row[best] / row['native']:.2f}" if nbytes <= 4096 else "-"
            print(f"{format_size(int(nbytes)):>8} {ring:>18} {lat:>17}  {best}")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
