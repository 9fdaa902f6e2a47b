"""A self-launched one-host job in a private user and network namespace whose only interface is
``lo``: what its launcher binds to every interface (Hydra's control port, PRRTE's out-of-band
port) is reachable from nothing outside. No privilege is needed where the kernel allows
unprivileged user namespaces; where it refuses, the job runs as before and the run says why in
one line (docs/running.md, "Isolation").

The namespace is entered by the system call (``unshare(2)``) in a small helper process
(``python -m bench.launch.isolate -- COMMAND...``) that maps the user to itself, brings ``lo`` up
(``SIOCSIFFLAGS``), binds an /etc/hosts that names the loopback addresses over the host's (in a
private mount namespace: nothing outside sees it) and then execs the job's command: the helper's
pid is the job's. Every mount (so ``/dev/shm``), CPU affinity and devices are the host's."""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import os
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLONE_NEWUSER = 0x10000000  # <linux/sched.h>
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000  # <linux/mount.h>
# What name lookups of this host's loopback need inside, where no DNS server is reachable: a
# lookup /etc/hosts cannot answer fails there with EAI_AGAIN, and libraries warn (torch's c10d
# logs every store client whose IPv6 loopback address it cannot name).
LOOPBACK_NAMES = ("::1", "::ffff:127.0.0.1")
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # <linux/sockios.h>, <net/if.h>
_IFREQ = "16sH14s"  # struct ifreq: the name, then ifr_flags in the union
ISOLATED = "a private user and network namespace: only lo, reachable from nothing outside"

FLAG_HELP = ("run a self-launched job in this host's network namespace, as before (by default it "
             "runs in a private one, so nothing it listens on is reachable from outside)")


@dataclass(frozen=True)
class Isolation:
    """Whether this run's jobs run in a private network namespace, and why (one line)."""

    isolated: bool
    why: str

    def wrap(self, cmd: Sequence[str]) -> list[str]:
        """``cmd`` started through the helper that enters the namespace (or as it is)."""
        return [sys.executable, "-m", __name__, "--", *cmd] if self.isolated else list(cmd)

    def as_meta(self) -> dict[str, Any]:
        return {"isolated": self.isolated, "why": self.why}

    @property
    def line(self) -> str:
        return f"isolation: {'on' if self.isolated else 'off'} ({self.why})"


def add_flag(p: argparse.ArgumentParser) -> None:
    """``--no-isolate`` on a command that self-launches jobs."""
    p.add_argument("--no-isolate", action="store_true", help=FLAG_HELP)


def decide(wanted: bool = True) -> Isolation:
    """Whether a job started now can enter a private namespace: tried in a helper process, so a
    kernel's refusal (user namespaces off or restricted, a limit of 0) is seen before any job."""
    if not wanted:
        return Isolation(False, "turned off by --no-isolate")
    try:
        res = subprocess.run([sys.executable, "-m", __name__, "--probe"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Isolation(False, f"cannot start the namespace helper ({e}): the job runs unisolated")
    if res.returncode == 0:
        return Isolation(True, ISOLATED)
    why = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    return Isolation(False, f"the kernel refused a private namespace ({why}): the job runs in "
                            "this host's network namespace, its listeners as without isolation")


def enter() -> None:
    """Move this process into a new user, network and mount namespace (the user mapped to
    itself), bring ``lo`` up and give it an /etc/hosts that names the loopback addresses and this
    host (only lo is left to reach it by); OSError naming the step that failed."""
    uid, gid = os.getuid(), os.getgid()  # read before: unmapped ids read as the overflow id
    libc = ctypes.CDLL(None, use_errno=True)
    _call(libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS),
          "unshare(CLONE_NEWUSER|CLONE_NEWNET|CLONE_NEWNS)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
            f.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        got = fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0, b""))
        flags = struct.unpack(_IFREQ, got)[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | IFF_UP, b""))
    _call(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    fd, path = tempfile.mkstemp(prefix="commbench-hosts-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(hosts(Path("/etc/hosts").read_text(encoding="utf-8", errors="replace"),
                          socket.gethostname()))
        _call(libc.mount(path.encode(), b"/etc/hosts", None, MS_BIND, None),
              "mount --bind HOSTS /etc/hosts")
    finally:
        os.unlink(path)  # the mount keeps the file


def hosts(text: str, hostname: str) -> str:
    """``text`` (the host's /etc/hosts) with what it lacks of :data:`LOOPBACK_NAMES` and
    ``hostname`` on 127.0.0.1."""
    known = {w for ln in text.splitlines() for w in ln.split("#", 1)[0].split()}
    more = [f"{a} localhost" for a in LOOPBACK_NAMES if a not in known]
    if hostname and hostname not in known:
        more.append(f"127.0.0.1 {hostname}")
    lines = [*([] if not more else ["# commbench: the job's private namespace reaches only lo"]),
             *more]
    return text + ("" if text.endswith("\n") or not text else "\n") + "".join(f"{ln}\n" for ln in lines)


def _call(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def main(argv: Sequence[str]) -> int:
    """``--probe``: enter, say ok; ``-- COMMAND...``: enter, then exec the command."""
    probe = list(argv[:1]) == ["--probe"]
    cmd = list(argv[1:]) if argv[:1] == ["--"] else []
    if not probe and not cmd:
        print("usage: python -m bench.launch.isolate --probe | -- COMMAND...", file=sys.stderr)
        return 2
    try:
        enter()
    except OSError as e:
        print(f"{e.strerror or e}", file=sys.stderr)
        return 1
    if probe:
        print("ok")
        return 0
    os.execvp(cmd[0], cmd)
    return 1  # not reached: exec replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
