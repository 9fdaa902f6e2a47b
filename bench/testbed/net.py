"""Make and remove a testbed's namespaces, links and pacing (``ip`` and ``tc``, as root; the layout:
docs/testbed.md). A veth's host end paces what the host sends, its switch end what it receives."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from bench.testbed import cpu
from bench.testbed.spec import IFACE, STATE_ROOT, Pace, Testbed, TestbedError

NETNS_ETC = Path("/etc/netns")
NEEDS = ("ip", "tc", "nsenter", "unshare", "mount", "umount")


def missing() -> str:
    """Why a testbed cannot be made here (one line), or ''."""
    if os.geteuid() != 0:
        return "the testbed needs root (network namespaces, bridges, tc)"
    lack = [t for t in NEEDS if shutil.which(t) is None]
    if lack:
        return f"the testbed needs {', '.join(lack)} (iproute2, util-linux)"
    name = f"cbtb-probe{os.getpid()}"  # one per process: testbeds may be made side by side
    probe = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if probe.returncode:
        return f"cannot make a network namespace: {probe.stderr.strip() or probe.returncode}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    uts = subprocess.run(["unshare", "--uts", "true"], capture_output=True, text=True)
    if uts.returncode:
        return f"cannot make a UTS namespace: {uts.stderr.strip() or uts.returncode}"
    return ""


def _run(cmd: list[str], failed: str = "") -> None:
    """Run ``cmd``; TestbedError with its stderr when it fails (``failed``: what that means)."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        what = failed or f"`{' '.join(cmd)}` failed"
        raise TestbedError(f"testbed: {what}: {r.stderr.strip()}")


def _ip(*args: str, ns: str | None = None) -> None:
    _run(["ip", *(["-n", ns] if ns else []), *args])


def _tbf(dev: str, ns: str, rate: float | None) -> None:
    if rate is None:
        return
    burst = max(32 * 1024, int(rate / 250))  # a tick's worth at HZ=250, and at least 32 KiB
    _run(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate",
          f"{int(rate * 8)}bit", "burst", str(burst), "latency", "200ms"])


def veths(tb: Testbed, i: int) -> tuple[str, str]:
    """Host end (``eth0`` in every host) and switch end of host i's link."""
    return IFACE, f"v{tb.tag}{i}s"


def up(tb: Testbed) -> None:
    """Make the testbed (removing a stale one of the same tag first)."""
    why = missing()
    if why:
        raise TestbedError(f"testbed: {why}")
    down(tb.tag)
    try:
        _make(tb)
    except BaseException:
        down(tb.tag)
        raise


def _make(tb: Testbed) -> None:
    tb.state.mkdir(parents=True, exist_ok=True)
    (tb.state / "uts").mkdir(exist_ok=True)
    (tb.state / "spec.json").write_text(json.dumps(asdict(tb)))
    sw = tb.switch_netns
    _ip("netns", "add", sw)
    _ip("link", "set", "lo", "up", ns=sw)
    _ip("link", "add", "br0", "type", "bridge", ns=sw)
    _ip("link", "set", "br0", "up", ns=sw)
    hosts = "127.0.0.1 localhost\n::1 localhost\n" + "".join(
        f"{tb.address(i)} {tb.name(i)}\n" for i in range(tb.hosts))
    for i in range(tb.hosts):
        ns, (h, s) = tb.netns(i), veths(tb, i)
        _ip("netns", "add", ns)
        _ip("link", "add", h, "netns", ns, "type", "veth", "peer", "name", s, "netns", sw)
        _ip("link", "set", s, "master", "br0", ns=sw)
        _ip("link", "set", s, "up", ns=sw)
        _ip("link", "set", "lo", "up", ns=ns)
        _ip("addr", "add", f"{tb.address(i)}/{tb.prefixlen}", "dev", h, ns=ns)
        _ip("link", "set", h, "up", ns=ns)
        pace: Pace = tb.pace_of(i)
        _tbf(h, ns, pace.send)
        _tbf(s, sw, pace.recv)
        etc = NETNS_ETC / ns
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "hosts").write_text(hosts)
        (etc / "hostname").write_text(tb.name(i) + "\n")
        if i in dict(tb.cpu):
            cpu.limit(tb, i, dict(tb.cpu)[i])
        uts = tb.state / "uts" / tb.name(i)
        uts.touch()
        _run(["unshare", f"--uts={uts}", "hostname", tb.name(i)],
             f"cannot make host {tb.name(i)}'s UTS namespace")


def load(tag: str = "tb") -> Testbed:
    """The testbed ``tag`` that is up; TestbedError when none is."""
    f = STATE_ROOT / tag / "spec.json"
    if not f.exists():
        raise TestbedError(f"testbed {tag!r} is not up (commbench testbed up)")
    d = json.loads(f.read_text())
    d["default"] = Pace(**d["default"])
    d["pace"] = tuple((i, Pace(**p)) for i, p in d["pace"])
    d["cpu"] = tuple((i, c) for i, c in d["cpu"])
    return Testbed(**d)


def namespaces(tag: str) -> list[str]:
    """The network namespaces of testbed ``tag`` that exist."""
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    names = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(f"cbtb-{tag}-")]


def pids(tag: str) -> list[int]:
    """Processes running in any host of testbed ``tag``."""
    out: list[int] = []
    for ns in namespaces(tag):
        r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        out += [int(x) for x in r.stdout.split()]
    return sorted(set(out))


def down(tag: str = "tb", grace_s: float = 2.0) -> list[int]:
    """Remove testbed ``tag``: its processes (TERM, then KILL after ``grace_s``), namespaces,
    hostname files and state. Returns the processes it had to stop."""
    left = pids(tag)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids(tag):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        end = time.monotonic() + grace_s
        while pids(tag) and time.monotonic() < end:
            time.sleep(0.05)
    for ns in namespaces(tag):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(NETNS_ETC / ns, ignore_errors=True)
    cpu.remove(tag)
    state = STATE_ROOT / tag
    for uts in (state / "uts").glob("*") if state.exists() else ():
        subprocess.run(["umount", str(uts)], capture_output=True)
    shutil.rmtree(state, ignore_errors=True)
    return left
