"""commbench's text table of collective records: one table per job (world size, ranks per node,
transport), one row per case, the collective named on each row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STATISTIC = {"commbench": "median over iterations of the max over ranks; p95 of the same",
             "osu": "OSU's avg: each rank's mean over the loop, averaged over ranks; max: OSU's "
                    "Max Latency (the slowest rank's mean)"}
SPREAD = {"commbench": ("p95", "time_us_p95"), "osu": ("max", "time_us_osu_max")}


def header(style: str = "commbench") -> str:
    spread = SPREAD[style][0]
    return (f"#{'collective':>14} {'size':>11} {'count':>12} {'type':>8} {'redop':>6} "
            f"{'algorithm':>17} {'time':>10} {spread:>10} {'algbw':>8} {'busbw':>8} "
            f"{'#wrong':>7}\n"
            f"#{'':>14} {'(B)':>11} {'(elements)':>12} {'':>8} {'':>6} {'':>17} "
            f"{'(us)':>10} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8} {'':>7}")


def banner(world: int, ranks_per_node: int, transport: str, oversubscribed: bool,
           style: str = "commbench") -> str:
    note = "  [ranks outnumber cores: oversubscribed, expect noise]" if oversubscribed else ""
    return (f"# commbench world_size={world}  ranks_per_node={ranks_per_node}  "
            f"transport={transport}{note}\n# time = {STATISTIC[style]}; size and busbw as "
            f"nccl-tests define them (docs/collectives.md); native runs out of place, the "
            f"others in place\n{header(style)}")


def row(rec: Mapping[str, Any]) -> str:
    wrong = rec.get("wrong")
    flag = "  <- WRONG" if wrong else ""
    return (
        f" {rec['collective']:>14} {rec['nbytes']:>11} {rec['count']:>12} {rec['dtype']:>8} "
        f"{rec['op']:>6} {rec['algorithm']:>17} {_headline(rec):>10.2f} {_spread(rec):>10.2f} "
        f"{rec['algbw_gbps']:>8.2f} {rec['busbw_gbps']:>8.2f} "
        f"{'n/a' if wrong is None else wrong:>7}{flag}"
    )


def _spread(rec: Mapping[str, Any]) -> float:
    key = SPREAD.get(str(rec.get("timing_style") or "commbench"), SPREAD["commbench"])[1]
    v = rec.get(key)
    return float(v) if v is not None else float("nan")


def _headline(rec: Mapping[str, Any]) -> float:
    """The time the row's bandwidths come from: OSU's rank-averaged mean in ``style: osu``."""
    if rec.get("timing_style") == "osu" and rec.get("time_us_osu_avg") is not None:
        return float(rec["time_us_osu_avg"])
    return float(rec["time_us_median"])
