"""Every command's registered example ends with a result, and every flag of every offline
command (its registry entry says it starts no job) is fuzzed through the handler itself, not
only the parser: each run ends with a result (an exit code the command lists as one, and
something on stdout) or with exit 2 and one line on stderr; never a traceback, never exit 1
for bad input. Commands that launch ranks (run, probe, ab) and env (it starts child
interpreters) are held to the same rule at parse time by tests/cli/test_cli_fuzz.py; their examples
run for real in their own end-to-end tests.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shlex
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.argtypes import in_path, out_dir, out_file
from bench.cli import main
from bench.commands import COMMANDS, Command
from tests.conftest import ROOT, commbench
from tests.helpers.parsers import BAD, flags, top_parsers

LOG = ROOT / "tests" / "data" / "import" / "all_reduce_perf.txt"  # a real nccl-tests log
PARSERS = dict(top_parsers())
OFFLINE = [COMMANDS.get(n) for n in COMMANDS.names() if COMMANDS.get(n).offline]
FREE = ("", " ", "\x00", "..", "abc", "-")  # values for flags that take any text (paths, names)
TARGETS = [(c, a) for c in OFFLINE for a in flags(PARSERS[c.name])]

pytestmark = pytest.mark.mpi  # the measured run


MEASURED = """\
name: handlers
collectives: [all_reduce]
algorithms: {all_reduce: [ring, tree]}
world_sizes: [2, 4]
ranks_per_node: [2]
sizes: [1KiB, 64KiB, 1MiB]
timing: {warmup: 2, iters: 10}
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory the placeholders point into: ``run`` the nccl-tests log imported (``{run}``),
    ``measured`` a run commbench measured at 2 and 4 ranks in nodes of 2 (``{measured}``)."""
    d = tmp_path_factory.mktemp("handlers")
    code, _, err = _main(["import", "nccl-tests", str(LOG), "--out", str(d / "run")])
    assert code == 0, err
    (d / "measured.yaml").write_text(MEASURED)
    res = commbench("run", str(d / "measured.yaml"), "--out", str(d / "measured"), "--no-report",
                    "--no-progress")
    assert res.returncode == 0, res.stderr[-2000:]
    return d


def _argv(cmd: Command, d: Path, *extra: str) -> list[str]:
    line = cmd.example
    for mark, path in (("{run}", d / "run"), ("{measured}", d / "measured"), ("{log}", LOG)):
        line = line.replace(mark, shlex.quote(str(path)))
    return [cmd.name, *shlex.split(line), *extra]


def _main(argv: list[str]) -> tuple[int, str, str]:
    """``commbench ARGV`` in this process, in a directory of its own: (exit, stdout, stderr)."""
    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    with tempfile.TemporaryDirectory() as cwd:
        os.chdir(cwd)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        finally:
            os.chdir(here)
    return code, out.getvalue(), err.getvalue()


def _broken(cmd: Command, argv: list[str]) -> str | None:
    """Why ``argv`` broke the rule, or None."""
    try:
        code, out, err = _main(argv)
    except BaseException as e:  # a traceback the user would see
        return f"{argv!r}: {type(e).__name__}: {e}"
    lines = err.strip().splitlines()
    if code in cmd.results and out.strip():
        return None
    if code == 2 and len(lines) == 1 and lines[0].startswith("commbench"):
        return None
    return f"{argv!r}: exit {code}, stdout {out[-200:]!r}, stderr {err[-400:]!r}"


def _values(action: argparse.Action) -> tuple[str, ...]:
    """:data:`BAD` for numbers, sizes and lists; :data:`FREE` for paths, names and choices."""
    text = (None, str, in_path, out_file, out_dir)
    return FREE if action.type in text or action.choices else BAD


def test_every_command_shows_an_example_and_every_offline_one_ends_with_a_result(
        run_dir: Path) -> None:
    assert {c.name for c in OFFLINE} >= {"advise", "memory", "predict", "list", "compare",
                                         "report", "export", "import", "calibrate"}
    for name in COMMANDS.names():
        cmd = COMMANDS.get(name)
        assert PARSERS[name].epilog == cmd.example_for_help(), name
    for cmd in OFFLINE:  # the example itself is the good case: its first result, and output
        code, out, err = _main(_argv(cmd, run_dir))
        assert code == cmd.results[0] and out.strip(), (cmd.name, code, err[-400:])


def test_every_flag_of_every_offline_command_through_its_handler(run_dir: Path) -> None:
    assert len(TARGETS) >= 50  # every flag the offline parsers declare (the count in the note)
    failures = [why for cmd, action in TARGETS for value in _values(action)
                if (why := _broken(cmd, _argv(cmd, run_dir, action.option_strings[-1], value)))]
    assert failures == []


@settings(max_examples=100, deadline=None)
@given(target=st.sampled_from(TARGETS),
       value=st.one_of(st.text(max_size=10), st.floats().map(repr), st.integers().map(str),
                       st.lists(st.integers(-3, 9).map(str), min_size=1, max_size=3).map(",".join)))
def test_random_values_through_the_handlers(run_dir: Path, target: tuple[Command, argparse.Action],
                                            value: str) -> None:
    cmd, action = target
    assert _broken(cmd, _argv(cmd, run_dir, action.option_strings[-1], value)) is None
