"""The one interface between emulated links and whatever sends over them.

An emulated cluster (``bench/emulate``) answers, for a message of ``nbytes`` from rank ``src`` to
rank ``dst`` while ``flows`` messages share the slowest link it crosses, how long the modelled link
would take beyond what the host's own link already costs. Senders (schedule plans, the link probe)
wait that long before the message leaves; they never need to know the topology themselves.
"""

from __future__ import annotations

from typing import Protocol


class LinkDelay(Protocol):
    def delay_s(self, src: int, dst: int, nbytes: int, flows: int = 1) -> float:
        """Extra seconds the modelled link adds to this message (0 where the host link is it)."""
        ...

    def describe(self) -> dict[str, object]:
        """What records say about the emulation (``emulated: true``, the profile, the topology)."""
        ...
