"""Every flag of every command, and of commbench's own benchmark scripts, found from the parsers
themselves (a new command or flag is fuzzed without being listed here): bad values parse or are
refused in one line with exit 2, never a traceback; no flag takes a bare int or float (which
would let 0, negatives, NaN and infinities through to the command)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, clean_env
from tests.helpers.parsers import base_argv, check, command_parsers, flags, fuzz_all

COMMANDS = list(command_parsers())
TARGETS = [(name, p, a) for name, p in COMMANDS for a in flags(p)]


def test_every_command_and_flag_refuses_bad_values_in_one_line() -> None:
    n, failures = fuzz_all(COMMANDS)
    assert n == len(TARGETS) and len(COMMANDS) >= 13  # every flag the parsers declare
    assert failures == []


def test_no_flag_takes_a_bare_number_or_path() -> None:
    """int, float and Path let 0, NaN, infinities, blank names and NUL bytes through; every flag
    and positional takes one of bench.argtypes' checked types instead."""
    raw = [f"{name} {a.option_strings[-1] if a.option_strings else a.dest}"
           for name, p in COMMANDS for a in p._actions if a.type in (int, float, Path)]
    assert raw == []


@settings(max_examples=400, deadline=None)
@given(target=st.sampled_from(TARGETS),
       value=st.one_of(st.text(max_size=12), st.floats().map(repr), st.integers().map(str),
                       st.lists(st.integers(-3, 3).map(str), max_size=4).map(",".join)))
def test_random_values_for_random_flags(target: tuple, value: str) -> None:
    _, parser, action = target
    assert check(parser, [*base_argv(parser), action.option_strings[-1], value]) is None


def test_benchmark_scripts_refuse_bad_values_in_one_line() -> None:
    res = subprocess.run([sys.executable, "-m", "tests.helpers.parsers"], capture_output=True,
                         text=True, timeout=300, cwd=ROOT, env=clean_env())
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout)
    mains = [f for f in (ROOT / "benchmarks").glob("*.py") if "\ndef main(" in f.read_text()]
    assert got["scripts"] == len(mains) + 1 and got["flags"] >= 40  # + `commbench env`
    assert got["failures"] == [] and got["raw"] == []
