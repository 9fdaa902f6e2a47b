"""alltoallv algorithms (discovered; no list to edit). Each reads its blocks from
:func:`kernels.collectives.alltoallv.plan`."""
