"""What rank 0 prints while a job measures (``commbench run --format``): a table per collective,
world size and transport in commbench's or nccl-tests' shape, at most one line per case, and at
the job's end one line naming the ranks that were consistently late."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from bench.collective import ncclfmt, table
from bench.measure import floors, lateness

Head = tuple[str, int, int, str]  # collective, world size, ranks per node, transport


class Table(Protocol):
    def key(self, head: Head) -> tuple[Any, ...]:
        """What opens a new table when it changes."""
    def banner(self, head: Head, oversubscribed: bool, style: str) -> str: ...
    def rows(self, records: Sequence[Mapping[str, Any]]) -> list[str]: ...
    def footer(self, records: Sequence[Mapping[str, Any]]) -> str | None: ...


class CommbenchTable:
    """commbench's own: a table per job (world size, ranks per node, transport), one row per
    record with its collective, its statistic and spread."""

    def key(self, head: Head) -> tuple[Any, ...]:
        return head[1:]

    def banner(self, head: Head, oversubscribed: bool, style: str) -> str:
        return table.banner(*head[1:], oversubscribed, style)

    def rows(self, records: Sequence[Mapping[str, Any]]) -> list[str]:
        return [table.row(r) for r in records]

    def footer(self, records: Sequence[Mapping[str, Any]]) -> str | None:
        return None


class NcclTestsTable:
    """nccl-tests': a table per collective, one row per size, out of place and in place side by
    side, and its footer."""

    def key(self, head: Head) -> tuple[Any, ...]:
        return head

    def banner(self, head: Head, oversubscribed: bool, style: str) -> str:
        collective, world, rpn, transport = head
        note = "  [ranks outnumber cores: oversubscribed, expect noise]" if oversubscribed else ""
        return (f"# commbench {collective}  world_size={world}  ranks_per_node={rpn}  "
                f"transport={transport}{note}\n# nccl-tests' table: time = mean over the timed "
                f"iterations of the slowest rank's time\n{ncclfmt.header()}")

    def rows(self, records: Sequence[Mapping[str, Any]]) -> list[str]:
        line = ncclfmt.row(records)
        return [line] if line else []

    def footer(self, records: Sequence[Mapping[str, Any]]) -> str | None:
        return ncclfmt.footer(records)


TABLES: dict[str, Table] = {"commbench": CommbenchTable(), "nccl-tests": NcclTestsTable()}
DEFAULT = "commbench"


@dataclass
class Console:
    """Rank 0's printing for one job (``enabled`` False on the other ranks)."""

    out: TextIO
    fmt: str = DEFAULT
    style: str = "commbench"
    enabled: bool = True
    _key: tuple[Any, ...] | None = None
    _table: list[Mapping[str, Any]] = field(default_factory=list)  # the open table's records
    _job: list[Mapping[str, Any]] = field(default_factory=list)  # every record of the job

    def say(self, line: str) -> None:
        if self.enabled:
            print(line, file=self.out, flush=True)

    def head(self, head: Head, oversubscribed: bool) -> None:
        """Open the table of ``head`` unless it is the open one."""
        if TABLES[self.fmt].key(head) == self._key:
            return
        self._close_table()
        self._key = TABLES[self.fmt].key(head)
        self.say(TABLES[self.fmt].banner(head, oversubscribed, self.style))

    def case(self, records: Sequence[Mapping[str, Any]]) -> None:
        """One measured group's records: its rows, and any case below its floor."""
        self._table += records
        self._job += records
        for line in TABLES[self.fmt].rows(records):
            self.say(line)
        for rec in records:
            if rec.get("status") == floors.BELOW:
                self.say(f"# BELOW FLOOR: {floors.line(rec)}")

    def close(self) -> None:
        """The job's end: the open table's footer, and the late ranks in one line."""
        self._close_table()
        if line := lateness.line(lateness.summarize(self._job)):
            self.say(f"# note: {line}")
        self._job = []

    def _close_table(self) -> None:
        if self._key is not None and (foot := TABLES[self.fmt].footer(self._table)):
            self.say(foot)
        self._key, self._table = None, []
