"""A host's share of this machine's CPU: a cgroup (``cpu.max``, or ``cpu.cfs_quota_us`` on v1) that
every process started on the host joins, to rehearse a host starved of CPU."""

from __future__ import annotations

import contextlib
from pathlib import Path

from bench.testbed.spec import Testbed, TestbedError

ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 20_000  # short: throttled within each timed iteration; long enough for 0.05 core (1 ms)


def _v2() -> bool:
    return (ROOT / "cgroup.controllers").exists() and not (ROOT / "cpu").is_dir()


def group(tb: Testbed, host: int) -> Path:
    """The cgroup of host ``host`` (whether or not it exists)."""
    name = f"cbtb-{tb.tag}-{host}"
    return ROOT / name if _v2() else ROOT / "cpu" / name


def limit(tb: Testbed, host: int, cores: float) -> None:
    """Make host ``host``'s cgroup, at most ``cores`` cores (0.2: a fifth of one)."""
    g = group(tb, host)
    try:
        g.mkdir(exist_ok=True)
        quota = max(1000, int(cores * PERIOD_US))
        if _v2():
            (g / "cpu.max").write_text(f"{quota} {PERIOD_US}\n")
        else:
            (g / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
            (g / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    except OSError as e:
        raise TestbedError(f"testbed: cannot limit host {tb.name(host)}'s CPU ({g}): "
                           f"{e.strerror}") from None


def join_prefix(tb: Testbed, host: int) -> list[str]:
    """argv prefix that moves the command into host ``host``'s cgroup (none when unlimited)."""
    g = group(tb, host)
    if not (g / "cgroup.procs").exists():
        return []
    return ["sh", "-c", f'echo $$ > {g}/cgroup.procs && exec "$@"', "sh"]


def stat(tb: Testbed, host: int) -> dict[str, int]:
    """Host ``host``'s cgroup's ``cpu.stat`` (``nr_periods``, ``nr_throttled``, ...); {} without."""
    f = group(tb, host) / "cpu.stat"
    if not f.exists():
        return {}
    pairs = (line.split() for line in f.read_text().splitlines())
    return {k: int(v) for k, v in pairs}


def remove(tag: str) -> None:
    """Remove testbed ``tag``'s cgroups (their processes are gone by then)."""
    for parent in (ROOT, ROOT / "cpu"):
        for g in parent.glob(f"cbtb-{tag}-*") if parent.is_dir() else ():
            with contextlib.suppress(OSError):
                g.rmdir()
