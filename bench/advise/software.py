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

docs/advise.md (Software).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ATTENTION = ("flash", "materialized")


@dataclass(frozen=True)
class Software:
    attention: str = "flash"
    vocab_parallel: bool = False
    sequence_parallel: bool = False

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION:
            raise ValueError(f"device.attention: expected one of {', '.join(ATTENTION)}, "
                             f"got {self.attention!r}")

    @property
    def flash(self) -> bool:
        return self.attention == "flash"

    @property
    def recomputes(self) -> tuple[str, ...]:
        """The recomputations the search offers: selective only where it differs from none
        (flash attention holds no scores, and its backward recomputes them anyway)."""
        return ("none", "full") if self.flash else ("none", "selective", "full")


DEFAULT = Software()


def software_of(device: Mapping[str, object]) -> Software:
    """The software keys of a profile's ``device`` section, each defaulting to :data:`DEFAULT`."""
    return Software(str(device.get("attention", DEFAULT.attention)),
                    bool(device.get("vocab_parallel", DEFAULT.vocab_parallel)),
                    bool(device.get("sequence_parallel", DEFAULT.sequence_parallel)))
