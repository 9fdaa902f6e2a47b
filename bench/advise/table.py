"""The ranked table printed by ``commbench advise``."""

from __future__ import annotations

from collections.abc import Callable

from bench.advise.search import Ranked

GIB = 2**30


def _ms(x: float) -> str:
    return f"{x * 1e3:.3g}"


def print_ranked(ranked: Ranked, limit: float | None, top: int, out: Callable[[str], None]
                 ) -> None:
    lim = f" of {limit / GIB:.0f} GiB" if limit else ""
    out(f"{'#':>3} {'layout':<42} {'fits GiB':>11} {'compute':>8} {'bubble':>7} {'exposed':>8} "
        f"{'step ms':>9} {'[no-overlap, full]':>19} {'samples/s':>10} {'eff.':>5}  "
        f"comm per step, ms (algorithm)")
    for i, r in enumerate(ranked.results[:top], 1):
        st = r.step
        fits = f"{'yes' if r.fits else 'NO'} {r.memory.total / GIB:6.1f}"
        comm = ", ".join(f"{k} {_ms(v)} ({st.algorithms[k]})" for k, v in st.comm.items())
        bounds = f"[{_ms(st.no_overlap)}, {_ms(st.full_overlap)}]"
        out(f"{i:>3} {r.layout.label:<42} {fits:>11} {_ms(st.compute):>8} {_ms(st.bubble):>7} "
            f"{_ms(sum(st.exposed.values())):>8} {_ms(st.time):>9} "
            f"{bounds:>19} {r.samples_per_s:>10.4g} {r.efficiency:>5.2f}  {comm or '-'}")
    best, margin = ranked.best, ranked.margin
    if best is None:
        out(f"# nothing fits{lim} per rank at {ranked.world} ranks")
        return
    grad = best.step.best.get("all_reduce:data")
    more = f"; gradients: all_reduce {grad} (the fastest schedule modelled)" if grad else ""
    by = f", {margin:.1%} faster than the runner-up" if margin is not None else ""
    out(f"# best at {ranked.world} ranks: {best.layout.label} "
        f"({best.memory.total / GIB:.1f} GiB{lim} per rank{by}){more}")
