"""Log lines as people paste them (launcher prefixes, colour codes, Markdown fences and quotes,
eaten ``#``, elided rows), cleaned and classified, keeping the file's line numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from bench.store.importers import ParseError

# One launcher or quoting prefix each; removed repeatedly (``[1,0]<stdout>:  0: ...``).
_PREFIXES = (
    re.compile(r"^\s*[0-9]{1,6}:\s"),  # srun --label: "  0: " (the rank, right-aligned)
    re.compile(r"^\s*\[[0-9]+,[0-9]+\]<std(?:out|err)>:\s?"),  # mpirun --tag-output
    re.compile(r"^\s*>\s?"),  # a Markdown / e-mail quote
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b")
_FENCE = re.compile(r"^(?:```|~~~)")
_ELISION = re.compile(r"^[\[(<]?\s*(?:\.\s*){2,}|^[\[(<]?\s*…")
NUMBER = re.compile(r"^[0-9]+$")  # a row's first token (sizes are plain decimal integers)
MAX_LINE = 1000  # longer lines are no table's (and would slow the patterns down): noise


@dataclass(frozen=True, slots=True)
class Line:
    """One cleaned line: ``kind`` is ``blank``, ``fence``, ``elision`` (``...``), ``long`` or
    ``text``; ``body`` is ``text`` without its leading ``#`` marks."""

    n: int  # 1-based line number in the file
    text: str
    hashed: bool  # began with '#' (a comment of the tool, when the paste kept it)
    body: str
    kind: str

    @property
    def tokens(self) -> list[str]:
        return self.body.split()

    @property
    def is_row(self) -> bool:
        """Looks like a table row: starts with a byte count."""
        toks = self.tokens
        return self.kind == "text" and not self.hashed and bool(toks) and bool(NUMBER.match(toks[0]))

    def quote(self, width: int = 60) -> str:
        return repr(self.text[:width])


def clean(raw: str) -> str:
    """``raw`` without colour codes, launcher prefixes, quote marks and surrounding blanks."""
    s = _ANSI.sub("", raw.replace("\r", "")).replace("\x00", "")
    for _ in range(3):
        before = s
        for p in _PREFIXES:
            s = p.sub("", s, count=1)
        if s == before:
            break
    return s.strip()


def classify(n: int, raw: str) -> Line:
    s = clean(raw)
    hashed = s.startswith("#")
    body = s.lstrip("#").strip()
    if not s:
        kind = "blank"
    elif len(s) > MAX_LINE:
        kind, body = "long", body[:MAX_LINE]
    elif _FENCE.match(s):
        kind = "fence"
    elif _ELISION.match(body):
        kind = "elision"
    elif not body:
        kind = "blank"  # a lone "#": the tool's spacer
    else:
        kind = "text"
    return Line(n, s, hashed, body, kind)


def read(text: str) -> Iterator[Line]:
    """Every line of ``text``, numbered as an editor numbers them (split on ``\\n`` only)."""
    for n, raw in enumerate(text.split("\n"), 1):
        yield classify(n, raw)


@dataclass
class Skipped:
    """Non-blank lines an importer did not read (noise, prompts, log lines, cut marks)."""

    count: int = 0
    elided: int = 0
    first: Line | None = None

    def add(self, line: Line) -> None:
        if line.kind == "blank":
            return
        self.count += 1
        self.elided += line.kind == "elision"
        if self.first is None:
            self.first = line

    def no_rows(self, text: str, what: str) -> ParseError:
        """The error of an input without a table: ``what``, and the first line not read."""
        first = self.first
        return ParseError(first.n if first else max(1, text.count("\n")),
                          what + (f" (first unread line: {first.quote()})" if first else ""))

    def meta(self) -> dict[str, int]:
        return {"skipped_lines": self.count, "elided_marks": self.elided}
