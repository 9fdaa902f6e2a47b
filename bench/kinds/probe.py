from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("probe", "bench.probe.scenario:ProbeScenario", "bench.probe.launch:handle",
                      order=30))
