"""The multi-host testbed: hosts with their own names and addresses, nothing outside them, links
paced per direction, MPI bytes crossing the links, commbench run across hosts, no process left."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.launch import loopback
from bench.store.records import iter_records
from bench.testbed import cpu, launch, net
from bench.testbed.spec import Pace, Testbed
from tests.conftest import ROOT, clean_env, commbench, mpiexec
from tests.helpers.testbed import running_testbed

pytestmark = pytest.mark.slow  # namespaces, MPI across hosts: the full suite, not make test-fast

TAG = "tt"
RATE = 12_500_000.0  # 100 Mbit/s


@pytest.fixture(scope="module")
def tb() -> Iterator[Testbed]:
    with running_testbed(3, TAG, pace=((1, Pace(send=RATE)), (2, Pace(recv=RATE)))) as bed:
        yield bed


def _on(tb: Testbed, host: int, script: str) -> str:
    r = subprocess.run([*launch.enter(tb, host), "sh", "-c", script], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_each_host_has_its_name_and_address_and_none_is_outside(tb: Testbed) -> None:
    for i in range(tb.hosts):
        assert _on(tb, i, "hostname").strip() == f"{TAG}-{i}"
        addrs = sorted(_on(tb, i, "ip -o -4 addr show | awk '{print $4}'").split())
        assert addrs == sorted(["127.0.0.1/8", f"{tb.address(i)}/24"])
        assert _on(tb, i, f"getent hosts {TAG}-{(i + 1) % tb.hosts}").split()[0] == \
            tb.address((i + 1) % tb.hosts)
    outside = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True).stdout
    assert tb.subnet.rsplit(".", 1)[0] + "." not in outside
    assert f"v{TAG}" not in subprocess.run(["ip", "-o", "link"], capture_output=True,
                                           text=True).stdout


def _rates(tb: Testbed, host: int) -> tuple[str, str]:
    """The tbf rates on host's own end (what it sends) and the switch's end (what it receives)."""
    h, s = net.veths(tb, host)
    mine = subprocess.run(["tc", "-n", tb.netns(host), "qdisc", "show", "dev", h],
                          capture_output=True, text=True).stdout
    theirs = subprocess.run(["tc", "-n", tb.switch_netns, "qdisc", "show", "dev", s],
                            capture_output=True, text=True).stdout
    pick = (lambda q: q.split(" rate ")[1].split()[0] if " tbf " in q else "none")  # noqa: E731
    return pick(mine), pick(theirs)


def test_links_are_paced_per_direction(tb: Testbed) -> None:
    assert _rates(tb, 0) == ("none", "none")
    assert _rates(tb, 1) == ("100Mbit", "none")
    assert _rates(tb, 2) == ("none", "100Mbit")


PINGPONG = r"""
import sys
from mpi4py import MPI
import numpy as np
c = MPI.COMM_WORLD
b = np.zeros(int(sys.argv[1]), np.uint8)
if c.rank == 0:
    c.Send(b, 1); c.Recv(b, 1)
else:
    c.Recv(b, 0); c.Send(b, 0)
sys.stdout.write(f"{c.rank} {MPI.Get_processor_name()}\n"); sys.stdout.flush()
"""


def _tx(tb: Testbed, host: int) -> int:
    h, _ = net.veths(tb, host)
    return int(json.loads(_on(tb, host, f"ip -s -j link show {h}"))[0]["stats64"]["tx"]["bytes"])


@pytest.mark.parametrize("over_tcp", [True, False])
def test_mpi_bytes_cross_the_link_only_over_tcp(tb: Testbed, tmp_path: Path, over_tcp: bool) -> None:
    """With MPICH's libfabric TCP netmod the message crosses host 0's link; with its default
    (UCX) the namespaced hosts look local and the bytes go through shared memory."""
    nbytes = 4 << 20
    script = tmp_path / "pingpong.py"
    script.write_text(PINGPONG)
    env = {**clean_env(), **(launch.MPICH_OVER_TCP if over_tcp else {})}
    before = _tx(tb, 0)
    argv = launch.mpiexec(tb, mpiexec(), 1, [sys.executable, str(script), str(nbytes)], hosts=[0, 2])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(r.stdout.split()) == sorted(["0", f"{TAG}-0", "1", f"{TAG}-2"])
    sent = _tx(tb, 0) - before
    assert (sent >= nbytes) if over_tcp else (sent < nbytes // 2), sent


SCENARIO = """
name: across
collectives: [all_reduce, all_gather]
transports: [mpi]
world_sizes: [4]
ranks_per_node: [2]
sizes: {min: 1KiB, max: 64KiB, factor: 64}
algorithms: [ring, hierarchical, native]
dtypes: [float32]
ops: [sum]
timing: {warmup: 1, min_iters: 2, max_iters: 4, time_budget_ms: 5, repetitions: 1}
check: true
case_timeout_s: 60
"""
KEY = ("collective", "algorithm", "transport", "world_size", "ranks_per_node", "nodes", "nbytes",
       "dtype", "op", "status", "wrong", "bytes_sent_max", "bytes_sent_inter_max")


SS = re.compile(r"^LISTEN\s+\S+\s+\S+\s+\[?([^\]\s]+?)\]?:(\d+)\s.*?users:\((.*)\)\s*$")
USER = re.compile(r'\("([^"]+)",pid=(\d+)')


def _listening(tb: Testbed) -> set[loopback.Listener]:
    """Every listening TCP socket on the testbed's hosts, read with ``ss`` inside each host's
    network namespace (psutil reads sockets of its own namespace only); a socket several
    processes hold (Hydra's, inherited by the ranks it forks) is listed for each of them."""
    out = set()
    for i in range(tb.hosts):
        text = subprocess.run(["ip", "netns", "exec", tb.netns(i), "ss", "-ltnpH"],
                              capture_output=True, text=True).stdout
        for line in text.splitlines():
            m = SS.match(line)
            if m:
                out.update(loopback.Listener(m[1], int(m[2]), int(pid), name)
                           for name, pid in USER.findall(m[3]))
    return out


def _watched(tb: Testbed, argv: list[str], env: dict[str, str]) -> list[loopback.Listener]:
    """Run ``argv`` to its end (exit 0), reading every 50 ms the listening sockets on the
    testbed's hosts."""
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen: set[loopback.Listener] = set()
    while proc.poll() is None:
        seen.update(_listening(tb))
        time.sleep(0.05)
    assert proc.wait() == 0, proc.stderr.read() if proc.stderr else ""
    return sorted(seen)


def test_a_scenario_across_hosts_has_the_keys_of_one_host(tb: Testbed, tmp_path: Path) -> None:
    """The same scenario under mpiexec across two testbed hosts and self-launched on one host
    (two virtual nodes): the same cases, the same exact byte counts, and the multi-host run's
    meta names both hosts. While it runs, every process on the hosts listens only on the
    testbed's addresses or loopback (issue 27), but for Hydra's control port, which Hydra binds
    to every interface of its host (bench.launch.loopback says so; a host here has no other)."""
    (tmp_path / "s.yaml").write_text(SCENARIO)
    bench = [sys.executable, "-m", "bench", "run", str(tmp_path / "s.yaml"), "--no-report",
             "--no-progress"]
    across = launch.mpiexec(tb, mpiexec(), 2, [*bench, "--out", str(tmp_path / "across")],
                            hosts=[0, 1])
    seen = _watched(tb, across, {**clean_env(), **launch.MPICH_OVER_TCP})
    ours = {tb.address(i) for i in range(tb.hosts)}
    assert [s for s in loopback.unexpected(seen, "mpich") if s.address not in ours] == [], seen
    assert {s.address for s in seen if s.name == "python" and s.address in ours} == \
        {tb.address(0), tb.address(1)}, seen  # the ranks' own listeners: on the testbed's link
    one = commbench("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "one"),
                    "--no-report", "--no-progress")
    assert one.returncode == 0, one.stderr[-3000:]
    keys = [sorted(tuple(rec.get(k) for k in KEY) for rec in iter_records(tmp_path / d))
            for d in ("across", "one")]
    assert keys[0] == keys[1] and len(keys[0]) == 2 * 2 * 3
    assert all(k[KEY.index("nodes")] == 2 and k[KEY.index("status")] == "ok" for k in keys[0])
    meta = json.loads((tmp_path / "across" / "meta.json").read_text())
    assert meta["hosts"] == [f"{TAG}-0", f"{TAG}-1"]


def test_down_stops_every_process_and_removes_every_namespace(tmp_path: Path) -> None:
    with running_testbed(2, "td") as bed:
        sleeper = subprocess.Popen([*launch.enter(bed, 1), "sleep", "600"])
        while not net.pids("td"):
            pass
        pid = net.pids("td")
    stopped_ok = sleeper.wait(timeout=30)
    assert stopped_ok != 0
    assert net.namespaces("td") == [] and net.pids("td") == []
    assert all(not os.path.exists(f"/proc/{p}") for p in pid)
    assert not Path("/etc/netns/cbtb-td-0").exists()


def test_a_cpu_limited_host_runs_its_commands_in_its_cgroup() -> None:
    with running_testbed(2, "tc", cpu=((1, 0.25),)) as bed:
        quota = cpu.group(bed, 1)
        assert quota.is_dir() and not cpu.group(bed, 0).exists()
        mine = _on(bed, 1, "cat /proc/self/cgroup")
        assert any(line.endswith("/cbtb-tc-1") for line in mine.splitlines()), mine
        assert not any("cbtb" in line for line in _on(bed, 0, "cat /proc/self/cgroup").split())
    assert not cpu.group(bed, 1).exists()


def test_cli_refuses_bad_input_in_one_line() -> None:
    for argv, cause in ((["testbed", "up", "--hosts", "0"], "--hosts"),
                        (["testbed", "up", "--pace", "x"], "pace 'x'"),
                        (["testbed", "up", "--pace", "1=fast"], "not a link rate"),
                        (["testbed", "up", "--hosts", "2", "--cpu", "5=0.5"], "host 5 is not"),
                        (["testbed", "exec", "--tag", "nope", "nope-0", "true"], "not up")):
        r = commbench(*argv)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (argv, r.stderr)
        assert cause in r.stderr, (argv, r.stderr)
