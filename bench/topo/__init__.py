"""Clusters you don't have yet: a topology model, link profiles, and a cost model evaluated on
the algorithms' own schedules (``commbench predict``, ``commbench calibrate``).

- :mod:`bench.topo.model`: nodes, leaf switches, spines, placement (spec strings like ``64x8``);
- :mod:`bench.topo.profile`: α/β per link class, γ, o, device figures (YAML, shipped presets);
- :mod:`bench.topo.net`: which link class and which shared resources a message uses;
- :mod:`bench.topo.cost`: the reference event-driven evaluator over schedules (plain Python);
- :mod:`bench.topo.compiled`: the same model vectorised, on schedules compiled once per shape;
- :mod:`bench.topo.closed`: closed forms per (collective, algorithm), each tested equal to the
  schedule-evaluated model;
- :mod:`bench.topo.predict` / :mod:`bench.topo.calibrate`: records and fitted profiles.
"""
