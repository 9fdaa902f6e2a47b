"""A run's closing line (bench/store/summary.py): ok or failed, cases, oversubscribed ones, and
what the drift canary saw."""

from __future__ import annotations

from bench.store.summary import line


def test_closing_line_counts_cases_oversubscription_and_canary() -> None:
    recs = [{"oversubscribed": True}, {"oversubscribed": False}, {}]
    assert line("ok", recs, []) == ("# ok: 3 cases recorded; 1 oversubscribed (ranks outnumber "
                                    "cores: noisy); canary: steady")
    assert line("failed", [], ["memcpy_GBps: median 9 GB/s at a, 3 GB/s at b"]) == (
        "# failed: 0 cases recorded; canary: the machine changed speed (memcpy_GBps): compare "
        "within this run")
    assert line("ok", [{}], []) == "# ok: 1 case recorded; canary: steady"
