"""The gate's verdict as a text table: failing keys first, then faster ones, then a summary."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from bench.gate.compare import GateResult, Row
from bench.gate.keys import KEY, SAMPLES, describe

ORDER = ("failed", "changed", "slower", "faster", "reference slower", "reference faster",
         "noisy slower", "noisy faster", "fixed", "both failed", "untested", "only in baseline",
         "only in current", "same")
SHOWN = frozenset(ORDER[:11])
RANK = {o: i for i, o in enumerate(ORDER)}


def _f(v: float, fmt: str = ".4g") -> str:
    return "" if v is None or not math.isfinite(v) else format(v, fmt)


def line(r: Row) -> str:
    d = r.decision
    unit = SAMPLES.get(r.kind, ("", "µs"))[1]
    ci = f"[{_f(d.low, '.3f')}, {_f(d.high, '.3f')}]" if d and math.isfinite(d.low) else ""
    need = f"{d.needed:+.0%}" if d and math.isfinite(d.needed) else ""
    return (f"{r.outcome.upper():<17} {_f(r.base_median):>10} {_f(r.cur_median):>10} {unit:<2} "
            f"{_f(d.ratio, '.3f') if d else '':>7} {ci:<17} {need:>5} "
            f"{_f(d.p_slower, '.1e') if d else '':>8} "
            f"{describe(r.key)}{'  (' + r.detail + ')' if r.detail else ''}")


def table(res: GateResult, head: str, sides: tuple[str, str], everything: bool,
          notes: list[str]) -> str:
    """``head``, the column header, a line per row shown (failing first, then by ratio), the
    counts, ``notes`` and the verdict."""
    rows = sorted((r for r in res.rows if everything or r.outcome in SHOWN),
                  key=lambda r: (RANK.get(r.outcome, len(ORDER)), -(r.decision.ratio
                                 if r.decision and math.isfinite(r.decision.ratio) else 0)))
    counts = ", ".join(f"{res.count(o)} {o}" for o in ORDER if res.count(o))
    verdict = (f"FAIL: {len(res.failures)} of {len(res.rows)} keys regressed"
               if res.failures else f"PASS: no regression in {len(res.rows)} keys")
    return "\n".join([head, f"{'# outcome':<17} {sides[0]:>10} {sides[1]:>10} {'':<2} {'ratio':>7} "
                      f"{'interval':<17} {'need':>5} {'p(slower)':>8} key",
                      *map(line, rows), f"# {counts}", *notes, verdict])


def render(res: GateResult, everything: bool = False) -> str:
    rule = res.rule
    k = len(res.baselines)
    source = (f"# noise floor: spread of the {k} baseline runs' medians (pooled per case group, "
              f"Student-t bound at {rule.run_alpha:g})" if k > 1 else
              "# one baseline run: run-to-run noise unknown (give two or more baselines to measure it)")
    head = (f"# commbench compare  baseline={res.baseline}  current={res.current}\n"
            f"# slower = U test p<{rule.alpha} (one-sided) and the {rule.confidence:.0%} bootstrap "
            f"interval of median(current)/median(baseline) above 1+need, need = max("
            f"{rule.threshold:.0%}, block drift{', noise floor' if k > 1 else ''})\n{source}")
    return table(res, head, ("baseline", "current"), everything, [*machine_shift(res), *blind(res)])


def by_world(res: GateResult, value: Callable[[Row], float | None]) -> list[tuple[object, list[float]]]:
    """``value`` of each row that has one, grouped by world size (in order of its text)."""
    out: dict[object, list[float]] = {}
    for r in res.rows:
        if (v := value(r)) is not None:
            out.setdefault(r.key[KEY.index("world_size")], []).append(v)
    return sorted(out.items(), key=lambda kv: str(kv[0]))


def blind(res: GateResult) -> list[str]:
    """A note per world size where noise raised the effect a key must show above the threshold."""
    out = []
    needs = by_world(res, lambda r: r.decision.needed
                     if r.decision and math.isfinite(r.decision.needed) else None)
    for w, need in needs:
        wide = [n for n in need if n > res.rule.threshold + 1e-12]
        if wide:
            out.append(f"# note: at world_size={w}, {len(wide)} of {len(need)} keys need more than "
                       f"{res.rule.threshold:.0%} (median +{float(np.median(wide)):.0%}, largest "
                       f"+{max(wide):.0%}): smaller slowdowns there are within this machine's noise")
    return out


def machine_shift(res: GateResult) -> list[str]:
    """A note per world size whose keys moved together (median ratio beyond 1.5x either way)."""
    out = []
    ratios = by_world(res, lambda r: r.cur_median / r.base_median
                      if r.base_median > 0 and math.isfinite(r.cur_median) else None)
    for w, ratio in ratios:
        med = float(np.median(ratio))
        if len(ratio) >= 4 and not 1 / 1.5 < med < 1.5:
            out.append(f"# note: at world_size={w} the median key is {med:.2f}x the baseline: "
                       "the machine was busier or different in one run; rerun, or use --relative")
    return out
