"""Clusters you don't have yet: a topology model, link profiles, and a cost model evaluated on
the algorithms' own schedules (``commbench predict``, ``commbench calibrate``).

- :mod:`bench.costmodel.model`: nodes, leaf switches, spines, placement (spec strings like ``64x8``);
- :mod:`bench.costmodel.profile`: α/β per link class, γ, o, device figures (YAML, shipped presets);
- :mod:`bench.costmodel.net`: which link class and which shared resources a message uses;
- :mod:`bench.costmodel.cost`: the reference event-driven evaluator over schedules (plain Python);
- :mod:`bench.costmodel.compiled`: the same model vectorised, on schedules compiled once per shape;
- :mod:`bench.costmodel.closed`: closed forms per (collective, algorithm), each tested equal to the
  schedule-evaluated model;
- :mod:`bench.costmodel.predict` / :mod:`bench.costmodel.calibrate`: records and fitted profiles.
"""
