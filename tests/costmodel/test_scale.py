"""Closed forms that price symmetric jobs without per-rank arrays, held equal to the evaluator on
topologies the main sweep lacks (odd p, one node per leaf, odd ranks per node); and predict at
scale: generated per-rank schedules stop at MAX_GENERATED_RANKS with the reason."""

from __future__ import annotations

import pytest

from bench.costmodel.evaluate import schedule_estimate
from bench.costmodel.model import parse_topology
from bench.costmodel.net import Net
from bench.costmodel.predict import MAX_GENERATED_RANKS, predict
from bench.costmodel.profile import load_profile
from kernels.algorithm import Problem, get_algorithm
from kernels.closed import Ctx, Estimate

CASES = [("sendrecv", "ring"), ("sendrecv", "pairs"), ("all_reduce", "naive"),
         ("all_reduce", "ring_channels"), ("all_gather", "ring_channels"),
         ("reduce_scatter", "direct"), ("alltoall", "pairwise"), ("broadcast", "chain"),
         ("broadcast", "binomial"), ("broadcast", "scatter_allgather")]
TOPOLOGIES = ["3x3", "5x1", "1x7", "9x1:leaf=3", "6x3:leaf=2", "3x5:leaf=1", "4x4:leaf=1",
              "8x2:leaf=4", "8x1", "4x2", "2x4"]


@pytest.mark.parametrize(("coll", "name"), CASES)
def test_symmetric_closed_forms_equal_the_evaluator(coll: str, name: str) -> None:
    alg = get_algorithm(coll, name)
    assert alg.closed is not None
    applied = 0
    for topo in TOPOLOGIES:
        pl = parse_topology(topo)
        pl = pl.place(pl.world)
        for prof in ("pcie-100gbe", "h100-ib400"):
            net = Net(pl, load_profile(prof))
            for n in (pl.world * 64, pl.world * 4096 * 3):
                pr = Problem(pl.topology, n, 4, coll, 0)
                got = alg.closed(Ctx(pr, net))
                if not isinstance(got, Estimate):
                    continue
                applied += 1
                ref = schedule_estimate(alg, pr, net)
                assert got.time_s == pytest.approx(ref.time_s, rel=1e-9), (topo, prof, n)
                assert (got.steps, got.bytes_sent_max, got.bytes_inter_max) == (
                    ref.steps, ref.bytes_sent_max, ref.bytes_inter_max), (topo, prof, n)
    assert applied >= 4


def test_generated_schedules_stop_at_the_limit_and_say_why() -> None:
    pl = parse_topology(f"{MAX_GENERATED_RANKS // 4}x8").place(2 * MAX_GENERATED_RANKS)
    got = {p.algorithm: p for p in predict(load_profile("h100-ib400"), pl, "all_reduce",
                                           [1 << 30], "float32", ["tree", "double_tree", "ring"])}
    assert got["ring"].estimate is not None
    for name in ("tree", "double_tree"):
        assert got[name].estimate is None and got[name].why == (
            f"closed form does not apply (it generates per-rank schedules, evaluated up to p = "
            f"{MAX_GENERATED_RANKS}); schedules are evaluated up to p = 256 "
            "(--max-schedule-ranks)")
    sr = next(iter(predict(load_profile("h100-ib400"), pl, "sendrecv", [1 << 20], "float32",
                           ["ring"])))
    assert sr.estimate is not None and sr.estimate.method == "closed form"
