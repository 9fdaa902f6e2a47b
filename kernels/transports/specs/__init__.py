"""One file per transport, each calling :func:`kernels.transports.register`; discovered, so
adding a transport is adding a file here (its implementation imported only when a run uses it)."""
