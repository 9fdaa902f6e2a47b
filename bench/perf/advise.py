"""How long ``advise`` takes over every valid layout of a 70B GPT (80 layers, width 8192, 64
heads, sequence 2048, global batch 1024) on 1,024 ranks of h100-ib400 (``128x8``); target 5 s
on 2 cores. Prints the layouts priced, the search's time (model built, every layout priced and
ranked) per repeat, and the import time before it.

    .venv/bin/python -m bench.perf.advise [--repeat 3] [--world 1024]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--world", type=int, default=1024)
    args = ap.parse_args()
    t0 = time.perf_counter()
    from bench.advise.question import Question
    from bench.advise.shape import Shape, custom_gpt
    from bench.topo.model import parse_topology
    from bench.topo.profile import load_profile
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


if __name__ == "__main__":
    main()
