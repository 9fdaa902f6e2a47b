"""What a bring-up case should measure: the profile's prediction for the group it ran on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bench.measure.metrics import busbw_gbps


def add_expected(records: Iterable[dict[str, Any]], profile: str) -> None:
    """Set ``expected_busbw_gbps`` and ``pct_of_expected`` on each record the profile predicts
    (its collective, algorithm, size and its group's nodes); others are left without."""
    from bench.costmodel.model import Cluster
    from bench.costmodel.predict import predict
    from bench.costmodel.profile import load_profile

    prof = load_profile(profile)
    for r in records:
        rpn = int(r["ranks_per_node"])
        placed = Cluster((rpn,) * (int(r["world_size"]) // rpn)).place(int(r["world_size"]))
        for pred in predict(prof, placed, r["collective"], [int(r["nbytes"])], r["dtype"],
                            [r["algorithm"]]):
            if pred.estimate is not None and pred.estimate.time_s > 0:
                e = busbw_gbps(r["collective"], int(r["world_size"]), int(r["nbytes"]),
                               pred.estimate.time_s)
                r["expected_busbw_gbps"] = e
                r["pct_of_expected"] = 100 * r["busbw_gbps"] / e if e else None
