from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("concurrent", "bench.concurrent.scenario:ConcurrentScenario",
                      "bench.concurrent.launch:handle", order=50))
