"""How long ``advise`` takes on a 70B GPT (80 layers, width 8192, 64 heads, sequence 2048,
global batch 1024) on 1,024 ranks of h100-ib400 (``128x8``); target 5 s on 2 cores. Prints the
layouts, the search's wall and CPU time per repeat (model built, layouts priced and ranked) as
``commbench advise`` runs it (the first ``--keep`` rows priced, search.py) and exhaustively (every
layout, ``--all``), whether the pruned search's rows equal the exhaustive one's first rows, the
import time before it, and the whole command end to end (a fresh interpreter running
``commbench advise ... --topology 128x8``: start-up, search, records written), wall time per
repeat. CPU time beside wall time: on a machine shared with other work, wall time measures the
neighbours too.

    .venv/bin/python -m benchmarks.advise [--repeat 3] [--world 1024] [--keep 11] [--no-cli]
"""

from __future__ import annotations

import resource
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
    ap.add_argument("--keep", type=positive_int, default=11,
                    help="rows priced by the pruned search (11: advise's default --top 10 + 1)")
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
    def question() -> Question:
        model = custom_gpt(80, 8192, 64, 2048)
        shape = Shape(model, tuple(parameters(model)))  # a fresh shape: nothing cached
        return Question(shape, load_profile("h100-ib400"), parse_topology("128x8"), 1024, MIXED)

    for i in range(args.repeat):
        got = {}
        for how, keep in (("pruned", args.keep), ("exhaustive", None)):
            t, c = time.perf_counter(), time.process_time()
            ranked = question().answer(args.world, keep=keep)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            best = ranked.best
            assert best is not None
            got[how] = ranked.results[:args.keep]
            print(f"repeat {i + 1} {how}: {len(ranked.results)} priced of "
                  f"{len(ranked.results) + ranked.pruned} layouts in {dt:.2f} s wall, "
                  f"{dc:.2f} s CPU; best {best.layout.label}, {best.step.time * 1e3:.1f} ms/step")
        same = all(a.layout == b.layout and a.step.time == b.step.time
                   for a, b in zip(got["pruned"], got["exhaustive"], strict=True))
        print(f"repeat {i + 1}: the pruned rows {'equal' if same else 'DIFFER FROM'} the "
              f"exhaustive search's first {args.keep}")
    if not args.no_cli:
        cli(args.repeat)


def cli(repeat: int) -> None:
    """``commbench advise`` end to end in a fresh interpreter, wall and CPU time per repeat."""
    for i in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            t, c = time.perf_counter(), _children_cpu()
            proc = subprocess.run([sys.executable, "-m", "bench", *CLI, "--out",
                                   str(Path(d) / "adv")], capture_output=True, text=True)
            dt, dc = time.perf_counter() - t, _children_cpu() - c
        if proc.returncode:
            raise SystemExit(f"commbench advise failed: {proc.stderr.strip()[-500:]}")
        print(f"cli {i + 1}: commbench {' '.join(CLI)}: {dt:.2f} s wall, {dc:.2f} s CPU")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
