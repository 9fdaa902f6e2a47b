"""The ranked table printed by ``commbench advise``: each step with the model's error band,
the layouts tied with the best within the band, the first choice's margin over the runner-up,
and the user's own layouts (``--compare``) beside them (docs/advise.md, Uncertainty)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench.advise.band import Band
from bench.advise.evaluate import Result
from bench.advise.ranking import tied_with_best
from bench.advise.search import Ranked

GIB = 2**30


def _ms(x: float) -> str:
    return f"{x * 1e3:.3g}"


def tied(ranked: Ranked, band: Band) -> int:
    """How many of the fitting layouts, best first, lie within the band of the best."""
    return tied_with_best([r.step.time for r in ranked.results if r.fits], band.rank)


def _row(place: str, r: Result) -> str:
    st = r.step
    fits = f"{'yes' if r.fits else 'NO'} {r.memory.total / GIB:6.1f}"
    comm = ", ".join(f"{k} {_ms(v)} ({st.algorithms[k]})" for k, v in st.comm.items())
    bounds = f"[{_ms(st.no_overlap)}, {_ms(st.full_overlap)}]"
    return (f"{place:>3} {r.layout.label:<42} {fits:>11} {_ms(st.compute):>8} {_ms(st.bubble):>7} "
            f"{_ms(sum(st.exposed.values())):>8} {_ms(st.time):>9} "
            f"{bounds:>19} {r.samples_per_s:>10.4g} {r.efficiency:>5.2f}  {comm or '-'}")


def mfu(r: Result, world: int, flops_per_sample: float, peak: float) -> float:
    """Model FLOPs utilization: the model's training FLOPs per sample (no recomputation
    counted) x samples/s over the world's peak (device.flops_per_s)."""
    return flops_per_sample * r.samples_per_s / (world * peak)


def print_ranked(ranked: Ranked, limit: float | None, top: int, out: Callable[[str], None],
                 band: Band, compared: Sequence[tuple[str, Result, str]] = (),
                 flops: tuple[float, float] | None = None) -> None:
    """The table; ``compared``: (the user's spec, its priced layout, why it differs from the
    best) of each ``--compare`` layout; ``flops``: (model FLOPs per sample, device peak) for
    the first choice's implied MFU."""
    lim = f" of {limit / GIB:.0f} GiB" if limit else ""
    n_tied = tied(ranked, band)
    out(f"# {band.describe}; '=' marks the layouts tied with the best")
    out(f"{'#':>3} {'layout':<42} {'fits GiB':>11} {'compute':>8} {'bubble':>7} {'exposed':>8} "
        f"{'step ms':>9} {'[no-overlap, full]':>19} {'samples/s':>10} {'eff.':>5}  "
        f"comm per step, ms (algorithm); steps ±{band.step:.0%}")
    for i, r in enumerate(ranked.results[:top], 1):
        out(_row(f"={i}" if i <= n_tied and n_tied > 1 else str(i), r))
    best, margin = ranked.best, ranked.margin
    if best is None:
        out(f"# nothing fits{lim} per rank at {ranked.world} ranks")
        return
    for spec, r, why in compared:
        place = next((i for i, x in enumerate(ranked.results, 1) if x.layout == r.layout), None)
        d = r.step.time / best.step.time - 1
        verdict = ("the best" if d == 0 else f"{d:+.1%} against the best: "
                   + ("within the band, tied" if d <= band.rank else "beyond the band, slower"))
        where = f"#{place}" if place else "not in the table"
        fit = "" if r.fits else f"; does NOT fit{lim}"
        out(f"# compared {spec} ({where}): {verdict}{fit}")
        out(_row("cmp", r))
        if why:
            out(f"#   {why}")
    grad = best.step.best.get("all_reduce:data")
    more = f"; gradients: all_reduce {grad} (the fastest schedule modelled)" if grad else ""
    if margin is None:
        by = ""
    elif n_tied > 1:
        least = "at least " if ranked.pruned and n_tied == sum(r.fits for r in ranked.results) \
            else ""  # the search stopped pricing: the group may go on
        by = (f", {margin:.1%} faster than the runner-up: within the ±{band.rank:.0%} band, "
              f"tied with {least}{n_tied - 1} more (marked '=')")
    else:
        by = f", {margin:.1%} faster than the runner-up: beyond the ±{band.rank:.0%} band"
    util = "" if flops is None else \
        f"; model FLOPs at {mfu(best, ranked.world, *flops):.0%} of device.flops_per_s (MFU)"
    out(f"# best at {ranked.world} ranks: {best.layout.label} "
        f"({best.memory.total / GIB:.1f} GiB{lim} per rank{by}){more}{util}")
