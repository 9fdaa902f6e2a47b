"""Every example output shown in docs/ and the README is produced by a command run here, so none
goes stale. A fenced block of output follows a marker naming how it is checked:

- ``<!-- output: commbench ARGS -->``: the command's stdout, line for line (trailing blanks
  aside). ``python -m tests.test_doc_examples --write`` rewrites these blocks from fresh output.
- ``<!-- output-format: commbench ARGS -->``: a measuring run: every line and column the same,
  except the measured numbers (tokens with a decimal point) and what the drift canary saw.
- ``<!-- output-shape: bring-up verdict -->``: a multi-host testbed run's verdict
  (tests/bringup/test_bringup_testbed.py needs root): each line has the shape the verdict prints.
- ``<!-- excerpt: PATH -->``: another tool's output, literally: lines of the file PATH, in order,
  which ``commbench import`` reads into one record per row and placement.

A block of output with no marker fails :func:`test_every_output_block_has_a_marker`.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env

PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
MARKER = re.compile(r"^<!-- (output|output-format|output-shape|excerpt): (.+?) -->\n```[^\n]*\n(.*?)^```",
                    re.M | re.S)
BLOCK = re.compile(r"^```([^\n]*)\n(.*?)^```", re.M | re.S)
# first lines of a block that is a command or source, not output
COMMAND = re.compile(r"^(\$ |commbench |\.venv|make |python|mpiexec|srun|git |pip |sudo |export |"
                     r"cd |[A-Z_]+=|#!|name:|kind:)")
VERDICT = [re.compile(r"^# bring-up verdict: (ok|NOT ok|not judged \(.+\))$"),
           re.compile(r"^#   (host \S+|link \S+ -- \S+|cluster): (slow by \d+ %|failed) "
                      r"\((\w+(-confirm)?) stage: .+\)$")]


@dataclass(frozen=True)
class Example:
    page: Path
    how: str
    command: str
    shown: str

    @property
    def id(self) -> str:
        return f"{self.page.name}: {self.command}"


def examples() -> list[Example]:
    return [Example(p, m.group(1), m.group(2), m.group(3)) for p in PAGES
            for m in MARKER.finditer(p.read_text(encoding="utf-8"))]


def run(command: str, both: bool = False) -> str:
    """The command's stdout (``both``: stdout and stderr as a terminal shows them)."""
    argv = shlex.split(command)
    assert argv[0] == "commbench", command
    res = subprocess.run([sys.executable, "-m", "bench", *argv[1:]], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT if both else subprocess.PIPE, text=True,
                         env=clean_env(), cwd=ROOT, timeout=600)
    assert res.returncode == 0, (res.stderr or res.stdout)[-2000:]
    return res.stdout


def _lines(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.rstrip("\n").splitlines()]


def _shape(line: str) -> list[str]:
    """A line of a measuring run with its measured numbers and the canary's word masked."""
    line = re.sub(r"; canary: .*$", "; canary: ...", line)
    return ["<number>" if re.fullmatch(r"-?[\d.]+(e[-+]?\d+)?", t) and "." in t else t
            for t in line.split()]


def _run_dir_free(lines: list[str]) -> list[str]:
    """Without the late-rank note (it comes and goes with the machine's load)."""
    return [ln for ln in lines if not ln.startswith("# note: late ranks")]


EXAMPLES = examples()


def test_the_pages_have_their_examples() -> None:
    got = {(e.page.name, e.how) for e in EXAMPLES}
    assert {("training.md", "output"), ("running.md", "output-format"),
            ("bringup.md", "output-shape"), ("results.md", "excerpt")} <= got


def test_every_output_block_has_a_marker() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        marked = {m.start(3) for m in MARKER.finditer(text)}
        for m in BLOCK.finditer(text):
            lang, body = m.group(1).strip(), m.group(2)
            first = body.lstrip("\n").split("\n", 1)[0]
            if lang or not first or COMMAND.match(first) or m.start(2) in marked:
                continue
            assert not first.startswith(("#", " ")), (
                f"{page.name}: a block of output with no <!-- output...: --> marker: {first[:80]}")


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if e.how == "output"], ids=lambda e: e.id)
def test_an_example_is_what_its_command_prints(ex: Example) -> None:
    assert _lines(ex.shown) == _lines(run(ex.command)), (
        f"{ex.page.name}: the output of `{ex.command}` changed: python -m tests.test_doc_examples "
        "--write")


@pytest.mark.mpi
@pytest.mark.parametrize("ex", [e for e in EXAMPLES if e.how == "output-format"],
                         ids=lambda e: e.id)
def test_a_run_example_has_the_format_its_command_prints(ex: Example) -> None:
    got = _run_dir_free(_lines(run(ex.command, both=True)))
    got = got[:-1] if got and not got[-1].startswith("#") else got  # the run directory
    assert [_shape(ln) for ln in _run_dir_free(_lines(ex.shown))] == [_shape(ln) for ln in got]


def test_shape_examples_have_the_verdicts_shape() -> None:
    from bench.bringup.verdict import judge
    from tests.bringup.test_verdict import run as verdict_run

    shaped = [e for e in EXAMPLES if e.how == "output-shape"]
    assert shaped
    for ex in shaped:
        for line in _lines(ex.shown):
            assert any(p.match(line) for p in VERDICT), f"{ex.page.name}: {line}"
    v = judge(verdict_run(host={"h1": 3.0}), 25)  # the code's own lines have that shape too
    for line in [f"# bring-up verdict: {'ok' if v.ok else 'NOT ok'}",
                 *(f"#   {ln}" for ln in v.lines())]:
        assert any(p.match(line) for p in VERDICT), line


# how each tool's excerpt is imported: (tool, flags), records per row
IMPORT = {"all_reduce_perf.txt": (["nccl-tests", "--world-size", "8"], 2),
          "osu_allreduce.txt": (["osu", "--world-size", "2", "--collective", "all_reduce"], 1)}


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if e.how == "excerpt"], ids=lambda e: e.id)
def test_an_excerpt_is_the_file_it_names_and_imports(ex: Example, tmp_path: Path) -> None:
    from bench.store.records import iter_records

    shown, source = _lines(ex.shown), _lines((ROOT / ex.command).read_text(encoding="utf-8"))
    at = source.index(shown[0])
    assert source[at:at + len(shown)] == shown, f"{ex.page.name}: not a slice of {ex.command}"
    (tmp_path / "log.txt").write_text(ex.shown, encoding="utf-8")
    (tool, *flags), per_row = IMPORT[Path(ex.command).name]
    res = subprocess.run([sys.executable, "-m", "bench", "import", tool, str(tmp_path / "log.txt"),
                          *flags, "--out", str(tmp_path / "run")], capture_output=True,
                         text=True, env=clean_env(), cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [ln for ln in shown if ln and ln.split()[0].isdigit()]
    assert len(list(iter_records(tmp_path / "run"))) == per_row * len(rows)


def write() -> None:
    """Rewrite every ``output`` block from its command's fresh output."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")

        def fresh(m: re.Match[str]) -> str:
            if m.group(1) != "output":
                return m.group(0)
            head = m.group(0)[:m.start(3) - m.start(0)]
            return f"{head}{run(m.group(2))}```"

        new = MARKER.sub(fresh, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_doc_examples --write")
    write()
