from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("training", "bench.training.scenario:TrainingScenario",
                      "bench.training.launch:handle", order=20))
