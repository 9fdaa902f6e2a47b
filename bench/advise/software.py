"""What the training software does that changes a step's memory and compute, beside the
layout: the attention kernel, the LM head and embedding sharded by vocabulary over the tensor
group, sequence parallelism. Read from the profile's ``device`` section (a run's software is part
of its profile, like ``overlaps_communication``), carried by :class:`bench.advise.shape.Shape`.

- ``attention``: ``flash`` keeps the s x s scores on chip (nothing of them held for backward),
  ``materialized`` writes them (held: 5 a s^2 b bytes per layer, Korthikanti et al. 2022,
  arXiv 2205.05198, Table 2).
- ``vocab_parallel``: Megatron-LM's ``VocabParallelEmbedding`` and column-parallel LM head with
  its vocabulary-parallel cross entropy (Shoeybi et al. 2019, arXiv 1909.08053, Section 3): both
  vocabulary matrices, their FLOPs and the fp32 logits divided by the tensor degree. Off: this
  codebase's tensor plan, which keeps them whole on every tensor rank.
- ``sequence_parallel``: the layer norms and dropouts run on s/t of the sequence (Korthikanti et
  al. 2022, Section 4.2.2): their activations (10 s b h of the 34 s b h per layer) and their
  element-wise work divided by the tensor degree. What is sent is the same bytes (an all_reduce
  becomes a reduce_scatter and an all_gather), so the calls are unchanged.
- ``elementwise``: the element-wise kernels a block runs besides its GEMMs, as elements read
  and written per token per block in the forward (:data:`ELEMENTWISE`). ``fused``: two layer
  norms (read h, write h: 4h), two fused bias-dropout-residual adds (read 2h, write h: 6h) on
  every tensor rank, the fused bias + GeLU on the 4h/t local MLP width (read, write: 8h/t).
  ``megatron-2021``: those, and two passes its code of early 2021 ran unfused (NVIDIA/Megatron-LM
  at 50a4b5fa, April 2021, megatron/model/transformer.py and mpu/layers.py): the query-key-value
  ColumnParallelLinear adds its bias inside ``F.linear`` on a 3-D input, which PyTorch of then
  ran as a matmul and a separate add (read 3h/t, write 3h/t: 6h/t), and the attention's context
  is made contiguous in [s, b, h] after its batched GEMM (``permute(2, 0, 1, 3).contiguous()``:
  read h/t, write h/t: 2h/t).
- ``fused_qkv``: the attention's query, key and value are one column-parallel Linear of 3h
  outputs (Megatron-LM's ``query_key_value`` ColumnParallelLinear, megatron/model/transformer.py
  at 50a4b5fa), so its input's gradient is all-reduced once in the backward, not once per
  projection as this codebase's plan of three ``ColwiseParallel`` q, k, v does
  (:func:`tp_linears`).
- ``autograd_accumulation``: the gradients accumulate in the parameters' dtype by autograd
  across micro-batches, and are packed into one buffer for the all-reduce and copied back
  (Megatron-LM's local DDP without contiguous buffers, its default in 2021:
  megatron/model/distributed.py at 50a4b5fa; the accumulation was fused into the weight-gradient
  GEMM in February 2022, NVIDIA/Megatron-LM 83b1e42f). Per local parameter, each micro-batch
  after the first: ``grad += new`` (read 2, write 1 gradient: :data:`ACCUMULATE_PASSES`); once
  per step under data parallelism: flatten, scale by 1/d, copy back (each read and write:
  :data:`PACK_PASSES`). Off: accumulation fused or not priced.
- ``context_parallel``: the software runs context parallelism, priced as Llama 3's all-gather
  based one (arXiv 2407.21783, Section 3.3.2; :func:`bench.advise.comm.context_calls`): the
  search offers context degrees (:class:`bench.advise.space.Space`). Off: this codebase's
  training strategies have none, nor had Megatron-LM of 2021.
- ``fp32_loss``: the LM loss in fp32 over the logits (Megatron-LM's default: without
  ``--fp16-lm-cross-entropy`` the logits are cast ``.float()`` before its vocabulary-parallel
  cross entropy, megatron/model/gpt_model.py and mpu/cross_entropy.py at 50a4b5fa), whose
  passes over each local logit are counted in :data:`FP32_LOSS_BYTES`. Off: the loss's
  element-wise work is not priced.
- ``dropout``: the model's block runs dropout (GPT as Megatron-LM runs it: attention and hidden
  dropout 0.1), whose byte masks are held for backward: one per residual branch (s b h each)
  and, with materialized scores, the attention's (a s^2 b) and its output beside the softmax's
  (Korthikanti et al. 2022, Section 4.1). Off (Llama's block has no dropout): none of them.
- ``deallocates_outputs``: each pipeline stage's output is freed once sent, only its autograd
  node kept (Megatron-LM's ``deallocate_output_tensor``, megatron/core/pipeline_parallel/
  schedules.py, since 2022; the Llama 3 paper, Section 3.3.2: "the input and output tensors of
  each pipeline stage"). Off: torch.distributed.pipelining (2.13, stage.py
  ``forward_one_chunk``) keeps it in ``fwd_cache`` until its backward, as Megatron-LM of 2021 did.

docs/advise.md (Software).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from bench.models.configs import TPLinear

ATTENTION = ("flash", "materialized")
# elementwise: (x h, x h / t) elements read + written per token per block, forward (module
# docstring; counted from the block, not fitted)
ELEMENTWISE = {"fused": (10, 8), "megatron-2021": (10, 16)}
ACCUMULATE_PASSES = 3  # autograd_accumulation: gradient-sized passes per extra micro-batch
PACK_PASSES = 6  # autograd_accumulation: gradient-sized passes per step packing the all-reduce
QKV = ("attn.q", "attn.k", "attn.v")  # the tensor plan's paths of one block's projections
# fp32_loss, bytes per local logit per micro-batch. Forward: the cast .float() (read 2, write 4),
# max (read 4), sub_ (read 4, write 4), exp (read 4, write 4), sum (read 4), div_ (read 4, write
# 4): 38. Backward: mul_ by the loss's gradient (read 4, write 4), the cast's backward to 16 bits
# (read 4, write 2): 14. Counted from mpu/cross_entropy.py at 50a4b5fa, not fitted.
FP32_LOSS_BYTES = 38 + 14


@dataclass(frozen=True)
class Software:
    attention: str = "flash"
    vocab_parallel: bool = False
    sequence_parallel: bool = False
    elementwise: str = "fused"
    fused_qkv: bool = False
    autograd_accumulation: bool = False
    fp32_loss: bool = False
    dropout: bool = True
    deallocates_outputs: bool = False
    context_parallel: bool = False

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION:
            raise ValueError(f"device.attention: expected one of {', '.join(ATTENTION)}, "
                             f"got {self.attention!r}")
        if self.elementwise not in ELEMENTWISE:
            raise ValueError(f"device.elementwise: expected one of {', '.join(ELEMENTWISE)}, "
                             f"got {self.elementwise!r}")

    @property
    def flash(self) -> bool:
        return self.attention == "flash"

    def tp_linears(self, plan: Mapping[str, TPLinear]) -> dict[str, TPLinear]:
        """The model's tensor plan as this software runs it: under ``fused_qkv`` each block's
        q, k and v one column-parallel Linear (named by its q's path) of their summed outputs."""
        if not self.fused_qkv:
            return dict(plan)
        out: dict[str, TPLinear] = {}
        for path, lin in plan.items():
            head, _, tail = path.rpartition(".")
            block, _, kind = head.rpartition(".")
            if f"{kind}.{tail}" not in QKV:
                out[path] = lin
                continue
            q = f"{block}.{QKV[0]}"
            got = out.get(q)
            out[q] = lin if got is None else TPLinear(
                got.style, got.in_features, got.out_features + lin.out_features)
        return out

    @property
    def recomputes(self) -> tuple[str, ...]:
        """The recomputations the search offers: selective only where it differs from none
        (flash attention holds no scores, and its backward recomputes them anyway)."""
        return ("none", "full") if self.flash else ("none", "selective", "full")


DEFAULT = Software()


def software_of(device: Mapping[str, object]) -> Software:
    """The software keys of a profile's ``device`` section (each a field of :class:`Software`,
    cast to its default's type), each defaulting to :data:`DEFAULT`."""
    return Software(**{f.name: type(getattr(DEFAULT, f.name))(device.get(f.name, getattr(DEFAULT, f.name)))
                       for f in fields(Software)})
