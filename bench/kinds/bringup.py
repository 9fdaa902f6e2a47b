from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("bringup", "bench.bringup.scenario:BringupScenario",
                      "bench.bringup.launch:handle", order=40))
