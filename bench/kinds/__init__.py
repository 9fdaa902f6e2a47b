"""Scenario kinds, one file each calling :func:`bench.scenario_base.register`; discovered, so a
new kind is a new file here (its model and runner in its own package, imported on first use)."""
