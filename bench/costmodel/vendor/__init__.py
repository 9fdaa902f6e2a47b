"""A model of the vendor library's choice (NCCL): its algorithms x protocols priced in the form of
NCCL's own tuning model on the profile's fabric, the fastest taken per size (docs/predict.md,
"The vendor model"). One file per algorithm, each declaring ``ALGORITHM``; :func:`algorithms`
discovers them."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from bench.costmodel.vendor.base import VendorAlgorithm

_NOT_ALGORITHMS = {"base", "protocols", "choose"}


@cache
def algorithms() -> tuple[VendorAlgorithm, ...]:
    """Every vendor algorithm of this package, in NCCL's order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name not in _NOT_ALGORITHMS:
            mod = importlib.import_module(f"{__name__}.{info.name}")
            alg = getattr(mod, "ALGORITHM", None)
            if isinstance(alg, VendorAlgorithm):
                found.append(alg)
    return tuple(sorted(found, key=lambda a: (a.order, a.name)))
