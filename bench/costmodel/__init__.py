"""Clusters you don't have yet: a topology model, link profiles, and a cost model evaluated on
the algorithms' own schedules (``commbench predict``, ``commbench calibrate``).

- :mod:`bench.costmodel.model`: nodes, leaf switches, spines, placement (spec strings like ``64x8``);
- :mod:`bench.costmodel.profile`: α/β per link class, γ, o, device figures (YAML, shipped presets);
- :mod:`bench.costmodel.fabric`: a GPU node and its network (switch or PCIe tree, NICs and rails,
  NVLS / CollNet), a profile's ``fabric:`` block;
- :mod:`bench.costmodel.vendor`: a model of NCCL's choice (algorithms x protocols) on the fabric;
- :mod:`bench.costmodel.net`: which link class and which shared resources a message uses;
- :mod:`bench.costmodel.evaluate`: the one evaluator, on schedules compiled to arrays
  (:mod:`kernels.compiled`) once per symbolic shape;
- closed forms: declared by each algorithm beside its ``build`` (:mod:`kernels.closed`), each
  tested equal to the evaluator;
- :mod:`bench.costmodel.predict` / :mod:`bench.costmodel.calibrate`: records and fitted profiles.
"""
