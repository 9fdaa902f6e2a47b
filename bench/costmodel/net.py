"""What a message costs on a placed job: its link class and the bandwidth it gets among the
messages of its step, the least over the resources it crosses (a rank's port, its share of the
node's NICs, the node's NICs, a leaf's uplink) of capacity / flows on it; docs/predict.md, "The
cost model". Cross-leaf (``spine``) messages cross NICs too, so they need the ``inter`` class as
well. A profile with a ``fabric`` refuses a topology that contradicts it (TopologyError)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.costmodel.model import CLASS_NAMES, INTER, INTRA, SPINE, Placed, TopologyError
from bench.costmodel.profile import Profile


class Net:
    def __init__(self, placed: Placed, profile: Profile) -> None:
        self.placed, self.profile = placed, profile
        nics, fab = placed.nics_per_node, profile.fabric
        if fab is not None and nics is not None and nics < fab.rails:
            raise TopologyError(f"topology {placed.cluster.spec!r}: nics={nics} is fewer than the "
                                f"fabric's {fab.rails} rails")
        self.mpi = profile.mpi
        self.nics = placed.nics_per_node or profile.nics_per_node
        used = placed.classes_used()
        need = [*used, "inter"] if "spine" in used and "inter" not in used else used
        links = {c: profile.link(c) for c in need}  # ProfileError names a missing class
        self.alpha = np.array([links[c].alpha if c in links else np.nan for c in CLASS_NAMES])
        self.beta = np.array([links[c].beta if c in links else np.nan for c in CLASS_NAMES])
        self.o, self.gamma, self.hot = profile.overhead, profile.gamma, profile.hot
        bw = profile.copy_bandwidth
        curve = profile.device.get("copy_bandwidth_curve") or ([[1.0, bw]] if bw else None)
        self._copy = np.log(np.asarray(curve, dtype=np.float64)).T if curve else None  # log n, bw
        self.node = placed.node_array
        self.leaf = np.asarray(placed.leaf_of, dtype=np.int64)[self.node]
        sizes = np.asarray(placed.node_sizes, dtype=np.float64)
        self.node_cap = self.nics * self.beta[INTER]
        self.rank_cap = (self.node_cap / np.minimum(sizes, self.nics))[self.node]
        self.up_cap = (np.asarray(placed.leaf_nodes, dtype=np.float64) * self.nics
                       * self.beta[SPINE] / placed.oversubscription)

    @property
    def world(self) -> int:
        return self.placed.world

    def cls(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Link class of messages a -> b (INTRA, INTER, SPINE)."""
        na, nb = self.node[a], self.node[b]
        return np.where(na == nb, INTRA, np.where(self.leaf[a] == self.leaf[b], INTER, SPINE))

    def rates(self, src: np.ndarray, dst: np.ndarray, cls: np.ndarray) -> np.ndarray:
        """Bandwidth of each message of one step (all of them concurrent)."""
        return self.rate(src, dst, cls, flows(src, dst, cls, self.placed, self.node, self.leaf))

    def rate(self, s: np.ndarray, d: np.ndarray, cls: np.ndarray,
             shared: tuple[np.ndarray, ...]) -> np.ndarray:
        """Bandwidth of each message s -> d, given how many flows share each resource (:func:`flows`)."""
        fin, out_s, in_d, nmax, up, down = shared
        cap = self.rank_cap
        r = np.minimum(np.minimum(cap[s] / out_s, cap[d] / in_d), self.node_cap / nmax)
        sp = cls == SPINE
        if sp.any():
            ls, ld = self.leaf[s], self.leaf[d]
            uplinks = np.minimum(self.up_cap[ls] / up, self.up_cap[ld] / down)
            r = np.where(sp, np.minimum(r, uplinks), r)
        return np.where(cls == INTRA, self.beta[INTRA] / fin, r)

    def protocol(self, nbytes: np.ndarray) -> np.ndarray | float:
        """What each message's MPI protocol adds (0 without the profile's ``mpi`` switch):
        the rendezvous handshake above the eager limit, the eager copy at or below it."""
        m = self.mpi
        if m is None:
            return 0.0
        return np.where(nbytes > m.eager_limit, m.rendezvous, m.eager_per_byte * nbytes)

    @property
    def copies_cost(self) -> bool:
        return self._copy is not None

    def copy_time(self, nbytes: Any) -> Any:
        """A local copy reads and writes every byte once, at the profile's copy curve at that size
        (log-log, flat beyond), else its memory bandwidth; free without either. Elementwise."""
        if self._copy is None:
            return 0.0 * nbytes
        n = np.asarray(nbytes, dtype=np.float64)
        bw = np.exp(np.interp(np.log(np.maximum(n, 1.0)), self._copy[0], self._copy[1]))
        t = 2.0 * n / bw
        return float(t) if np.ndim(t) == 0 else t


def flows(s: np.ndarray, d: np.ndarray, cls: np.ndarray, placed: Placed,
           node: np.ndarray, leaf: np.ndarray) -> tuple[np.ndarray, ...]:
    """How many of the step's messages share each resource of each message (1 where unused)."""
    p = placed.world
    ones = np.ones(s.shape, dtype=np.float64)
    i, x, sp = cls == INTRA, cls != INTRA, cls == SPINE
    fin, out_s, in_d, nmax, up, down = (ones.copy() for _ in range(6))
    if i.any():
        o, n = np.bincount(s[i], minlength=p), np.bincount(d[i], minlength=p)
        fin[i] = np.maximum(o[s[i]], n[d[i]])
    if x.any():
        o, n = np.bincount(s[x], minlength=p), np.bincount(d[x], minlength=p)
        out_s[x], in_d[x] = o[s[x]], n[d[x]]
        nn = placed.num_nodes
        no, ni = np.bincount(node[s[x]], minlength=nn), np.bincount(node[d[x]], minlength=nn)
        nmax[x] = np.maximum(no[node[s[x]]], ni[node[d[x]]])
    if sp.any():
        nl = placed.num_leaves
        u, w = np.bincount(leaf[s[sp]], minlength=nl), np.bincount(leaf[d[sp]], minlength=nl)
        up[sp], down[sp] = u[leaf[s[sp]]], w[leaf[d[sp]]]
    return fin, out_s, in_d, nmax, up, down
