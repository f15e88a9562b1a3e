"""The per-size stage for real: mpirun, 2 ranks, the mpi4py kernel, SQLite storage."""
import json
from pathlib import Path

import optuna
import pytest

from autotune.benchmarks import Mpi4pyBenchmark
from autotune.export import best_config
from autotune.launch import LocalLauncher
from autotune.measure import MeasurementPlan, Measurer
from autotune.rules import AlgorithmChoice, RuleSet
from autotune.endgame.stage import PerSizeStage
from autotune.space import TrialContext, load_space
from autotune.storage import StoredRules, stored_rules

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
SPACE = ROOT / "tests" / "data" / "space-tuned-allreduce.yaml"
SIZES = (8, 64, 512, 4096, 32768, 262144)


def test_a_study_ends_with_per_size_rules_measured_against_its_best(autotune_cli, tmp_path, mpirun):
    proc = autotune_cli("start", "--collective", "allreduce", "--nodes", "1", "--ppn", "2",
                        "--space", str(SPACE), "--trials", "3", "--sizes", "8:256k",
                        "--repetitions", "3", "--stages", "1", "--time-per-size", "0.005",
                        "--confirm", "1", "--confirm-rounds", "2", "--confirm-max-rounds", "2",
                        "--per-size-rounds", "2", "--no-verify", "--seed", "1", "--foreground")
    assert proc.returncode == 0, proc.stderr
    assert "per-size rules: 4 algorithms x every size, 2 interleaved rounds" in proc.stderr
    status = json.loads(autotune_cli("status", "--format", "json").stdout)
    study = optuna.load_study(study_name=status["study"],
                              storage=f"sqlite:///{tmp_path / 'home' / 'autotune.db'}")
    rules = stored_rules(study)
    assert rules is not None and not rules.failed, rules
    assert rules.trial == best_config(study).trial
    assert sorted(v.choice.algorithm for v in rules.variants) == [0, 1, 3, 4]
    sizes = [2**k for k in range(3, 19)]
    for variant in rules.variants:
        assert not variant.failed, variant
        assert sorted(variant.mean_us) == sizes and all(t > 0 for t in variant.mean_us.values())
    assert rules.rounds == 2 and sorted(rules.per_size) == sizes
    assert rules.rules is not None and rules.rules.bands[0].min_bytes == 0
    assert rules.rules.comm_size == 2
    if rules.bands > 1:  # measured against the best single configuration before any use
        assert rules.vs_single is not None and rules.vs_default is not None
        assert rules.vs_single.rounds >= 1 and Path(rules.rules_file).is_file()
    else:
        assert "one band" in rules.verdict and rules.vs_single is None
    assert "per-size rules:" in status["per_size_rules"]


def _stage(tmp_path, **kwargs):
    space = load_space(str(SPACE))
    ctx = TrialContext("allreduce", 1)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'db.sqlite'}", study_name="s")
    plan = MeasurementPlan("allreduce", 1, 2, SIZES, repetitions=1, stages=1, time_per_size=0.005)
    measurer = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark())
    defaults = space.defaults(ctx)
    stage = PerSizeStage(study, space, collective="allreduce", nodes=1, ppn=2,
                         weights={s: 1 / len(SIZES) for s in SIZES}, default_params=defaults,
                         default_settings=space.settings(defaults, ctx), rules_dir=tmp_path / "rules",
                         seed=2, **kwargs)
    return study, measurer, stage


class Told:
    def __init__(self):
        self.said = []

    def __getattr__(self, name):
        return lambda *args: self.said.append((name, *args))


def test_a_stage_that_cannot_run_is_said_and_stores_nothing(tmp_path):
    """No completed trial (so no best configuration): one line, nothing stored, no exception;
    the same for a deadline that leaves no time."""
    from types import SimpleNamespace

    told = Told()
    study, measurer, stage = _stage(tmp_path, events=told)
    assert stage(SimpleNamespace(measurer=measurer), None) is None
    assert told.said[0][0] == "ruling_skipped" and "no completed trial" in told.said[0][1]
    assert stored_rules(study) is None


def test_composed_rules_are_measured_against_the_untuned_stack_and_the_best(tmp_path, mpirun):
    """Two bands chosen by hand (basic_linear below 4 KiB, then the best's own recursive
    doubling): the composed rules file is written, Open MPI runs with it, three arms are measured
    in interleaved rounds, and only the band that differs from the best is judged on its own."""
    study, measurer, stage = _stage(tmp_path, confirm_rounds=3)
    stage.best_settings = stage._with_tuned({"coll_tuned_allreduce_algorithm": 3})
    best = {"coll_tuned_allreduce_algorithm": 3}
    variants, incumbent = stage.variants(best)
    assert variants[incumbent].choice == AlgorithmChoice(3)
    assert dict(variants[incumbent].arm.settings.mca)["coll_tuned_allreduce_algorithm"] == "3"
    two = RuleSet.from_starts("openmpi", "allreduce", 2, [(0, AlgorithmChoice(1)),
                                                          (4096, AlgorithmChoice(3))])
    chosen = StoredRules(collective="allreduce", comm_size=2, trial=0, incumbent=incumbent,
                         variants=(), per_size={}, rules=two, rounds=2)
    result = stage._compose(measurer, chosen, variants[incumbent], deadline=None)
    assert not result.failed, result.failed
    text = Path(result.rules_file).read_text()
    assert "\n2  # allreduce" in text and "4096 3 0 0" in text
    for comparison in (result.vs_default, result.vs_single, result.single_vs_default):
        assert comparison is not None and comparison.rounds == 3
        assert comparison.low <= comparison.speedup <= comparison.high
    assert result.verdict.startswith("2 bands (")
    assert set(result.band_gains) == {two.bands[0].label()}  # the other band is the best's own
    assert ("adopted (ompi-rules" in result.verdict) == result.adopted


def test_a_band_gaining_less_than_the_benchmark_may_be_off_there_is_not_adopted():
    """Issue 55 line 4: the per-size stage judges a band with the benchmark's disagreement with
    IMB-MPI1 at its sizes in the interval: 4% faster beyond doubt is adopted from IMB's own
    rounds (no term), not from a benchmark that may be 3% off there."""
    from autotune.endgame.stage import _judge
    from autotune.storage import Comparison

    band = Comparison(1.04, 1.02, 1.06, 6)
    overall = Comparison(1.10, 1.05, 1.15, 6)
    adopted, verdict = _judge(2, overall, Comparison(1.01, 0.99, 1.03, 6), {"< 4 KiB": band})
    assert adopted, verdict
    adopted, verdict = _judge(2, overall, Comparison(1.01, 0.99, 1.03, 6), {"< 4 KiB": band},
                              {"< 4 KiB": 0.03})
    assert not adopted and "within the benchmark's disagreement with IMB-MPI1" in verdict
    adopted, _ = _judge(2, overall, Comparison(1.01, 0.99, 1.03, 6),
                        {"< 4 KiB": Comparison(1.25, 1.20, 1.30, 6)}, {"< 4 KiB": 0.03})
    assert adopted  # a gain well beyond the term still is


def test_adopted_bands_are_measured_again_with_imb_where_it_is_found(tmp_path, mpirun):
    """Issue 55 line 4: a stage timed by another benchmark measures adopted bands again with
    IMB-MPI1, on the same nodes, in rounds of their own; the verdict says what IMB found, and
    IMB's band figures are stored beside the search benchmark's."""
    from autotune.benchmarks._imb import ImbBenchmark
    from autotune.endgame.rounds import Arm
    from tests.benchmarks.test_imb import IMB_DIR

    study, measurer, stage = _stage(tmp_path, confirm_rounds=2, imb_check=ImbBenchmark(IMB_DIR))
    stage.plan_sizes = SIZES
    two = RuleSet.from_starts("openmpi", "allreduce", 2, [(0, AlgorithmChoice(1)),
                                                          (4096, AlgorithmChoice(3))])
    changed = [two.bands[0]]
    base = stage._with_tuned({"coll_tuned_allreduce_algorithm": 3})
    arms = [Arm("untuned stack", stage.default_settings, {}, is_default=True),
            Arm("best single", base, {}), Arm("composed rules", base, {})]
    verdict = "2 bands (...); overall ...: adopted (ompi-rules exports them)"
    adopted, said, gains = stage._check_with_imb(measurer, arms, changed, list(SIZES), 4,
                                                 verdict, None)
    assert set(gains) == {two.bands[0].label()} and gains[two.bands[0].label()].rounds == 2
    # the composed arm here is the best single itself: IMB cannot find the band faster
    assert not adopted and "IMB-MPI1 does not find" in said and said.startswith("2 bands (")
