"""A real small study of a non-blocking collective through the CLI: real mpirun, 2 ranks, the
mpi4py kernel's IMB-NBC method, the overlap objective, real SQLite storage in a temporary
AUTOTUNE_HOME; then what a user reads back (best, history, report) and what is refused."""
import functools
import io

import optuna
import pandas as pd
import pytest

from tests import cli_runner

pytestmark = pytest.mark.mpi

SIZES = "8:1k"  # 8 sizes
STUDY = "iallreduce-1n2p-openmpi-ucx+openmpi-libnbc"
FAST = ("--nodes", "1", "--ppn", "2", "--sizes", SIZES, "--repetitions", "3", "--stages", "1",
        "--time-per-size", "0.003", "--space", "openmpi-ucx+openmpi-libnbc", "--seed", "3",
        "--no-check-live", "--no-verify", "--foreground", "--confirm", "0", "--no-per-size")


@pytest.fixture(scope="module")
def nbc_run(tmp_path_factory, mpirun):
    home = tmp_path_factory.mktemp("home")
    cli = functools.partial(cli_runner(home, home), check=True, timeout=600)

    proc = cli("start", "--collective", "iallreduce", "--objective", "overlap", "--trials", "3",
               *FAST)
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{home / 'autotune.db'}")
    return cli, proc, study, home


def test_the_study_scores_the_exposed_share_and_stores_the_nbc_columns(nbc_run):
    _, proc, study, _ = nbc_run
    assert study.user_attrs["autotune.config"]["objective"] == "overlap"
    finished = [t for t in study.trials if t.state in (optuna.trial.TrialState.COMPLETE,
                                                       optuna.trial.TrialState.PRUNED)]
    assert len(finished) == 3, proc.stderr  # a loser may be stopped after its first round
    assert study.trials[0].state == optuna.trial.TrialState.COMPLETE
    for trial in finished:  # every size of every launch scored as the exposed share
        assert all(1.0 <= q <= 2.0 for qs in trial.user_attrs["raw_us"].values() for q in qs)
    default = study.trials[0]
    assert default.user_attrs["is_default"] is True
    raw = default.user_attrs["raw_us"]
    assert len(raw) == 8 and all(1.0 <= q <= 2.0 for qs in raw.values() for q in qs)
    for launch in default.user_attrs["launches"]:
        for size, columns in launch["nbc"].items():
            assert raw[size][launch["rep"]] == pytest.approx(2 - columns["overlap_pct"] / 100)
            assert columns["t_ovrl_us"] > 0 and columns["t_pure_us"] > 0
    # the default trial's paired default launches are scored the same way
    assert all(1.0 <= q <= 2.0 for qs in default.user_attrs["default_us"].values() for q in qs)


def test_best_prints_the_overlap_per_size_of_default_and_best(nbc_run):
    cli, _, _, _ = nbc_run
    out = cli("best").stdout
    assert "overlap per size (IMB-NBC's method" in out
    header = next(line for line in out.splitlines() if line.startswith("size\t"))
    assert header.split("\t")[:5] == ["size", "default t_pure", "default t_ovrl",
                                      "default t_CPU", "default overlap%"]
    rows = [line.split("\t") for line in out.splitlines()
            if line.split("\t")[0] in ("8 B", "1 KiB")]
    assert len(rows) == 2 and all(0.0 <= float(r[4]) <= 100.0 for r in rows)


def test_history_and_report_carry_the_nbc_columns(nbc_run):
    cli, _, _, home = nbc_run
    frame = pd.read_csv(io.StringIO(cli("history", "--format", "csv").stdout))
    assert {"t_pure_us", "t_ovrl_us", "t_cpu_us", "overlap_pct"} <= set(frame.columns)
    cli("report", "-o", str(home / "report"))
    page = (home / "report" / "index.html").read_text()
    assert '<section id="overlap"><h2>Overlap per size: default vs best</h2>' in page


def test_another_objective_or_a_blocking_overlap_is_refused_in_one_line(nbc_run):
    cli, _, _, _ = nbc_run
    other = cli("start", "--collective", "iallreduce", "--objective", "t_ovrl", "--trials", "1",
                *FAST, check=False)
    assert other.returncode != 0
    assert "was created with different objective" in other.stderr
    assert "objective: stored 'overlap', now 't_ovrl'" in other.stderr
    blocking = cli("start", "--collective", "allreduce", "--objective", "overlap", "--trials",
                   "1", *FAST, check=False)
    assert blocking.returncode != 0
    lines = [line for line in blocking.stderr.splitlines() if line.strip()]
    assert lines == ["autotune: error: --objective overlap needs a non-blocking collective (e.g. "
                     "--collective iallreduce); allreduce is scored on latency only"]
