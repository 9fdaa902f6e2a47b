"""How long ``advise`` takes over every valid layout of a Mixtral-8x7B-like mixture of experts
(32 layers, width 4096, 32 heads, 8 SwiGLU experts of width 14336, top-2, sequence 2048, global
batch 1024; 47.7B parameters as the reference family builds it, Mixtral 8x7B has 46.7B: no
grouped-query attention here) on 1,024 ranks of h100-ib400 (``128x8``), expert degrees searched,
the router's imbalance 1.3; target 5 s. Prints the layouts priced (and how many are expert
parallel), the best, the search's wall and CPU time per repeat, and the whole command end to end
in a fresh interpreter (wall, and the CPU its process used: on a shared machine the wall clock
counts other processes' time).

    .venv/bin/python -m benchmarks.advise_moe [--repeat 3] [--no-cli]
"""

from __future__ import annotations

import dataclasses
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.argtypes import OneLineParser, positive_int
from benchmarks import results

SHAPE = ["--params", "47B", "--layers", "32", "--hidden", "4096", "--heads", "32", "--experts",
         "8", "--top-k", "2", "--ffn", "14336", "--imbalance", "1.3"]
CLI = ["advise", *SHAPE, "--profile", "h100-ib400", "--topology", "128x8"]


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=positive_int, default=3)
    ap.add_argument("--no-cli", action="store_true", help="leave out the end-to-end command")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from bench.advise.question import Question
    from bench.advise.routing import Routing
    from bench.advise.shape import Shape, custom_moe
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.models.configs import MoEConfig
    from bench.training.analytic import MIXED, parameters

    print(f"imports: {time.perf_counter() - t0:.2f} s")
    cfg = MoEConfig(layers=32, heads=32, embd=4096, vocab=50304, seq_len=2048, experts=8,
                    top_k=2, ffn=14336)
    for i in range(args.repeat):
        t, c = time.perf_counter(), time.process_time()
        model = custom_moe(cfg)
        shape = dataclasses.replace(Shape(model, tuple(parameters(model))),  # nothing cached
                                    routing=Routing(imbalance=1.3))
        q = Question(shape, load_profile("h100-ib400"), parse_topology("128x8"), 1024, MIXED)
        ranked = q.answer(1024)
        dt, cpu = time.perf_counter() - t, time.process_time() - c
        best = ranked.best
        assert best is not None
        ep = sum(r.layout.dp == "expert" for r in ranked.results)
        print(f"repeat {i + 1}: {len(ranked.results)} layouts ({ep} expert-parallel, "
              f"{sum(r.fits for r in ranked.results)} fit) in {dt:.2f} s wall, {cpu:.2f} s CPU; "
              f"best {best.layout.label}, {best.step.time * 1e3:.1f} ms/step")
    if not args.no_cli:
        cli(args.repeat)


def cli(repeat: int) -> None:
    """``commbench advise`` end to end in a fresh interpreter: wall and CPU per repeat."""
    for i in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "bench", *CLI, "--out",
                                   str(Path(d) / "adv")], capture_output=True, text=True)
            dt = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode:
            raise SystemExit(f"commbench advise failed: {proc.stderr.strip()[-500:]}")
        print(f"cli {i + 1}: commbench {' '.join(CLI)}: {dt:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
