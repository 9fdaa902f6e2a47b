"""``kind: concurrent``: groups of ranks communicating at once (each group timed alone and
beside the others) and communication overlapped with a compute kernel, OSU-style
(docs/concurrency.md)."""

from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("concurrent", "bench.concurrent.scenario:ConcurrentScenario",
                      "bench.concurrent.launch:run", order=50))
