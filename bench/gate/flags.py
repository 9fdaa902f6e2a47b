"""The gate's command-line flags, generated from :class:`bench.gate.decide.Rule` (each default is
the rule's); percentages are given in percent and held as fractions."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bench.argtypes import nonneg_float, percent, probability
from bench.gate.decide import Rule


@dataclass(frozen=True)
class Flag:
    field: str  # of Rule
    spelling: str
    help: str
    type: Callable[[str], float] | None = None  # None: a switch (store_true)
    metavar: str | None = None
    scale: float = 1.0  # the flag's value = the field's value x scale

    @property
    def dest(self) -> str:
        return self.spelling.removeprefix("--").replace("-", "_")


FLAGS = {f.field: f for f in (
    Flag("threshold", "--threshold", "minimum slowdown that counts, in percent", percent, "PCT",
         100.0),
    Flag("alpha", "--alpha", "one-sided significance level of the U test", probability),
    Flag("reference", "--relative", "decide each algorithm on its time relative to native "
         "measured beside it"),
    Flag("strict", "--strict", "also fail on oversubscribed cases"),
    Flag("min_abs", "--min-abs", "smallest difference of medians that counts, in µs",
         nonneg_float, "US"),
)}


def add_rule_flags(p: argparse.ArgumentParser, names: Sequence[str],
                   more: Mapping[str, str] | None = None) -> None:
    """Add the flags of the Rule fields ``names``; ``more`` adds a command's own words to a
    field's help (what the flag means for that command)."""
    default = Rule()
    for name in names:
        f = FLAGS[name]
        extra = (more or {}).get(name)
        help_ = f.help + (f" {extra}" if extra else "")
        if f.type is None:
            p.add_argument(f.spelling, action="store_true", help=help_)
            continue
        value = getattr(default, name) * f.scale
        p.add_argument(f.spelling, type=f.type, default=value, metavar=f.metavar,
                       help=f"{help_} (default {value:g})")


def rule_from(args: argparse.Namespace, names: Sequence[str]) -> Rule:
    """The Rule the parsed flags of ``names`` say; other fields keep their defaults."""
    return Rule(**{n: getattr(args, FLAGS[n].dest) / FLAGS[n].scale if FLAGS[n].type else
                   getattr(args, FLAGS[n].dest) for n in names})
