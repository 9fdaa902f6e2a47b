"""``kind: replay``: a real job's communication, one step of it, replayed through the harness
and priced by the cost model; docs/replay.md."""
