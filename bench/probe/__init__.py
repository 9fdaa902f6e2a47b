"""The link probe, a scenario kind: latency and bandwidth between every pair of ranks, in rounds
of disjoint pairs, each pair a point-to-point case the harness times
(:mod:`bench.collective.p2p`), grouped by link class, with the node x node matrix and the slow
links and nodes named by host.

``scenario`` is ``kind: probe`` (``commbench probe``'s flags are made from it), ``launch`` runs
it through the collective kind's launch, ``runner`` is the job (``schedule`` pairs the ranks,
``links`` names nodes and classes, ``record`` writes records). The analysis reads records back:
``matrix`` and ``outliers`` (slow links and nodes), ``confirm`` (the suspects the runner
re-measures alone), ``verdict``, ``findings`` and ``summary``; ``fit`` gives calibrate α and β.
See docs/probe.md.
"""
