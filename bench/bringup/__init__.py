"""``commbench bringup`` and ``kind: bringup``: the stages a bring-up engineer runs by hand, in one
job, each case held against what the fabric should do, ending in a verdict per host and link."""

from bench.scenario_base import ScenarioKind, register

register(ScenarioKind("bringup", "bench.bringup.scenario:BringupScenario",
                      "bench.bringup.launch:run", order=40))
