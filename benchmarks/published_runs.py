"""Benchmark: ``advise`` held against published training runs (benchmarks/published_runs.yaml,
each with its paper and table): Megatron-LM's weak-scaling table (arXiv 2104.04473, Table 1)
and Llama 3 405B's layouts (arXiv 2407.21783, Table 4).

    .venv/bin/python -m benchmarks.published_runs [--keep 20] [--exhaustive-upto 256] [--only 1.7B,8192]

Per row: advise's predicted throughput of the **published layout** (its tensor, context,
pipeline and data degrees, the data strategy the run used: Megatron's plain all_reduce,
``ddp``, Llama 3's FSDP without resharding after forward, ``zero2`` (the YAML's ``llama3_data``); Megatron's
recomputation of every layer, Llama 3's where the memory model says it must; the
microbatches and schedule advise finds best for them) in TFLOP/s per GPU counted as the paper
counts them (Megatron's formula credits recomputation: advise's first choice, with or without
it, is credited the same FLOPs per sample, so TFLOP/s stay proportional to samples/s), its error
against the published figure, where it ranks in advise's own list (``rank`` a/b: among every
layout / among those the run's software runs: its data strategies, and recomputation where it
recomputed), advise's first choice, its
throughput and its margin over the published layout, and the search's wall and CPU time (pruned:
``--keep`` rows priced, search.py). Rows up to ``--exhaustive-upto`` GPUs are also searched
exhaustively and their first ``--keep`` rows compared. Target: within 15 % and in the top 5.
Where advise prefers another layout (its first choice, and its first among the layouts the run's
software runs), a ``why`` line gives the model's reason from the two priced steps: the term of
the step that differs most (compute, recompute, bubble, optimizer, exposed communication by
group), every term of both side by side (published / preferred, seconds) and their memory per
rank.

The software each paper ran is part of the profile: Megatron-LM of 2021 reduced gradients after
the backward pass (no overlap: ``overlaps_communication: false``) and materialized the
attention scores (``attention: materialized``) on a100-ib200; Llama 3 ran flash attention with
overlapped communication on h100-ib400 (400 Gb/s InfiniBand standing in for its 400 Gb/s
RoCE). Llama 3's 131K row runs context parallelism (bench/advise/comm.py, context_calls: the
paper's all-gather based CP over GQA's 8 key/value heads: ``context_parallel`` in its software,
so context degrees are searched for every Llama 3 row); Megatron-LM of 2021 had none.
Where no variant of the published degrees fits advise's memory model, the one nearest to fitting
(least memory) is priced anyway and marked (it is not in advise's list).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import yaml

from bench.argtypes import OneLineParser, name_list, nonneg_int, positive_int
from benchmarks import results

DATA = Path(__file__).with_name("published_runs.yaml")
A100, H100 = 312e12, 989e12
# Megatron-LM of 2021: scores materialized, gradients reduced after the backward pass, the
# vocabulary sharded over the tensor group (VocabParallelEmbedding since Shoeybi et al. 2019);
# sequence parallelism came later (Korthikanti et al. 2022); its fused QKV Linear, unfused QKV
# bias add and context copy, autograd's gradient accumulation and fp32 loss
# (bench/advise/software.py: fused_qkv, elementwise, autograd_accumulation, fp32_loss); its
# pipeline splits the layers evenly, the embedding on the first stage, the head on the last
# (pipeline_balance: layers), and sends each stage boundary 1/t per tensor rank, all-gathered
# after the receive (its scatter/gather optimization, arXiv 2104.04473 Section 4.1).
MEGATRON_SOFTWARE = MappingProxyType({"pipeline_balance": "layers",
                                      "pipeline_scatter_gather": True,
                                      "attention": "materialized",
                                      "overlaps_communication": False,
                                      "vocab_parallel": True, "elementwise": "megatron-2021",
                                      "fused_qkv": True, "autograd_accumulation": True,
                                      "fp32_loss": True})
# Llama 3 (arXiv 2407.21783, Section 3.3.2): tensor parallelism as Megatron-LM runs it, citing
# Korthikanti et al. 2022 (sequence parallelism), flash attention, overlapped communication, and
# its all-gather based context parallelism (the same section); "we proactively deallocate tensors
# that will not be used for future computation, including the input and output tensors of each
# pipeline stage" (deallocates_outputs); its block has no dropout (Table 3's architecture; Meta's
# reference llama/model.py has no dropout layer).
LLAMA3_SOFTWARE = MappingProxyType({"vocab_parallel": True, "sequence_parallel": True,
                                    "context_parallel": True, "dropout": False,
                                    "deallocates_outputs": True})
# Llama 3 (the same section, "Numerical stability"): "FP32 gradient accumulation during backward
# computation over multiple micro-batches and also reduce-scatter gradients in FP32 across data
# parallel workers in FSDP": 4-byte gradients, held (whole while they accumulate beside the
# pipeline, then their shards) and reduce-scattered, beside 16-bit parameters.
LLAMA3_GRAD_BYTES = 4
# Llama 3 405B's key/value heads (arXiv 2407.21783, Table 3: 128 attention heads, 8 key/value
# heads): what its context parallelism all-gathers (Section 3.3.2).
LLAMA3_KV_HEADS = 8
# Its block (Table 3): a SwiGLU MLP of width 53,248 (FFN dimension), described as it is.
LLAMA3_FFN = 53248


@dataclass(frozen=True)
class Run:
    name: str
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    gpus: int
    batch: int  # sequences
    tensor: int
    pipeline: int
    context: int
    tflops: float  # published, per GPU
    profile: str
    software: Mapping[str, object]  # device keys the run's software sets
    strategies: tuple[str, ...]  # what the run's data-parallel part was, as advise names it
    paper_flops: bool  # Megatron's formula (recomputation counted) or the model's FLOPs
    recompute: str | None  # the run's recomputation, layout.RECOMPUTES (None: not stated)
    grad_bytes: int = 2  # gradients as accumulated and reduced (mixed precision's 16-bit)
    kv_heads: int | None = None  # grouped-query attention's key/value heads (None: the heads)
    ffn: int = 0  # the MLP's width (0: 4 x hidden)
    gated: bool = False  # a SwiGLU MLP

    @property
    def data(self) -> int:
        return self.gpus // (self.tensor * self.pipeline * self.context)

    def flops_per_step(self, model_flops: float) -> float:
        if not self.paper_flops:
            return model_flops * self.batch
        s, h, L, V = self.seq, self.hidden, self.layers, self.vocab
        return 96 * self.batch * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


def runs() -> list[Run]:
    raw = yaml.safe_load(DATA.read_text())
    out = [Run(f"Megatron {p}", L, h, a, 2048, 51200, g, b, t, pp, 1, tf, "a100-ib200",
               MEGATRON_SOFTWARE, ("ddp",), True, "full")
           for p, a, h, L, t, pp, g, b, tf, _ in raw["megatron"]]
    out += [Run(f"Llama3 405B {g}{' CP' + str(cp) if cp > 1 else ''}", 126, 16384, 128, s,
                128256, g, b, t, pp, cp, tf, "h100-ib400", LLAMA3_SOFTWARE, (raw["llama3_data"],),
                False, None, LLAMA3_GRAD_BYTES, LLAMA3_KV_HEADS, LLAMA3_FFN, True)
            for g, t, cp, pp, _, s, b, tf, _ in raw["llama3"]]
    return out


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=positive_int, default=20, help="rows priced per search (20)")
    ap.add_argument("--exhaustive-upto", type=nonneg_int, default=256,
                    help="also search exhaustively up to this many GPUs and compare (256)")
    ap.add_argument("--only", type=name_list, default=None,
                    help="rows whose name contains one of these (1.7B,8192)")
    args = ap.parse_args()
    rows = [r for r in runs() if not args.only or any(o in r.name for o in args.only)]
    print(f"{'run':<22} {'GPUs':>5} {'published layout':<22} {'pub':>4} {'pred':>5} {'err':>5} "
          f"{'rank':>7} {'search s':>12}  advise's first choice (TFLOP/s; margin over published)")
    errs, ranks = [], []
    for run in rows:
        line, err, rank = row(run, args.keep, args.exhaustive_upto)
        print(line)
        if err is not None:
            errs.append(abs(err))
            ranks.append(rank)
    if errs:
        inside = sum(e <= 0.15 for e in errs)
        top5 = sum(r is not None and r <= 5 for r in ranks)  # among the run's own strategies
        print(f"# {inside} of {len(errs)} priced rows within 15 % of the published TFLOP/s "
              f"(median |error| {sorted(errs)[len(errs) // 2]:.0%}, worst {max(errs):.0%}); "
              f"{top5} of {len(errs)} published layouts in advise's top 5 among the layouts the "
              f"run's software runs")


def _question(run: Run):  # type: ignore[no-untyped-def]
    from bench.advise.question import Question
    from bench.advise.shape import Shape, custom_gpt
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.training.analytic import MIXED, parameters

    model = custom_gpt(run.layers, run.hidden, run.heads, run.seq, run.vocab, run.ffn, run.gated,
                       run.kv_heads or 0)
    shape = Shape(model, tuple(parameters(model)), kv_heads=run.kv_heads)  # fresh: nothing cached
    prof = load_profile(run.profile)
    prof = dataclasses.replace(prof, device={**prof.device, **run.software})
    prec = MIXED if run.grad_bytes == MIXED.grad_bytes else dataclasses.replace(
        MIXED, name=f"{MIXED.name}, {8 * run.grad_bytes}-bit gradients", grad_bytes=run.grad_bytes)
    return Question(shape, prof, parse_topology(f"{run.gpus // 8}x8"), run.batch, prec)


def _published(q, run: Run, jobs):  # type: ignore[no-untyped-def]
    """The fastest variant of the published degrees that fits, else the one nearest to fitting
    (the least memory; None: the degrees are not offered)."""
    from bench.advise.evaluate import evaluate
    from bench.advise.search import layouts

    found = [evaluate(jobs(b), lay) for lay, b in layouts(q.shape.model, run.gpus, run.batch,
                                                            q.bucket_mb, q.amps,
                                                            q.software.recomputes,
                                                            q.software.context_parallel)
             if is_published(run, lay)]
    fit = [r for r in found if r.fits]
    if fit:
        return min(fit, key=lambda r: r.step.time)
    return min(found, key=lambda r: (r.memory.total, r.step.time)) if found else None


def runs_on(run: Run, lay) -> bool:  # type: ignore[no-untyped-def]
    """The run's software could run the layout: its data strategies, its recomputation (its
    context parallelism, where it had it: the search offers none to software without)."""
    return lay.dp in run.strategies and run.recompute in (None, lay.recompute)


def is_published(run: Run, lay) -> bool:  # type: ignore[no-untyped-def]
    return (lay.data, lay.tensor, lay.context, lay.pipeline) == \
        (run.data, run.tensor, run.context, run.pipeline) and runs_on(run, lay)


def row(run: Run, keep: int, exhaustive_upto: int) -> tuple[str, float | None, int | None]:
    pub = f"tp={run.tensor} pp={run.pipeline}" + (f" cp={run.context}" if run.context > 1
                                                    else "") + f" dp={run.data}"
    head = f"{run.name:<22} {run.gpus:>5} {pub:<22} {run.tflops:>4.0f}"
    q = _question(run)
    jobs = q.jobs()
    per_gpu = run.flops_per_step(q.shape.flops_per_sample) / run.gpus / 1e12
    w, c = time.perf_counter(), time.process_time()
    try:
        ranked = q.answer(run.gpus, jobs, keep)
    except ValueError as e:  # AdviceError, NoFit: one line
        return f"{head} {'-':>5} {'-':>5} {'-':>7} {'-':>12}  advise: {e}", None, None
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    same = ""
    if run.gpus <= exhaustive_upto:
        full = _question(run).answer(run.gpus)
        ok = all(a.layout == b.layout and a.step.time == b.step.time
                 for a, b in zip(ranked.results, full.results[:keep]))
        same = " =exh" if ok else " !=EXH"
    pubr = _published(q, run, jobs)
    best = ranked.best
    assert best is not None
    rank = next((i for i, r in enumerate(ranked.results, 1) if is_published(run, r.layout)),
                None)
    own = q.answer(run.gpus, jobs, keep, lambda lay: runs_on(run, lay))
    rank_own = next((i for i, r in enumerate(own.results, 1) if is_published(run, r.layout)),
                    None)
    mine = f"{best.layout.label} ({per_gpu / best.step.time:.0f}"
    timing = f"{wall:.1f}/{cpu:.1f}{same}"
    if pubr is None:
        return f"{head} {'-':>5} {'-':>5} {'-':>7} {timing:>12}  {mine}); the published " \
               f"degrees are not offered", None, None
    pred = per_gpu / pubr.step.time
    err = pred / run.tflops - 1
    margin = pubr.step.time / best.step.time - 1
    rk = f"{rank or f'>{keep}'}/{rank_own or f'>{keep}'}"
    first = own.results[0]
    theirs = f"; on the run's software: {first.layout.label} " \
             f"({per_gpu / first.step.time:.0f})" if rank_own != 1 else ""
    over = "" if pubr.fits else f" (does NOT fit: {pubr.memory.total / 2**30:.0f} GiB)"
    preferred = ([best] if rank != 1 else []) + \
        ([first] if rank_own != 1 and first.layout != best.layout else [])
    from bench.advise.why import why

    reasons = "".join(f"\n    {why(pubr, other, jobs, run.batch)}" for other in preferred)
    return (f"{head} {pred:>5.0f} {err:>+5.0%} {rk:>7} {timing:>12}  {mine}; "
            f"{margin:+.1%}) vs {pubr.layout.label}{over}{theirs}{reasons}"), err, rank_own


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
