from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("collective", "bench.collective.scenario:CollectiveScenario",
                      "bench.collective.launch:run_collective", order=10))
