"""The measuring core every kind uses: the clock and timing loop (``timer``), the harness that
times a case on a transport and checks it (``harness``), the per-rank statistics and aggregates,
the drift canary and the recording of a job (``recording``). Nothing here knows a scenario kind."""
