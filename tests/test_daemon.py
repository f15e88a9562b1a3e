"""The daemon under kills, stops, concurrent starts, changed machines and failure storms. Real
mpirun, real SQLite; a fake mpirun only injects faults (tests/fake_mpirun.py)."""
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

ROOT = Path(__file__).resolve().parent.parent
STUDY = "allreduce-1n2p-openmpi-ucx+openmpi-tuned"
FAST = ["--collective", "allreduce", "--ppn", "2", "--sizes", "8:1k", "--repetitions", "3",
        "--stages", "1", "--time-per-size", "0.003", "--no-check-live", "--no-per-size",
        "--foreground"]
MARKERS = ("autotune.benchmarks.mpi4py_kernel", "cbench-", "orted", "fake_mpirun")

pytestmark = pytest.mark.mpi


def exe():
    return shutil.which("autotune", path=str(Path(sys.executable).parent)) or "autotune"


def launch(home, *args, out=None, extra_env=None):
    env = dict(os.environ, AUTOTUNE_HOME=str(home), COLUMNS="160", **(extra_env or {}))
    return subprocess.Popen([exe(), "start", *args], env=env, stdin=subprocess.DEVNULL,
                            stdout=out or subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def load(home, name=STUDY):
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna.load_study(study_name=name, storage=f"sqlite:///{home / 'autotune.db'}")


def leftovers(home=None):
    """Daemon, mpirun and kernel processes still alive; with `home`, only those of the daemon
    whose AUTOTUNE_HOME it is (its launches inherit the variable), not another test's or user's."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if home is not None and f"AUTOTUNE_HOME={home}".encode() not in environ:
            continue
        if state != "Z" and (any(m in cmd for m in MARKERS) or cmd.startswith("/usr/bin/mpirun")
                             or cmd.startswith("mpirun ")):
            found.append(f"{entry}: {cmd[:120]}")
    return found


def wait_no_leftovers(timeout=15.0, home=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and leftovers(home):
        time.sleep(0.2)
    return leftovers(home)


def check_intact(study):
    """Completed trials keep every size and repetition; a re-queued run never duplicates a
    completed one."""
    trials = study.get_trials(deepcopy=False)
    by_number = {t.number: t for t in trials}
    for t in trials:
        if t.state == optuna.trial.TrialState.COMPLETE:
            raw = t.user_attrs["raw_us"]
            # a candidate has its 3 rounds; the default is complete after 2 (the screen strategy)
            rounds = 2 if t.user_attrs.get("is_default") else 3
            assert len(raw) == 8 and all(len(v) == rounds for v in raw.values()), t.number
            origin = t.user_attrs.get("requeued_from")
            if origin is not None:
                assert by_number[origin].state != optuna.trial.TrialState.COMPLETE, (t.number, origin)


def test_two_simultaneous_starts_exactly_one_runs(tmp_path):
    a = launch(tmp_path, *FAST, "--trials", "2")
    b = launch(tmp_path, *FAST, "--trials", "2")
    outs = [p.communicate(timeout=300) for p in (a, b)]
    codes = sorted([a.returncode, b.returncode])
    assert codes == [0, 3], outs
    refused = next(o for (o, _), p in zip(outs, (a, b)) if p.returncode == 3)
    assert "already running (pid" in refused and " on " in refused


@pytest.mark.parametrize("job_left, code", [(None, 0), (4 * 3600, 0), (150, 75)],
                         ids=["terminal", "early-in-a-slurm-job", "near-the-jobs-end"])
def test_sigterm_during_a_trial(tmp_path, job_left, code):
    """A stop is a clean exit 0 outside Slurm, and early in a job (`autotune stop`, scancel: the
    job ends). Near the job's end the signal is the time limit arriving before the study ended:
    exit 75, so the job script requeues and the next job resumes."""
    job = {} if job_left is None else {"SLURM_JOB_END_TIME": str(int(time.time()) + job_left)}
    proc = launch(tmp_path, *FAST, "--trials", "30", extra_env=job)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until a benchmark of a trial is running
        if any(m in line for line in leftovers(home=tmp_path)
               for m in ("mpi4py_kernel", "cbench-")):
            try:
                if load(tmp_path).get_trials(states=(optuna.trial.TrialState.RUNNING,)):
                    break
            except KeyError:
                pass
        time.sleep(0.05)
    else:
        pytest.fail("no trial started")
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == code, out
    assert time.monotonic() - t0 < 15
    assert wait_no_leftovers(home=tmp_path) == []
    study = load(tmp_path)
    interrupted = [t for t in study.trials if t.user_attrs.get("fail_reason") == "interrupted"]
    assert len(interrupted) == 1
    queued = [t for t in study.trials if t.state == optuna.trial.TrialState.WAITING]
    assert [t.user_attrs.get("requeued_from") for t in queued] == [interrupted[0].number]
    assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
    # the next start resumes with the interrupted parameters
    again = launch(tmp_path, *FAST, "--trials", "1")
    again.communicate(timeout=300)
    assert again.returncode == 0
    rerun = [t for t in load(tmp_path).trials
             if t.user_attrs.get("requeued_from") == interrupted[0].number]
    assert rerun and rerun[0].state.is_finished() and rerun[0].params == interrupted[0].params


def running_trial_seen(home, timeout: float = 120.0) -> bool:
    """Whether a trial of the study is running within `timeout` (polled from its storage)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if load(home).get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
                return True
        except KeyError:
            pass  # the study is not created yet
        time.sleep(0.2)
    return False


def test_twenty_sigkills_at_random_points(tmp_path):
    rng = random.Random(20261122)
    log = open(tmp_path / "out.log", "w")
    for kill in range(20):
        proc = launch(tmp_path, *FAST, "--trials", "50", "--seed", str(kill), out=log)
        if kill < 15:
            time.sleep(rng.uniform(0.3, 5.0))
        else:  # the last kills inside a trial: in a slow hour every start took over 5 s
            assert running_trial_seen(tmp_path), f"no trial ran before kill {kill}"
            time.sleep(rng.uniform(0.0, 1.0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert wait_no_leftovers(home=tmp_path) == [], f"after kill {kill}"
        try:
            check_intact(load(tmp_path))
        except KeyError:
            pass  # killed before the study was created
    final = launch(tmp_path, *FAST, "--trials", "1", out=log)
    final.wait(timeout=300)
    assert final.returncode == 0, (tmp_path / "out.log").read_text()[-2000:]
    study = load(tmp_path)
    assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
    check_intact(study)
    abandoned = [t for t in study.trials if t.user_attrs.get("fail_reason") == "abandoned"]
    assert abandoned, "no kill landed inside a trial"
    assert sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials) >= 1


def test_changed_machine_refuses_and_force_or_new_study_go_on(tmp_path):
    first = launch(tmp_path, *FAST, "--trials", "1")
    first.communicate(timeout=300)
    study = load(tmp_path)
    fingerprint = dict(study.user_attrs["autotune.fingerprint"], cpu_model="Another CPU 9000")
    study.set_user_attr("autotune.fingerprint", fingerprint)
    refused = launch(tmp_path, *FAST, "--trials", "1")
    out, _ = refused.communicate(timeout=300)
    assert refused.returncode == 2
    assert "ran on a different machine" in out and "Another CPU 9000" in out and "--force" in out
    fresh = launch(tmp_path, *FAST, "--trials", "1", "--new-study")
    fresh.communicate(timeout=300)
    assert fresh.returncode == 0
    names = [s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{tmp_path / 'autotune.db'}")]
    assert len(names) == 2
    forced = launch(tmp_path, *FAST, "--trials", "1", "--force")
    forced.communicate(timeout=300)
    assert forced.returncode == 0


def test_a_study_measured_by_an_earlier_kernel_method_is_not_resumed_unasked(tmp_path):
    """A study begun by an autotune whose kernel timed differently (no method in its
    fingerprint, as before it was recorded) is refused, not silently mixed; --force goes on."""
    kernel = ("--benchmark", "mpi4py")
    first = launch(tmp_path, *FAST, *kernel, "--trials", "1")
    first.communicate(timeout=300)
    study = load(tmp_path)
    fingerprint = dict(study.user_attrs["autotune.fingerprint"])
    assert "mpi4py kernel" in fingerprint.pop("benchmark_method")
    study.set_user_attr("autotune.fingerprint", fingerprint)
    refused = launch(tmp_path, *FAST, *kernel, "--trials", "1")
    out, _ = refused.communicate(timeout=300)
    assert refused.returncode == 2, out
    assert "another method of its benchmark" in out and "--force" in out, out
    assert "mpi4py kernel" in out
    forced = launch(tmp_path, *FAST, *kernel, "--trials", "2", "--force")
    out, _ = forced.communicate(timeout=300)
    assert forced.returncode == 0, out[-2000:]
    assert "mpi4py kernel" in load(tmp_path).user_attrs["autotune.fingerprint"]["benchmark_method"]


def test_two_hundred_consecutive_failures(tmp_path, monkeypatch):
    """Every candidate fails (segfault, MPI abort, garbage, flood, truncated, bad numbers, init
    error, hang); the study keeps going, classifies each, and leaks neither processes nor fds."""
    from autotune.session import StartOptions, prepare_session
    from autotune.units import parse_size_range

    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "mpirun"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'fake_mpirun.py'} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MPIRUN_MODE", "faults")
    monkeypatch.setenv("FAKE_REAL_MPIRUN", shutil.which("mpirun", path="/usr/bin") or "/usr/bin/mpirun")
    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path / "home"))
    options = StartOptions(collective="allreduce", ppn=2, space=str(ROOT / "tests/data/space-faults.yaml"),
                           sizes=parse_size_range("8"), repetitions=3, stages=1, time_per_size=0.003,
                           baseline_every=100000, prune=False, check_live=False, timeout_floor=0.5,
                           seed=7, storage=f"sqlite:///{tmp_path / 'faults.db'}")
    session = prepare_session(options)
    fds_before = len(os.listdir("/proc/self/fd"))
    try:
        summary = session.controller(options, None).run(201)
    finally:
        session.lock.release()
    states = [o.state for o in summary.outcomes]
    assert states.count("COMPLETE") == 1 and states.count("FAIL") == 200, (states, summary.stopped_because)
    expected = {"segfault": "crash", "abort": "config", "garbage": "crash", "flood": "crash",
                "truncated": "crash", "negative": "crash", "init-error": "config", "hang": "timeout"}
    cycle = ["segfault", "abort", "garbage", "flood", "truncated", "negative", "init-error"]
    seen = set()
    for trial in session.study.trials:
        if trial.state != optuna.trial.TrialState.FAIL or trial.user_attrs.get("skipped"):
            continue
        value = trial.params["UCX_RNDV_THRESH"]
        mode = "hang" if value % 50 == 0 else cycle[value % len(cycle)]
        assert trial.user_attrs["fail_reason"] == expected[mode], (value, mode, trial.user_attrs)
        seen.add(mode)
    assert len(seen) >= 6
    assert wait_no_leftovers() == []
    assert len(os.listdir("/proc/self/fd")) <= fds_before + 2


def test_slurm_end_time_sets_the_deadline(monkeypatch):
    from autotune.launch import slurm_end_time

    monkeypatch.setenv("SLURM_JOB_END_TIME", "1900000000")
    assert slurm_end_time() == 1900000000.0
    monkeypatch.delenv("SLURM_JOB_END_TIME")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert slurm_end_time() is None


def test_time_budget_stops_launching_in_time(autotune_cli, tmp_path):
    t0 = time.monotonic()
    proc = autotune_cli("start", *FAST, "--trials", "200", "--time-budget", "20s", "--confirm", "0",
                        check=True)
    assert time.monotonic() - t0 < 60
    assert "time budget" in proc.stderr
    study = load(tmp_path / "home")
    assert 1 <= len(study.trials) < 200


def test_the_slurm_jobs_end_stops_with_exit_75_to_requeue(autotune_cli, tmp_path):
    # the job ends in 60 s: autotune stops launching a quarter of that (15 s) before, trials left
    end = str(int(time.time()) + 60)
    proc = autotune_cli("start", *FAST, "--trials", "200", "--confirm", "0",
                        extra_env={"SLURM_JOB_END_TIME": end})
    assert proc.returncode == 75, proc.stderr
    assert "Slurm job ends before another trial would finish" in proc.stderr
    assert 1 <= len(load(tmp_path / "home").trials) < 200
    # an own --time-budget that runs out is a normal end: exit 0
    proc = autotune_cli("start", *FAST, "--trials", "200", "--confirm", "0", "--time-budget", "10s",
                        extra_env={"SLURM_JOB_END_TIME": str(int(time.time()) + 3600)})
    assert proc.returncode == 0, proc.stderr


def test_infrastructure_failures_are_retried_then_pause(tmp_path, monkeypatch):
    from autotune.session import StartOptions, prepare_session
    from autotune.units import parse_size_range

    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "mpirun"
    # the default (which sets nothing) runs for real; every candidate launch fails as if a node
    # were unreachable
    wrapper.write_text(f"#!/bin/sh\ncase \"$*\" in *UCX_RNDV_THRESH=*) FAKE_MPIRUN_MODE=infra exec "
                       f"{sys.executable} {ROOT / 'tests' / 'fake_mpirun.py'} \"$@\";; esac\n"
                       "exec /usr/bin/mpirun \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path / "home"))
    options = StartOptions(collective="allreduce", ppn=2, space=str(ROOT / "tests/data/space-faults.yaml"),
                           sizes=parse_size_range("8"), repetitions=3, stages=1, time_per_size=0.003,
                           baseline_every=100000, prune=False, check_live=False, seed=3,
                           infra_pause=0.5, confirm_top=0, storage=f"sqlite:///{tmp_path / 'i.db'}")
    session = prepare_session(options)
    pauses = []

    class Events:
        def __getattr__(self, name):
            return lambda *a, **k: pauses.append(a) if name == "paused" else None

    try:
        controller = session.controller(options, Events())
        controller.run(7)
    finally:
        session.lock.release()
    failed = [t for t in session.study.trials if t.user_attrs.get("fail_reason") == "infrastructure"]
    assert len(failed) == 6
    assert all(t.user_attrs["launch_count"] == 3 for t in failed)  # first try + 2 retries
    assert len(pauses) == 1 and "5 trials in a row" in pauses[0][0]
