"""CPU tests of everything the GPU transports share: byte-level step plans and IPC pulls executed
on numpy buffers, bfloat16 bits, GPU placement rules, CUDA-aware detection, dtype support at
scenario load time, and the device record fields. No GPU, no CuPy needed."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from mpi4py import MPI

from bench.collective.scenario import ScenarioError, load_scenario, parse_scenario
from bench.measure import data, devicestats
from bench.measure.harness import SENTINEL
from kernels import collective as coll
from kernels.algorithm import Algorithm, Problem, algorithms_of, get_algorithm
from kernels.ops import HOST_DTYPE, ITEMSIZE
from kernels.topology import Topology
from kernels.transports import TRANSPORTS
from kernels.transports.gpu import from_storage, to_storage
from kernels.transports.gpu_plan import (
    DEVICE_DTYPES,
    CudaAwareness,
    bf16_bits_to_f32,
    bf16_kernel_body,
    bf16_reduce_into,
    cuda_awareness,
    device_for,
    f32_to_bf16_bits,
    logical_dtype,
    match_pulls,
    plan_steps,
    query_cuda_support,
    send_lists,
    shared_gpu_reason,
    storage_dtype,
)
from tests.conftest import ROOT

SCHEDULED = [a for c in coll.names() for a in algorithms_of(c) if not a.is_vendor]
IDS = [f"{a.collective}/{a.name}" for a in SCHEDULED]


def _reduce(dst: np.ndarray, src: np.ndarray, op: str, dtype: str) -> None:
    if dtype == "bfloat16":
        bf16_reduce_into(dst, src, op)
    else:
        {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op](
            dst, src, out=dst)


def _run_pulls(p: int, rpn: int, alg: Algorithm, per: int, dtype: str, op: str,
               order: list[int]) -> int:
    """Execute every rank's compiled IPC pull plan on numpy workspaces, step by step, ranks in
    ``order`` and in place (no snapshot: the plans must not depend on the order): pulls, then
    reductions, then local copies, as the executor does; returns the wrong output elements
    summed over ranks (the output starts as the harness's sentinel)."""
    spec = coll.resolve(alg.collective)
    topo = Topology.blocks(p, rpn)
    item = ITEMSIZE[dtype]
    store = storage_dtype(dtype)
    n = per * p if spec.divides else per
    root = p - 1 if spec.rooted else 0
    op = op if spec.reduces else "none"
    problem = Problem(topo, n, item, alg.collective, root)
    scheds = alg.schedules(problem)
    steps = [plan_steps(s, item, keep_idle=True) for s in scheds]
    sends = [send_lists(st) for st in steps]
    pulls = [match_pulls(r, steps[r], sends) for r in range(p)]
    bufs, layouts = [], [problem.layout(r) for r in range(p)]
    for r, lay in enumerate(layouts):
        host = np.full(lay.space, SENTINEL, dtype=HOST_DTYPE[dtype])
        if lay.inp is not None and spec.has_input(r, root):
            host[lay.inp.start:lay.inp.stop] = data.fill(r, p, spec.in_count(n, p), op)
        bufs.append(to_storage(host, dtype))
    scratch = [np.zeros(lay.space, dtype=store) for lay in layouts]
    raw = [b.view(np.uint8) for b in bufs]
    raw_s = [s.view(np.uint8) for s in scratch]
    for i in range(len(steps[0])):
        for r in order:
            for x in pulls[r][i]:
                dst = (raw_s if x.into_scratch else raw)[r]
                dst[x.dst_offset:x.dst_offset + x.nbytes] = \
                    raw[x.peer][x.src_offset:x.src_offset + x.nbytes]
        for r in order:
            for a, b in steps[r][i].reduces:
                _reduce(bufs[r][a:b], scratch[r][a:b], op, dtype)
            for src, dst, k in steps[r][i].copies:
                bufs[r][dst:dst + k] = bufs[r][src:src + k].copy()
    wrong = 0
    for r, lay in enumerate(layouts):
        out = from_storage(bufs[r], dtype)[lay.out.start:lay.out.stop] if lay.out else None
        wrong += data.count_wrong_output(out, spec, n, p, r, root, op, dtype)
    return wrong


@pytest.mark.parametrize("alg", SCHEDULED, ids=IDS)
@pytest.mark.parametrize("p,rpn", [(1, 1), (2, 1), (3, 3), (4, 2), (5, 5), (8, 4)])
def test_ipc_pull_plans_compute_their_collective(alg: Algorithm, p: int, rpn: int) -> None:
    ops = ["sum", "prod", "max", "min"] if coll.resolve(alg.collective).reduces else ["none"]
    for dtype, op, count in itertools.product(["float32", "int64", "float16", "bfloat16"], ops,
                                              [1, p + 1, 97]):
        for order in (list(range(p)), list(range(p))[::-1]):
            assert _run_pulls(p, rpn, alg, count, dtype, op, order) == 0, (dtype, op, count)


@pytest.mark.parametrize("alg", SCHEDULED, ids=IDS)
def test_step_plans_are_bytes_of_the_schedule(alg: Algorithm) -> None:
    topo = Topology.blocks(6, 3)
    n = 48 if coll.resolve(alg.collective).divides else 50
    for r, sched in enumerate(alg.schedules(Problem(topo, n, 2, alg.collective))):
        busy = plan_steps(sched, 2)
        every = plan_steps(sched, 2, keep_idle=True)
        assert len(every) == len(sched.steps)
        assert busy == [s for s in every if not s.idle]
        for st, plan in zip(sched.steps, every):
            st = st.nonempty()
            assert [(x.peer, x.offset // 2, (x.offset + x.nbytes) // 2) for x in plan.sends] == \
                [(s.peer, s.range.start, s.range.stop) for s in st.sends]
            assert [x.into_scratch for x in plan.recvs] == [v.reduce for v in st.recvs]
            assert list(plan.reduces) == [(v.range.start, v.range.stop) for v in st.recvs
                                          if v.reduce], r
            assert list(plan.copies) == [(c.src.start, c.dst.start, c.dst.size)
                                         for c in st.copies], r


def test_match_pulls_names_an_unmatched_receive() -> None:
    sched = get_algorithm("all_reduce", "ring").schedules(Problem(Topology.flat(2), 8, 4))
    steps = [plan_steps(s, 4, keep_idle=True) for s in sched]
    sends = [send_lists(st) for st in steps]
    sends[1][0] = []  # rank 1 forgets its first send
    with pytest.raises(ValueError, match=r"step 0: rank 0's receive #0 from rank 1 .* no matching"):
        match_pulls(0, steps[0], sends)


def test_bfloat16_bits_round_trip_and_round_to_nearest_even() -> None:
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    finite = bits[np.isfinite(bf16_bits_to_f32(bits))]
    assert np.array_equal(f32_to_bf16_bits(bf16_bits_to_f32(finite)), finite)
    one = np.float32(1.0)
    ulp = np.float32(2.0**-7)  # bfloat16 spacing at 1.0
    x = np.array([one + ulp / 2, one + ulp + ulp / 2, one + ulp / 4, -3.0, 255.0, 257.0],
                 dtype=np.float32)
    got = bf16_bits_to_f32(f32_to_bf16_bits(x))
    assert got.tolist() == [1.0, 1.0 + 2 * 2.0**-7, 1.0, -3.0, 255.0, 256.0]


def test_bfloat16_reduction_matches_float_math_on_small_integers() -> None:
    a = np.arange(-60, 60, dtype=np.float32)
    b = (np.arange(120, dtype=np.float32) % 7) - 3
    for op, ref in [("sum", a + b), ("prod", a * b), ("max", np.maximum(a, b)),
                    ("min", np.minimum(a, b))]:
        dst = f32_to_bf16_bits(a)
        bf16_reduce_into(dst, f32_to_bf16_bits(b), op)
        assert np.array_equal(bf16_bits_to_f32(dst), ref), op
    body = bf16_kernel_body("max")
    assert "fmaxf(a, b)" in body and body.rstrip().endswith("dst = (unsigned short)(u >> 16);")


def test_storage_dtypes() -> None:
    assert storage_dtype("bfloat16") == "uint16" and logical_dtype("uint16") == "bfloat16"
    for d in DEVICE_DTYPES:
        assert logical_dtype(storage_dtype(d)) == d
        assert np.dtype(storage_dtype(d)).itemsize == ITEMSIZE[d]
        host = np.array([1, -3, 7], dtype=HOST_DTYPE[d])
        assert np.array_equal(from_storage(to_storage(host, d), d), host)


def test_device_placement_and_nccl_sharing_rule() -> None:
    assert [device_for(r, 4) for r in range(6)] == [0, 1, 2, 3, 0, 1]
    with pytest.raises(ValueError, match="no CUDA device"):
        device_for(0, 0)
    assert shared_gpu_reason(["0000:1b:00.0", "0000:1c:00.0"], "h") is None
    msg = shared_gpu_reason(["0000:1b:00.0"] * 2, "node7")
    assert msg is not None and "\n" not in msg
    assert msg.startswith("2 ranks on node7 but 1 GPU(s) (2 ranks share GPU 0000:1b:00.0)")
    assert "NCCL needs one GPU per rank" in msg and "mpi-cupy" in msg


def test_cuda_awareness_detection_order() -> None:
    assert cuda_awareness({}, None) == CudaAwareness(
        False, "no MPIX_Query_cuda_support and no GPU-support variable set")
    assert cuda_awareness({}, 1).aware and not cuda_awareness({}, 0).aware
    assert cuda_awareness({"MPICH_GPU_SUPPORT_ENABLED": "1"}, None).aware
    assert not cuda_awareness({"MPICH_GPU_SUPPORT_ENABLED": "1"}, 0).aware  # library's word
    forced = cuda_awareness({"COMMBENCH_MPI_CUDA_AWARE": "1"}, 0)
    assert forced.aware and forced.how == "COMMBENCH_MPI_CUDA_AWARE=1"


def test_query_cuda_support_reads_this_libmpi() -> None:
    if "MPICH" not in MPI.Get_library_version():
        pytest.skip("the query is checked against the MPICH wheel")
    assert query_cuda_support() == 0  # the mpich wheel is built without CUDA


def test_bfloat16_only_where_a_transport_declares_it() -> None:
    base = {"sizes": "1KiB", "algorithms": ["ring"], "dtypes": ["float32", "bfloat16"]}
    for t in ("mpi", "torch"):
        with pytest.raises(ScenarioError) as e:
            parse_scenario({**base, "transports": [t]}, "s.yaml")
        assert str(e.value) == (f"s.yaml: dtypes: bfloat16 is not supported by transport {t}; "
                                "bfloat16 runs on nccl, nccl-graph, mpi-cupy, cuda-ipc")
    for t in ("nccl", "nccl-graph", "mpi-cupy", "cuda-ipc"):
        assert parse_scenario({**base, "transports": [t]}).dtypes == ["float32", "bfloat16"]
        assert set(TRANSPORTS.get(t).dtypes) == set(DEVICE_DTYPES)
    with pytest.raises(ScenarioError, match="dtypes: unknown dtype 'uint16'"):
        parse_scenario({**base, "dtypes": ["uint16"], "transports": ["nccl"]})


@pytest.mark.parametrize("name", ["gpu-node", "gpu-cluster"])
def test_gpu_scenarios_load(name: str) -> None:
    sc = load_scenario(ROOT / "scenarios" / f"{name}.yaml")
    assert {"nccl", "mpi-cupy"} <= set(sc.transports) and "native" in sc.algorithms_for("all_gather")
    assert max(sc.byte_sizes()) == 1 << 30 and min(sc.byte_sizes()) == 8


def test_memory_fields_from_three_snapshots() -> None:
    snap = {"held": 100, "pool_reserved": 4096, "device_used": 5000, "device_total": 80000,
            "transport": 700}
    compiled = {**snap, "held": 100 + 2 * 4096, "device_used": 9000}
    after = {**snap, "held": 100 + 2 * 4096 + 64, "device_used": 8000, "pool_reserved": 16384}
    assert devicestats.memory_fields(snap, compiled, after) == {
        "gpu_mem_case_bytes": 8192, "gpu_mem_held_bytes": 8356,
        "gpu_mem_pool_reserved_bytes": 16384, "gpu_mem_transport_bytes": 700,
        "gpu_mem_device_used_bytes": 9000, "gpu_mem_device_total_bytes": 80000}


def test_device_record_fields_on_one_rank() -> None:
    fields = devicestats.record_fields(MPI.COMM_SELF, [3.0, 1.0, 2.0], {"gpu_mem_case_bytes": 8})
    assert fields["device_time_us_median"] == 2.0 and fields["device_time_us_min"] == 1.0
    assert fields["device_samples_us"] == [3.0, 1.0, 2.0] and fields["gpu_mem_case_bytes"] == 8
    assert devicestats.record_fields(MPI.COMM_SELF, None, None) == {}
    assert not devicestats.has_clock(object()) and devicestats.memory_of(object()) is None
