"""``commbench ab --html``: the paired gate's verdict as a report section, with the rule ab
applied (docs/gate.md, "How a key is decided")."""

from __future__ import annotations

from collections.abc import Sequence

from bench.gate.ab import Side
from bench.gate.compare import GateResult
from bench.gate.decide import Rule
from bench.gate.paired import min_rounds
from bench.gate.paired_table import detectable
from bench.gate.stack import Difference
from reports.gate_section import gate_rows
from reports.sections import Section


def paired_rule(rule: Rule, rounds: int, alpha: float) -> list[str]:
    """How ab decided each key, one sentence per part of the rule."""
    t = f"{rule.threshold:.0%}"
    mode = ("<code>--relative</code>: every median and sample was first divided, block by block, by "
            "<code>native</code> measured beside it in the same run. This also cancels a machine "
            "that changed speed between the two runs of a round, and cannot see a slowdown of "
            "everything (native included: reported as <code>reference slower</code>, never failing)."
            if rule.reference else
            "Absolute times (without <code>--relative</code>): a machine that changed speed between "
            "the two runs of a round moves that round's ratio; <code>--relative</code> divides each "
            "key by <code>native</code> measured beside it, which cancels that too.")
    return [
        f"BASE and HEAD ran the scenario alternately, {rounds} rounds (BASE, HEAD, then HEAD, BASE, "
        "…). Each key is decided on its per-round log ratios d<sub>r</sub> = "
        "log(median(HEAD<sub>r</sub>) / median(BASE<sub>r</sub>)): the two runs of a round ran "
        "seconds apart, so what the machine was doing then cancels.",
        f"<strong>Paired test.</strong> A key is slower when the exact one-sided Wilcoxon signed-rank "
        f"test on its {rounds} d<sub>r</sub> rejects “ratio ≤ 1 + {t}” at α = {alpha:g}, the "
        f"false-alarm rate per key ({rounds} rounds reach 2<sup>−{rounds}</sup> at best; α = "
        f"{alpha:g} needs {min_rounds(alpha)}). Equivalently, the one-sided lower bound of the ratio "
        f"(the c-th largest Walsh average (d<sub>i</sub> + d<sub>j</sub>)/2, c the test's critical "
        f"count) exceeds 1 + {t}. "
        "<em>ratio</em> is the Hodges–Lehmann estimate (the median of the Walsh averages), "
        "<em>interval</em> its one-sided bounds, <em>p(slower)</em> the test's exact p-value.",
        f"<strong>Within-run tests</strong> must agree: the Mann-Whitney U test (p &lt; "
        f"{rule.alpha:g}) and the {rule.confidence:.0%} bootstrap interval of the median ratio, "
        "on all rounds' samples, each round's divided by the geometric mean of its two medians.",
        mode,
        f"<strong>Detectable effect.</strong> <em>need</em> is the slowdown a key must show to be "
        f"flagged: (1 + {t}) · exp(estimate − lower bound) − 1, its rounds' spread seen from the "
        "threshold.",
        "Faster is the mirror image. Failed cases, a changed bytes_sent_max or #wrong, and "
        "oversubscribed keys are handled as <code>commbench compare</code> handles them.",
    ]


def ab_section(res: GateResult, rounds: int, alpha: float, sides: Sequence[Side] = (),
               diffs: Sequence[Difference] = ()) -> Section:
    """The section; ``sides`` and their ``diffs`` are shown above the table."""
    return Section("gate", "Paired regression gate (ab)", "ab_gate.html.j2", {
        **gate_rows(res), "base_label": "BASE", "cur_label": "HEAD",
        "base": res.baseline, "head": str(res.current),
        "rule_parts": paired_rule(res.rule, rounds, alpha),
        "detectable": [line.removeprefix("# ") for line in detectable(res)],
        "sides": [(s.label, s.spec) for s in sides],
        "differs": [(d.what, d.base, d.head) for d in diffs]})
