"""``commbench ab`` between environments, without a round: side specs read from positionals and
flags, refusals in one line (a side that cannot run, clashing parts, sides whose first runs
measured other world sizes or collectives), each side's stack probed under its prefix and
interpreter, and what differed between the sides as ab prints it and its HTML shows it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import sys
from pathlib import Path

import orjson
import pytest

from bench.cli import main
from bench.gate.ab import Side, side_env
from bench.gate.comparable import incomparable
from bench.gate.compare import GateResult
from bench.gate.decide import Rule
from bench.gate.sidespec import SideSpec, SpecError, parse
from bench.gate.stack import Difference, describe, differences, facts, stacks
from bench.store.records import SCHEMA_VERSION
from reports.ab_section import ab_section
from reports.render import environment


def test_a_side_is_a_revision_or_parts_joined_by_plus(tmp_path: Path) -> None:
    assert parse("origin/main") == SideSpec(rev="origin/main")  # today's spelling
    assert parse(".") == SideSpec()
    s = parse("rev:v1.2+env:NCCL_ALGO=Ring,Tree,NCCL_PROTO=LL+python:/v/bin/python"
              "+prefix:srun --mpi=pmix -n 2")
    assert s.rev == "v1.2" and s.python == "/v/bin/python"
    assert s.variables == {"NCCL_ALGO": "Ring,Tree", "NCCL_PROTO": "LL"}  # a comma in a value
    assert s.prefix == ("srun", "--mpi=pmix", "-n", "2")
    assert parse(s.describe()) == s
    f = tmp_path / "nccl.env"
    f.write_text("# old stack\nexport NCCL_ALGO=Ring\n\nUCX_TLS='sm,self'\nA=\"x y\"\nNCCL_ALGO=Tree\n")
    e = parse(f"env-file:{f}+env:B=2")
    assert e.variables == {"NCCL_ALGO": "Tree", "UCX_TLS": "sm,self", "A": "x y", "B": "2"}
    for bad, words in (("rev:a+rev:b", "two rev parts"), ("env:1X=2", "'1X=2' is not NAME=VALUE"),
                       ("env:", "expects NAME=VALUE"), ("prefix:", "expects a command"),
                       ("prefix:'open", "No closing quotation"), ("python: ", "expects an interpreter"),
                       (f"env-file:{tmp_path / 'none'}", "cannot read it")):
        with pytest.raises(SpecError, match=words):
            parse(bad)


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["ab", *argv])
    return code, out.getvalue(), err.getvalue()


def _refused(tmp_path: Path, *argv: str) -> str:
    sc = tmp_path / "sc.yaml"
    sc.write_text("name: x\n")
    code, out, err = _main(*[str(sc) if a == "SC" else a for a in argv], "--out",
                           str(tmp_path / "ab"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("commbench: ab: "), (code, out, err)
    return lines[0]


def test_refusals_are_one_line_and_come_before_any_round(tmp_path: Path) -> None:
    assert "give BASE and HEAD both, or neither" in _refused(tmp_path, "HEAD", "SC")
    assert "BASE: two rev parts (rev:HEAD and rev:main)" in _refused(
        tmp_path, "HEAD", "HEAD", "SC", "--base-rev", "main")
    assert "argument --head-env: env:=1: '=1' is not NAME=VALUE" in _refused(
        tmp_path, "SC", "--head-env", "=1")
    missing = tmp_path / "no-venv" / "bin" / "python"
    line = _refused(tmp_path, "SC", "--base-python", str(missing))
    assert f"BASE (python:{missing}) cannot run" in line and "No such file" in line
    line = _refused(tmp_path, "SC", "--base-prefix", "false")
    assert "BASE (prefix:false) cannot run: its commbench env failed" in line
    assert not (tmp_path / "ab" / "rounds").exists()


def _fake_python(tmp_path: Path, name: str, library: str) -> Path:
    """An 'interpreter' that answers the stack probe with a fixed stack (and noise before it, as
    a prefix's banner), recording the variables it was given."""
    stack = {"python": {"python": "3.11.7", "numpy": "2.4.6"}, "mpi": {"library": library},
             "torch": {"torch": "2.13.0+cpu"},
             "listening": {"collective launcher": f"/{name}/bin/mpiexec"}}
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\necho banner\necho '{json.dumps(stack)}'\n"
                    f"echo \"$NCCL_ALGO\" > {tmp_path / name}.env\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_stacks_are_probed_under_each_sides_prefix_and_what_differs_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCCL_PROTO", raising=False)
    monkeypatch.setenv("UCX_TLS", "sm")
    old = _fake_python(tmp_path, "old", "MPICH Version:      5.0.2   ")
    new = _fake_python(tmp_path, "new", "Open MPI v5.0.11")
    sides = [Side("base", "", "", tmp_path, tmp_path / "base", python=str(old), prefix=("env",),
                  env={"NCCL_ALGO": "Ring", "UCX_TLS": "sm"}, spec="a"),
             Side("head", "main", "f" * 40, tmp_path, tmp_path / "head", python=str(new),
                  env={"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"}, spec="b")]
    stacks(sides)
    assert [(tmp_path / f"{n}.env").read_text() for n in ("old", "new")] == ["Ring\n", "Tree\n"]
    assert facts(sides[0].stack)["mpi library"] == "MPICH Version: 5.0.2"
    diffs = differences(*sides)
    assert [d.what for d in diffs] == ["revision", "variable NCCL_ALGO", "variable NCCL_PROTO",
                                       "interpreter", "prefix", "mpi library", "mpiexec"]
    assert diffs[0] == Difference("revision", "this checkout", "main (ffffffffff)")
    assert diffs[2] == Difference("variable NCCL_PROTO", "(not set)", "LL")
    assert diffs[4] == Difference("prefix", "env", "(none)")
    assert "UCX_TLS" not in " ".join(d.what for d in diffs)  # set alike (inherited by HEAD)
    assert describe(diffs)[5] == "# differs: mpi library: BASE MPICH Version: 5.0.2 | HEAD Open MPI v5.0.11"
    assert describe([])[0].startswith("# sides: nothing tells them apart")
    html = environment().get_template("sections/ab_gate.html.j2").render(
        ctx=ab_section(GateResult((Path("b"),), Path("h"), Rule(), []), 5, 0.05, sides, diffs).ctx)
    assert "variable NCCL_ALGO</td><td><code>Ring</code></td><td><code>Tree</code>" in html
    assert "Open MPI v5.0.11" in html and "BASE <code>a</code>, HEAD" in html


def test_a_plugin_path_the_side_sets_comes_after_its_code(tmp_path: Path) -> None:
    side = Side("head", "", "", tmp_path / "code", tmp_path, env={"PYTHONPATH": "/plugins"})
    assert side_env(side)["PYTHONPATH"] == os.pathsep.join([str(tmp_path / "code"), "/plugins"])
    assert Side("base", "", "", tmp_path, tmp_path).command("-m", "x") == [sys.executable, "-m", "x"]


def _run(d: Path, recs: list[dict]) -> Path:
    d.mkdir()
    (d / "results.jsonl").write_bytes(b"".join(
        orjson.dumps({"schema_version": SCHEMA_VERSION, "kind": "collective", **r}) + b"\n"
        for r in recs))
    return d


def test_sides_that_measured_other_world_sizes_or_collectives_are_refused(tmp_path: Path) -> None:
    two = _run(tmp_path / "a", [{"collective": "allreduce", "world_size": 2},
                                {"collective": "all_gather", "world_size": 2}])
    same = _run(tmp_path / "b", [{"collective": "all_reduce", "world_size": 2},
                                 {"collective": "all_gather", "world_size": 2}])
    four = _run(tmp_path / "c", [{"collective": "all_reduce", "world_size": 4},
                                 {"collective": "all_gather", "world_size": 4}])
    fewer = _run(tmp_path / "d", [{"collective": "all_reduce", "world_size": 2}])
    assert incomparable({"BASE": two, "HEAD": same}) is None  # allreduce is all_reduce
    assert incomparable({"BASE": two, "HEAD": four}).startswith(
        "BASE and HEAD measured other world sizes ([2] vs [4]): their keys cannot be compared")
    assert "other collectives ([all_gather, all_reduce] vs [all_reduce])" in incomparable(
        {"BASE": two, "HEAD": fewer})


def test_canaries_of_sides_on_their_own_stacks_are_matched_on_their_usual_ratio(
        tmp_path: Path) -> None:
    """Open MPI's canary 3x MPICH's in every round is the stack, not the machine: only the round
    whose ratio departs from the usual one is set aside (without --own stacks: all of them)."""
    from bench.gate.matched import mismatched, own_stacks
    from bench.store.records import write_meta

    base = {r: 265.0 for r in range(1, 6)}
    head = {1: 800.0, 2: 790.0, 3: 2400.0, 4: 810.0, 5: 805.0}
    assert [m.round for m in mismatched(base, head)] == [1, 2, 3, 4, 5]
    assert [m.round for m in mismatched(base, head, own_stacks=True)] == [3]
    for name, py in (("a", "/x/python"), ("b", "/y/python"), ("c", "/x/python")):
        write_meta(tmp_path / name, {"schema_version": SCHEMA_VERSION,
                                      "ab": {"env": {}, "python": py, "prefix": []}})
    assert own_stacks(tmp_path / "a", tmp_path / "b") and not own_stacks(tmp_path / "a", tmp_path / "c")


def test_rounds_set_aside_on_the_usual_ratio_are_those_the_decision_sets_aside(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HEAD's stack makes its canary 3x BASE's, except in round 1: the usual ratio moves as rounds
    come in (round 2 makes both rounds depart from it), and ab runs until the rounds matched on the
    final usual ratio are enough - the rounds :func:`compare_dirs` would then set aside."""
    import bench.gate.ab as ab
    from bench.gate.matched import mismatched

    ratio = {1: 1.0}
    monkeypatch.setattr(ab, "run_once", lambda side, sc, rnd, d, guard=None: 1.0)
    monkeypatch.setattr(ab, "speed", lambda run: 100.0 * (
        ratio.get(int(run.name.split("-")[1]), 3.0) if run.name.startswith("head") else 1.0))
    sides = [Side("base", "", "", tmp_path, tmp_path / "base"),
             Side("head", "", "", tmp_path, tmp_path / "head", python="/other/python")]
    said: list[str] = []
    aside = ab.run_rounds(sides, tmp_path / "sc.yaml", 3, tmp_path / "rounds", said.append,
                          extra=5, checked=True)
    assert aside == [1] and len(sides[0].seconds) == 4
    canaries = [{r: 100.0 * (ratio.get(r, 3.0) if s == "head" else 1.0) for r in range(1, 5)}
                for s in ("base", "head")]
    assert [m.round for m in mismatched(*canaries, own_stacks=True)] == aside
