"""A schedule's cost-model job: built symbolically once per shape where an algorithm's shape is
known (:mod:`bench.costmodel.shapes`), else from the real schedule; evaluated by
:mod:`bench.costmodel.evaluate`. Kept apart from :mod:`bench.costmodel.compiled`, which those two import."""

from __future__ import annotations

import numpy as np

import bench.costmodel.shapes  # noqa: F401 - fills SYMBOLIC
from bench.costmodel.compiled import SYMBOLIC, Compiled, compiled
from bench.costmodel.cost import Estimate
from bench.costmodel.evaluate import evaluate
from bench.costmodel.net import Net
from kernels.algorithm import Algorithm, Problem


def schedule_job(alg: Algorithm, problem: Problem) -> tuple[Compiled, np.ndarray | None, int]:
    """``alg``'s compiled schedule for ``problem``, its atoms (None: ``split(count, K)``) and
    the count to evaluate it with: built symbolically once per shape when :data:`SYMBOLIC`
    knows the algorithm, else from the real schedule (one atom per workspace element)."""
    sym = SYMBOLIC.get((problem.spec.name, alg.name))
    if sym is None:
        return compiled(alg, problem, problem.space), None, problem.space
    shape = Problem(problem.topology, sym.count(problem), sym.itemsize(problem),
                    problem.collective, problem.root)
    atoms = sym.atoms(problem, problem.count) if sym.atoms else None
    return compiled(alg, shape, shape.count), atoms, problem.count


def schedule_estimate(alg: Algorithm, problem: Problem, net: Net) -> Estimate:
    """Evaluate ``alg`` on ``problem`` (see :func:`schedule_job`)."""
    comp, atoms, count = schedule_job(alg, problem)
    return evaluate(comp, net, count, problem.itemsize, atoms)
