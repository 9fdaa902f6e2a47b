"""The command line for people who come from nccl-tests and OSU: a flag the command does not
take is one line prefixed once (``commbench: run: ...``) with a hint for -g and -m and a "did
you mean" for a near miss; ``run --help`` says which letters mean something else; bare
``commbench`` lists the commands."""

from __future__ import annotations

import pytest

from bench.cli import FOREIGN, main
from bench.collective import flags
from bench.commands import COMMANDS


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("argv", "hint"), [
    (["run", "-c", "all_reduce", "-g", "1"], FOREIGN["-g"]),
    (["run", "-c", "all_reduce", "-m", "8:1M"], FOREIGN["-m"]),
])
def test_foreign_flags_get_one_line_with_a_hint(capsys: pytest.CaptureFixture[str],
                                                argv: list[str], hint: str) -> None:
    code, out, err = run(capsys, *argv)
    flag = argv[3]
    assert (code, out) == (2, "")
    assert err == f"commbench: run: unrecognized arguments: {flag} ({hint})\n"


def test_a_near_miss_gets_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "run", "--warmpu", "3") == (
        2, "", "commbench: run: unrecognized arguments: --warmpu (did you mean --warmup?)\n")
    code, _, err = run(capsys, "run", "--zzzzzz")
    assert (code, err) == (2, "commbench: run: unrecognized arguments: --zzzzzz\n")


def test_bare_commbench_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert (code, err) == (0, "")
    listed = {ln.split()[0] for ln in out.splitlines() if ln.startswith("    ") and ln.split()}
    assert set(COMMANDS.names()) <= listed


def test_run_help_says_the_letters_that_differ_from_nccl_tests(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "run", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert " ".join(flags.DIFFER.split()) in text
    for letter in ("-n", "-c", "-i", "-a", "-t"):
        assert f"{letter} is the" in flags.DIFFER or f"{letter} the" in flags.DIFFER


@pytest.mark.parametrize(("raw", "line"), [
    ({"world_size": [2]}, "s: world_size: unknown key (did you mean world_sizes?)"),
    ({"timing": {"warmpu": 2}}, "s: timing.warmpu: unknown key (did you mean warmup?)"),
    ({"zzzz": 1}, "s: zzzz: unknown key"),
])
def test_an_unknown_scenario_key_gets_did_you_mean(raw: dict[str, object], line: str) -> None:
    from bench.scenario_base import ScenarioError, parse_scenario

    base = {"collectives": ["all_reduce"], "sizes": {"min": 8, "max": 64}}
    with pytest.raises(ScenarioError) as e:
        parse_scenario({**base, **raw}, "s")
    assert str(e.value) == line


def test_an_unknown_command_and_top_level_errors_are_prefixed_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "rnu")
    assert (code, out) == (2, "")
    assert err.startswith("commbench: unknown command 'rnu' (did you mean run? commands: ")
    assert err.count("\n") == 1
    assert run(capsys, "--bogus") == (2, "", "commbench: the following arguments are required: "
                                             "COMMAND\n")
