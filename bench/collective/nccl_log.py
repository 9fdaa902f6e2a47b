"""What NCCL chose for a call (algorithm, protocol, channels), read from NCCL's own debug log
(``NCCL_DEBUG=INFO``, subsystem ``TUNING``) into the record's ``nccl_chosen``. Two spellings are in use:

- NCCL 2.24 and later: ``NCCL INFO AllReduce: 4096 Bytes -> Algo TREE proto LL
  channel{Lo..Hi}={0..1}``;
- earlier: ``NCCL INFO 8589934592 Bytes -> Algo 1 proto 2 time 86069.968750`` (enum numbers, an
  estimated time in us, and often no call name).

Tested on log text pasted in public issues (tests/data/nccl/)."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# NCCL's enums in their numeric order (src/include/nccl_common.h): the numbers older NCCL logs
ALGORITHMS = ("TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT")
PROTOCOLS = ("LL", "LL128", "SIMPLE")

_CHOICE = re.compile(
    r"NCCL INFO (?:(?P<func>[A-Za-z]+):\s*)?(?P<bytes>\d+) Bytes -> Algo (?P<algo>\w+) "
    r"proto (?P<proto>\w+)(?: time (?P<time>[\d.]+))?"
    r"(?: channel\{Lo\.\.Hi\}=\{(?P<lo>\d+)\.\.(?P<hi>\d+)\})?")
_ENV = re.compile(r"NCCL INFO (?P<key>NCCL_[A-Z0-9_]+) set by environment to (?P<value>\S+)")
_CHANNELS = re.compile(r"NCCL INFO (?P<coll>\d+) coll channels, (?P<collnet>\d+) collnet channels, "
                       r"(?P<nvls>\d+) nvls channels, (?P<p2p>\d+) p2p channels")


def _named(token: str, names: tuple[str, ...]) -> str:
    if token.isdigit():
        i = int(token)
        return names[i] if i < len(names) else f"#{i}"
    return token.upper()


@dataclass(frozen=True)
class Choice:
    func: str | None  # "AllReduce"; None where the line names no call (older NCCL)
    nbytes: int  # the size NCCL tuned for
    algorithm: str  # "RING", "TREE", "NVLS", ...
    protocol: str  # "LL", "LL128", "SIMPLE"
    channels: int | None  # channel{Lo..Hi}: Hi - Lo + 1 (newer NCCL)
    estimate_us: float | None  # NCCL's own estimate of the call's time (older NCCL)


@dataclass(frozen=True)
class Log:
    choices: tuple[Choice, ...] = ()
    settings: Mapping[str, str] = field(default_factory=dict)  # "X set by environment to Y"
    channels: Mapping[str, int] = field(default_factory=dict)  # {"coll": 16, "nvls": 16, ...}


def parse(text: str) -> Log:
    """Every choice, setting and channel count in ``text`` (any prefix before ``NCCL INFO``:
    host:pid:tid, mpirun's ``[1,0]<stdout>:``, ...)."""
    choices, settings, channels = [], {}, {}
    for line in text.splitlines():
        if m := _CHOICE.search(line):
            lo, hi, t = m.group("lo"), m.group("hi"), m.group("time")
            choices.append(Choice(m.group("func"), int(m.group("bytes")),
                                  _named(m.group("algo"), ALGORITHMS),
                                  _named(m.group("proto"), PROTOCOLS),
                                  int(hi) - int(lo) + 1 if lo is not None else None,
                                  float(t) if t is not None else None))
        elif m := _ENV.search(line):
            settings[m.group("key")] = m.group("value")
        elif m := _CHANNELS.search(line):
            channels = {k: int(v) for k, v in m.groupdict().items()}
    return Log(tuple(choices), settings, channels)


def chosen(log: Log, func: str) -> list[dict[str, Any]]:
    """The distinct choices ``log`` holds for calls of ``func`` (NCCL's name, ``AllReduce``), in
    order; lines that name no call count as ``func``'s (the same choice at another estimate is
    the same choice)."""
    out: list[dict[str, Any]] = []
    for c in log.choices:
        if c.func in (None, func):
            rec: dict[str, Any] = {"algorithm": c.algorithm, "protocol": c.protocol,
                                   "nbytes": c.nbytes}
            if c.channels is not None:
                rec["channels"] = c.channels
            if rec not in out:
                out.append(rec)
    return out


def debug_env(environ: Mapping[str, str], directory: Path, tag: str) -> dict[str, str]:
    """The settings that make NCCL log its choices into ``directory`` (one file per process),
    less those the environment sets already (the user's win)."""
    wanted = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV,TUNING",
              "NCCL_DEBUG_FILE": str(directory / f"{tag}.%h.%p.log")}
    return {k: v for k, v in wanted.items() if k not in environ}


class RankLog:
    """This process's NCCL debug file, read as it grows (whole lines only)."""

    def __init__(self, path: Path) -> None:
        self.path, self._offset = path, 0
        self.settings: dict[str, str] = {}  # every "set by environment" line so far

    @classmethod
    def of_this_process(cls, environ: Mapping[str, str]) -> RankLog | None:
        """The file ``NCCL_DEBUG_FILE`` names for this process, or None when NCCL logs nothing
        at INFO or logs to the terminal."""
        pattern = environ.get("NCCL_DEBUG_FILE")
        if not pattern or environ.get("NCCL_DEBUG", "").upper() not in ("INFO", "TRACE"):
            return None
        host = socket.gethostname().split(".")[0]  # NCCL's %h: the host name up to its first dot
        return cls(Path(pattern.replace("%h", host).replace("%p", str(os.getpid()))))

    def take(self) -> Log:
        """What NCCL logged since the last call."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return Log()
        end = data.rfind(b"\n") + 1
        self._offset += end
        log = parse(data[:end].decode("utf-8", "replace"))
        self.settings.update(log.settings)
        return log
