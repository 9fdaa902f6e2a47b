"""Model-state memory per rank by the ZeRO paper's stages (Rajbhandari et al. 2020, Figure 1 and
section 5): baseline (2 + 2 + K)Ψ, P_os 2Ψ + 2Ψ + KΨ/N, P_os+g 2Ψ + (2 + K)Ψ/N and P_os+g+p
(2 + 2 + K)Ψ/N, from :mod:`bench.training.analytic`'s ddp, zero1 and zero3; P_os+g is zero2's
sharded gradients and optimizer state beside ddp's whole parameters (the paper's stage 2 keeps
them whole; FSDP2's zero2 gathers them for compute: ``commbench memory``'s zero2 row)."""

from __future__ import annotations

from bench.training.analytic import Estimate, Param, Precision, predict
from bench.training.scenario import StrategySpec

STAGES = ("baseline", "P_os", "P_os+g", "P_os+g+p")


def stages(model: object, params: list[Param], n: int, prec: Precision) -> dict[str, int]:
    """Model-state bytes of rank 0 per stage."""

    def est(name: str) -> Estimate:
        return predict(model, StrategySpec(name=name), n, 0, prec, params=params)  # type: ignore[arg-type]

    ddp, z1, z2, z3 = (est(s) for s in ("ddp", "zero1", "zero2", "zero3"))
    return {"baseline": ddp.model_states, "P_os": z1.model_states,
            "P_os+g": ddp.params + z2.grads + z2.optim, "P_os+g+p": z3.model_states}
