"""The training software advise prices a step under (bench/advise/software.py): Korthikanti et
al.'s activation rule per layer (arXiv 2205.05198, Table 2) with and without sequence
parallelism and selective recomputation, the vocabulary sharded over the tensor group (memory
and FLOPs of the head), and what selective recomputation and sequence parallelism add to or take
from compute. Exact quantities, computed."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("torch", reason="advise builds models on the meta device")

S, B, H, A, T = 2048, 2, 4096, 32, 8  # 5 a s / (h t) = 10: every Table 2 term exact in floats


def _tiny(**software: object):  # type: ignore[no-untyped-def]
    from bench.advise.shape import shape_of
    from bench.advise.software import Software
    from bench.models import MODELS

    return shape_of(MODELS.get("gpt-tiny")).under(Software(**software))  # type: ignore[arg-type]


@pytest.mark.parametrize(("attention", "sp", "recompute", "per_sbh"), [
    ("materialized", False, "none", 10 + 24 / T + 5 * A * S / (H * T)),  # tensor parallel
    ("materialized", True, "none", 34 / T + 5 * A * S / (H * T)),  # + sequence parallel
    ("materialized", False, "selective", 10 + 24 / T),  # + selective recomputation
    ("materialized", True, "selective", 34 / T),  # sequence parallel + selective
    ("materialized", False, "full", 2),  # full recomputation: the layer's input
    ("materialized", True, "full", 2 / T),  # ... its s/t shard under sequence parallelism
    ("flash", False, "none", 10 + 24 / T),  # flash attention holds no scores
])
def test_layer_activations_are_korthikanti_table_2(attention: str, sp: bool, recompute: str,
                                                  per_sbh: float) -> None:
    from bench.advise.memory import layer_activation_bytes
    from bench.advise.software import Software

    sw = Software(attention, sequence_parallel=sp)
    assert layer_activation_bytes(S, B, H, A, T, sw, recompute) == S * B * H * per_sbh


def test_vocab_parallel_shards_the_head_and_the_embedding_and_their_logits() -> None:
    from bench.advise.layout import Layout
    from bench.advise.memory import activations
    from bench.advise.shape import local_params
    from bench.training.analytic import MIXED

    plain, vocab = _tiny(), _tiny(vocab_parallel=True)
    cfg = plain.model.config
    ends = frozenset((0, cfg.layers + 1))  # the embedding's and the head's pieces
    rows = {p.name.rpartition(".")[0].rpartition(".")[2]: p.shape
            for p in local_params(vocab, 2, ends) if p.name.endswith(("wte.weight",
                                                                      "lm_head.weight"))}
    assert rows == {"wte": (cfg.vocab // 2, cfg.embd), "lm_head": (cfg.vocab // 2, cfg.embd)}
    assert [p.shape for p in local_params(plain, 2, ends)] == \
        [p.shape for p in plain.params if p.piece in ends]  # this codebase's plan: whole
    lay = Layout(tensor=2)
    logits = 4 * cfg.seq_len * 8 * cfg.vocab  # fp32, micro-batch of 8
    assert activations(plain, lay, 8, MIXED) - activations(vocab, lay, 8, MIXED) == logits // 2


def test_selective_recomputation_adds_the_attention_cores_forward() -> None:
    from bench.advise.achieved import Achieved, Efficiency, core_forward_s, stage_s
    from bench.advise.comm import CommContext
    from bench.advise.compute import Flops
    from bench.advise.layout import Layout

    shape = _tiny(attention="materialized")
    cfg = shape.model.config
    none, sel = Layout(tensor=2, microbatches=1), Layout(tensor=2, selective=True)
    ctx = CommContext(shape, none, 8)
    ctx_sel = CommContext(shape, sel, 8)
    flops = Flops(1e12)
    added = 8 * cfg.layers * 4 * cfg.seq_len ** 2 * cfg.embd / 2 / 1e12
    assert flops.seconds(ctx_sel) - flops.seconds(ctx) == pytest.approx(added, rel=1e-12)
    eff = Efficiency(1e12, 0.8, 5e-6, 1e12, "materialized")
    ach = Achieved(eff)
    core = stage_s(core_forward_s, eff, shape, 2, ctx.my_pieces, 8)
    assert core > 0 and ach.seconds(ctx_sel) - ach.seconds(ctx) == pytest.approx(core)
    with pytest.raises(ValueError, match="exclude"):
        dataclasses.replace(sel, checkpoint=True)


def test_sequence_parallel_shards_the_layer_norms_and_dropouts_elementwise_work() -> None:
    from bench.advise.achieved import ELEMENT_BYTES, Efficiency, piece_forward_s
    from bench.advise.software import ELEMENTWISE

    eff = Efficiency(1e12, 0.8, 5e-6, 1e12)
    plain, sp = _tiny(), _tiny(sequence_parallel=True)
    cfg = plain.model.config
    saved = ELEMENT_BYTES * 4 * cfg.seq_len * ELEMENTWISE["fused"][0] * cfg.embd * (1 - 1 / 2) / 1e12
    assert piece_forward_s(eff, plain, 2, 1, 4) - piece_forward_s(eff, sp, 2, 1, 4) == \
        pytest.approx(saved)


def test_selective_is_searched_only_where_it_differs_from_none() -> None:
    from bench.advise.search import layouts
    from bench.advise.software import Software

    model = _tiny().model
    for attention, want in (("flash", {"none", "full"}),
                            ("materialized", {"none", "selective", "full"})):
        got = {lay.recompute for lay, _ in layouts(model, 4, 8, recomputes=Software(
            attention).recomputes)}
        assert got == want


def test_step_terms_sum_to_the_step_and_name_the_largest_difference() -> None:
    from bench.advise.step import Step, differs_most

    a = Step(4.0, 1.0, {"all_reduce:data": 0.5, "all_reduce:tensor": 0.25,
                        "send:pipeline": 0.125, "recv:pipeline": 0.125}, {}, 0, 0, optimizer=0.5)
    b = Step(4.5, 0.0, {"all_reduce:data": 0.75}, {}, 0, 0)
    assert a.terms == {"compute": 4.0, "bubble": 1.0, "optimizer": 0.5, "exposed data": 0.5,
                       "exposed tensor": 0.25, "exposed pipeline": 0.25}
    assert sum(a.terms.values()) == a.time and sum(b.terms.values()) == b.time
    assert differs_most(a.terms, b.terms) == "bubble" == differs_most(b.terms, a.terms)
    assert differs_most(b.terms, Step(4.5, 0.0, {"send:pipeline": 1.0}, {}, 0, 0).terms) == \
        "exposed pipeline"


def test_every_switch_of_the_software_is_a_key_a_profile_takes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each on/off field of ``Software`` set in a profile's ``device:`` (a user's own YAML) loads
    and reaches the software advise prices under: none is refused as an unknown key."""
    from bench.advise.software import DEFAULT, Software, software_of
    from bench.costmodel.profile import PRESETS, load_profile

    preset = (PRESETS / "h100-ib400.yaml").read_text()
    switches = [f.name for f in dataclasses.fields(Software)
                if isinstance(getattr(DEFAULT, f.name), bool)]
    assert "context_parallel" in switches and "deallocates_outputs" in switches
    for name in switches:
        flipped = not getattr(DEFAULT, name)
        path = tmp_path / f"{name}.yaml"
        path.write_text(preset.replace("device:\n", f"device:\n  {name}: {str(flipped).lower()}\n", 1))
        assert getattr(software_of(load_profile(path).device), name) is flipped, name
