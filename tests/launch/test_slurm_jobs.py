"""A study across real Slurm jobs: the private cluster of launchers/private-slurm.sh (slurmctld,
slurmd and munged of Debian's slurm-wlm, started for this test), the shipped sbatch template, a
two-minute time limit far shorter than the study, real mpirun inside the allocation. At the
limit's signal the daemon stops, the running trial is queued again and the template requeues the
job; the next job resumes the study until it ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from tests.slurmbed import ROOT, ours

TEMPLATE = ROOT / "launchers" / "autotune.sbatch"
SPACE = ROOT / "tests" / "data" / "space-grid.yaml"
CONFIGS = 6  # the space's configurations, the default among them
STUDY = "allreduce-1n2p-test-grid"
MARKERS = ("autotune.benchmarks.mpi4py_kernel", "cbench-", "orted", " start --collective")

pytestmark = [pytest.mark.mpi, pytest.mark.slurm]


def squeue(env, job: str) -> str:
    out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True,
                         env=env).stdout.strip()
    return out


def status(env) -> dict:
    proc = subprocess.run([str(Path(sys.executable).parent / "autotune"), "status", "--format",
                           "json"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_study_lives_across_requeued_jobs_until_it_ends(cluster, tmp_path):
    # In the cluster's logs slurmctld sends the signal on a 30 s tick, and a requeued job starts at
    # a fixed phase of it: with a lead of 20 s in a one-minute job every job got the signal ~15 s
    # after it began, before its first trial ended, and no job finished a trial. A 60 s lead in
    # two minutes leaves each job 30-60 s. The study's six trials must not fit in one window,
    # on a fast machine too: with small sizes the kernel stops at its repetition cap before its
    # time budget, and CI's machine ran a trial of 8 B..4 KiB in 4 s and the study in one job.
    # From 256 KiB up a call takes longer than budget/cap (15 us at 0.3 s), so every size runs
    # its whole budget and its warm-up: a trial's 8 launches of 4 sizes take 8 x 4 x 0.3 s x 1.25
    # = 12 s plus the launches wherever it runs, and six of them more than a window. How many
    # jobs the study spans depends on where in slurmctld's tick each job starts (2 to 9 seen), so
    # the test asks for a requeue, not for a count of them.
    env = dict(cluster, AUTOTUNE_HOME=str(tmp_path / "home"),
               AUTOTUNE=str(Path(sys.executable).parent / "autotune"), TRIALS="100",
               MAX_REQUEUES="12", AUTOTUNE_JOB_END_MARGIN="20")
    log = tmp_path / "job.out"
    submitted = subprocess.run(
        ["sbatch", "--parsable", "--nodes=1", "--time=2", "--signal=B:TERM@60", "-o", str(log),
         str(TEMPLATE), "--ppn", "2", "--space", str(SPACE), "--strategy", "grid", "--sizes",
         "256k:2m", "--repetitions", "4", "--stages", "1", "--time-per-size", "0.3",
         "--no-check-live", "--no-per-size", "--no-verify", "--confirm", "1",
         "--confirm-rounds", "2", "--confirm-max-rounds", "2",
         # the kernel fills its time per size (IMB's method and cbench cap large sizes by
         # volume): trials of known length, so that the study outlives one job
         "--benchmark", "mpi4py"],
        capture_output=True, text=True, env=env, timeout=60)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 1500
    states, complete_seen, leftovers = [], 0, []
    while time.monotonic() < deadline:
        state = squeue(env, job)
        if not states or states[-1] != state:
            states.append(state)
            if state in ("PENDING", ""):  # between jobs, and after the last: nothing left over
                time.sleep(1.0)
                leftovers += [p for m in MARKERS for p in ours(m) if str(tmp_path) in p
                              or m != " start --collective"]
        if (tmp_path / "home" / "autotune.db").exists():
            seen = status(env)
            assert seen["trials_complete"] >= complete_seen, seen  # never goes back
            complete_seen = seen["trials_complete"]
            if state == "PENDING" and squeue(env, job) == "PENDING":  # pending all along
                assert not seen["alive"], seen  # between jobs nobody holds the study
        if state == "":
            break
        time.sleep(2.0)
    else:
        pytest.fail(f"the study did not end in 25 min: {states}\n{log.read_text()[-3000:]}")
    text = log.read_text()
    runs = text.count("autotune: job ")
    print(f"\njobs: {runs}; states: {' -> '.join(s or 'gone' for s in states)}")
    assert leftovers == [], leftovers
    assert runs >= 2 and "not requeued (MAX_REQUEUES" not in text, text[-3000:]
    assert text.count("requeueing job") == runs - 1, text[-3000:]  # each job but the last
    study = optuna.load_study(study_name=STUDY,
                              storage=f"sqlite:///{tmp_path / 'home' / 'autotune.db'}")
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    keys = [tuple(sorted(t.params.items())) for t in complete]
    assert len(keys) == len(set(keys)) == CONFIGS, "a configuration lost or measured twice"
    interrupted = [t for t in study.trials if t.user_attrs.get("fail_reason") == "interrupted"]
    requeued = {t.user_attrs.get("requeued_from") for t in study.trials}
    assert all(t.number in requeued for t in interrupted)  # each one queued again
    assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,
                                        optuna.trial.TrialState.WAITING))
    before, last = text.rsplit("autotune: job ", 1)
    # Slurm may send the limit's signal up to a minute early (its documented resolution), which in
    # a two-minute job can cut a confirmation the margin let start: then nothing of it is stored
    # and the next job runs it again. It completes once, in the job that reaches it (whose
    # output says 'confirmed best:' twice when a candidate wins: its verdict, the summary).
    # Which way it goes depends on the machine: here a grid candidate beats the default at these
    # sizes, on CI's machine every one was slower (0.38x), and a search that saw none faster stores
    # a confirmation without rounds ('no candidate'), which nothing can cut.
    assert "confirmed best:" not in before, before[-3000:]
    cut = before.count("confirming the best")
    assert before.count("requeueing job") >= cut
    started = last.count("confirming the best") + last.count("rounds stopped: no candidate")
    assert started == 1, last[-3000:]
    assert "\nconfirmed best:" in last, last[-3000:]
    assert study.user_attrs.get("autotune.confirmation") is not None
    final = status(env)
    assert not final["alive"] and final["trials_complete"] == CONFIGS
    print(f"trials: {CONFIGS} complete, {len(interrupted)} interrupted by the limit's signal "
          f"and measured again in a later job; confirmations cut by an early signal: {cut}")
