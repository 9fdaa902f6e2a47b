"""Run commands on a testbed's hosts: a prefix that enters a host, Hydra's launcher script (what ssh
would be on a cluster), mpiexec on the first host (docs/testbed.md#mpi-across-the-hosts)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from bench.testbed import cpu
from bench.testbed.spec import IFACE, Testbed, TestbedError

# MPICH over the testbed's links: libfabric's TCP provider (not UCX, not shared memory), its
# listeners on the testbed's interface only (issue 27: a multi-host job listens where it was told)
MPICH_OVER_TCP = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp", "MPIR_CVAR_NOLOCAL": "1",
                  "FI_TCP_IFACE": IFACE}


def enter(tb: Testbed, host: int) -> list[str]:
    """The argv prefix that runs a command on ``host``: its network namespace and hostname, and
    a mount namespace whose /etc/hosts names the testbed's hosts. /sys stays the machine's (as
    ``ip netns exec``, which remounts it, would not): slurmd and a CPU-limited host's cgroup
    need the machine's cgroup hierarchy there."""
    if not 0 <= host < tb.hosts:
        raise TestbedError(f"testbed: host {host} is not one of 0..{tb.hosts - 1}")
    uts = f"--uts={tb.state / 'uts' / tb.name(host)}"
    return [*cpu.join_prefix(tb, host), "nsenter", f"--net=/run/netns/{tb.netns(host)}", uts, "--",
            "unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"', f"/etc/netns/{tb.netns(host)}/hosts"]


def launcher(tb: Testbed) -> Path:
    """Hydra's ``-launcher-exec`` for this testbed (written once into its state directory)."""
    path = tb.state / "launcher"
    if not path.exists():
        cases = "".join(
            f"  {tb.name(i)}) set -- {shlex.join(enter(tb, i))} \"$SHELL_\" -c \"$*\" ;;\n"
            for i in range(tb.hosts))
        path.write_text(
            "#!/bin/sh\n# Hydra: <this> [-x ...] HOST COMMAND...  (what ssh would get)\n"
            'while [ "${1#-}" != "$1" ]; do shift; done\n'
            'host=$1; shift\nSHELL_=/bin/sh\ncase "$host" in\n' + cases +
            '  *) echo "testbed: no host $host" >&2; exit 255 ;;\nesac\nexec "$@"\n')
        path.chmod(0o755)
    return path


def mpiexec(tb: Testbed, mpiexec_path: str, ranks_per_host: int, command: Sequence[str],
            hosts: Sequence[int] | None = None) -> list[str]:
    """argv that runs ``command`` as ``ranks_per_host`` ranks on each of ``hosts`` (default: all),
    mpiexec on the first of them. Set :data:`MPICH_OVER_TCP` in its environment."""
    use = list(range(tb.hosts)) if hosts is None else list(hosts)
    if not use or ranks_per_host < 1:
        raise TestbedError("testbed: mpiexec needs at least one host and one rank per host")
    names = ",".join(f"{tb.name(i)}:{ranks_per_host}" for i in use)
    return [*enter(tb, use[0]), mpiexec_path, "-launcher", "ssh", "-launcher-exec",
            str(launcher(tb)), "-hosts", names, "-n", str(ranks_per_host * len(use)),
            *command]
