"""The link probe, a scenario kind: latency and bandwidth between every pair of ranks in rounds of
disjoint pairs, each pair a point-to-point case the harness times (:mod:`bench.measure.p2p`),
then the analysis of its records (slow links and nodes, the confirmation pass). docs/probe.md."""

from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("probe", "bench.probe.scenario:ProbeScenario",
                      "bench.probe.launch:run", order=30))
