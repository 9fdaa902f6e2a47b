"""Training strategies on reference models: run them fairly, measure them, explain them.

Importing :mod:`bench.training.strategies` registers the strategies (and imports torch); the
scenario model in :mod:`bench.training.scenario` validates without torch, from the torch-free
model catalog (:mod:`bench.models.catalog`) and strategy rules (:mod:`bench.training.rules`).
"""
