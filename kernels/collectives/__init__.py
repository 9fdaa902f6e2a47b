"""One file per collective, each ending with ``register(Collective(...))``; discovered by
``kernels.collective.COLLECTIVES``, so adding a collective is adding a file here."""
