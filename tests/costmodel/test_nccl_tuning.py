"""NCCL's own tuning model (bench/costmodel/vendor/tuning.py) on recorded cases: each expected
figure worked by hand from NVIDIA/nccl src/graph/tuning.cc (revision 5067397c) and
src/enqueue.cc, the lines cited beside it. Inputs are graphs a topology search could hand the
tuner; the tests hold the arithmetic and the decisions, not a machine's speed."""

from __future__ import annotations

import pytest

from bench.costmodel.vendor.tuning import Comm, Graph, algo_time, bandwidth, channels, decide, latency

KiB, MiB = 1 << 10, 1 << 20


def _one_node() -> Comm:
    """8 Hopper GPUs on NVSwitch: 16 channels of 20 GB/s for every graph, NVLS on."""
    g = Graph(16, 20.0, 20.0)
    return Comm(1, 8, {"Ring": g, "Tree": g, "NVLS": g}, nvls=True)


def _four_nodes() -> Comm:
    """4 nodes of 8 Hopper GPUs, Intel CPUs: ring and tree 16 channels of 20 / 12 GB/s (intra /
    inter), NVLS graph 16 channels of 20 / 12, no CollNet (so no NVLS across nodes)."""
    g = Graph(16, 20.0, 12.0)
    return Comm(4, 32, {"Ring": g, "Tree": g, "NVLS": g}, nvls=True)


@pytest.mark.parametrize(("algo", "proto", "lat", "bw"), [
    # Ring: base 6.6/14/8.4 (l.151) + 14 steps x NVLink hop 0.6/1.9/3.4 (l.159; l.412);
    # LL: min(llMaxBw hopper N1 141 (l.181), 320 x .5) (l.327); LL128: min(320 x .92, 16 x
    # 36.7) (l.329); then x nRanks/nsteps = 8/14 (l.376-380)
    ("Ring", "LL", 6.6 + 14 * 0.6, 141.0 * 8 / 14),
    ("Ring", "LL128", 14.0 + 14 * 1.9, 320 * 0.92 * 8 / 14),
    ("Ring", "Simple", 8.4 + 14 * 3.4, 320 * 8 / 14),
    # Tree: base 6.8/14/8.4 + 2 x 7 x hop 0.6/1.25/4.0 (l.416); 320 x .92 (min 16 x 38.7,
    # l.331), LL / 3.8 (l.332), LL128 x 7/9 on one node (l.335); x .5 (l.380)
    ("Tree", "LL", 6.8 + 14 * 0.6, 320 * 0.92 / 3.8 * 0.5),
    ("Tree", "LL128", 14.0 + 14 * 1.25, 320 * 0.92 * 7 / 9 * 0.5),
    ("Tree", "Simple", 8.4 + 14 * 4.0, 320 * 0.92 * 0.5),
    # NVLS: latency = the NVLink hop, 25 (l.425); bw = min(20 x .85 x 15/16 x 2, 20) per
    # channel (l.308-322) x 16 x 8/14
    ("NVLS", "Simple", 25.0, 16 * 20 * 8 / 14),
])
def test_one_node_table(algo: str, proto: str, lat: float, bw: float) -> None:
    c = _one_node()
    assert latency(c, "all_reduce", algo, proto) == pytest.approx(lat, rel=1e-12)
    assert bandwidth(c, "all_reduce", algo, proto) == pytest.approx(bw, rel=1e-12)


def test_one_node_nvls_runs_simple_only_and_nvlstree_never() -> None:
    c = _one_node()
    assert bandwidth(c, "all_reduce", "NVLS", "LL") == 0  # l.304
    assert bandwidth(c, "all_reduce", "NVLSTree", "Simple") == 0  # one node: disabled (l.501)


def test_one_node_decisions_by_size() -> None:
    # Ring/LL (15 us, 80.57 GB/s) against NVLS (25 us, 182.86 GB/s): they cross at
    # 10 us / (1/80.57 - 1/182.86 per kB) = 1.44 MB
    c = _one_node()
    got = {n: decide(c, "all_reduce", n) for n in (8, 1 * MiB, 2 * MiB, 64 * MiB)}
    assert {n: (d.algorithm, d.protocol) for n, d in got.items() if d} == {
        8: ("Ring", "LL"), 1 * MiB: ("Ring", "LL"), 2 * MiB: ("NVLS", "Simple"),
        64 * MiB: ("NVLS", "Simple")}
    d = got[64 * MiB]
    assert d is not None and d.time_us == pytest.approx(25 + 64 * MiB / (1000 * 320 * 8 / 14))
    assert (d.channels, d.threads) == (16, 640)  # NVLS keeps nvlsChannels (enqueue.cc l.2089)


def test_tree_correction_and_ring_plateau_across_nodes() -> None:
    c = _four_nodes()
    # Tree Simple at 1 MiB: log2(1 MiB / 64) = 14 -> factor .5 (l.623-627, l.639)
    # bus = 16 x 12 (bwInter beyond 2 nodes, l.301) x .92 (< 16 x 36.0, l.331) x .5
    tree_bw = 16 * 12 * 0.92 * 0.5
    tree_lat = 8.4 + 2 * (7 * 4.0 + 2 * 14.0)  # l.416: log2i(4) = 2 network hops of 14
    assert algo_time(c, "all_reduce", "Tree", "Simple", 1 * MiB) == pytest.approx(
        tree_lat + 1 * MiB / (1000 * tree_bw * 0.5))
    # Ring Simple: 62 steps, 6 across nodes at 14 us, 56 at max(3.4, 3 x 1.0 net overhead)
    # (l.404-412); x 1.4 once nBytes / (16 x 32) >= 64 (l.647-649)
    ring_lat = 8.4 + 56 * 3.4 + 6 * 14.0
    ring_bw = 16 * 12 * 32 / 62
    assert algo_time(c, "all_reduce", "Ring", "Simple", 16 * KiB) == pytest.approx(
        ring_lat + 16 * KiB / (1000 * ring_bw))
    assert algo_time(c, "all_reduce", "Ring", "Simple", 32 * KiB) == pytest.approx(
        ring_lat * 1.4 + 32 * KiB / (1000 * ring_bw))
    # LL across nodes: Intel CPU row, >2 nodes: 20.4 GB/s (l.179, l.267-272)
    assert bandwidth(c, "all_reduce", "Ring", "LL") == pytest.approx(20.4 * 32 / 62)


def test_four_nodes_decisions_by_size() -> None:
    # 8 B: Tree/LL (6.8 + 2 x (7 x .6 + 2 x 5.0) = 35.2 us) against Ring/LL (6.6 + 56 x 1.0 +
    # 6 x 2.7 = 78.8 us); 4 GiB: NVLSTree and Ring/Simple share 192 x 32/62 GB/s, NVLSTree's
    # 108.6 us beats the ring's 282.8 x 1.4; NVLS off, Ring/Simple beats Tree/Simple (192 x .92
    # x .5, no correction above 256 MiB)
    c = _four_nodes()
    assert latency(c, "all_reduce", "Tree", "LL") == pytest.approx(35.2)
    assert latency(c, "all_reduce", "Ring", "LL") == pytest.approx(78.8)
    small, large = decide(c, "all_reduce", 8), decide(c, "all_reduce", 4 << 30)
    assert small is not None and (small.algorithm, small.protocol) == ("Tree", "LL")
    assert large is not None and (large.algorithm, large.protocol) == ("NVLSTree", "Simple")
    off = decide(c, "all_reduce", 4 << 30, disable=("NVLS",))
    assert off is not None and (off.algorithm, off.protocol) == ("Ring", "Simple")
    assert decide(c, "all_reduce", 4 << 30, only="Tree").algorithm == "Tree"  # type: ignore


def test_pat_with_one_rank_per_node() -> None:
    # 64 nodes x 1: PAT 8 + log2(64) x 14/3.5 + 64 x 2.8 = 211.2 us (l.430-433) against
    # Ring/LL 6.6 + 63 network steps x Tree's LL hop 5.0 (ppn 1, l.387) = 321.6 us
    g = Graph(4, 12.0, 12.0)
    c = Comm(64, 64, {"Ring": g, "Tree": g})
    assert latency(c, "all_gather", "PAT", "Simple") == pytest.approx(211.2)
    assert latency(c, "all_gather", "Ring", "LL") == pytest.approx(321.6)
    d = decide(c, "all_gather", 8)
    assert d is not None and (d.algorithm, d.protocol) == ("PAT", "Simple")
    # PAT's bandwidth: 4 x 12 x .75 (l.337), no algbw conversion for all_gather (l.376-377)
    assert bandwidth(c, "all_gather", "PAT", "Simple") == pytest.approx(36.0)


def test_channels_and_threads_follow_the_size() -> None:
    # Ring Simple: drop a channel while nBytes < nc x 512 x 64, then halve threads while
    # nBytes < nc x nt x 64 (enqueue.cc l.2092-2104), + one warp for Ring Simple (l.2107)
    c = _one_node()
    assert channels(c, "Ring", "Simple", 1 * MiB) == (16, 544)
    assert channels(c, "Ring", "Simple", 64 * KiB) == (2, 544)
    assert channels(c, "Ring", "Simple", 16 * KiB) == (1, 288)
    # Ring LL: 8 bytes per thread x nRanks (tuning.cc l.593): 16 x 512 x 64 = 512 KiB for all 16
    assert channels(c, "Ring", "LL", 512 * KiB) == (16, 512)
    assert channels(c, "Ring", "LL", 64 * KiB) == (2, 512)
    assert channels(c, "Tree", "LL", 8) == (1, 640)  # Tree always runs all threads (l.2112)


def test_nvls_across_nodes_needs_collnet_and_nvlstree_takes_it() -> None:
    c = _four_nodes()
    assert bandwidth(c, "all_reduce", "NVLS", "Simple") == 0  # l.489, enqueue.cc l.2008
    # NVLSTree: min(20 x .85 x 15/16 x 2, 12, 45.5 per channel) x 16 x 32/62; latency 25 +
    # 2 x log2i(4) x 20.9 (l.428)
    assert bandwidth(c, "all_reduce", "NVLSTree", "Simple") == pytest.approx(12 * 16 * 32 / 62)
    assert latency(c, "all_reduce", "NVLSTree", "Simple") == pytest.approx(25 + 4 * 20.9)


def test_recorded_nccl_log_24_h100s() -> None:
    """tests/data/nccl/tuning-2.2x.log (NVIDIA/nccl#1453): 3 nodes of 8 H100s, 16 channels, as
    NCCL printed its picks and estimates. Inputs read off the log: Tree LL at 128 B is 25.2 us
    + 128 B at 8.67 GB/s = Intel's >2-node llMaxBw 20.4 (l.179) x 0.85 (the TREE pattern,
    l.336) x 0.5; Tree LL128 at 256 KiB and Ring Simple at 8 GiB both fit 12 GB/s per channel
    between nodes. The log names no NVLS graph: NVLS is left out."""
    g = Graph(16, 12.0, 12.0)
    c = Comm(3, 24, {"Ring": g, "Tree": g}, tree_pattern="tree")
    for nbytes, algo, proto, logged in ((128, "Tree", "LL", 25.214764),
                                        (262144, "Tree", "LL128", 54.707825),
                                        (8589934592, "Ring", "Simple", 86069.968750)):
        d = decide(c, "all_reduce", nbytes)
        assert d is not None and (d.algorithm, d.protocol) == (algo, proto)
        assert d.time_us == pytest.approx(logged, rel=5e-4)  # float32 in NCCL: 0.035 % at 8 GiB


def test_recorded_nccl_log_broadcast_two_ranks() -> None:
    """tests/data/nccl/tuning-2.29.log (NCCL 2.29.7, 2 ranks over sockets): its table prints
    Ring LL 9.3 us / 1.2 GB/s, LL128 18.0 / 0 (off: no NVLink), Simple 22.4 / 2.4 - one network
    hop over one ring (sameChannels) - and picks Simple on 1, 2, then 4 channels from 32 KiB."""
    g = Graph(4, 0.6, 0.6, same_channels=True)
    c = Comm(2, 2, {"Ring": g, "Tree": g}, intra="pci")
    assert [round(latency(c, "broadcast", "Ring", p), 1) for p in ("LL", "Simple")] == [9.3, 22.4]
    assert [bandwidth(c, "broadcast", "Ring", p) for p in ("LL", "LL128", "Simple")] == \
        pytest.approx([1.2, 0.0, 2.4])
    got = [decide(c, "broadcast", n) for n in (32768, 65536, 131072, 134217728)]
    assert [(d.algorithm, d.protocol, d.channels) for d in got if d] == [
        ("Ring", "Simple", 1), ("Ring", "Simple", 2), ("Ring", "Simple", 4), ("Ring", "Simple", 4)]
