"""``commbench bringup`` self-launched on this host: the host stage's cases, the verdict said,
written and first in the report; a resumed bring-up measures only the cases without a record."""

from __future__ import annotations

import json
from pathlib import Path

from bench.store.records import iter_records, read_meta, write_meta
from tests.conftest import commbench


def test_bringup_runs_says_its_verdict_and_resumes_only_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = commbench("bringup", "--world-size", "2", "--sizes", "1KiB,64KiB", "--out", str(out),
                    "--no-progress")
    assert res.returncode == 0, res.stderr[-2000:]
    # one host, no profile: nothing to judge against, and it says so
    assert "# bring-up verdict: not judged (one host)" in res.stderr
    assert res.stdout.strip().endswith("report.html")
    keys = sorted((r["kind"], r["stage"], r["algorithm"], r["nbytes"]) for r in iter_records(out))
    assert keys == [("bringup", "host", a, n) for a in ("native", "ring") for n in (1024, 65536)]
    assert json.loads((out / "verdict.json").read_text())["ok"] is True
    assert read_meta(out)["verdict"] == "not judged (one host)"  # the report's run table says it
    assert 'id="bringup"' in (out / "report.html").read_text()
    lines = (out / "results.jsonl").read_text().splitlines()
    dropped = json.loads(lines[-1])
    (out / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    meta = read_meta(out)
    write_meta(out, {**meta, "status": "interrupted"})
    res = commbench("run", "--resume", str(out), "--no-report", "--no-progress")
    assert res.returncode == 0, res.stderr[-2000:]
    again = sorted((r["algorithm"], r["nbytes"]) for r in iter_records(out))
    assert again == sorted((a, n) for a in ("native", "ring") for n in (1024, 65536))
    last = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    assert (last["algorithm"], last["nbytes"]) == (dropped["algorithm"], dropped["nbytes"])
