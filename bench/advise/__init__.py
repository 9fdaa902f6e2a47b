"""``commbench advise``: which training strategy (data x tensor x pipeline degrees, ZeRO stage,
microbatches) is fastest and fits, at any scale, from measured or stated pieces.

- :mod:`.shape`: what the model is to the advice (parameters per piece, FLOPs, boundary widths);
- :mod:`.layout`: one parallel layout and its rank groups;
- :mod:`.comm`: a layout's collectives per step (each strategy's ``calls``, in its own file,
  and the tensor and pipeline axes), checked exactly against what training runs count;
- :mod:`.memory`: per-rank memory of a layout from :mod:`bench.training.analytic`'s rules;
- :mod:`.timing` and :mod:`.step`: collective times from the cost model on each group, compute,
  overlap and the pipeline bubble;
- :mod:`.search`: every valid layout, ranked; :mod:`.validate`: predicted vs measured runs.
"""
