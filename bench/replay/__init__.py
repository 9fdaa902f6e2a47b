"""``kind: replay``: a real job's communication, one step of it, replayed through the harness.

Traces (:mod:`bench.replay.formats`, one file per format) give each rank's calls; :mod:`.merge`
matches them into calls on groups; :mod:`.scenario` holds them as a scenario; :mod:`.runner`
measures each distinct call with the harness; :mod:`.step` sums them into the step's
communication per group and per collective; :mod:`.price` prices them with the cost model.
docs/replay.md.
"""
