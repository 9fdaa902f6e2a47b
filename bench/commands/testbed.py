"""``commbench testbed up|down|status|exec|mpiexec``: hosts on this machine to rehearse a bring-up
(:mod:`bench.testbed`). Root only; docs/testbed.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from bench.argtypes import UsageError, positive_int
from bench.commands import register
from bench.testbed import launch, net
from bench.testbed.spec import Pace, Testbed, TestbedError, parse_cpu, parse_pace
from bench.units import parse_rate

ACTIONS = {"up": "make the hosts", "down": "remove them and every process on them",
           "status": "list the hosts", "exec": "run a command on one host",
           "mpiexec": "run an MPI job across the hosts (MPICH over TCP)"}


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=type(p))
    each = {a: sub.add_parser(a, help=h) for a, h in ACTIONS.items()}
    for a in each.values():
        a.add_argument("--tag", default="tb", help="testbed name: hosts are TAG-0, TAG-1, ...")
    up = each["up"]
    up.add_argument("--hosts", type=positive_int, default=4, help="hosts to make (default 4)")
    up.add_argument("--rate", default=None, help="pace of every host's link, both ways (1gbit)")
    up.add_argument("--pace", action="append", default=[],
                    help="one host's pace, HOST=RATE[:send|:recv] (repeatable)")
    up.add_argument("--cpu", action="append", default=[],
                    help="one host's CPU, HOST=CORES: at most CORES cores (2=0.25; repeatable)")
    each["exec"].add_argument("host", help="host name (tb-1) or index (1)")
    each["exec"].add_argument("command", nargs=argparse.REMAINDER, help="the command")
    each["mpiexec"].add_argument("--ppn", type=positive_int, default=1, help="ranks per host")
    each["mpiexec"].add_argument("command", nargs=argparse.REMAINDER, help="the command")


def _up(args: argparse.Namespace) -> int:
    rate = parse_rate(args.rate) if args.rate else None
    tb = Testbed(args.hosts, args.tag, default=Pace(rate, rate),
                 pace=tuple(parse_pace(x) for x in args.pace),
                 cpu=tuple(parse_cpu(x) for x in args.cpu))
    net.up(tb)
    return _status(args)


def _status(args: argparse.Namespace) -> int:
    try:
        tb = net.load(args.tag)
    except TestbedError:
        print(f"# testbed {args.tag!r}: not up")
        return 0
    for i in range(tb.hosts):
        pace = tb.pace_of(i)
        show = [f"{k} {v * 8 / 1e6:g} Mbit/s" for k, v in (("send", pace.send), ("recv", pace.recv))
                if v]
        cores = dict(tb.cpu).get(i)
        show += [f"at most {cores:g} cores"] if cores else []
        print(f"{tb.name(i)}\t{tb.address(i)}\t{', '.join(show) or 'unpaced'}")
    print(f"# {len(net.pids(tb.tag))} processes on its hosts; Hydra launcher: {launch.launcher(tb)}")
    return 0


def _down(args: argparse.Namespace) -> int:
    stopped = net.down(args.tag)
    print(f"# testbed {args.tag!r} removed; {len(stopped)} processes stopped")
    return 0


def _exec(args: argparse.Namespace) -> int:
    tb = net.load(args.tag)
    names = tb.names()
    i = names.index(args.host) if args.host in names else int(args.host) \
        if args.host.isdigit() else -1
    return subprocess.call([*launch.enter(tb, i), *args.command])


def _mpiexec(args: argparse.Namespace) -> int:
    tb = net.load(args.tag)
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec"
    argv = launch.mpiexec(tb, mpiexec, args.ppn, args.command)
    return subprocess.call(argv, env={**os.environ, **launch.MPICH_OVER_TCP})


HANDLERS = {"up": _up, "down": _down, "status": _status, "exec": _exec, "mpiexec": _mpiexec}


def handle(args: argparse.Namespace) -> int:
    try:
        if args.action in ("exec", "mpiexec") and not args.command:
            raise TestbedError(f"testbed: {args.action} needs a command")
        return HANDLERS[args.action](args)
    except (TestbedError, ValueError) as e:
        raise UsageError(str(e).removeprefix("testbed: "), "testbed") from None


register("testbed", "hosts on this machine (network namespaces) to rehearse a bring-up", configure,
         handle, example="status")
