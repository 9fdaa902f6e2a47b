"""The torch-free side of training: model metadata (:mod:`bench.models.catalog`) equals the built
models, a case is judged by its strategy's own check (one registry), and
loading a training scenario, good or bad, imports no torch (in-process or through the CLI)."""

from __future__ import annotations

import importlib.util
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from bench.models.catalog import CATALOG
from bench.training.rules import accelerator_build
from bench.training.strategy import strategies

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="training needs torch")
ROOT = Path(__file__).resolve().parents[2]

GOOD = ("kind: training\nmodels: [gpt-tiny, mlp]\nstrategies: [ddp, ddp:fp16, ddp:ring, zero1, zero2, "
        "zero3, tensor, pipeline:gpipe, pipeline:interleaved, hybrid:2]\nworld_sizes: [2, 4]\n")
BAD = [  # (scenario body after "kind: training", the one-line message it must give)
    ("models: [gpt-tiny]\nstrategies: [bogus]", "strategies.0: unknown strategy 'bogus'; valid: "
     + ", ".join(strategies().names())),
    ("models: [gpt-huge]\nstrategies: [ddp]", "models: unknown model 'gpt-huge'"),
    ("models: [gpt-tiny]\nstrategies: [tensor]\nworld_sizes: [8]",
     "tensor on gpt-tiny at world size 8: tensor degree 8 does not divide the 4 attention heads"),
    ("models: [mlp]\nstrategies: [tensor]\nworld_sizes: [3]",
     "tensor degree 3 does not divide pieces.0.fc's sharded width 32"),
    ("models: [convnet]\nstrategies: [tensor]\nworld_sizes: [2]",
     "model convnet has no tensor-parallel plan"),
    ("models: [gpt-tiny]\nstrategies: [pipeline]\nworld_sizes: [16]",
     "16 pipeline stages exceed the model's 8 pieces"),
    ("models: [gpt-tiny]\nstrategies: [pipeline:gpipe]\nworld_sizes: [2]\nbatch_size: 6",
     "batch_size 6 is not a multiple of microbatches 4"),
    ("models: [gpt-tiny]\nstrategies: [hybrid:3]\nworld_sizes: [4]",
     "tensor_degree 3 does not divide the world size"),
    ("models: [gpt-tiny]\nstrategies: [ddp:warp]", "unknown ddp hook 'warp'"),
    ("models: [gpt-tiny]\nstrategies: [ps:2]\nworld_sizes: [1, 2]",
     "ps[servers=2] on gpt-tiny at world size 1: ps needs at least one worker: 2 server rank(s) "
     "of 1 leave none"),
    ("models: [gpt-tiny]\nstrategies: [{name: ddp, precision: fp8}]",
     "strategies.0.precision: Input should be 'fp32', 'bf16' or 'fp16'"),
    ("models: [gpt-tiny]\nstrategies: [{name: ddp, checkpoint: [0, 8]}]\nworld_sizes: [2]",
     "ddp[ckpt=0+8] on gpt-tiny at world size 2: checkpoint names piece 8, but the model has 8 "
     "pieces (0..7)"),
    ("models: [gpt-tiny]\nstrategies: [{name: ddp, checkpoint: 1.5}]",
     "checkpoint: a fraction must lie in (0, 1), got 1.5"),
    ("models: [gpt-tiny]\nstrategies: [{name: zero1, checkpoint: [2, 2]}]",
     "checkpoint: piece indices given twice in [2, 2]"),
    ("models: [gpt-tiny]\nstrategies: [{name: zero1, checkpoint: all}]",
     "checkpoint: true, false, a list of piece indices or a fraction in (0, 1), got 'all'"),
    # a CPU-only torch build is known from its version.py; an accelerator build asks torch
    *([] if accelerator_build() else [("models: [gpt-tiny]\nstrategies: [ddp:bf16]\nworld_sizes: [2]",
                                       "hook bf16 needs CUDA and NCCL")]),
]

# Loads GOOD and every BAD scenario in one fresh interpreter and says what happened, and whether
# anything imported torch.
PROBE = """
import json, sys
from bench.collective.scenario import ScenarioError, load_scenario
out = {"errors": []}
for path in sys.argv[1:]:
    try:
        sc = load_scenario(path)
        out["errors"].append(None)
        out["cases"] = len(sc.cases(2)) + len(sc.cases(4))
    except ScenarioError as e:
        out["errors"].append(str(e))
out["torch"] = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
print(json.dumps(out))
"""


@needs_torch
def test_derived_quantities_equal_the_built_models() -> None:
    """Pieces, heads, the plan and every sharded width, read from the config alone, are the
    (meta) model's, for every named model; the torch registry serves exactly the catalog."""
    pytest.importorskip("torch")
    from torch import nn

    from bench.models import MODELS

    assert sorted(MODELS.names()) == sorted(CATALOG.names())
    for name in CATALOG.names():
        info, spec = CATALOG.get(name), MODELS.get(name)
        assert spec.config is info.config and spec.name == name and spec.family == info.family
        meta = spec.build_meta()
        assert len(meta.pieces) == info.num_pieces == spec.num_pieces, name
        linears = info.config.tp_linears()
        if linears is None:
            assert info.tp_plan is None and spec.tp_plan is None and info.sharded_widths() == {}
            continue
        assert spec.tp_plan is not None and info.tp_plan is not None
        assert spec.tp_plan() == info.tp_plan() == {p: lin.style for p, lin in linears.items()}
        widths = info.sharded_widths()
        assert widths.keys() == linears.keys() and widths, name
        for path, lin in linears.items():
            mod = meta.get_submodule(path)
            assert isinstance(mod, nn.Linear), (name, path)
            assert (mod.in_features, mod.out_features) == (lin.in_features, lin.out_features)
            w = mod.weight.shape
            assert widths[path] == (w[0] if lin.style == "colwise" else w[1]), (name, path)
        if info.heads is not None:  # attention reads its head count from the projection width
            attn = meta.get_submodule("pieces.1.attn")
            assert attn.q.out_features // attn.head_dim == info.heads, name


def test_a_case_is_judged_by_its_strategys_own_check() -> None:
    """One registry: the strategy a scenario names is the one a rank builds, and its ``check``
    is what :func:`check_case` applies (a refused case names the strategy's own message)."""
    from bench.training.scenario import StrategySpec, check_case

    for name in strategies():
        spec = StrategySpec(name=name)
        assert spec.strategy is strategies().get(name)
        assert all(callable(f) for f in (spec.strategy.build, spec.strategy.held,
                                         spec.strategy.calls, spec.strategy.layout))
    with pytest.raises(ValueError, match="ps needs at least one worker"):
        check_case(StrategySpec(name="ps", servers=2), CATALOG.get("gpt-tiny"), 2, 8)


def test_a_strategy_registered_twice_is_refused() -> None:
    from bench.training.strategy import register

    with pytest.raises(ValueError, match="strategy 'ddp' registered twice"):
        register(strategies().get("ddp"))


@needs_torch
def test_loading_training_scenarios_imports_no_torch(tmp_path: Path) -> None:
    paths = [tmp_path / "good.yaml"]
    paths[0].write_text(GOOD)
    for i, (body, _) in enumerate(BAD):
        paths.append(tmp_path / f"bad{i}.yaml")
        paths[-1].write_text(f"kind: training\n{body}\n")
    proc = subprocess.run([sys.executable, "-c", PROBE, *map(str, paths)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout)
    assert out["torch"] == []
    assert out["errors"][0] is None and out["cases"] == 2 * 10 * 2  # every case fits 2 and 4 ranks
    for path, (_, message), got in zip(paths[1:], BAD, out["errors"][1:]):
        assert got is not None and got.startswith(f"{path}: ") and message in got, (message, got)
        assert "\n" not in got


@needs_torch
def test_cli_error_on_a_bad_training_scenario_imports_no_torch(tmp_path: Path) -> None:
    """Exit 2 with one line, without importing torch (which alone costs seconds of CPU). The CPU
    bound is loose, for a shared machine: the no-torch check is the import list."""
    (tmp_path / "sc.yaml").write_text(
        "kind: training\nmodels: [gpt-tiny]\nstrategies: [tensor]\nworld_sizes: [8]\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "bench", "run",
                           str(tmp_path / "sc.yaml"), "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stderr.strip().splitlines()
    imported = [ln.rpartition("|")[2].strip() for ln in lines if ln.startswith("import time:")]
    errors = [ln for ln in lines if not ln.startswith("import time:")]
    assert proc.returncode == 2
    assert len(errors) == 1 and "does not divide the 4 attention heads" in errors[0], errors
    assert not [m for m in imported if m == "torch" or m.startswith("torch.")]
    assert "bench.models.catalog" in imported  # the probe sees the imports it should
    assert cpu < 2.5, f"{cpu:.2f} s of CPU for a one-line error"
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_records_of_every_shape_read_back_as_their_strategy() -> None:
    """A record holds its strategy's own options, flat; records written when every strategy
    carried every option (a shared spec) still read back, the foreign keys dropped."""
    from bench.training.scenario import StrategySpec

    spec = StrategySpec(name="pipeline", schedule="gpipe", microbatches=8, checkpoint=True)
    dumped = spec.model_dump(mode="json")
    assert dumped == {"name": "pipeline", "schedule": "gpipe", "microbatches": 8,
                      "stages_per_rank": None, "checkpoint": True, "precision": "fp32"}
    assert StrategySpec.model_validate(dumped) == spec
    old = {"name": "zero1", "hook": "default", "schedule": "1f1b", "microbatches": 4,
           "stages_per_rank": None, "tensor_degree": 2, "bucket_mb": 0.05, "servers": 1,
           "checkpoint": False, "precision": "bf16"}
    got = StrategySpec.of_record(old)
    assert got.label == "zero1[amp=bf16]" and got.options.bucket_mb == 0.05
    with pytest.raises(ValueError, match="strategy 'zero1' takes no option 'hook'"):
        StrategySpec.model_validate(old)
