"""``commbench memory`` reports the rank that decides whether a strategy fits (a pipeline's
heaviest stage), not rank 0; advise's records name the deciding pipeline index."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import commbench


def test_memory_reports_the_heaviest_rank() -> None:
    from bench.models import MODELS
    from bench.training.analytic import MIXED, parameters, predict
    from bench.training.scenario import StrategySpec

    proc = commbench("memory", "--model", "gpt-1.3b", "--world-sizes", "8", "--strategies",
                     "pipeline:1f1b", "--microbatches", "8")
    assert proc.returncode == 0, proc.stderr
    row = next(ln.split() for ln in proc.stdout.splitlines() if ln.split()[1:2] == ["8"])
    model = MODELS.get("gpt-1.3b")
    spec = StrategySpec.model_validate({"name": "pipeline", "schedule": "1f1b",
                                        "microbatches": 8})
    ps = parameters(model)
    totals = [predict(model, spec, 8, r, MIXED, batch=8, params=ps).total for r in range(8)]
    heaviest = totals.index(max(totals))
    # 26 pieces over 8 stages: rank 0 holds the embedding and fewer layers; rank 2 the most
    assert heaviest == 2 and totals[2] > 3 * totals[0]
    assert int(row[-1]) == heaviest
    assert float(row[-2]) == round(max(totals) / 2**30, 2)


def test_advise_records_the_deciding_stage(tmp_path: Path) -> None:
    proc = commbench("advise", "--model", "gpt-small", "--profile", "h100-ib400", "--topology",
                     "1x4", "--batch", "16", "--out", str(tmp_path / "adv"), "--top", "50",
                     "--all")
    assert proc.returncode == 0, proc.stderr
    from bench.store.records import iter_records

    recs = list(iter_records(tmp_path / "adv"))
    assert all(0 <= r["memory_stage"] < r["pipeline"] for r in recs if r["servers"] == 0)
