"""Training strategies on reference models: run them fairly, measure them, explain them."""

from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("training", "bench.training.scenario:TrainingScenario",
                      "bench.training.launch:run", order=20))
