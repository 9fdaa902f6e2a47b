"""The collective scenario kind: its scenario, cases, data, the harness, the runner, metrics
and tables."""

from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("collective", "bench.collective.scenario:CollectiveScenario",
                      "bench.collective.launch:run", order=10))
