"""The counted step under the torch profiler, for ``commbench import torch-profiler``: with
``COMMBENCH_TRACE_DIR`` set, each rank exports the Kineto trace of the one step whose
communication the training record counts (:mod:`bench.training.comm`), as
``<case>-rank<r>.json``. Off by default: the profiler costs time and a file per rank and case.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

TRACE_DIR_ENV = "COMMBENCH_TRACE_DIR"


@contextlib.contextmanager
def traced(case: str | None, rank: int, environ: os._Environ[str] | dict[str, str] = os.environ
           ) -> Iterator[None]:
    """Profile the block into ``$COMMBENCH_TRACE_DIR/<case>-rank<rank>.json`` when the variable
    is set and ``case`` is given; else nothing."""
    where = environ.get(TRACE_DIR_ENV)
    if not where or case is None:
        yield
        return
    from torch.profiler import ProfilerActivity, profile

    out = Path(where)
    out.mkdir(parents=True, exist_ok=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        yield
    prof.export_chrome_trace(str(out / f"{case}-rank{rank}.json"))
