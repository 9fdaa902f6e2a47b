"""The gate's verdict as a text table: failing keys first, then faster ones, then a summary."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from bench.gate.compare import GateResult, Row
from bench.gate.keys import KEY, SAMPLES, describe

ORDER = ("failed", "changed", "slower", "undecided", "faster", "reference slower",
         "reference faster", "reference undecided", "noisy slower", "noisy faster",
         "noisy undecided", "fixed", "both failed", "untested", "only in baseline",
         "only in current", "same")
SHOWN = frozenset(ORDER[:ORDER.index("untested") + 1])
UNDECIDED_LINE = ("the baselines disagree more than the effect you gate on: add baselines or use "
                  "`commbench ab`")
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
                  key=lambda r: (RANK.get(r.outcome, len(ORDER)), -_ratio(r, 0.0)))
    counts = ", ".join(f"{res.count(o)} {o}" for o in ORDER if res.count(o))
    return "\n".join([head, f"{'# outcome':<17} {sides[0]:>10} {sides[1]:>10} {'':<2} {'ratio':>7} "
                      f"{'interval':<17} {'need':>5} {'p(slower)':>8} key",
                      *map(line, rows), *extremes(res, rows), f"# {counts}", *notes,
                      verdict(res)])


def verdict(res: GateResult) -> str:
    """The last line: FAIL (exit 1), UNDECIDED (exit 2) or PASS (exit 0)."""
    if res.failures:
        return f"FAIL: {len(res.failures)} of {len(res.rows)} keys regressed"
    if res.undecided:
        return f"UNDECIDED: {len(res.undecided)} of {len(res.rows)} keys: {UNDECIDED_LINE}"
    return f"PASS: no regression in {len(res.rows)} keys"


def _ratio(r: Row, missing: float = math.nan) -> float:
    return r.decision.ratio if r.decision and math.isfinite(r.decision.ratio) else missing


def extremes(res: GateResult, shown: list[Row]) -> list[str]:
    """The largest and smallest ratio among the keys the table does not list, so a pass shows
    how close it came."""
    rest = [r for r in res.rows if r not in shown and math.isfinite(_ratio(r))]
    if not rest:
        return []
    hi, lo = max(rest, key=_ratio), min(rest, key=_ratio)
    return ["# extremes of the keys not listed (largest and smallest ratio):",
            *map(line, dict.fromkeys((hi, lo)))]


def render(res: GateResult, everything: bool = False, machine: bool | None = None) -> str:
    """The gate's table; ``machine``: whether the drift canaries say the machine changed between
    or during the runs (None: no canary recorded)."""
    rule = res.rule
    k = len(res.baselines)
    source = (f"# {k} baselines: each key is held to the rule against each baseline run alone; "
              f"slower only when slower than every one, undecided when only some say slower "
              f"(need: the effect over the pooled median that clears every baseline)" if k > 1 else
              "# one baseline run: run-to-run noise unknown (give two or more baselines to measure it)")
    head = (f"# commbench compare  baseline={res.baseline}  current={res.current}\n"
            f"# slower = U test p<{rule.alpha} (one-sided) and the {rule.confidence:.0%} bootstrap "
            f"interval of median(current)/median(baseline) above 1+need, need = max("
            f"{rule.threshold:.0%}, block drift)\n{source}")
    return table(res, head, ("baseline", "current"), everything,
                 [*machine_shift(res, machine), *blind(res)])


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


def machine_shift(res: GateResult, machine: bool | None) -> list[str]:
    """A note per world size whose keys moved together (median ratio beyond 1.5x either way),
    blaming the machine only where the drift canaries (``machine``) say it changed."""
    out = []
    ratios = by_world(res, lambda r: r.cur_median / r.base_median
                      if r.base_median > 0 and math.isfinite(r.cur_median) else None)
    why = {True: "the drift canaries say the machine changed (notes below): rerun, or use "
                 "--relative",
           False: "the drift canaries saw the same machine, so the code or the stack under it "
                  "changed",
           None: "no drift canary was recorded, so nothing tells the machine from the code"}
    for w, ratio in ratios:
        med = float(np.median(ratio))
        if len(ratio) >= 4 and not 1 / 1.5 < med < 1.5:
            out.append(f"# note: at world_size={w} the median key is {med:.2f}x the baseline: "
                       f"{why[machine]}")
    return out
