"""Software traits of Megatron-LM of 2021 and the device's achieved bandwidth, as advise prices
them (bench/advise/software.py, achieved.py, step.py): the unfused QKV bias add and context copy,
the fp32 loss over the local logits, memory-bound work at device.memory_efficiency, and the
forward calls full recomputation issues again. Exact quantities, computed."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch", reason="advise builds models on the meta device")

BW = 1e12  # bytes/s: every memory-bound term below is nbytes / BW


def _tiny(**software: object):  # type: ignore[no-untyped-def]
    from bench.advise.shape import shape_of
    from bench.advise.software import Software
    from bench.models import MODELS

    return shape_of(MODELS.get("gpt-tiny")).under(Software(**software))  # type: ignore[arg-type]


def test_megatron_2021_adds_the_qkv_bias_and_context_copy_passes() -> None:
    """8 h / t more elements per token per block: (3 + 1) h / t read and written."""
    from bench.advise.achieved import ELEMENT_BYTES, Efficiency, piece_forward_s

    eff = Efficiency(1e15, 0.8, 5e-6, BW)
    fused, mega = _tiny(), _tiny(elementwise="megatron-2021")
    cfg = fused.model.config
    micro, t = 4, 2
    extra = ELEMENT_BYTES * micro * cfg.seq_len * 8 * cfg.embd / t / BW
    assert piece_forward_s(eff, mega, t, 1, micro) - piece_forward_s(eff, fused, t, 1, micro) \
        == pytest.approx(extra)
    assert piece_forward_s(eff, mega, t, 0, micro) == piece_forward_s(eff, fused, t, 0, micro)


def test_fp32_loss_is_52_bytes_per_local_logit_on_the_head_only() -> None:
    from bench.advise.achieved import Efficiency, local_logits, loss_s

    eff = Efficiency(1e15, 0.8, 5e-6, BW)
    shape = _tiny(fp32_loss=True, vocab_parallel=True)
    cfg = shape.model.config
    head = shape.model.num_pieces - 1
    assert local_logits(shape, 2, head) == math.ceil(cfg.vocab / 2)
    assert local_logits(shape, 2, 1) == 0
    want = 52 * 3 * cfg.seq_len * math.ceil(cfg.vocab / 2) / BW
    assert loss_s(eff, shape, 2, frozenset({1, head}), 3) == pytest.approx(want)
    assert loss_s(eff, _tiny(vocab_parallel=True), 2, frozenset({head}), 3) == 0.0


def test_memory_efficiency_scales_every_memory_bound_term() -> None:
    from bench.advise.achieved import Efficiency

    full, got = Efficiency(1e15, 0.8, 0.0, BW), Efficiency(1e15, 0.8, 0.0, BW, memory=0.5)
    assert got.memory_s(1e9) == 2 * full.memory_s(1e9) == 2e-3
    assert got.gemm_s(1.0, 1e9) == 2e-3  # a memory-bound GEMM's bytes term too
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="memory_efficiency"):
            Efficiency(1e15, 0.8, 0.0, BW, memory=bad)


def test_a100_preset_states_its_achieved_bandwidth() -> None:
    from bench.advise.achieved import Achieved
    from bench.advise.question import device_compute
    from bench.costmodel.profile import load_profile

    compute = device_compute(load_profile("a100-ib200"))
    assert isinstance(compute, Achieved) and compute.eff.memory == 0.88


def test_software_keys_are_read_and_checked() -> None:
    from bench.advise.software import DEFAULT, Software, software_of

    sw = software_of({"elementwise": "megatron-2021", "fp32_loss": True})
    assert (sw.elementwise, sw.fp32_loss) == ("megatron-2021", True)
    assert (DEFAULT.elementwise, DEFAULT.fp32_loss) == ("fused", False)
    with pytest.raises(ValueError, match=r"device\.elementwise"):
        Software(elementwise="apex")


def test_full_recomputation_issues_the_tensor_and_expert_forward_calls_again() -> None:
    """2 tensor forward calls of 1 ms and 1 expert forward call of 3 ms come back in the
    backward; the pipeline's send and the data group's all_gather do not."""
    from bench.advise.calls import Call
    from bench.advise.step import Priced, step_time

    priced = [Priced(Call("all_reduce", 10, 2, "tensor", "forward", False), 1e-3, "r", "r"),
              Priced(Call("all_to_all", 10, 1, "expert", "forward", False), 3e-3, "r", "r"),
              Priced(Call("send", 10, 4, "pipeline", "forward", False), 1e-3, "r", "r"),
              Priced(Call("all_gather", 10, 1, "data", "forward", False), 5e-3, "r", "r")]
    plain = step_time(priced, 30e-3, 1, 1, 1, overlap=False)
    again = step_time(priced, 30e-3, 1, 1, 1, overlap=False, recompute=True)
    assert again.exposed["all_reduce:tensor"] == pytest.approx(2 * plain.exposed[
        "all_reduce:tensor"]) == pytest.approx(4e-3)
    assert again.exposed["all_to_all:expert"] == pytest.approx(6e-3)
    assert again.exposed["send:pipeline"] == plain.exposed["send:pipeline"]
    assert again.exposed["all_gather:data"] == plain.exposed["all_gather:data"]
    assert again.time - plain.time == pytest.approx(5e-3)


def test_fused_qkv_is_one_column_parallel_linear_with_one_backward_all_reduce() -> None:
    from bench.advise.comm import Bytes, CommContext, tensor_calls
    from bench.advise.layout import Layout

    plain, fused = _tiny(), _tiny(fused_qkv=True)
    e = plain.model.config.embd
    block = [lin for piece, lin in fused.linears if piece == 1 and lin.style == "colwise"]
    assert sorted(lin.out_features for lin in block) == sorted([3 * e, 4 * e])
    assert len(plain.linears) - len(fused.linears) == 2 * plain.model.config.layers

    def backward(shape) -> int:  # type: ignore[no-untyped-def]
        ctx = CommContext(shape, Layout(tensor=2), 4, Bytes(2, 2, 2))
        return sum(c.calls for c in tensor_calls(ctx) if c.phase == "backward")

    assert backward(plain) - backward(fused) == 2 * plain.model.config.layers


def test_autograd_accumulation_is_3_passes_per_extra_microbatch_and_6_to_pack() -> None:
    """A stage of pipeline 2, tensor 2, data 2, 4 micro-batches, 16-bit gradients:
    (3 x 3 + 6) gradient-sized passes over its local parameters."""
    from bench.advise.achieved import Efficiency, accumulation_s, held_params
    from bench.advise.comm import Bytes, CommContext
    from bench.advise.layout import Layout

    eff = Efficiency(1e15, 0.8, 0.0, BW)
    lay = Layout(data=2, tensor=2, pipeline=2, microbatches=4)
    on, off = _tiny(autograd_accumulation=True), _tiny()
    ctx = CommContext(on, lay, 8, Bytes(2, 2, 2))
    n = held_params(on, 2, ctx.my_pieces)
    assert n > 0 and accumulation_s(eff, ctx) == pytest.approx((3 * 3 + 6) * 2 * n / BW)
    assert accumulation_s(eff, CommContext(off, lay, 8, Bytes(2, 2, 2))) == 0.0
