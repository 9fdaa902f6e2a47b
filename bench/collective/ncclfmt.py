"""nccl-tests' text table, as its ``src/util.cu`` prints it (``writeResultHeader``,
``writeBenchmarkLinePreamble``, ``writeBenchmarkLineBody``, ``writeResultFooter``): one row per
size, the vendor call out of place (``native``) and in place (``native_inplace``) side by side,
each with time, algbw, busbw and #wrong; then the out-of-bounds count and the average bus
bandwidth over every number of the table. ``commbench import nccl-tests`` reads it back.

The time column is nccl-tests' statistic, the mean over the timed iterations (of the slowest
rank's time, commbench's per-iteration clock); algbw and busbw are derived from it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kernels.algorithm import VENDOR, VENDOR_INPLACE
from kernels.collective import resolve

SIDES = (VENDOR, VENDOR_INPLACE)  # out of place, in place: the table's two halves
TYPE = {"float32": "float", "float16": "half", "float64": "double"}  # nccl-tests' type names
MISSING = "N/A"  # a side with no record (a collective without an in-place call)


def _num(value: float, width: int) -> str:
    """nccl-tests' ``getFloatStr``: two decimals, fewer when the number is wider than the column."""
    for spec in (".2f", ".1f", ".0f"):
        text = f"{value:{width}{spec}}"
        if len(text) <= width:
            return text
    return f"{value:{width}.{1 if width >= 7 else 0}e}"


def header() -> str:
    """The three header lines (``writeResultHeader`` without timestamps)."""
    blank = f"# {'':>10}  {'':>12}  {'':>8}  {'':>6}  {'':>6}"
    return "\n".join([
        "#",
        f"{blank}           out-of-place                       in-place          ",
        f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  {'time':>7}  "
        f"{'algbw':>6}  {'busbw':>6}  {'#wrong':>6}  {'time':>7}  {'algbw':>6}  {'busbw':>6}  "
        f"{'#wrong':>6} ",
        f"# {'(B)':>10}  {'(elements)':>12}  {'':>8}  {'':>6}  {'':>6}  {'(us)':>7}  "
        f"{'(GB/s)':>6}  {'(GB/s)':>6}  {'':>6}  {'(us)':>7}  {'(GB/s)':>6}  {'(GB/s)':>6}  "
        f"{'':>6} "])


def bandwidths(rec: Mapping[str, Any]) -> tuple[float, float, float]:
    """(time µs, algbw, busbw GB/s) of ``rec`` from its mean time, as nccl-tests computes them."""
    t = float(rec["time_us_mean"])
    algbw = rec["nbytes"] / t / 1e3 if t > 0 else 0.0
    return t, algbw, algbw * resolve(rec["collective"]).busbw(int(rec["world_size"]))


def _side(rec: Mapping[str, Any] | None) -> str:
    if rec is None:
        return f"  {MISSING:>7}  {MISSING:>6}  {MISSING:>6}  {MISSING:>6}"
    t, algbw, busbw = bandwidths(rec)
    wrong = rec.get("wrong")
    check = MISSING if wrong is None else f"{wrong:g}"
    return f"  {_num(t, 7)}  {_num(algbw, 6)}  {_num(busbw, 6)}  {check:>6}"


def row(records: Sequence[Mapping[str, Any]]) -> str | None:
    """One row from one size's records (``native`` and ``native_inplace``); None without either."""
    by = {r["algorithm"]: r for r in records if r.get("algorithm") in SIDES}
    if not by:
        return None
    r = next(iter(by.values()))
    root = -1 if r.get("root") is None else int(r["root"])
    op = r.get("op") if resolve(r["collective"]).reduces else "none"
    return (f"{r['nbytes']:>12}  {r['count']:>12}  {TYPE.get(r['dtype'], r['dtype']):>8}  "
            f"{op or 'none':>6}  {root:>6}" + "".join(_side(by.get(s)) for s in SIDES))


def footer(records: Iterable[Mapping[str, Any]]) -> str:
    """``writeResultFooter``: elements wrong over the table, and the mean busbw over its numbers."""
    recs = [r for r in records if r.get("algorithm") in SIDES]
    wrong = sum(int(r.get("wrong") or 0) for r in recs)
    avg = sum(bandwidths(r)[2] for r in recs) / len(recs) if recs else 0.0
    return "\n".join([f"# {'Out of bounds values':<20} : {wrong} {'FAILED' if wrong else 'OK'}",
                      f"# {'Avg bus bandwidth':<20} : {avg:g} ", "#"])
