"""A real campaign on this machine: allreduce and allgather on 1 node x 1 and 2 ranks, started in
the background, killed (SIGKILL) in the middle of a case, resumed with the same command, and
finished with a campaign report and per-case exports. Small settings keep it to about 2 minutes."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import optuna
import pytest

from autotune.campaign import CAMPAIGN_ATTR, CaseMark
from tests.storage import trials_in

pytestmark = pytest.mark.mpi

NAME = "camp"
ARGS = ("campaign", "--collectives", "allreduce,allgather", "--nodes", "1", "--ppn", "1,2",
        "--trials", "2", "--sizes", "1k:4k", "--repetitions", "3", "--stages", "1",
        "--time-per-size", "0.003", "--confirm", "1", "--confirm-rounds", "2",
        "--confirm-max-rounds", "2", "--no-per-size", "--no-verify", "--no-check-live",
        "--seed", "1", "--name", NAME)
LABELS = ("allreduce-1n1p", "allgather-1n1p", "allreduce-1n2p", "allgather-1n2p")


def _status(autotune_cli) -> dict:
    return json.loads(autotune_cli("campaign", "status", "--format", "json", check=True).stdout)


def test_campaign_killed_resumed_finished_reported_exported(autotune_cli, tmp_path):
    started = autotune_cli(*ARGS, check=True)
    assert f"campaign {NAME} runs in the background" in started.stdout
    status = _status(autotune_cli)
    assert [c["case"] for c in status["cases"]] == list(LABELS)  # run order: fewest ranks first
    pid = status["pid"]
    assert status["alive"] and pid
    db = tmp_path / "home" / "autotune.db"
    try:
        _kill_mid_campaign(autotune_cli, pid, db)
    finally:
        _kill_group(pid)
    killed = _status(autotune_cli)
    assert not killed["alive"]
    assert killed["counts"]["done"] >= 1 and killed["counts"]["done"] < 4, killed

    resumed = autotune_cli(*ARGS, "--foreground", check=True, timeout=600)
    assert "campaign camp: 4 cases," in resumed.stderr
    assert "every case is done" in resumed.stderr
    assert "recovered trials" in resumed.stderr  # the trial the kill left running
    final = _status(autotune_cli)
    assert final["counts"]["done"] == 4, final
    store = f"sqlite:///{db}"
    for label in LABELS:
        study = optuna.load_study(study_name=f"{NAME}.{label}", storage=store)
        mark = CaseMark.from_dict(study.user_attrs[CAMPAIGN_ATTR])
        assert mark is not None and mark.finished is not None
        measured = [t for t in study.trials if t.state.name in ("COMPLETE", "PRUNED")]
        assert len(measured) >= 2, label  # --trials 2 per case, over both runs
        assert "autotune.confirmation" in study.user_attrs, label
        if label != LABELS[0]:  # every later case looked at its finished neighbours
            assert mark.warm_started, label

    report = tmp_path / "report"
    autotune_cli("campaign", "report", "-o", str(report), check=True)
    page = (report / "index.html").read_text()
    for label in LABELS:
        assert label in page and (report / label / "index.html").exists()
    assert (report / "campaign-gain.png").stat().st_size > 5000
    assert (report / "campaign-cost.png").stat().st_size > 5000
    assert "staged sweep" in page and "Patterns across cases" in page

    out = tmp_path / "export"
    autotune_cli("campaign", "export", "-o", str(out), check=True)
    for label in LABELS:
        for suffix in (".env", ".json", ".rules"):
            assert (out / f"{label}{suffix}").exists(), f"{label}{suffix}"
    combined = (out / "campaign.rules").read_text()
    body = [line.split("#")[0].strip() for line in combined.splitlines()
            if line.split("#")[0].strip()]
    assert body[0] == "2"  # two collectives, each with communicator sizes 0, 1, 2, 3
    assert "allreduce-1n2p" in combined and "allgather-1n1p" in combined


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the daemon leads its own session: mpirun goes with it
    except ProcessLookupError:
        pass


def _kill_mid_campaign(autotune_cli, pid: int, db: Path) -> None:
    """SIGKILL the daemon inside a trial of a later case: the first case is done, a later one
    not, and one of its trials is left RUNNING for the resume to recover. The daemon's group is
    frozen (SIGSTOP) while the storage is read, so the trial seen running cannot end before the
    kill; when none is running, the group goes on (SIGCONT) and the next look comes later. Any
    later case will do: on a busy machine the second case may be in its confirmation (no trial
    running) by the time its state reads "running"."""
    deadline = time.time() + 240
    while time.time() < deadline:
        states = {c["case"]: c["state"] for c in _status(autotune_cli)["cases"]}
        if states[LABELS[0]] == "done":
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"the first case never finished: {states}")
    while time.time() < deadline:
        try:
            os.killpg(pid, signal.SIGSTOP)
        except ProcessLookupError:
            pytest.fail("the campaign ended before a trial of a later case was seen running: "
                        + _daemon_log(db.parent))
        if any(trials_in(db, "RUNNING", f"{NAME}.{label}") for label in LABELS[1:]):
            os.killpg(pid, signal.SIGKILL)
            time.sleep(1)
            return
        os.killpg(pid, signal.SIGCONT)
        time.sleep(0.1)
    pytest.fail("no trial of a later case was seen running")


def _daemon_log(home: Path) -> str:
    logs = sorted((home / "run").glob("*.log"))
    return "\n".join(f"{log.name}:\n{log.read_text()[-3000:]}" for log in logs) or "no log"
