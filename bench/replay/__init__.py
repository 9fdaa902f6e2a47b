"""``kind: replay``: a real job's communication, one step of it, replayed through the harness
and priced by the cost model; docs/replay.md."""

from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("replay", "bench.replay.scenario:ReplayScenario",
                      "bench.replay.launch:run", order=50))
