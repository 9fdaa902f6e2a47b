"""Time the report on a large results file: ``python -m benchmarks.render [--records N]``.

Generates a synthetic run of N records (default 100,000: 4 algorithms x 22 sizes x 8 world sizes
x 2 transports x 2 dtypes x 2 ops, repeated as if the file had been appended to 18 times, 30 raw
samples each), then renders its report and prints the time of each stage. The budget is 10 s for
100,000 records.
"""

from __future__ import annotations

import itertools
import os
import resource
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.argtypes import OneLineParser, positive_int
from benchmarks import results
from reports.data import load_runs
from reports.render import render_html
from reports.sections import Options
from tests.helpers import synthetic

SPEC = synthetic.Spec(world_sizes=(2, 4, 8, 16, 32, 64, 128, 256),
                      sizes=tuple(8 * 2**i for i in range(22)), transports=("mpi", "nccl"),
                      dtypes=("float32", "bfloat16"), ops=("sum", "max"), samples=30, repeats=18)


def _cpu() -> float:
    """CPU seconds of this process and its (figure-drawing) children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: Sequence[str] | None = None) -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=positive_int, default=100_000)
    p.add_argument("--run", type=Path, default=None,
                   help="an existing run to render instead of generating one")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or Path(tmp) / "bench-render"
        if args.run is None:
            t = time.perf_counter()
            synthetic.write_run(run, itertools.islice(synthetic.collective_records(SPEC),
                                                      args.records))
            print(f"generated {args.records} records "
                  f"({(run / 'results.jsonl').stat().st_size / 1e6:.0f} MB JSON Lines) "
                  f"in {time.perf_counter() - t:.1f} s")
        w0, c0 = time.perf_counter(), _cpu()
        data = load_runs([run])
        w1, c1 = time.perf_counter(), _cpu()
        html = render_html(data, Options())
        w2, c2 = time.perf_counter(), _cpu()
        out = Path(tmp) / "report.html"
        out.write_text(html, encoding="utf-8")
        w3 = time.perf_counter()
    print(f"records: {len(data.frame)}; figures: {html.count('<svg')}; "
          f"HTML {len(html) / 1e6:.1f} MB")
    print(f"load  (bench.store.records.load_results + normalise): wall {w1 - w0:5.2f} s, "
          f"cpu {c1 - c0:5.2f} s")
    print(f"render (aggregate, draw figures, templates):     wall {w2 - w1:5.2f} s, "
          f"cpu {c2 - c1:5.2f} s (incl. figure workers)")
    print(f"total load + render + write: wall {w3 - w0:.2f} s "
          f"(budget 10 s: {'OK' if w3 - w0 <= 10 else 'OVER'}); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
