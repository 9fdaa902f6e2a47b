"""commbench's own benchmarks and experiments (not installed): each runs as ``python -m
benchmarks.<name>`` from a checkout and writes what it measured to ``results/<name>.md``."""
