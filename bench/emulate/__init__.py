"""Emulating a cluster on one host: the ranks of this host play the nodes of a modelled topology,
and every message crossing a modelled link class waits what the cost model says that link
costs beyond the host's own (docs/predict.md, "Emulating a cluster on one host").

- :mod:`bench.emulate.links`: :func:`link_delay` builds a :class:`bench.costmodel.delay.LinkDelay`
  from a profile and a topology spec (also for the link probe);
- :mod:`bench.emulate.steps`: which sends of a schedule wait, and how long (pure);
- :mod:`bench.emulate.wait`: how a delay is waited (sleep, then a short spin);
- :mod:`bench.emulate.plan` / :mod:`bench.emulate.transport`: the MPI transport's plans with
  delayed sends;
- :mod:`bench.emulate.config` / :mod:`bench.emulate.job`: the scenario's ``emulate`` key and one
  world size of it.
"""

from bench.emulate.links import EmulatedLinks, EmulationError, link_delay

__all__ = ["EmulatedLinks", "EmulationError", "link_delay"]
