"""A real study outlives a reader that holds its database past the busy timeout: the wait is
named ("locked by another process"), the run finishes, nothing stored is lost."""
import sqlite3
import subprocess
import threading
import time

import optuna
import pytest

from tests.storage import fill_disk, trials_in


def wait_for_a_trial(db, state):
    deadline = time.monotonic() + 120
    while trials_in(db, state) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)


def study_argv(db, seed):
    """A small real study (4 trials, 4 sizes) whose storage is `db`."""
    return ["start", "--collective", "allreduce", "--ppn", "2", "--sizes", "8:256",
            "--repetitions", "3", "--stages", "1", "--time-per-size", "0.002", "--trials", "4",
            "--space", "openmpi-tuned", "--no-check-live", "--confirm", "0", "--seed", str(seed),
            "--storage", f"sqlite:///{db}", "--foreground"]


@pytest.mark.mpi
def test_a_reader_holding_the_database_does_not_end_the_run(autotune_cli, tmp_path):
    db = tmp_path / "held.db"
    argv = study_argv(db, seed=1)
    held = threading.Event()

    def hold_while_the_first_trial_runs():
        # From here the run still has to tell this trial and store three more: whether the
        # screen prunes or completes them, those writes meet the held lock.
        wait_for_a_trial(db, "RUNNING")
        con = sqlite3.connect(db, isolation_level=None)
        con.execute("BEGIN")
        con.execute("SELECT count(*) FROM trials").fetchall()  # a shared lock, kept
        held.set()
        time.sleep(5.0)  # ten busy timeouts
        con.execute("COMMIT")
        con.close()

    holder = threading.Thread(target=hold_while_the_first_trial_runs)
    holder.start()
    proc = autotune_cli(*argv, extra_env={"AUTOTUNE_SQLITE_TIMEOUT": "0.5"}, timeout=300)
    holder.join()
    assert held.is_set(), "the run ended before its first trial started"
    assert proc.returncode == 0, proc.stderr
    assert "locked by another process" in proc.stderr and "internal error" not in proc.stderr, \
        proc.stderr[-3000:]
    name = optuna.get_all_study_summaries(f"sqlite:///{db}")[0].study_name
    trials = optuna.load_study(study_name=name, storage=f"sqlite:///{db}").trials
    launched = [t for t in trials if not t.user_attrs.get("skipped")]
    assert len(launched) == 4 and all(t.state.is_finished() for t in trials)
    assert subprocess.run(["pgrep", "-f", str(db)], capture_output=True).returncode == 1


@pytest.mark.mpi
def test_a_full_disk_mid_study_pauses_the_run_until_space_comes_back(autotune_cli, small_disk):
    db = small_disk / "full.db"
    argv = study_argv(db, seed=2)

    def fill_while_the_first_trial_runs_then_free():
        wait_for_a_trial(db, "RUNNING")
        filler = fill_disk(small_disk)
        time.sleep(4.0)
        filler.unlink()

    filler_thread = threading.Thread(target=fill_while_the_first_trial_runs_then_free)
    filler_thread.start()
    proc = autotune_cli(*argv, timeout=300)
    filler_thread.join()
    assert proc.returncode == 0, proc.stderr
    assert f"disk full at {db}" in proc.stderr and "internal error" not in proc.stderr
    name = optuna.get_all_study_summaries(f"sqlite:///{db}")[0].study_name
    trials = optuna.load_study(study_name=name, storage=f"sqlite:///{db}").trials
    assert len([t for t in trials if not t.user_attrs.get("skipped")]) == 4
    assert all(t.state.is_finished() for t in trials)


def test_no_room_for_the_lock_file_is_a_one_line_disk_full(autotune_cli, small_disk):
    home = small_disk / "home"
    home.mkdir()
    fill_disk(small_disk)
    proc = autotune_cli("start", "--collective", "allreduce", "--ppn", "2", "--foreground",
                        "--storage", f"sqlite:///{small_disk.parent / 'elsewhere.db'}",
                        extra_env={"AUTOTUNE_HOME": str(home)}, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "disk full at" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
