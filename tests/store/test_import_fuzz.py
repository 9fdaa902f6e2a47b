"""Fuzzing both importers: any input gives records or one :class:`ParseError` line.

Inputs: random text, binary bytes (decoded as the command reads files), lines of the tools' own
words in random order, and the fixture corpus mutated (lines cut, doubled, moved, truncated;
tokens replaced by hostile ones: huge, non-finite, non-ASCII digits). Never a traceback; a hang is
caught by the file's timeout (a fail-safe, not a measure: no example is held to a clock, see
tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cli import main
from bench.store.importers import Imported, Options, ParseError, nccl_tests, osu
from kernels.collective import names

CORPUS = Path(__file__).parents[1] / "data" / "importers"
OLD = Path(__file__).parents[1] / "data" / "import"
TEXTS = {p.name: p.read_text(errors="replace") for d in (CORPUS, OLD) for p in sorted(d.iterdir())
         if p.suffix != ".md"}
NCCL_TEXTS = [t for n, t in TEXTS.items() if not n.startswith("osu_")]
OSU_TEXTS = [t for n, t in TEXTS.items() if n.startswith("osu_")]
PARSERS = [nccl_tests.parse, osu.parse]
NAMES = set(names())  # loads the collective registry now, not inside a timed example
TOKENS = ["0", "-1", "8", "1024", "4096", "12.51", "0.00", "1e+06", "float", "half", "int8", "sum",
          "none", "N/A", "nan", "inf", "-3.5", "1e999", "0e400", "9" * 40, "١٢٣", "²", "#wrong",
          "error", "time", "cputime", "algbw", "busbw", "size", "count", "type", "redop", "root",
          "(B)", "Rank", "Pid", "on", "device", "[0]", "OSU", "MPI-NCCL", "Latency", "Test",
          "Size", "Avg", "Latency(us)", "Iterations", "Validation", "Pass", "Fail", "...", "```",
          "#", "Collective test starting:", "all_gather_perf", "osu_allgather", "NCCL version",
          "nThread", "in-place", "out-of-place", "0:", "[1,0]<stdout>:", "\x00", "\t", "{", "}"]
FUZZ = settings(max_examples=150,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
pytestmark = pytest.mark.timeout(120)

token_lines = st.lists(st.sampled_from(TOKENS), max_size=16).map(" ".join)
options = st.builds(Options, world_size=st.sampled_from([None, 1, 2, 4, 8]),
                    ranks_per_node=st.sampled_from([None, 1, 4]),
                    collective=st.sampled_from([None, None, "allgather", "all_reduce", "bogus"]),
                    filename=st.sampled_from([None, "x.log", "alltoall.txt", "osu_bcast.log"]))


@st.composite
def mutated(draw: st.DrawFn, texts: list[str]) -> str:
    lines = draw(st.sampled_from(texts)).split("\n")
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["cut", "dup", "insert", "token", "truncate", "move", "chars",
                                   "tail"]))
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if not lines:
            lines = [""]
        if op == "cut":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "insert":
            lines.insert(i, draw(token_lines | st.text(max_size=80)))
        elif op == "token":
            toks = lines[i].split() or [""]
            toks[draw(st.integers(0, len(toks) - 1))] = draw(st.sampled_from(TOKENS))
            lines[i] = " ".join(toks)
        elif op == "truncate":
            lines[i] = lines[i][:draw(st.integers(0, len(lines[i])))]
        elif op == "move":
            lines.insert(draw(st.integers(0, len(lines))), lines.pop(i))
        elif op == "chars":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(st.text(max_size=8)) + lines[i][at:]
        else:
            lines = lines[:i]
    return "\n".join(lines)


def check(parse: Any, text: str, opts: Options) -> None:
    """The property: records that make sense, or one ParseError line; nothing else escapes."""
    try:
        res = parse(text, opts)
    except ParseError as e:
        assert "\n" not in e.where("f.txt") and e.line >= 0 and str(e)
        return
    assert isinstance(res, Imported) and res.records and res.skipped >= 0
    for r in res.records:
        assert r["collective"] in NAMES and r["status"] in ("ok", "wrong")
        assert math.isfinite(r["busbw_gbps"]) and r["time_us_median"] >= 0
    assert all("\n" not in w for w in res.warnings)


@FUZZ
@given(parse=st.sampled_from(PARSERS), text=st.text(max_size=2000), opts=options)
def test_random_text(parse: Any, text: str, opts: Options) -> None:
    check(parse, text, opts)


@FUZZ
@given(parse=st.sampled_from(PARSERS), data=st.binary(max_size=2000), opts=options)
def test_binary_bytes(parse: Any, data: bytes, opts: Options) -> None:
    check(parse, data.decode("utf-8", errors="replace"), opts)  # as the command reads files
    check(parse, data.decode("latin-1"), opts)


@FUZZ
@given(parse=st.sampled_from(PARSERS), lines=st.lists(token_lines, max_size=40), opts=options)
def test_lines_of_the_tools_words(parse: Any, lines: list[str], opts: Options) -> None:
    check(parse, "\n".join(lines), opts)


@settings(FUZZ, max_examples=300)
@given(text=mutated(NCCL_TEXTS), opts=options)
def test_mutated_nccl_tests_fixtures(text: str, opts: Options) -> None:
    check(nccl_tests.parse, text, opts)


@settings(FUZZ, max_examples=200)
@given(text=mutated(OSU_TEXTS), opts=options)
def test_mutated_osu_fixtures(text: str, opts: Options) -> None:
    check(osu.parse, text, opts)


@settings(FUZZ, max_examples=30)
@given(tool=st.sampled_from(["nccl-tests", "osu"]),
       text=mutated(NCCL_TEXTS + OSU_TEXTS) | st.binary(max_size=500).map(lambda b: b.decode("latin-1")),
       extra=st.sampled_from([(), ("--world-size", "4"), ("--collective", "allgather")]))
def test_command_exits_0_or_2_with_one_line(tmp_path_factory: pytest.TempPathFactory, tool: str,
                                            text: str, extra: tuple[str, ...]) -> None:
    d = tmp_path_factory.mktemp("fuzz")
    (d / "in.log").write_text(text, encoding="utf-8", errors="replace")
    argv = ["import", tool, str(d / "in.log"), "--out", str(d / "run"), *extra]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)  # the handler, and the one path from its error to the line and exit 2
    lines = err.getvalue().splitlines()
    if rc == 2:
        assert len(lines) == 1 and lines[0].startswith(f"commbench: import: {d / 'in.log'}")
    else:
        assert rc == 0 and (d / "run" / "results.jsonl").exists()
