"""The independent check's logic: which benchmark, agreement with the search, intervals from the
rounds, and its faults (a launch that keeps failing, no time left) never ending a run badly.
The real measurement is in test_verify_e2e.py."""

from __future__ import annotations

import math
import random
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from autotune.errors import EnvironmentProblem, LaunchFailure
from autotune.measure import LaunchFailed, LaunchRecord, MeasurementPlan
from autotune.space import LaunchSettings
from autotune.storage import CONFIRMATION_ATTR, StudyConfig, stored_verification
from autotune.endgame.partner import choose_benchmark, search_benchmark
from autotune.endgame.rounds import Arm
from autotune.endgame.verify import (EndOfStudyVerifier, Rounds, agreement, estimate_seconds,
                                     measure_rounds, store, summarize)
from tests.storage import CONFIG, add_trial, controller_attrs, new_study
from tests import SHARED

ROOT = Path(__file__).resolve().parents[2]
IMB_DIR = (SHARED / "tools" / "imb").resolve()  # autotune stores it resolved
PLAN = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8, 1024), repetitions=2,
                       stages=2, time_per_size=0.01)
def arms():
    """(the untuned stack, the best): fresh arms, as each check builds them."""
    return (Arm("the untuned stack", LaunchSettings(), {}, is_default=True),
            Arm("the best", LaunchSettings(mca=(("coll_tuned_allreduce_algorithm", "3"),)),
                {"alg": 3}))


@pytest.mark.parametrize("check, search, agrees", [
    ((0.98, 1.10), (1.03, 1.21), True),  # overlaps the search and 1: backs it
    ((0.97, 1.02), (1.03, 1.21), False),  # entirely below the search's interval, no gain proven
    ((1.01, 1.02), (1.03, 1.21), True),  # a smaller gain than claimed, but a gain beyond doubt
    ((0.80, 0.95), None, False),  # slower than the untuned stack beyond doubt
    ((0.80, 0.95), (0.5, 0.9), False),  # even where the search claimed little
    ((0.90, 1.20), None, True),  # no search figure: only the untuned stack counts
])
def test_agreement(check, search, agrees):
    assert agreement(check, search) is agrees


def test_agreement_without_interval_uses_the_search_figure():
    assert agreement((0.97, 1.03), None, 1.30) is False  # an unconfirmed 1.3x did not reproduce
    assert agreement((0.97, 1.35), None, 1.30) is True


def test_summarize_gives_student_t_intervals_and_the_agreement():
    rounds = Rounds(per_size={8: [-0.1, -0.2, -0.15], 1024: [0.0, 0.05, -0.05]},
                    scores=[-0.05, -0.075, -0.1], argv=("mpirun",))
    result = summarize(rounds, benchmark="IMB-MPI1 (/x/IMB-MPI1)", independent=True, trial=4,
                       rounds=3, search=(1.12, (1.03, 1.21)))
    assert result.rounds_measured == 3 and result.speedup == pytest.approx(math.exp(0.075))
    low, high = result.speedup_interval
    assert low < result.speedup < high and result.agrees is (high >= 1.03)
    assert [s.size for s in result.sizes] == [8, 1024]
    assert result.sizes[0].speedup == pytest.approx(math.exp(0.15))
    assert (result.search_speedup, result.search_interval) == (1.12, (1.03, 1.21))
    too_few = summarize(Rounds(scores=[-0.1], failures=["the best: config: refused"],
                               stopped="3 launches failed"),
                        benchmark="mpi4py kernel", independent=False, trial=4, rounds=3,
                        search=(1.1, None))
    assert too_few.speedup is None and too_few.agrees is None
    assert too_few.failed.startswith("1 of 3 rounds measured (3 launches failed); last failure")


def test_benchmark_of_the_check():
    config = StudyConfig.from_dict({**CONFIG, "benchmark": f"IMB-MPI1 ({IMB_DIR}/IMB-MPI1)"})
    assert search_benchmark(config) == "imb"
    assert search_benchmark(StudyConfig.from_dict(CONFIG)) == "mpi4py"  # stored nothing: kernel
    after_imb = choose_benchmark("imb")
    assert after_imb.benchmark.name == "mpi4py" and after_imb.independent
    after_kernel = choose_benchmark("mpi4py", located=SimpleNamespace(imb_dir=str(IMB_DIR)))
    assert after_kernel.benchmark.describe() == f"IMB-MPI1 ({IMB_DIR}/IMB-MPI1)"
    assert after_kernel.independent and not after_kernel.note
    same = choose_benchmark("mpi4py", requested="mpi4py")
    assert not same.independent and "not independent" in same.note
    with pytest.raises(EnvironmentProblem, match="IMB-MPI1 not found"):
        # asked for: no quiet fallback
        choose_benchmark("mpi4py", located=SimpleNamespace(imb_dir=str(ROOT / "tests")))


def test_without_imb_on_path_the_kernel_checks_itself_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    fallback = choose_benchmark("mpi4py")
    assert fallback.benchmark.name == "mpi4py" and not fallback.independent
    assert "not independent" in fallback.note
    assert choose_benchmark("mpi4py", allow_same=False) is None  # `start`: no check at all


class ScriptedMeasurer:
    """Launch results from a script (a fault injector): the best runs at `factor` x the default,
    or fails with `fail` ("config", "interrupted", ...)."""

    def __init__(self, factor: float = 0.9, fail: str = "") -> None:
        self.plan = PLAN
        self.factor = factor
        self.fail = fail
        self.launches = 0
        self.order: list[bool] = []  # is_default of each launch, in order

    def run_launch(self, settings, planned, seed, *, params=None, is_default=False):
        self.launches += 1
        self.order.append(is_default)
        record = LaunchRecord(index=-1, block=planned.block, rep=planned.rep, seed=seed,
                              sizes=list(planned.sizes), argv=["mpirun", str(is_default)],
                              hosts=["n1"], started=time.time(), seconds=0.1, returncode=0)
        if self.fail and not is_default:
            raise LaunchFailed(LaunchFailure(self.fail, "MPI refused it"), record)
        record.t_max_us = {s: 10.0 * (1 if is_default else self.factor) for s in planned.sizes}
        return record


def test_rounds_pair_every_block_with_the_default_launched_just_before():
    measurer = ScriptedMeasurer(0.8)
    measured = measure_rounds(measurer, *arms(), {8: 0.5, 1024: 0.5}, 8, random.Random(1))
    assert measured.scores == pytest.approx([math.log(0.8)] * 8)
    assert sorted(measured.per_size) == [8, 1024]
    assert measured.per_size[1024] == pytest.approx([math.log(0.8)] * 8)
    assert measured.argv == ("mpirun", "False") and not measured.failures
    pairs = list(zip(measurer.order[::2], measurer.order[1::2]))  # (first, second) of each pair
    assert set(pairs) == {(True, False)} and len(pairs) == 16


def test_a_best_that_fails_is_out_at_once_and_a_stop_request_passes():
    measurer = ScriptedMeasurer(fail="config")
    measured = measure_rounds(measurer, *arms(), {8: 0.5, 1024: 0.5}, 20, random.Random(1))
    assert measured.failures == ["the best: config: MPI refused it"] and not measured.stopped
    assert not measured.scores and measurer.launches <= 2
    with pytest.raises(LaunchFailed):
        measure_rounds(ScriptedMeasurer(fail="interrupted"), *arms(), {8: 1.0}, 3,
                       random.Random(1))


def _claimed_study(tmp_path, settings=None):
    study = new_study(tmp_path)
    default = controller_attrs(is_default=True, speedup=1.0, env={})
    if settings is not None:  # settings that run here: the untuned stack is no setting at all
        default["settings"] = {"env": {}, "mca": {}, "mpirun_args": []}
    add_trial(study, "all", attrs=default, value=0.0)
    best = controller_attrs(speedup=1.2)
    if settings is not None:
        best["settings"] = settings
    add_trial(study, "self,sm", attrs=best, value=-math.log(1.2))
    study.set_user_attr(CONFIRMATION_ATTR, {
        "rounds": 5, "best_trial": 1, "finished": 1.0, "method": "t",
        "candidates": [{"trial": 1, "params": {}, "round_scores": [-0.1] * 5, "mean": -0.1,
                        "ci_low": -0.15, "ci_high": -0.05, "failed": "",
                        "speedup": math.exp(0.1),
                        "speedup_interval": [math.exp(0.05), math.exp(0.15)]}]})
    return study


class Events:
    def __init__(self):
        self.heard = []

    def verifying(self, benchmark, rounds):
        self.heard.append(("verifying", benchmark, rounds))

    def verified(self, verification, notice=""):
        self.heard.append(("verified", verification, notice))


def test_end_of_study_check_stores_a_failure_and_never_raises(tmp_path):
    study = _claimed_study(tmp_path)
    events = Events()
    verifier = EndOfStudyVerifier(study, choose_benchmark("imb"), rounds=5, events=events)
    placed = SimpleNamespace(group=None, measurer=SimpleNamespace(
        plan=PLAN, oversubscribe=False, executor=None))  # no launcher: every launch raises
    result = verifier(placed, None)
    assert result.failed and result.trial == 1 and result.agrees is None
    assert stored_verification(study) == result
    assert [h[0] for h in events.heard] == ["verifying", "verified"]


def test_end_of_study_check_is_skipped_when_time_is_short(tmp_path):
    study = _claimed_study(tmp_path)
    events = Events()
    verifier = EndOfStudyVerifier(study, choose_benchmark("imb"), rounds=5, events=events)
    placed = SimpleNamespace(group=None, measurer=SimpleNamespace(
        plan=PLAN, oversubscribe=False, executor=None))
    assert verifier(placed, time.time() + 3600) is None  # no launch time known yet: no guess
    assert events.heard[-1][2].endswith("skipped: not enough time left")
    assert stored_verification(study) is None


def test_estimate_from_the_default_launches(tmp_path):
    from autotune.storage import BaselineLaunch, save_baseline

    study = new_study(tmp_path)
    assert estimate_seconds(study, PLAN, 10) is None
    for i, block in enumerate([0, 1, 0, 1], start=1):
        save_baseline(study, BaselineLaunch(id=i, run_id="r", block=block, started=float(i),
                                            seconds=0.5 * (block + 1), t_max_us={8: 1.0}))
    assert estimate_seconds(study, PLAN, 10) == pytest.approx(2 * (0.5 + 1.0) * 10 * 1.5)


def test_a_wrong_result_of_the_best_withholds_it_at_once():
    measurer = ScriptedMeasurer(fail="wrong-result")
    measured = measure_rounds(measurer, *arms(), {8: 0.5, 1024: 0.5}, 20, random.Random(1))
    assert measured.wrong_result and measurer.launches <= 2
    result = summarize(measured, benchmark="mpi4py kernel", independent=True, trial=1, rounds=20,
                       search=(1.1, (1.02, 1.2)))
    assert result.failed.startswith("wrong-result") and result.agrees is False and result.disagrees


def test_a_failed_or_dependent_check_never_replaces_a_measured_independent_one(tmp_path):
    study = _claimed_study(tmp_path)
    measured = Rounds(per_size={8: [-0.1, -0.12, -0.11]}, scores=[-0.1, -0.12, -0.11])
    good = summarize(measured, benchmark="IMB-MPI1", independent=True, trial=1, rounds=3,
                     search=(1.1, (1.02, 1.2)))
    store(study, good)
    store(study, summarize(Rounds(), benchmark="IMB-MPI1", independent=True, trial=1, rounds=3,
                           search=(1.1, (1.02, 1.2))))  # 0 rounds measured: failed
    store(study, summarize(measured, benchmark="mpi4py kernel", independent=False, trial=1,
                           rounds=3, search=(1.1, (1.02, 1.2))))
    assert stored_verification(study) == good
    wrong = summarize(Rounds(wrong_result="bad sum"), benchmark="mpi4py kernel",
                      independent=False, trial=1, rounds=3, search=(1.1, (1.02, 1.2)))
    store(study, wrong)
    assert stored_verification(study) == wrong


def _adopt_rules(study, trial: int):
    """Per-size rules adopted for `trial`: basic_linear below 4 KiB, recursive doubling above."""
    from autotune.rules import AlgorithmChoice, RuleSet
    from autotune.storage import StoredRules, save_rules

    rules = RuleSet.from_starts("openmpi", "allreduce", 2, [(0, AlgorithmChoice(1)),
                                                             (4096, AlgorithmChoice(3))])
    save_rules(study, StoredRules(collective="allreduce", comm_size=2, trial=trial, incumbent=0,
                                  variants=(), per_size={}, rules=rules, rounds=2, adopted=True,
                                  verdict="adopted"))


def test_the_check_measures_adopted_rules_as_the_export_deploys_them(tmp_path):
    """With adopted per-size rules the exported best is the ompi-rules file plus the
    configuration's other settings, not the single configuration the rules were built on."""
    from autotune.endgame.verify import deployed_arm
    from autotune.export import best_config

    study = _claimed_study(tmp_path)
    single, described = deployed_arm(study, best_config(study), tmp_path / "rules")
    assert described == "" and dict(single.settings.mca) == {"pml": "ucx"}
    _adopt_rules(study, 1)
    arm, described = deployed_arm(study, best_config(study), tmp_path / "rules")
    mca = dict(arm.settings.mca)
    path = Path(mca.pop("coll_tuned_dynamic_rules_filename"))
    assert mca == {"pml": "ucx", "coll_tuned_use_dynamic_rules": "1"}
    assert dict(arm.settings.env) == {"UCX_TLS": "self,sm"}
    assert arm.settings.mpirun_args == ("--map-by", "numa")
    assert described.startswith("per-size rules (2 bands") and path.name in described
    text = path.read_text()
    assert "4096 3 0 0" in text and f"--mca coll_tuned_dynamic_rules_filename {path}" in text


@pytest.mark.mpi
def test_a_real_check_launches_open_mpi_with_the_exported_rules(tmp_path, mpirun):
    """The deployed rules file is read by a real Open MPI: two rounds with the kernel give a
    figure, and the stored check says what was measured."""
    from autotune.benchmarks import Mpi4pyBenchmark
    from autotune.endgame.partner import BenchmarkChoice
    from autotune.endgame.verify import verify_on
    from autotune.launch import LocalLauncher
    from autotune.measure import Measurer

    study = _claimed_study(tmp_path, settings={  # pml ucx as it runs on a node without mlx*
        "env": {}, "mca": {"pml": "ucx", "pml_ucx_devices": "any", "pml_ucx_tls": "any"},
        "mpirun_args": []})
    _adopt_rules(study, 1)
    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8, 1024),
                           repetitions=1, stages=1, time_per_size=0.005)
    measurer = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark())
    choice = BenchmarkChoice(Mpi4pyBenchmark(), independent=False)
    result = verify_on(study, measurer, choice, rounds=2, seed=1, rules_dir=tmp_path / "rules")
    assert not result.failed, result.failed
    assert result.rounds_measured == 2 and result.measured.startswith("per-size rules (2 bands")
    assert "coll_tuned_dynamic_rules_filename" in " ".join(result.argv)
    assert stored_verification(study).measured == result.measured
    assert result.systematic == Mpi4pyBenchmark().disagreement("allreduce").systematic > 0


def test_a_best_that_fails_after_some_rounds_is_not_vouched_for():
    """Rounds scored before the best crashed or hung do not make a check that backs it."""
    class FailsLate(ScriptedMeasurer):
        def run_launch(self, settings, planned, seed, *, params=None, is_default=False):
            self.fail = "timeout" if planned.rep >= 3 else ""
            return super().run_launch(settings, planned, seed, params=params,
                                      is_default=is_default)

    measured = measure_rounds(FailsLate(0.8), *arms(), {8: 0.5, 1024: 0.5}, 10, random.Random(1))
    assert len(measured.scores) == 3 and measured.best_failed == "timeout: MPI refused it"
    result = summarize(measured, benchmark="IMB-MPI1", independent=True, trial=1, rounds=10,
                       search=(1.2, (1.1, 1.3)))
    assert result.failed.startswith("the best failed: timeout") and result.agrees is False


def test_a_check_of_another_deployment_does_not_count(tmp_path):
    """A check of the single configuration says nothing once per-size rules are adopted for it,
    nor the other way round."""
    from autotune.export import best_config
    from autotune.storage import StoredVerification

    study = _claimed_study(tmp_path)
    store(study, StoredVerification(benchmark="IMB-MPI1", independent=True, trial=1, rounds=3,
                                    rounds_measured=3, speedup=1.2, speedup_interval=(1.1, 1.3),
                                    agrees=True))
    assert best_config(study).verification is not None
    _adopt_rules(study, 1)
    assert best_config(study).verification is None  # it measured the configuration alone


def test_a_slow_fifth_of_the_best_is_not_trimmed_into_a_verified_gain():
    """16 rounds 10% faster and 4 rounds twice as slow: slower on average. The trimmed mean alone
    would cut the slow rounds and report a proven gain; the check reports the plain mean."""
    slow_fifth = [-0.1 + 0.002 * (i % 5) for i in range(16)] + [0.7, 0.72, 0.69, 0.71]
    measured = Rounds(per_size={8: slow_fifth}, scores=slow_fifth, argv=("mpirun",))
    result = summarize(measured, benchmark="IMB-MPI1", independent=True, trial=1, rounds=20,
                       search=(1.1, (1.02, 1.2)))
    assert result.speedup == pytest.approx(math.exp(-statistics.fmean(slow_fifth)))
    assert result.speedup < 1 and result.speedup_interval[0] < 1 < result.speedup_interval[1]
    assert result.sizes[0].speedup == pytest.approx(result.speedup)
    disturbed = [-0.1 + 0.002 * (i % 5) for i in range(16)] + [0.7, -0.9, 0.69, -0.8]
    trimmed = summarize(Rounds(scores=disturbed, argv=("mpirun",)), benchmark="IMB-MPI1",
                        independent=True, trial=1, rounds=20, search=(1.1, (1.02, 1.2)))
    assert trimmed.speedup_interval[0] > 1  # far rounds on both sides: the trimmed mean's


def test_a_kernel_check_of_an_imb_search_carries_the_kernels_uncertainty():
    """Twelve tight rounds reading 1.005x, against an IMB search that claimed 1.06x-1.20x: by its
    rounds alone the check would disagree (no gain told apart, and its whole interval below the
    claim's), and the untuned stack would be recommended; with the kernel's uncertainty against
    IMB it does not, and it says what its interval holds. Per size the rounds' own intervals."""
    from autotune.benchmarks import Mpi4pyBenchmark
    from autotune.storage import StoredVerification

    scores = [-math.log(1.005) + 0.004 * ((i % 4) - 1.5) for i in range(12)]
    rounds = Rounds(per_size={8: scores}, scores=scores, argv=("mpirun",))
    kwargs = dict(benchmark="mpi4py kernel", independent=True, trial=4, rounds=12,
                  search=(1.12, (1.06, 1.20)))
    bare = summarize(rounds, **kwargs)
    carried = summarize(rounds, **kwargs, systematic=Mpi4pyBenchmark.systematic)
    assert bare.agrees is False and carried.agrees is True
    assert carried.speedup_interval[1] > 1.06 > bare.speedup_interval[1]
    assert carried.sizes == bare.sizes
    assert "3.0% uncertainty against IMB-MPI1" in carried.describe()
    assert "uncertainty" not in bare.describe()
    again = StoredVerification.from_dict(carried.to_dict(), "test")
    assert again.systematic == carried.systematic and again.describe() == carried.describe()
