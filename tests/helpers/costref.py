"""The cost model of :mod:`bench.costmodel.evaluate`, evaluated on every rank's real schedule
in plain Python, message by message: the tests' oracle for the product's one evaluator (the
semantics are stated there). Slow and obviously right, so nothing in the product uses it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from bench.costmodel.net import Net
from kernels.closed import INTRA, SPINE, Estimate
from kernels.compiled import add
from kernels.schedule import Schedule


def evaluate(schedules: Sequence[Schedule], net: Net, itemsize: int) -> Estimate:
    """Predicted time of these schedules (one per rank) on ``net``."""
    p = len(schedules)
    ready = [0.0] * p
    sent, inter = [0] * p, [0] * p
    written: list[list[tuple[int, int]]] = [[] for _ in range(p)]  # per rank, disjoint, sorted
    nsteps = len(schedules[0].steps) if schedules else 0
    for i in range(nsteps):
        msgs = []  # (src, dst, bytes, j)
        hot = []  # bytes of each message its sender wrote earlier in the call
        for s, sch in enumerate(schedules):
            j = 0
            for snd in sch.steps[i].sends:
                if snd.range.size:
                    j += 1
                    msgs.append((s, snd.peer, snd.range.size * itemsize, j))
                    hot.append(overlap(written[s], snd.range.start, snd.range.stop) * itemsize)
        rates = _rates(net, msgs)
        new = list(ready)
        for (s, d, nbytes, j), rate, h in zip(msgs, rates, hot):
            c = int(net.cls(s, d))
            done = (max(ready[s], ready[d]) + net.o * j + net.alpha[c] + nbytes / rate
                    + net.hot * h)
            new[s], new[d] = max(new[s], done), max(new[d], done)
            sent[s] += nbytes
            inter[s] += nbytes if c != INTRA else 0
        for r, sch in enumerate(schedules):
            st = sch.steps[i]
            reduced = sum(rv.range.size for rv in st.recvs if rv.reduce) * itemsize
            copied = sum(cp.dst.size for cp in st.copies) * itemsize
            new[r] += net.gamma * reduced + net.copy_time(copied)
            for lo, hi in [(rv.range.start, rv.range.stop) for rv in st.recvs] + [
                    (cp.dst.start, cp.dst.stop) for cp in st.copies]:
                add(written[r], lo, hi)
        ready = new
    return Estimate(max(ready) if ready else 0.0, nsteps, max(sent, default=0),
                    max(inter, default=0), "schedule")


def overlap(spans: list[tuple[int, int]], lo: int, hi: int) -> int:
    """Elements of [lo, hi) inside the sorted disjoint ``spans``."""
    return sum(max(0, min(hi, b) - max(lo, a)) for a, b in spans if a < hi and b > lo)


def _rates(net: Net, msgs: list[tuple[int, int, int, int]]) -> list[float]:
    """Each message's bandwidth: the least capacity / flows over the resources it crosses."""
    cls = [int(net.cls(s, d)) for s, d, _, _ in msgs]
    use: Counter[tuple[str, int]] = Counter()
    for (s, d, _, _), c in zip(msgs, cls):
        for key in _resources(net, s, d, c):
            use[key] += 1
    out = []
    for (s, d, _, _), c in zip(msgs, cls):
        out.append(min(_capacity(net, key) / use[key] for key in _resources(net, s, d, c)))
    return out


def _resources(net: Net, s: int, d: int, c: int) -> list[tuple[str, int]]:
    if c == INTRA:
        return [("port-out", s), ("port-in", d)]
    ns, nd = int(net.node[s]), int(net.node[d])
    keys = [("nic-out", s), ("nic-in", d), ("node-out", ns), ("node-in", nd)]
    if c == SPINE:
        keys += [("up", int(net.leaf[s])), ("down", int(net.leaf[d]))]
    return keys


def _capacity(net: Net, key: tuple[str, int]) -> float:
    kind, x = key
    if kind.startswith("port"):
        return float(net.beta[INTRA])
    if kind.startswith("nic"):
        return float(net.rank_cap[x])
    if kind.startswith("node"):
        return float(net.node_cap)
    return float(net.up_cap[x])
