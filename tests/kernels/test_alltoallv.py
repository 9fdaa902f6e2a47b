"""alltoallv: count matrices exact and deterministic, every algorithm and the vendor calls'
counts and displacements exact at p = 1..8 on uniform, Zipf, one-hot and all-zero-row matrices in
five dtypes (in process: schedules executed on numpy buffers, the vendor calls against a fake
communicator), bytes per rank equal to the closed form; one real mpiexec run at p = 4."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from bench.measure import data
from kernels import collective as coll
from kernels import counts
from kernels.algorithm import Problem, algorithms_of
from kernels.bytecount import bytes_sent
from kernels.collective import VendorArgs
from kernels.collectives.alltoallv import plan, sent_elements
from kernels.ops import HOST_DTYPE
from kernels.registry import UnknownName
from kernels.schedule import Schedule
from kernels.topology import Topology
from tests.conftest import ROOT, run_mpi
from tests.mpi.exact import combos
from tests.mpi.exact import counts as counts_of


def matrix(collective: str, n: int, p: int) -> np.ndarray:
    """The count matrix of ``alltoallv(...)`` for n at p ranks (elements; read-only)."""
    return plan(Problem(Topology.flat(p), n, 1, collective)).c


MATRICES = ("", "(zipf,s=1.2,seed=3)", "(hot,fraction=1.0,seed=1)", "(zero_rows,rows=2,seed=5)")
DTYPES = ("float16", "bfloat16", "float32", "float64", "int32")
SCHEDULED = [a for a in algorithms_of("alltoallv") if not a.is_vendor]


def _topology(p: int) -> Topology:
    return Topology.blocks(p, 2) if p % 2 == 0 and p > 2 else Topology.flat(p)


def _inputs(pr: Problem, dtype: str) -> list[np.ndarray]:
    out = []
    for r in range(pr.world):
        buf = np.full(pr.space, -1, dtype=HOST_DTYPE[dtype])
        inp = pr.layout(r).inp
        buf[inp.start:inp.stop] = data.fill(r, pr.world, inp.size, "none")
        out.append(buf)
    return out


def _execute(pr: Problem, schedules: list[Schedule], dtype: str) -> list[np.ndarray]:
    """The schedules run on numpy workspaces as every executor runs them: sends read the state
    at the step's start, receives land, then local copies."""
    bufs = _inputs(pr, dtype)
    for i in range(len(schedules[0].steps)):
        steps = [s.steps[i] for s in schedules]
        inflight: dict[tuple[int, int], list[np.ndarray]] = {}
        for src, st in enumerate(steps):
            for s in st.sends:
                inflight.setdefault((src, s.peer), []).append(bufs[src][s.range.start:s.range.stop].copy())
        for dst, st in enumerate(steps):
            for rv in st.recvs:
                bufs[dst][rv.range.start:rv.range.stop] = inflight[(rv.peer, dst)].pop(0)
            for c in st.copies:
                bufs[dst][c.dst.start:c.dst.stop] = bufs[dst][c.src.start:c.src.stop].copy()
    return bufs


def _wrong(pr: Problem, bufs: list[np.ndarray], dtype: str, separate: bool = False) -> int:
    spec, total = pr.spec, 0
    for r, buf in enumerate(bufs):
        out = spec.layout(pr.count, pr.world, r, separate=separate).out
        total += data.count_wrong_output(buf[out.start:out.stop], spec, pr.count, pr.world, r, 0,
                                         "none", dtype)
    return total


class _FakeMpi:
    """MPI_Alltoallv among p in-process ranks: each rank's call is recorded, the last one
    performs the exchange (checking that every pair agrees on the count)."""

    def __init__(self, p: int) -> None:
        self.p, self.calls = p, {}

    def rank(self, r: int) -> SimpleNamespace:
        return SimpleNamespace(Alltoallv=lambda s, d: self._call(r, s, d))

    def _call(self, r: int, send: list, recv: list) -> None:
        self.calls[r] = (send, recv)
        if len(self.calls) < self.p:
            return
        for dst, (_, (rbuf, (rc, rd))) in self.calls.items():
            for src, ((sbuf, (sc, sd)), _) in self.calls.items():
                assert sc[dst] == rc[src], (src, dst)
                rbuf[rd[src]:rd[src] + rc[src]] = sbuf[sd[dst]:sd[dst] + sc[dst]]


def test_every_matrix_is_scaled_to_its_busiest_line_deterministically() -> None:
    kinds = ["uniform", "distance", "distance,spread=0.3", "zipf,s=2", "hot", "hot,peer=1",
             "zero_rows,rows=3", "explicit,rows=0 5 1/2 0 0/1 1 9"]
    for p in range(1, 9):
        for text in kinds:
            if (text.startswith("explicit") and p != 3) or (text == "hot,peer=1" and p < 2):
                continue
            for n in (0, 1, 5, 1000, 123_457):
                c = counts.matrix(text, n, p)
                assert c.shape == (p, p) and c.min() >= 0 and counts.busiest(c) == n, (text, p, n)
                assert np.array_equal(c, counts.matrix(counts.CountSpec.parse(text).text, n, p))
    u = counts.matrix("uniform", 10, 4)
    assert (u.sum(axis=0) == 10).all() and (u.sum(axis=1) == 10).all()
    assert not np.array_equal(counts.matrix("zipf,seed=1", 999, 8), counts.matrix("zipf,seed=2", 999, 8))
    z = counts.matrix("zero_rows,rows=3,seed=4", 64, 8)
    assert (z.sum(axis=1) == 0).sum() == 3 and counts.busiest(z) == 64
    h = counts.matrix("hot,fraction=1.0,peer=2", 40, 4)  # every rank sends all to rank 2
    assert h.tolist() == [[0, 0, 10, 0]] * 4
    d = counts.matrix("distance", 60, 4)  # nccl-tests' default: weight by distance 0..p-1
    assert d[0].tolist() == [0, 10, 20, 30] and (d.sum(axis=0) == 60).all()


def test_routing_trace_becomes_counts(tmp_path) -> None:
    tokens = [[0, 1, 1, 3], [2, 2, 2, 0], [3, 3, 3, 3]]  # 6 experts over 3 ranks: 2 per rank
    with pytest.raises(ValueError, match="multiple of the ranks"):
        counts.counts_from_routing(tokens, 4)
    tokens = [[0, 1, 1, 5], [2, 2, 3, 0], [5, 4, 5, 4]]
    got = counts.counts_from_routing(tokens, 6)
    assert got.tolist() == [[3, 0, 1], [1, 3, 0], [0, 0, 4]]
    f = tmp_path / "route.json"
    f.write_text(json.dumps({"experts": 6, "tokens": tokens}))
    assert counts.matrix(f"trace,path={f}", 10, 3).tolist() == (2 * got).tolist()  # busiest: 5


def test_bad_matrices_fail_in_one_line() -> None:
    for bad, why in [("alltoallv(nope)", "unknown count matrix kind"),
                     ("alltoallv(zipf,q=1)", "bad parameter"),
                     ("alltoallv(zipf,s=x)", "not a float"),
                     ("alltoallv(zipf", "closing"),
                     ("alltoall(zipf)", "takes no arguments")]:
        with pytest.raises(UnknownName, match=why):
            coll.resolve(bad)
    with pytest.raises(ValueError, match="all zero"):
        counts.matrix("explicit,rows=0 0/0 0", 4, 2)
    with pytest.raises(ValueError, match="not 2 x 2"):
        counts.matrix("explicit,rows=1 2", 4, 2)


def test_keys_round_trip() -> None:
    c = coll.resolve("all_to_allv( zipf, seed=3 ,s=1.2)")
    assert c.name == "alltoallv" and c.key == "alltoallv(zipf,s=1.2,seed=3)"
    assert coll.resolve(c.key) is c and coll.canonical("alltoallv(uniform)") == "alltoallv"
    assert matrix(c.key, 100, 4).tolist() == counts.matrix("zipf,seed=3,s=1.2", 100, 4).tolist()


@pytest.mark.parametrize("p", range(1, 9))
def test_every_algorithm_exact_in_five_dtypes_and_bytes_equal_closed_form(p: int) -> None:
    """The dtype turns with each case (every dtype meets every algorithm and matrix over the
    world sizes): moving elements does not depend on it, the check's comparison does."""
    topo, k = _topology(p), p
    for m in MATRICES:
        for n in (1, 61):
            pr = Problem(topo, n, 4, "alltoallv" + m)
            c = plan(pr).c
            for alg in SCHEDULED:
                sch = alg.schedules(pr)
                for r in range(p):
                    sent = bytes_sent(sch[r], topo, 4).total
                    assert sent == 4 * alg.sent(pr, r), (alg.name, m, n, r)
                    if alg.name in ("direct", "pairwise"):
                        assert sent == 4 * sent_elements(c, r)
                dtype, k = DTYPES[k % len(DTYPES)], k + 1
                assert _wrong(pr, _execute(pr, sch, dtype), dtype) == 0, (alg.name, m, n, dtype)


@pytest.mark.parametrize("p", range(1, 9))
def test_native_counts_and_displacements_exact(p: int) -> None:
    spec_of = {m: coll.resolve("alltoallv" + m) for m in MATRICES}
    for m, spec in spec_of.items():
        for n in (1, 61):
            pr = Problem(Topology.flat(p), n, 4, spec.key)
            for dtype in DTYPES[n % 2::2]:
                bufs, world = _inputs(pr, dtype), _FakeMpi(p)
                runs = []
                for r in range(p):
                    lay = spec.layout(n, p, r, separate=True)
                    runs.append(spec.vendor["mpi"](VendorArgs(
                        world.rank(r), bufs[r][lay.inp.start:lay.inp.stop],
                        bufs[r][lay.out.start:lay.out.stop], None, 0, r, p, lay.count)))
                for run in runs:
                    run()
                assert _wrong(pr, bufs, dtype, separate=True) == 0, (m, n, dtype)


def test_nccl_grouped_calls_move_each_block_once() -> None:
    p, n, item = 4, 1000, 2
    spec = coll.resolve("alltoallv(hot,fraction=0.75,seed=1)")
    c, sent, got = matrix(spec.key, n, p), {}, {}
    for r in range(p):
        lay = spec.layout(n, p, r, separate=True)
        log: list[tuple[str, int, int, int]] = []
        comm = SimpleNamespace(send=lambda ptr, nb, t, q, s, log=log: log.append(("s", q, ptr, nb)),
                               recv=lambda ptr, nb, t, q, s, log=log: log.append(("r", q, ptr, nb)))
        nc = SimpleNamespace(groupStart=lambda: None, groupEnd=lambda: None, NCCL_INT8=7)
        view = SimpleNamespace(data=SimpleNamespace(ptr=0), itemsize=item)
        out = SimpleNamespace(data=SimpleNamespace(ptr=10**9), itemsize=item)
        spec.vendor["nccl"](VendorArgs(SimpleNamespace(comm=comm, nccl=nc, stream=0), view, out,
                                       None, 0, r, p, lay.count))()
        sent.update({(r, q): (ptr, nb) for k, q, ptr, nb in log if k == "s"})
        got.update({(q, r): (ptr - 10**9, nb) for k, q, ptr, nb in log if k == "r"})
    v = plan(Problem(Topology.flat(p), n, item, spec.key))
    assert {k: nb for k, (_, nb) in sent.items()} == {
        (s, d): int(c[s, d]) * item for s in range(p) for d in range(p) if c[s, d]}
    assert {k: nb for k, (_, nb) in got.items()} == {k: nb for k, (_, nb) in sent.items()}
    for (s, d), (off, _) in got.items():
        assert off == item * (v.recv(s, d).start - v.s_in)
        assert sent[(s, d)][0] == item * v.send(s, d).start


def test_a_misplaced_block_is_caught() -> None:
    pr = Problem(Topology.flat(4), 61, 4, "alltoallv(zipf,s=1.2,seed=3)")
    sch = SCHEDULED[0].schedules(pr)
    bufs = _execute(pr, sch, "float32")
    v = plan(pr)
    a, b = v.recv(0, 1), v.recv(2, 1)
    k = min(a.size, b.size)
    bufs[1][[*range(a.start, a.start + k), *range(b.start, b.start + k)]] = \
        bufs[1][[*range(b.start, b.start + k), *range(a.start, a.start + k)]]
    assert k > 0 and _wrong(pr, bufs, "float32") == 2 * k


@pytest.mark.slow
@pytest.mark.mpi
def test_real_ranks_p4_every_algorithm_and_native() -> None:
    """One launch at p = 4 on two virtual nodes (leader and rail cross them): two skewed matrices
    (uniform is in tests/mpi/exact.py's every-collective run), two dtypes, awkward counts."""
    keys = ["alltoallv(zipf,s=1.5,seed=2)", "alltoallv(zero_rows,rows=2)"]
    dtypes = ("float16", "int64")  # every dtype is checked in process above
    res = run_mpi(4, ROOT / "tests" / "mpi" / "exact.py", "mpi", "2", ";".join(keys),
                  ",".join(dtypes))
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["failures"] == []
    assert sorted({a.split("/")[1] for a in out["algorithms"]}) == [
        "direct", "leader", "native", "pairwise", "rail"]
    spec = coll.resolve(keys[0])
    assert out["checks"] == len(keys) * len(counts_of(spec, 4)) * 5 * len(combos(spec, dtypes, 4))


def test_the_example_scenario_runs_each_matrix_as_its_own_collective() -> None:
    from bench.argtypes import names
    from bench.collective.case import groups
    from bench.scenario_base import load_scenario

    assert names("alltoallv(zipf,s=1.2),all_reduce") == ["alltoallv(zipf,s=1.2)", "all_reduce"]
    sc = load_scenario(ROOT / "scenarios" / "alltoallv.yaml")
    keys = sorted({g.collective for g in groups(sc, 4, 2)})
    assert keys == sorted(coll.resolve(c).key for c in sc.collectives) and len(keys) == 5
    assert all(len(sc.algorithms_for(k)) == 5 for k in keys)  # native and the four schedules
