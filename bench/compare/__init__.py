"""The regression gate: match two runs' cases by key and decide each with a test that respects
noise (Mann-Whitney U on the raw samples, bootstrap interval of the median ratio) plus a minimum
effect size; deterministic fields are compared exactly."""
