"""Hang forensics on the multi-host testbed (4 hosts x 2 ranks, MPICH over TCP between network
namespaces): during the all-hosts stage of ``commbench bringup``, a rank on host 3 killed, then
(second run) one stopped. The line names host 3, the rank, the step and the peer; meta.json has
the same; no process of the job is left on any host; the host stage's records are kept. Hydra
runs with ``-disable-auto-cleanup`` so that the dead rank's peers live on to say where they wait
(docs/bringup.md). Skipped, with the reason, without root."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from bench.launch import inflight
from bench.launch.rankstate import SLOTS
from bench.store.records import iter_records, read_meta
from bench.testbed import launch
from bench.testbed.spec import Pace, Testbed
from tests.conftest import ROOT, clean_env, mpiexec
from tests.helpers.testbed import running_testbed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
RATE = 50_000_000.0  # 400 Mbit/s each way: a 4 MiB ring's steps outlast its barrier, and its
# all-hosts case lasts seconds (at 1 MiB, a fraction of one: the victim could be missed)
VICTIM = 6  # ranks 6 and 7 are host 3's
DYING_S = 30.0


@pytest.fixture(scope="module")
def testbed() -> Iterator[Testbed]:
    with running_testbed(4, "hf", pace=tuple((i, Pace(RATE, RATE)) for i in range(4))) as tb:
        yield tb


def _slots(run_dir: Path) -> dict[int, dict[str, Any]]:
    out = {}
    for p in (run_dir / SLOTS).glob("*.json"):
        try:
            s = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        out[s["rank"]] = s
    return out


def _stop_while_peers_wait_in_a_step(run_dir: Path, proc: subprocess.Popen[str]) -> int:
    """Stop the victim once the all-hosts stage runs, at a moment when a live rank waits for it
    in a step of the ring (resumed and stopped again until then: it may have been stopped in
    the iteration's barrier); its pid."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        case = (inflight.read(run_dir) or {}).get("case", "")
        slots = _slots(run_dir)
        if case.startswith("all stage") and VICTIM in slots and slots[VICTIM]["case"] == case:
            victim = psutil.Process(slots[VICTIM]["pid"])
            victim.suspend()
            time.sleep(1.5)  # the live ranks' watchdogs write their slots meanwhile
            if any(VICTIM in s.get("recv_from", []) for r, s in _slots(run_dir).items()
                   if r != VICTIM):
                return victim.pid
            victim.resume()
        time.sleep(0.2)
    pytest.fail("the all-hosts stage never ran: " + (proc.stderr.read() if proc.stderr else ""))


def _bringup(tb: Testbed, out: Path, sig: signal.Signals) -> tuple[int, str]:
    # all hosts are paced alike: --slow-pct 95 keeps a loaded machine's noise in the host stage
    # from stopping the bring-up before the all-hosts stage this test is about
    argv = launch.mpiexec(tb, mpiexec(), 2, [
        sys.executable, "-m", "bench", "bringup", "--stages", "host,all", "--algorithms", "ring",
        "--sizes", "4MiB", "--confirm-blocks", "0", "--slow-pct", "95", "--case-timeout-s", "6",
        "--out", str(out),
        "--no-report", "--no-progress"])
    at = argv.index("-hosts")
    argv[at:at] = ["-disable-auto-cleanup"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env={**clean_env(), **launch.MPICH_OVER_TCP})
    try:
        pid = _stop_while_peers_wait_in_a_step(out, proc)
        if sig == signal.SIGKILL:
            psutil.Process(pid).kill()
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the launcher may return while the ranks it ended are still exiting (a loaded machine): those
    # that are gone within DYING_S are not orphans; any still there are, and are killed
    job = [p for p in psutil.process_iter(["cmdline"]) if str(out) in
           " ".join(p.info["cmdline"] or [])]
    _, left = psutil.wait_procs(job, timeout=DYING_S)
    for p in left:
        p.kill()
    assert [p.pid for p in left] == [], "processes of the job left on the hosts"
    return proc.returncode, err


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_the_line_names_the_host_rank_step_and_peer(testbed: Testbed, tmp_path: Path,
                                                    sig: signal.Signals) -> None:
    out = tmp_path / "run"
    rc, err = _bringup(testbed, out, sig)
    assert rc != 0
    line = next((ln for ln in err.splitlines() if "exceeded case_timeout_s=6" in ln), err)
    assert re.search(rf"rank {VICTIM} on hf-3 never arrived: not responding", line), line
    # the rank waiting for it: live ("waits in step 3 of 14 for rank 6 on hf-3"), or its last
    # state when the dead rank took it along (its host neighbour: "last in step 3 of 14 for ...")
    assert re.search(rf"in step \d+ of 14 for rank {VICTIM} on hf-3", line), line
    meta = read_meta(out)
    assert meta["status"] == "failed" and meta["failed_case"].startswith("all stage")
    missing = {(r["rank"], r["host"]) for r in meta["hang"]["missing"]}
    assert (VICTIM, "hf-3") in missing and {h for _, h in missing} == {"hf-3"}, missing
    ranks = meta["hang"]["waiting"] + meta["hang"]["missing"]
    waits = [r for r in ranks if r["peer"] == VICTIM]
    assert waits and all(r["op"] == "recv" and 1 <= r["step"] <= 14 for r in waits)
    kept = [r for r in iter_records(out, samples=False) if r.get("stage") == "host"]
    assert len(kept) == 4 and all(r["status"] == "ok" for r in kept)  # one per host
