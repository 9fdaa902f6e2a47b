""""One file" is true for training strategies: a strategy file in a package of its own
(``COMMBENCH_PLUGINS``), with no other edit anywhere, is discovered, listed by ``commbench
memory`` and ``commbench advise`` (neither runs its torch code), and trained for real at 2 ranks
(torch gloo, CPU, self-launched like the other training tests): its loss equals the
single-process reference's and the bytes it sends equal the communication its file declares."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, clean_env

pytest.importorskip("torch", reason="training needs torch")

# Data parallelism without buckets: after backward, one all_reduce per parameter gradient.
PLUGIN = '''
"""``paramsync``: data parallel, one all_reduce per gradient tensor after backward (no
buckets, nothing overlapped). Memory: everything replicated."""

from __future__ import annotations

from bench.advise.calls import Call
from bench.advise.layout import Layout
from bench.advise.space import data_layouts
from bench.training.analytic import numel, replicated
from bench.training.strategy import Strategy, Trainer, register


class ParamSync(Trainer):
    def __init__(self, ctx):
        self.ctx, self.dp_degree, self.replica = ctx, ctx.world, ctx.rank
        self.model = ctx.build_model().to(ctx.device)
        self.opt = ctx.optimizer(self.model.parameters())

    def step(self, batch):
        import torch.distributed as dist

        share, amp, dev = self.local_share(batch), self.ctx.amp, self.ctx.device
        self.opt.zero_grad(set_to_none=True)
        loss = amp.loss(self.ctx.model.loss, self.model(share.inputs.to(dev)),
                        share.targets.to(dev))
        loss.backward()
        for p in self.model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(self.ctx.world)
        amp.unscale(self.model.parameters())
        self.opt.step()
        return float(loss.detach()) / amp.scale

    def modules(self):
        return [self.model]

    def optimizers(self):
        return [self.opt]


def calls(ctx):
    sizes = {}
    for p in ctx.params:
        n = numel(p.shape) * ctx.bytes.grad
        sizes[n] = sizes.get(n, 0) + 1
    return [Call("all_reduce", n, k, "data", "backward", False) for n, k in sizes.items()]


register(Strategy(
    "paramsync", "data parallel, one all_reduce per gradient tensor", ParamSync, replicated,
    calls, lambda opts, world: Layout(data=world, dp="paramsync"),
    layouts=lambda space: data_layouts(space, "paramsync"), table="paramsync"))
'''
SCENARIO = """
name: plugin-strategy
kind: training
models: [mlp, gpt-tiny]
strategies: [paramsync]
world_sizes: [2]
batch_size: 8
steps: 1
warmup: 2
backend: gloo
case_timeout_s: 120
"""
TOL = 1e-5  # fp32 loss deviation from the reference, as every fp32 strategy (test_training)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("plugin")
    pkg = root / "mystrats"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "paramsync.py").write_text(PLUGIN)
    out = clean_env()
    out["PYTHONPATH"] = f"{root}:{ROOT}"
    out["COMMBENCH_PLUGINS"] = "mystrats"
    return out


def _bench(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "bench", *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)


def test_the_file_is_listed_by_memory_and_advise_without_its_torch_code(
        env: dict[str, str], tmp_path: Path) -> None:
    mem = _bench(env, "memory", "--model", "gpt-tiny", "--world-sizes", "2", "--precision", "fp32")
    assert mem.returncode == 0, mem.stderr[-2000:]
    row = [ln for ln in mem.stdout.splitlines() if ln.split()[:2] == ["paramsync", "2"]]
    ddp = [ln for ln in mem.stdout.splitlines() if ln.split()[:2] == ["ddp", "2"]]
    assert len(row) == 1 and row[0].split()[2:] == ddp[0].split()[2:]  # replicated, as DDP
    adv = _bench(env, "advise", "--model", "gpt-tiny", "--profile", "h100-ib400", "--topology",
                 "1x2", "--top", "100", "--out", str(tmp_path / "adv"))
    assert adv.returncode == 0, adv.stderr[-2000:]
    assert "dp=2 paramsync" in adv.stdout
    for proc in (mem, adv):  # the strategies' builds (and the torch they wrap) stay unimported
        assert "bench.training.trainer" not in proc.stderr
        assert "torch.distributed.fsdp" not in proc.stderr


@pytest.mark.training
def test_the_file_trains_with_the_reference_loss_and_its_declared_bytes(
        env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "sc.yaml").write_text(SCENARIO)
    proc = subprocess.run([sys.executable, "-m", "bench", "run", str(tmp_path / "sc.yaml"),
                           "--out", str(tmp_path / "run"), "--no-progress", "--no-report"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    probe = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "run")],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert probe.returncode == 0, probe.stderr[-4000:]
    got: list[dict[str, Any]] = json.loads(probe.stdout)
    assert [(g["model"], g["status"]) for g in got] == [("mlp", "ok"), ("gpt-tiny", "ok")]
    for g in got:
        assert g["loss_max_abs_diff"] is not None and g["loss_max_abs_diff"] <= TOL, g
        assert g["counted"] == g["declared"] and g["counted"][0]["all_reduce"] > 0, g
        assert g["calls"] == g["declared_calls"], g


# In the plugin's environment: each record's counted bytes per rank beside what the strategy's
# file declares (its ``calls`` counted as training counts them, bench.advise.calls.counted).
CHECK = """
import json
import sys
from pathlib import Path
from bench.advise.calls import counted
from bench.advise.comm import CommContext
from bench.advise.layout import as_layout
from bench.advise.shape import shape_of
from bench.models import MODELS
from bench.store.records import iter_records
from bench.training.scenario import StrategySpec
from kernels.topology import Topology

out = []
for r in iter_records(Path(sys.argv[1])):
    spec = StrategySpec.of_record(r["strategy_options"])
    lay = as_layout(spec, r["world_size"])
    ctx = CommContext(shape_of(MODELS.get(r["model"])), lay, r["batch_size_per_replica"])
    declared = [counted(spec.strategy.calls(ctx), {"data": rank},
                        {"data": Topology.blocks(lay.data, lay.data)})
                for rank in range(r["world_size"])]
    out.append({"model": r["model"], "status": r["status"],
                "loss_max_abs_diff": r.get("loss_max_abs_diff"),
                "counted": r.get("comm_by_type_by_rank"), "declared": [d.bytes for d in declared],
                "calls": r.get("comm_calls_by_type"), "declared_calls": declared[0].calls})
print(json.dumps(out))
"""
