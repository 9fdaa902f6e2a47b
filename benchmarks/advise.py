"""How long ``advise`` takes over every valid layout of a 70B GPT (80 layers, width 8192, 64
heads, sequence 2048, global batch 1024) on 1,024 ranks of h100-ib400 (``128x8``); target 5 s
on 2 cores. Prints the layouts priced, the search's time (model built, every layout priced and
ranked) per repeat, the import time before it, and the whole command end to end (a fresh
interpreter running ``commbench advise ... --topology 128x8``: start-up, search, records written),
wall time per repeat.

    .venv/bin/python -m benchmarks.advise [--repeat 3] [--world 1024] [--no-cli]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.argtypes import OneLineParser, positive_int
from benchmarks import results

CLI = ["advise", "--params", "70B", "--layers", "80", "--hidden", "8192", "--heads", "64",
       "--profile", "h100-ib400", "--topology", "128x8"]


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=positive_int, default=3)
    ap.add_argument("--world", type=positive_int, default=1024)
    ap.add_argument("--no-cli", action="store_true", help="leave out the end-to-end command")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from bench.advise.question import Question
    from bench.advise.shape import Shape, custom_gpt
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.training.analytic import MIXED, parameters

    imported = time.perf_counter() - t0
    print(f"imports: {imported:.2f} s")
    for i in range(args.repeat):
        t = time.perf_counter()
        model = custom_gpt(80, 8192, 64, 2048)
        shape = Shape(model, tuple(parameters(model)))  # a fresh shape: nothing cached
        q = Question(shape, load_profile("h100-ib400"), parse_topology("128x8"), 1024, MIXED)
        ranked = q.answer(args.world)
        dt = time.perf_counter() - t
        best = ranked.best
        assert best is not None
        print(f"repeat {i + 1}: {len(ranked.results)} layouts ({sum(r.fits for r in ranked.results)} "
              f"fit) in {dt:.2f} s; best {best.layout.label}, {best.step.time * 1e3:.1f} ms/step")
    if not args.no_cli:
        cli(args.repeat)


def cli(repeat: int) -> None:
    """``commbench advise`` end to end in a fresh interpreter, wall time per repeat."""
    for i in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "bench", *CLI, "--out",
                                   str(Path(d) / "adv")], capture_output=True, text=True)
            dt = time.perf_counter() - t
        if proc.returncode:
            raise SystemExit(f"commbench advise failed: {proc.stderr.strip()[-500:]}")
        print(f"cli {i + 1}: commbench {' '.join(CLI)}: {dt:.2f} s wall")


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
