"""``commbench import FORMAT TRACE... --out SCENARIO.yaml``: a job's traces as a replay scenario."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.argtypes import UsageError
from bench.replay.calls import TraceError
from bench.replay.formats import FORMATS


def import_trace(fmt: str, files: Sequence[Path], out: Path | None) -> int:
    """Read ``files`` with ``fmt``, write the scenario; print its path. Exit 2 (one line naming
    the file and the event) on a bad or truncated trace."""
    from bench.replay.build import scenario_of, write

    out = out or Path("runs") / f"{dt.datetime.now():%Y%m%d-%H%M%S}-{fmt}.yaml"
    if out.is_dir():
        out = out / "replay.yaml"
    if out.exists():
        raise UsageError(f"{out} exists; choose another --out", "import")
    try:
        read = FORMATS.get(fmt).read(files)
        sc = scenario_of(read, fmt, files, out.stem)
    except TraceError as e:
        raise UsageError(str(e), "import") from None
    try:
        write(sc, out)
    except OSError as e:
        raise UsageError(f"writing {out}: {e.strerror or e}", "import") from None
    for line in read.notes:
        print(f"commbench: import: {line}", file=sys.stderr)
    groups = len({tuple(c.group) for c in sc.calls})
    print(f"# {len(sc.calls)} calls of one step on {groups} groups of a {sc.world_size}-rank job "
          f"from {len(files)} file{'s' if len(files) > 1 else ''}", file=sys.stderr)
    print(out)
    return 0
