"""What a testbed is: hosts, their addresses and the pace of each host's link, per direction."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path

from bench.argtypes import CommbenchError
from bench.units import parse_rate

STATE_ROOT = Path("/run/commbench-testbed")
DEFAULT_SUBNET = "10.231.0.0/24"
IFACE = "eth0"  # each host's link, the same name in every host
TAG = re.compile(r"^[a-z][a-z0-9]{0,5}$")  # interface names hold it: at most 15 characters


class TestbedError(CommbenchError, ValueError):
    """A testbed that cannot be made or used; one line naming the cause."""

    __test__ = False  # not a pytest class


@dataclass(frozen=True)
class Pace:
    """A host's link in bytes/s per direction (None: unpaced). ``send``: what leaves the host;
    ``recv``: what reaches it."""

    send: float | None = None
    recv: float | None = None


@dataclass(frozen=True)
class Testbed:
    """``hosts`` hosts named ``{tag}-0`` ... on ``subnet`` (host i at the (i+1)-th address);
    ``pace[i]`` the pace of host i's link (every host ``default`` where not given)."""

    __test__ = False  # not a pytest class

    hosts: int
    tag: str = "tb"
    subnet: str = DEFAULT_SUBNET
    default: Pace = Pace()
    pace: tuple[tuple[int, Pace], ...] = field(default=())
    cpu: tuple[tuple[int, float], ...] = field(default=())  # (host, cores it may use)

    def __post_init__(self) -> None:
        if not 1 <= self.hosts <= 64:
            raise TestbedError(f"testbed: hosts must be 1..64, got {self.hosts}")
        if not TAG.match(self.tag):
            raise TestbedError(f"testbed: tag {self.tag!r} must be a lower-case letter and up to "
                               "5 letters or digits")
        try:
            net = ipaddress.ip_network(self.subnet)
        except ValueError:
            raise TestbedError(f"testbed: subnet {self.subnet!r} is not a network") from None
        if net.num_addresses < self.hosts + 2:
            raise TestbedError(f"testbed: subnet {self.subnet} holds fewer than {self.hosts} hosts")
        for i, _ in (*self.pace, *self.cpu):
            if not 0 <= i < self.hosts:
                raise TestbedError(f"testbed: host {i} is not one of 0..{self.hosts - 1}")
        for i, cores in self.cpu:
            if not 0 < cores < 1024:
                raise TestbedError(f"testbed: host {i}: cores must be > 0, got {cores}")

    def name(self, i: int) -> str:
        return f"{self.tag}-{i}"

    def names(self) -> list[str]:
        return [self.name(i) for i in range(self.hosts)]

    def netns(self, i: int) -> str:
        return f"cbtb-{self.tag}-{i}"

    @property
    def switch_netns(self) -> str:
        return f"cbtb-{self.tag}-sw"

    def address(self, i: int) -> str:
        return str(ipaddress.ip_network(self.subnet)[i + 1])

    @property
    def prefixlen(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    def pace_of(self, i: int) -> Pace:
        return dict(self.pace).get(i, self.default)

    @property
    def state(self) -> Path:
        return STATE_ROOT / self.tag


def parse_cpu(text: str) -> tuple[int, float]:
    """``HOST=CORES``: host HOST may use at most CORES cores (``2=0.25``)."""
    m = re.fullmatch(r"(\d+)=(\d+(?:\.\d+)?)", text.strip())
    if not m or float(m.group(2)) <= 0:
        raise TestbedError(f"testbed: cpu {text!r}: expected HOST=CORES (2=0.25)")
    return int(m.group(1)), float(m.group(2))


def parse_pace(text: str) -> tuple[int, Pace]:
    """``HOST=RATE`` (both directions), ``HOST=RATE:send`` or ``HOST=RATE:recv``, e.g. ``3=250mbit``."""
    m = re.fullmatch(r"(\d+)=([^:]+)(?::(send|recv))?", text.strip())
    if not m:
        raise TestbedError(f"testbed: pace {text!r}: expected HOST=RATE[:send|:recv] (3=250mbit)")
    try:
        rate = parse_rate(m.group(2))
    except ValueError as e:
        raise TestbedError(f"testbed: pace {text!r}: {e}") from None
    side = m.group(3)
    pace = Pace(send=rate if side != "recv" else None, recv=rate if side != "send" else None)
    return int(m.group(1)), pace
