"""One file per collective, each ending with ``register(Collective(...))``; discovered by
:func:`kernels.collective.load`, so adding a collective is adding a file here."""
