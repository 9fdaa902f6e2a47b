"""The collective scenario kind: its scenario, cases, data, the harness, the runner, metrics
and tables."""
