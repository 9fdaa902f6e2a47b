from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("replay", "bench.replay.scenario:ReplayScenario",
                      "bench.replay.launch:handle", order=50))
