"""The independent check for real: a tiny study with the mpi4py kernel whose end-of-study check
runs IMB-MPI1 (../shared/tools/imb) on the same nodes, then `autotune verify` with the kernel.

A tiny run seldom proves a winner, so the confirmation's claim is written into the study (as
confirm.py stores it); the search trials and every launch of the checks are real."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from autotune.session import StartOptions, prepare_session
from autotune.storage import CONFIRMATION_ATTR, stored_verification
from autotune.endgame.verify import agreement
from tests import SHARED

ROOT = Path(__file__).resolve().parents[2]
IMB_DIR = (SHARED / "tools" / "imb").resolve()  # autotune stores it resolved
CLAIM = (1.1, (1.02, 1.2))  # what the (written) confirmation claims for trial 1


@pytest.fixture
def imb_dir():
    if not (IMB_DIR / "IMB-MPI1").is_file():
        pytest.fail(f"IMB-MPI1 not found in {IMB_DIR}: the shared tools are part of the test setup")
    return str(IMB_DIR)


def test_end_of_study_check_with_imb_then_verify_with_the_kernel(tmp_path, monkeypatch, mpirun,
                                                                  imb_dir, autotune_cli):
    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path / "home"))
    url = f"sqlite:///{tmp_path / 's.db'}"
    options = StartOptions(collective="allreduce", nodes=1, ppn=2, sizes=tuple(2**i for i in
                                                                              range(3, 13)),
                           space=str(ROOT / "tests" / "data" / "space-grid.yaml"),
                           repetitions=3, stages=1, time_per_size=0.005, prune=False,
                           seed=1, storage=url, study_name="v", imb_dir=imb_dir,
                           benchmark="mpi4py", verify_rounds=4)  # IMB checks the kernel
    session = prepare_session(options)
    try:
        study = session.study
        assert session.verify_choice.benchmark.describe().startswith("IMB-MPI1 (")
        study.enqueue_trial({"coll_tuned_allreduce_algorithm": 3})  # trial 1, after the default
        controller = session.controller(options, None)

        def claim(deadline, deadline_ends_job=False):
            speedup, (low, high) = CLAIM
            study.set_user_attr(CONFIRMATION_ATTR, {
                "rounds": 5, "best_trial": 1, "finished": 1.0, "method": "t",
                "candidates": [{"trial": 1, "params": {}, "round_scores": [], "failed": "",
                                "speedup": speedup, "speedup_interval": [low, high]}]})
            controller.summary.confirmation = SimpleNamespace(best_trial=1)
            return True  # confirmed: what follows the confirmation runs

        controller.run_confirmation = claim
        summary = controller.run(2)
    finally:
        session.pool.close()
        session.lock.release()
    assert [o.state for o in summary.outcomes] == ["COMPLETE", "COMPLETE"]
    check = stored_verification(study)
    assert summary.verification == check
    assert check.benchmark == f"IMB-MPI1 ({imb_dir}/IMB-MPI1)" and check.independent
    assert (check.trial, check.rounds, check.rounds_measured, check.failed) == (1, 4, 4, "")
    assert [s.size for s in check.sizes] == list(options.sizes)
    assert Path(check.argv[0]).name == "mpirun" and f"{imb_dir}/IMB-MPI1" in check.argv
    assert (check.search_speedup, check.search_interval) == CLAIM
    assert check.agrees is agreement(check.speedup_interval, CLAIM[1])

    header = [line for line in autotune_cli("export", "--storage", url,
                                            check=True).stdout.splitlines() if line[:1] == "#"]
    at = header.index("# confirmed against the default in interleaved rounds: speedup 1.100x "
                      "(95% CI 1.020x..1.200x)")
    assert header[at + 1 + check.disagrees].startswith("# independent check (IMB-MPI1, 4 rounds):"
                                                       " speedup ")
    assert "(1.10x, 1.02x..1.20x)" in header[at + 1 + check.disagrees]
    status = autotune_cli("status", "--storage", url, check=True).stdout
    assert check.describe() in status

    proc = autotune_cli("verify", "--storage", url, "--benchmark", "mpi4py", "--rounds", "3",
                        "--format", "json", check=True)
    doc = json.loads(proc.stdout)
    assert (doc["benchmark"], doc["independent"], doc["rounds"], doc["trial"]) == (
        "mpi4py kernel", False, 3, 1)
    assert doc["rounds_measured"] == 3 and "not independent" in doc["text"]
    # the kernel is the search's own benchmark: its check never replaces the independent one
    assert stored_verification(study).benchmark == f"IMB-MPI1 ({imb_dir}/IMB-MPI1)"
