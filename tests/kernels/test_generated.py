"""An algorithm's build is its plain statement; where it also ships a numpy generator (the
evaluator's fast path, ``Shape.generate``), the generator is the build compiled, array by array,
for every world size to 12 on every even node shape, on uneven and cyclic nodes, at several
counts and roots. The registry is iterated: a generator added anywhere is covered."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from kernels import collective as coll
from kernels.algorithm import Algorithm, Problem, algorithms_of, get_algorithm
from kernels.algorithms.all_reduce import double_tree, tree
from kernels.compiled import Compiled, compile_schedules
from kernels.phases import node_order
from kernels.topology import Topology

GENERATED = [a for c in coll.names() for a in algorithms_of(c)
             if a.shape is not None and a.shape.generate is not None]
UNEVEN = [(0, 0, 0, 1, 1), (0, 1, 0, 1, 0, 1), (0, 0, 1, 2, 2, 2, 1), (1, 0, 1, 0),
          (0, 0, 1, 2, 2, 3, 4, 4, 5)]


def _topologies() -> list[Topology]:
    even = [Topology.blocks(p, rpn) for p in range(1, 13) for rpn in range(1, p + 1)
            if p % rpn == 0]
    return even + [Topology(node_of) for node_of in UNEVEN]


def _same(alg: Algorithm, top: Topology, n: int, root: int) -> None:
    assert alg.shape is not None and alg.shape.generate is not None
    real = Problem(top, n, 4, alg.collective, root)
    sym = Problem(top, alg.shape.count(real), alg.shape.itemsize(real), alg.collective, root)
    try:
        built = alg.schedules(sym)
    except ValueError as e:  # the algorithm needs other nodes: so does its generator
        with pytest.raises(ValueError, match=r"node|topology"):
            alg.shape.generate(sym)
        assert "node" in str(e) or "topology" in str(e)
        return
    _equal(compile_schedules(built, sym.count, hot=False), alg.shape.generate(sym),
           (alg.name, top.world, top.node_of, n, root))


def _equal(ref: Compiled, got: Compiled, where: tuple[object, ...]) -> None:
    assert (got.world, got.k, len(got.steps)) == (ref.world, ref.k, len(ref.steps)), where
    for g, r in zip(got.steps, ref.steps):
        for f in fields(r):
            a, b = getattr(r, f.name), getattr(g, f.name)
            assert a.dtype == b.dtype and np.array_equal(a, b), (*where, f.name)


@pytest.mark.parametrize("alg", GENERATED, ids=[f"{a.collective}/{a.name}" for a in GENERATED])
def test_the_generator_is_the_build(alg: Algorithm) -> None:
    spec = coll.resolve(alg.collective)
    for top in _topologies():
        p = top.world
        roots = sorted({0, p - 1}) if spec.rooted else [0]
        for n in sorted({spec.round_count(x * p, p) for x in (1, 7, 1 << 20)}):
            for root in roots:
                _same(alg, top, n, root)


@pytest.mark.parametrize("module", [tree, double_tree], ids=["tree", "double_tree"])
def test_the_trees_generated_pipelines_are_the_builds(module: object) -> None:
    """tree and double_tree price by their closed form's generated pipeline (``_generated``,
    numpy): it is their build compiled, for 2..12 ranks on every node shape and 1 to 16 chunks."""
    name = module.__name__.rsplit(".", 1)[1]  # type: ignore[attr-defined]
    alg = get_algorithm("all_reduce", name)
    assert alg.shape is not None
    for top in _topologies():
        for n in (1, 300_000, 1 << 22):  # k = 1, a few, the most chunks
            real = Problem(top, n, 4, "all_reduce", 0)
            sym = Problem(top, alg.shape.count(real), alg.shape.itemsize(real), "all_reduce", 0)
            if top.world > 1:
                k = module.num_chunks(n, 4)  # type: ignore[attr-defined]
                _equal(compile_schedules(alg.schedules(sym), sym.count, hot=False),
                       module._generated(tuple(node_order(top)), k),  # type: ignore[attr-defined]
                       (name, top.node_of, n))
