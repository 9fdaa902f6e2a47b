"""Benchmark: commbench's training wrapper against a bare loop of the same strategy (DDP).

    .venv/bin/python -m torch.distributed.run --standalone --nproc-per-node 2 \\
        -m benchmarks.training_overhead [--model gpt-tiny] [--steps 40] [--blocks 6]

In one job, alternating blocks (so machine drift hits both):
- ``commbench``: the registered ``ddp`` strategy timed by :func:`bench.training.measure.run_case`
  (what ``commbench run`` records): median of the per-step max over ranks;
- ``bare, same clock``: a hand-written DDP step on pre-sliced tensors, timed the same way (barrier,
  sync, clock per step): isolates what the strategy wrapper costs;
- ``bare, free-running``: the same bare step, ``steps`` in a row with no per-step barrier, block
  wall time / steps (max over ranks): what a training script without any harness sees.
Prints the median step time of each and commbench's ratio to both (target <= 1.03).
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from bench.argtypes import OneLineParser, positive_int
from bench.models import model_spec
from bench.training.distenv import init_from_env
from bench.training.measure import Protocol, run_case
from bench.training.scenario import StrategySpec
from bench.training.strategy import TrainContext, Trainer, strategies
from benchmarks import results

SEED, LR = 1234, 1e-3


class BareDDP(Trainer):
    """DDP + Adam on tensors sliced once, outside the timed step."""

    def __init__(self, ctx: TrainContext, batch_size: int) -> None:
        torch.manual_seed(SEED)
        self.model = DDP(ctx.model.build())
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR, foreach=False)
        self.loss_fn = ctx.model.loss
        self.rank, self.b = ctx.rank, batch_size
        self.dp_degree, self.replica = ctx.world, ctx.rank  # run_case sizes the global batch so

    def slice(self, batch: object) -> tuple[torch.Tensor, torch.Tensor]:
        lo, hi = self.rank * self.b, (self.rank + 1) * self.b
        return batch.inputs[lo:hi], batch.targets[lo:hi]  # type: ignore[attr-defined]

    def modules(self) -> list[torch.nn.Module]:
        return [self.model.module]

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.opt]

    def step(self, batch: object) -> None:
        x, y = self.slice(batch)
        self.opt.zero_grad(set_to_none=True)
        self.loss_fn(self.model(x), y).backward()
        self.opt.step()


def free_running(bare: BareDDP, model: object, steps: int, batch_size: int, world: int) -> float:
    batches = [bare.slice(model.batch(batch_size * world, s, SEED)) for s in range(steps)]  # type: ignore[attr-defined]
    dist.barrier()
    t0 = time.perf_counter_ns()
    for x, y in batches:
        bare.opt.zero_grad(set_to_none=True)
        bare.loss_fn(bare.model(x), y).backward()
        bare.opt.step()
    dist.barrier()
    per = torch.tensor([(time.perf_counter_ns() - t0) / 1e6 / steps], dtype=torch.float64)
    dist.all_reduce(per, op=dist.ReduceOp.MAX)
    return float(per.item())


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt-tiny")
    ap.add_argument("--steps", type=positive_int, default=40)
    ap.add_argument("--blocks", type=positive_int, default=6)
    ap.add_argument("--batch-size", type=positive_int, default=8)
    args = ap.parse_args()
    device, backend = init_from_env("gloo", 600)
    rank, world = dist.get_rank(), dist.get_world_size()
    spec = model_spec(args.model)
    ctx = TrainContext(StrategySpec(name="ddp"), spec, rank, world, device, backend, SEED, LR)
    ours = strategies().get("ddp").build(ctx)
    bare = BareDDP(ctx, args.batch_size)
    proto = Protocol(warmup=2, steps=args.steps, batch_size=args.batch_size, seed=SEED)
    got: dict[str, list[float]] = {"commbench": [], "bare, same clock": [], "bare, free-running": []}
    for block in range(args.blocks):
        order = [ours, bare] if block % 2 == 0 else [bare, ours]
        for trainer in order:
            key = "commbench" if trainer is ours else "bare, same clock"
            got[key] += run_case(trainer, spec, proto, device).samples_ms
        got["bare, free-running"].append(free_running(bare, spec, args.steps, args.batch_size, world))
    if rank == 0:
        med = {k: statistics.median(v) for k, v in got.items()}
        print(f"# {args.model}, ddp, {world} ranks ({backend}), {args.blocks} alternating blocks of "
              f"{args.steps} steps; median step ms")
        for k, v in med.items():
            print(f"{k:>20} {v:9.3f} ms")
        for k in ("bare, same clock", "bare, free-running"):
            print(f"commbench / {k}: {med['commbench'] / med[k]:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
