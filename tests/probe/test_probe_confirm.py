"""The probe's confirmation pass: every suspect re-measured alone against a reference pair of its
class, named only when slow again beyond its noise. Exact decisions on synthetic records."""

from __future__ import annotations

import pytest

from bench.probe.confirm import Check, Confirm, plan
from bench.probe.outliers import find, flagged
from bench.probe.record import Samples, Settings, block_record
from bench.probe.summary import findings, summary_lines
from bench.probe.verdict import decide
from tests.helpers.probe_records import LAYOUT, SETTINGS, SlowNode, synthetic

ALL_TESTS = tuple((m, n) for m in ("latency", "uni", "bi") for n in SETTINGS.sizes)
JITTER = (1.0, 1.02, 0.98, 1.01, 0.99)  # a block's samples: its median is exactly its level


def confirmation(check: Check, suspect: tuple[float, ...], reference: tuple[float, ...],
                 base_us: float = 100.0) -> list[dict[str, object]]:
    """Records of the pass for ``check``: each block's samples ``base_us`` x its level x JITTER
    (the suspect's blocks at ``suspect`` levels, the reference's at ``reference``)."""
    settings = Settings(check.sizes, len(JITTER), SETTINGS.window, SETTINGS.warmup)
    out = []
    for role, pair, levels in (("suspect", check.pair, suspect),
                               ("reference", check.reference, reference)):
        for n in check.sizes:
            blocks = [Samples(n, *[tuple(base_us * f * j for j in JITTER)] * 3) for f in levels]
            out.append(block_record(LAYOUT, *pair, blocks, settings, check.fields(role, 1)))
    return out


def test_a_stalled_link_is_suspected_and_cleared_when_measured_alone() -> None:
    recs = synthetic(LAYOUT, stalled=((3, 12),))  # every sample of the pair 20 times as long
    assert [n for w, n in flagged(find(recs, 0.25)) if w == "link"] == [
        "rank 3 (host h) - rank 12 (host h)"]
    assert summary_lines(recs, 0.25)[-2].startswith(  # no pass: named on the tournament alone
        "probe: slow link: rank 3 (host h) - rank 12 (host h): bi 4MiB +")
    assert summary_lines(recs, 0.25)[-2].endswith("(tournament only: no confirmation pass)")
    got = plan(recs, Confirm())
    assert got.over_limit == got.no_reference == ()
    (check,) = got.checks
    assert (check.index, check.name, check.what, check.link_class, check.pair, check.tests) == (
        0, "rank 3 (host h) - rank 12 (host h)", "link", "inter", (3, 12), ALL_TESTS)
    assert LAYOUT.link_class(*check.reference) == "inter" and not {3, 12} & set(check.reference)
    recs += confirmation(check, (1, 1, 1), (1, 1, 1, 1))  # alone, it is as fast as its reference
    (v,) = decide(recs, 0.25)
    assert not v.confirmed and [t.excess for t in v.retests] == [0.0] * 6
    assert [t.block_excess for t in v.retests] == [(0.0, 0.0, 0.0)] * 6
    (f,) = findings(recs, 0.25)
    assert (f.status, f.named) == ("cleared", False)
    lines = summary_lines(recs, 0.25)
    assert lines[-2].startswith("probe: cleared: rank 3 (host h) - rank 12 (host h): flagged in "
                                "the tournament (")
    assert lines[-1].startswith("probe: no slow node or link (1 flagged in the tournament, 1 "
                                "cleared when re-measured alone)")


def test_a_slow_link_is_confirmed_when_measured_alone() -> None:
    recs = synthetic(LAYOUT, slow_link=(3, 12))
    (check,) = plan(recs, Confirm()).checks
    recs += confirmation(check, (2, 2, 2), (1, 1, 1, 1))
    (v,) = decide(recs, 0.25)
    assert v.confirmed and all(t.slow for t in v.retests)
    assert [t.excess for t in v.retests] == [1.0] * 6
    assert [t.block_excess for t in v.retests] == [(1.0, 1.0, 1.0)] * 6
    assert [(f.name, f.status) for f in findings(recs, 0.25)] == [
        ("rank 3 (host h) - rank 12 (host h)", "confirmed")]


def test_a_slow_node_is_confirmed_through_one_of_its_links() -> None:
    recs = synthetic(LAYOUT, delay=SlowNode(LAYOUT, 5, 50e-6))
    (check,) = plan(recs, Confirm()).checks
    assert (check.name, check.what, check.link_class) == (
        "node 5 (host h, ranks 10-11)", "node", "inter")
    assert check.tests == (("latency", 8), ("uni", 8), ("bi", 8))  # flagged at 8 B only
    assert {10, 11} & set(check.pair) and not {10, 11} & set(check.reference)
    recs += confirmation(check, (3, 3, 3), (1, 1, 1, 1))
    (f,) = findings(recs, 0.25)
    assert (f.name, f.status, [t.excess for t in f.verdict.retests]) == (
        "node 5 (host h, ranks 10-11)", "confirmed", [2.0] * 3)
    assert len(f.explained) > 0  # its slow links go with it
    assert any(line.startswith("probe: slow node: node 5 (host h, ranks 10-11): inter bi 8B +")
               and f"; confirmed alone against ranks {check.reference[0]}-{check.reference[1]}: "
               "latency 8B +200%, uni 8B +200%, bi 8B +200%" in line
               for line in summary_lines(recs, 0.25))


def test_a_host_that_slows_down_mid_check_moves_the_reference_too() -> None:
    recs = synthetic(LAYOUT, stalled=((3, 12),))
    (check,) = plan(recs, Confirm()).checks
    # R S R S R S R at host speeds 1 1 1 3 3 3 3: pooled, the suspect looks 50 % slower (the
    # medians of 15 and 20 samples: 3 x 0.99 against (1.02 + 3 x 0.98) / 2), but block by
    # block only the one measured between a fast and a slow reference block is
    recs += confirmation(check, (1, 3, 3), (1, 1, 3, 3))
    (v,) = decide(recs, 0.25)
    t = v.retests[0]
    assert t.excess == pytest.approx(2.97 / 1.98 - 1, abs=1e-12) and t.excess > 0.25
    assert t.block_excess == pytest.approx((0.0, 0.5, 0.0), abs=1e-12)
    assert not v.confirmed


def test_one_stalled_block_does_not_confirm() -> None:
    recs = synthetic(LAYOUT, stalled=((3, 12),))
    (check,) = plan(recs, Confirm()).checks
    recs += confirmation(check, (1, 20, 1), (1, 1, 1, 1))
    (v,) = decide(recs, 0.25)
    assert [t.block_excess for t in v.retests] == [(0.0, 19.0, 0.0)] * 6
    assert [t.excess for t in v.retests] == pytest.approx([0.01] * 6, abs=1e-12)  # 8th of 15
    assert not v.confirmed


def test_the_pass_re_measures_at_most_its_limit() -> None:
    stalled = ((3, 12), (0, 9), (4, 6), (1, 14))
    got = plan(synthetic(LAYOUT, stalled=stalled), Confirm(max_suspects=2))
    assert [c.pair for c in got.checks] == [(3, 12), (4, 6)]  # most significant first
    assert sorted(got.over_limit) == ["rank 0 (host h) - rank 9 (host h)",
                                      "rank 1 (host h) - rank 14 (host h)"]
    for c in got.checks:
        assert not set(c.reference) & {r for p in stalled for r in p}  # a reference never a suspect
    recs = synthetic(LAYOUT, stalled=stalled)
    for c in got.checks:
        recs += confirmation(c, (1, 1, 1), (1, 1, 1, 1))
    assert sorted((f.name, f.status, f.named) for f in findings(recs, 0.25)) == [
        ("rank 0 (host h) - rank 9 (host h)", "not re-measured", False),
        ("rank 1 (host h) - rank 14 (host h)", "not re-measured", False),
        ("rank 3 (host h) - rank 12 (host h)", "cleared", False),
        ("rank 4 (host h) - rank 6 (host h)", "cleared", False)]
    assert sum(line.startswith("probe: flagged, not re-measured (over the pass's limit")
               for line in summary_lines(recs, 0.25)) == 2
    assert plan(synthetic(LAYOUT, stalled=stalled), Confirm(max_suspects=0)).checks == ()


# QA's defects: each test below failed before its fix.
