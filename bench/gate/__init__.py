"""The regression gate: ``compare`` against stored runs and ``ab`` between revisions run
alternately, their decision rules (matched keys, noise, paired rounds, the machine-changed-speed
rule) and their tables; deterministic fields are compared exactly."""
