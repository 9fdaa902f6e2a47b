"""What the training software does that changes a step's memory and compute, beside the layout:
the profile's ``device`` keys (a run's software is part of its profile), carried by
:class:`bench.advise.shape.Shape`; each key's rule: docs/advise.md (Software). Sources:
``attention``, ``sequence_parallel``, ``dropout``: Korthikanti et al. 2022 (arXiv 2205.05198,
Table 2, Sections 4.2.2, 4.1); ``vocab_parallel``: Shoeybi et al. 2019 (arXiv 1909.08053,
Section 3); ``elementwise: megatron-2021``, ``fused_qkv``, ``fp32_loss``,
``autograd_accumulation``: NVIDIA/Megatron-LM at 50a4b5fa (April 2021),
megatron/model/transformer.py, mpu/layers.py, gpt_model.py, mpu/cross_entropy.py,
model/distributed.py (accumulation fused into the weight-gradient GEMM in 83b1e42f, February
2022); ``context_parallel``: Llama 3 (arXiv 2407.21783, Section 3.3.2);
``deallocates_outputs``: Megatron-LM's ``deallocate_output_tensor``
(megatron/core/pipeline_parallel/schedules.py) and Llama 3, Section 3.3.2; off, as
torch.distributed.pipelining (2.13, stage.py ``forward_one_chunk``) keeps it in ``fwd_cache``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from bench.argtypes import CommbenchError
from bench.models.configs import TPLinear

ATTENTION = ("flash", "materialized")
# pipeline_balance: how the software cuts the pieces into stages. parameters: the balanced split
# by parameter count (torch.distributed.pipelining as bench.training runs it); layers: the
# transformer layers split evenly, the embedding on the first stage and the head on the last
# (Megatron-LM's); layers+embeddings: the embedding and the head each take a layer's slot
# (Megatron-DeepSpeed's --pp-partition-method 'type:transformer|embedding', BLOOM-176B's:
# bigscience tr11-176B-ml/chronicles-prequel.md, "Rebalancing layers").
BALANCE = ("parameters", "layers", "layers+embeddings")
# elementwise: (x h, x h / t) elements read + written per token per block, forward, counted
# from the block: fused = two layer norms (4h), two bias-dropout-residual adds (6h), bias + GeLU
# (8h/t); megatron-2021 adds the QKV bias add (6h/t) and the context's contiguous copy (2h/t)
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
    pipeline_balance: str = "parameters"
    pipeline_scatter_gather: bool = False  # stage boundaries sent 1/t per tensor rank, gathered
    microbatch_overhead_s: float = 0.0  # the framework's own time per micro-batch and stage

    def __post_init__(self) -> None:
        if self.pipeline_balance not in BALANCE:
            raise ValueError(f"device.pipeline_balance: expected one of {', '.join(BALANCE)}, "
                             f"got {self.pipeline_balance!r}")
        if self.microbatch_overhead_s < 0:
            raise ValueError(f"device.microbatch_overhead_s: expected >= 0, got "
                             f"{self.microbatch_overhead_s}")
        if self.attention not in ATTENTION:
            raise CommbenchError(f"device.attention: expected one of {', '.join(ATTENTION)}, "
                                 f"got {self.attention!r}")
        if self.elementwise not in ELEMENTWISE:
            raise CommbenchError(f"device.elementwise: expected one of {', '.join(ELEMENTWISE)}, "
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
