"""Cases: one (collective, algorithm, size, dtype, op, transport, world) point of a sweep, in size
groups whose algorithms run back to back. Sizes round down to whole elements (whole blocks of p
for collectives that divide, nccl-tests' rule); skipped and merged sizes are said in a note."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from bench.collective.scenario import CollectiveScenario, var_refusal
from bench.collective.variants import Settings, runs_in
from bench.measure.case import Group
from bench.units import format_size
from kernels.algorithm import VENDOR, VENDOR_INPLACE
from kernels.collective import Collective, resolve
from kernels.ops import ITEMSIZE
from kernels.transports import TRANSPORTS


def groups(scenario: CollectiveScenario, world: int, ranks_per_node: int,
           notes: list[str] | None = None,
           jobs: tuple[Settings, ...] | None = None) -> Iterator[Group]:
    """Every group for one world size: per collective, per (transport, dtype, op), small sizes
    first. Skipped and merged sizes are appended to ``notes`` (one line each). ``jobs``: only the
    algorithms that run in jobs of these environments (:mod:`bench.collective.variants`)."""
    variants = scenario.variants()
    for collective in scenario.collectives:
        spec = resolve(collective)
        for transport, dtype, op in itertools.product(scenario.transports, scenario.dtypes,
                                                      scenario.ops_for(collective)):
            algorithms = runnable(spec, transport, scenario.algorithms_for(collective), notes,
                                  scenario)
            if jobs is not None:
                algorithms = tuple(a for a in algorithms
                                   if any(runs_in(a, s, variants) for s in jobs))
                if not algorithms:
                    continue
            bases = tuple((a, variants[a].of) for a in algorithms if a in variants)
            if scenario.emulate is not None:  # vendor calls cannot be emulated: left out, noted
                algorithms, lines = scenario.emulate.schedules_only(spec.name, algorithms)
                for line in lines:
                    _note(notes, line)
                if not algorithms:
                    continue
            seen: dict[int, int] = {}
            for requested in scenario.byte_sizes():
                count = spec.round_count(requested // ITEMSIZE[dtype], world)
                if count < 1:
                    _note(notes, f"{collective} {dtype} p={world}: {format_size(requested)} skipped "
                                 f"(less than {'p elements' if spec.divides else 'one element'})")
                    continue
                if count in seen:
                    _note(notes, f"{collective} {dtype} p={world}: {format_size(requested)} rounds to "
                                 f"{count * ITEMSIZE[dtype]} B, measured once with "
                                 f"{format_size(seen[count])}")
                    continue
                seen[count] = requested
                yield Group(spec.key, transport, world, ranks_per_node, count * ITEMSIZE[dtype],
                            count, dtype, op, algorithms, scenario.root if spec.rooted else 0,
                            bases)


def runnable(spec: Collective, transport: str, algorithms: tuple[str, ...],
             notes: list[str] | None, scenario: CollectiveScenario | None = None) -> tuple[str, ...]:
    """``algorithms`` less the vendor calls ``spec`` does not declare for this transport's family
    (e.g. no MPI in-place reduce_scatter in NCCL's layout) and the variants of ``scenario`` whose
    settings mean nothing there, each left out with a note."""
    family = TRANSPORTS.get(transport).family
    calls = {VENDOR: spec.vendor, VENDOR_INPLACE: spec.vendor_inplace}
    variants = scenario.variants() if scenario is not None else {}
    out = []
    for name in algorithms:
        why = None
        if name in variants:
            why = var_refusal(variants[name], spec, transport)
        elif name in calls and family not in calls[name]:
            why = f"no {family} vendor call declared (kernels/collectives/{spec.name}.py)"
        if why is None:
            out.append(name)
        else:
            _note(notes, f"{spec.name} {name} on {transport}: {why}; left out")
    return tuple(out)


def _note(notes: list[str] | None, line: str) -> None:
    if notes is not None and line not in notes:
        notes.append(line)
