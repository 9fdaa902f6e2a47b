"""nccl-tests' (and rccl-tests') text output read into tests: a new test starts at a line only a
test's start prints once the current one has rows; other lines are counted, not read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bench.store.importers import ParseError
from bench.store.importers.detect import Hint, from_command
from bench.store.importers.lines import Line, Skipped, read

_RANK = re.compile(r"^Rank\s+([0-9]{1,7})\s+(?:Group\s+[0-9]+\s+)?(?:Pid\s+[0-9]+\s+)?on\s+(\S+)"
                   r"\s+device\s+[0-9]+\s+\[[^\]]*\]\s*(.*)$")
_SETTINGS = re.compile(r"warmup iters:\s*([0-9]{1,9})\s+iters:\s*([0-9]{1,9})")
_STARTING = re.compile(r"^Collective test starting:\s*(\S+)")
_BANNER = re.compile(r"\b(NCCL|RCCL) version\s*:?\s*(v?[0-9][\w.+:-]*)")
_TESTS_VERSION = re.compile(r"^(?:nccl|rccl)-tests:?\s+version\s*:?\s*(\S+)", re.I)
_LOG = re.compile(r"\b(?:NCCL|RCCL) (?:INFO|WARN|TRACE|ERROR)\b")
_AVG = re.compile(r"^Avg bus bandwidth\s*:\s*([0-9.eE+-]{1,30})")
_KNOWN = re.compile(r"^(?:Using devices|Out of bounds values|Collective test concluded|nThread)\b")
TOOL_LINE = "the 'Collective test starting' line"
TIME = ("time", "cputime")
WRONG = ("#wrong", "wrong", "error", "errors", "res")
PREFIX = {"size": "size", "bytes": "size", "count": "count", "n": "count", "type": "type",
          "redop": "redop", "op": "redop", "root": "root"}


@dataclass(frozen=True)
class Columns:
    """A column header: prefix columns by name, a (time, algbw, busbw, wrong) block per placement;
    ``modern``: its check column is ``#wrong`` (a count), not the old ``error`` (a deviation)."""

    names: tuple[str, ...]
    at: dict[str, int]
    blocks: tuple[int, ...]  # index of each block's time column
    modern: bool
    line: int

    @classmethod
    def parse(cls, line: Line) -> Columns:
        names = tuple(t.lower() for t in line.tokens)
        bad = ParseError(line.n, f"unrecognised nccl-tests column header: {line.quote(100)}")
        first = next(i for i, c in enumerate(names) if c in TIME)
        at = {PREFIX.get(c, "?"): i for i, c in enumerate(names[:first])}
        if "?" in at or len(at) != first or not {"size", "count", "type"} <= at.keys():
            raise bad
        blocks = tuple(range(first, len(names), 4))
        for b in blocks:
            got = names[b:b + 4]
            if len(got) != 4 or got[0] not in TIME or got[1:3] != ("algbw", "busbw") \
                    or got[3] not in WRONG or len(blocks) > 2:
                raise bad
        return cls(names, at, blocks, names[blocks[0] + 3] in ("#wrong", "wrong"), line.n)


@dataclass
class Test:
    """One test's lines: what it said about itself and its table's rows."""

    start: int
    hints: list[Hint] = field(default_factory=list)
    ranks: dict[int, tuple[str, str]] = field(default_factory=dict)  # rank -> (host, device)
    iters: int | None = None
    warmup: int | None = None
    columns: Columns | None = None
    in_place_only: bool = False
    rows: list[Line] = field(default_factory=list)
    avg_busbw: float | None = None
    closed: bool = False  # past the table's summary lines: numbers now are not its rows


@dataclass
class Scan:
    """The tests read (once :func:`scan` is done, those with rows), the lines skipped, versions."""

    tests: list[Test] = field(default_factory=lambda: [Test(1)])
    skipped: Skipped = field(default_factory=Skipped)
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def cur(self) -> Test:
        return self.tests[-1]

    def start(self, line: Line, force: bool = False) -> Test:
        """A line only a test's start prints: a new test when the current one is done."""
        if self.cur.rows or self.cur.closed or force:
            self.tests.append(Test(line.n))
        return self.cur

    def feed(self, line: Line) -> None:
        if line.kind != "text":
            self.skipped.add(line)
            return
        body, toks = line.body, line.tokens
        if m := _BANNER.search(body):
            self.versions.setdefault(m.group(1).lower(), m.group(2))
            if m.start() == 0:
                return  # NCCL_DEBUG=VERSION's banner; inside a log line it is still noise
        if m := _TESTS_VERSION.match(body):
            self.start(line)
            self.versions.setdefault("tests", m.group(1))
        elif m := _STARTING.match(body):
            test = self.start(line, force=any(h.source == TOOL_LINE for h in self.cur.hints))
            name = re.sub(r"_perf(?:_mpi)?$", "", m.group(1).rsplit("/", 1)[-1])
            test.hints.append(Hint(name, TOOL_LINE, line.n, firm=True))
        elif m := _RANK.match(body):
            self.start(line).ranks[int(m.group(1))] = (m.group(2), m.group(3).strip())
        elif toks[0].lower() in ("size", "bytes") and any(t.lower() in TIME for t in toks):
            self.start(line).columns = Columns.parse(line)
        elif _KNOWN.match(body):
            self.cur.closed |= body.startswith(("Out of bounds", "Collective test concluded"))
            if body.startswith(("nThread", "Using devices")):
                test = self.start(line)
                if m := _SETTINGS.search(body):
                    test.warmup, test.iters = int(m.group(1)), int(m.group(2))
        elif m := _AVG.match(body):
            self.cur.closed = True
            try:
                self.cur.avg_busbw = float(m.group(1))
            except ValueError:
                self.skipped.add(line)
        elif toks[0] == "(B)":
            pass  # the units line under the header
        elif "place" in body and len(toks) <= 3:
            self.start(line).in_place_only = "out-of-place" not in body
        elif line.is_row:
            if self.cur.columns is None or self.cur.closed:
                self.skipped.add(line)  # numbers before any header or after its summary
            else:
                self.cur.rows.append(line)
        elif not _LOG.search(body) and (hint := from_command(body, line.n)):
            self.start(line).hints.append(hint)
        elif not line.hashed:
            self.skipped.add(line)


def scan(text: str) -> Scan:
    s = Scan()
    for line in read(text):
        s.feed(line)
    s.tests = [t for t in s.tests if t.rows]
    return s
