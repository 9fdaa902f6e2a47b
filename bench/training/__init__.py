"""Training strategies on reference models: run them fairly, measure them, explain them.

Importing :mod:`bench.training.strategies` registers the strategies (and imports torch); the
scenario model in :mod:`bench.training.scenario` needs torch only to validate model names.
"""
