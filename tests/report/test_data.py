"""The report's figure data, checked on a hand-built study whose numbers are known."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest
from scipy import stats

from autotune.errors import InputError
from autotune.report import build, count_full_grid, count_staged, rebuild_space
from autotune.report._curves import cliffs_of, config_curve, make_curve, protocol_knobs
from autotune.report._data import pml_in_force
from autotune.report._sizes import size_list
from autotune.report._html import render
from autotune.report._sizes import per_size_ratios
from autotune.rules import AlgorithmChoice, RuleSet, SizeBand
from autotune.storage import Comparison, RuleVariant, StoredRules
from autotune.storage import CONFIG_ATTR, CONFIRMATION_ATTR, stored_config, trial_records
from tests.report import REPS, SIZES, config_dict, handmade_study


@pytest.fixture
def data(tmp_path):
    return build(handmade_study(tmp_path))


def test_speedup_bars_are_paired_means_with_student_t_intervals(data):
    s = data.speedup
    assert s.trial == 1 and s.confirmed
    assert [r.size for r in s.sizes] == list(SIZES)
    logs = np.log([0.8, 0.78, 0.82, 0.8])
    half = stats.t.ppf(0.975, df=3) * logs.std(ddof=1) / math.sqrt(4)
    for row in s.sizes:
        assert row.launches == REPS
        assert row.speedup == pytest.approx(math.exp(-logs.mean()))
        assert row.low == pytest.approx(math.exp(-(logs.mean() + half)))
        assert row.high == pytest.approx(math.exp(-(logs.mean() - half)))
        assert row.weight == pytest.approx(0.25)
        assert row.contribution == pytest.approx(-0.25 * logs.mean())
    assert s.weighted == pytest.approx(math.exp(-logs.mean()))


def test_verdict_names_the_confirmed_winner_its_interval_and_sizes(data):
    v = data.verdict
    assert v.winner == 1 and v.confirmed
    assert v.speedup == pytest.approx(1.24)
    assert v.interval == "95% CI 1.100x..1.400x, simultaneous over 4"
    assert "Trial 1 is 1.240x as fast as the untuned default" in v.headline
    assert v.faster_sizes == SIZES and v.slower_sizes == () and v.unclear_sizes == ()
    assert ("env", "UCX_TLS", "sm") in v.settings and ("mca", "pml", "ucx") in v.settings
    assert [(c.trial, c.verdict, c.rounds) for c in v.candidates] == [(1, "faster", 5),
                                                                       (4, "undecided", 10)]
    assert v.candidates[1].low == pytest.approx(0.9) and v.candidates[1].high == 1.15


def test_without_confirmation_the_best_is_unconfirmed(tmp_path):
    d = build(handmade_study(tmp_path, confirmed=False))
    assert d.verdict.headline.startswith("UNCONFIRMED: trial 1 measured 1.250x")
    assert not d.verdict.confirmed and d.verdict.interval == ""
    assert [c.verdict for c in d.verdict.candidates] == ["not confirmed"] * 2


def test_a_default_that_stays_shows_the_search_best_per_size_as_unconfirmed(tmp_path):
    study = handmade_study(tmp_path)
    study.set_user_attr("autotune.confirmation", {
        "rounds": 5, "best_trial": None, "confidence": 0.95, "family": 2, "method": "Student t",
        "candidates": [{"trial": 1, "speedup": 1.01, "speedup_interval": [0.9, 1.1],
                        "verdict": "not faster", "rounds": 5}]})
    d = build(study)
    assert d.verdict.winner is None and "keep the untuned stack" in d.verdict.headline
    assert d.speedup.trial == 1 and not d.speedup.confirmed
    assert "unconfirmed" in d.speedup.label


def test_trial_4_is_faster_at_small_sizes_and_slower_at_large(tmp_path):
    from autotune.report._data import speedup_data
    from autotune.export import best_config

    study = handmade_study(tmp_path)
    record = next(r for r in trial_records(study) if r.number == 4)
    s = speedup_data(record, stored_config(study).weights, best_config(study), False)
    assert [(r.size, round(r.speedup, 6)) for r in s.sizes] == [
        (8, 2.0), (64, 2.0), (512, round(1 / 1.5, 6)), (4096, round(1 / 1.5, 6))]
    assert sum(r.contribution for r in s.sizes) == pytest.approx(
        0.25 * (2 * math.log(2) - 2 * math.log(1.5)))


def test_history_best_so_far_pruned_and_skipped(data):
    points = {p.trial: p for p in data.history.points}
    assert [points[n].best_so_far for n in range(5)] == pytest.approx(
        [1.0, 1.25, 1.25, 1.25, 1.25])
    assert points[3].state == "PRUNED" and points[3].speedup == pytest.approx(0.2)
    assert points[5].state == "FAIL" and points[5].skipped and points[5].speedup is None
    assert points[0].is_default
    assert [round(d.ratio, 6) for d in data.history.drift] == [1.0, 1.0, 1.1, 1.1, 1.2, 1.2,
                                                               1.3, 1.3]
    assert [d.minutes for d in data.history.drift][:3] == pytest.approx([0.0, 0.5, 1.0])


def test_seconds_by_purpose(data):
    parts = {p.label: p for p in data.seconds.parts}
    assert parts["full trials"].seconds == pytest.approx(5.0 + 6.0 + 4.5)
    assert parts["pruned trials"].seconds == pytest.approx(1.5)
    assert "failed trials" not in parts  # the only failure was skipped: no launch, no time
    assert parts["default (trial 0 + interleaved)"].seconds == pytest.approx(4.0 + 8 * 0.5)
    assert parts["default (trial 0 + interleaved)"].launches == 8 + 8
    mean = (4.0 + 5.0 + 6.0 + 4.5) / 32  # complete trials: 4 x 8 launches
    assert data.seconds.mean_launch_seconds == pytest.approx(mean)
    assert data.seconds.launches_per_config == 8
    confirm = parts["confirmation"]
    assert confirm.estimated and confirm.launches == (5 + 10) * 2 * 2  # rounds x blocks x pair
    assert confirm.seconds == pytest.approx(confirm.launches * mean)


def test_result_checks_are_a_purpose_of_their_own_not_a_measurement(tmp_path):
    """A search timed by IMB launches the kernel once per configuration to check its results:
    that time is shown apart, and the launch neither counts as a measuring launch nor enters
    the mean launch time that prices the staged sweep and the grid."""
    import dataclasses

    from autotune.report import seconds_data
    from autotune.storage import RESULT_CHECK, load_baselines

    study = handmade_study(tmp_path)
    config = stored_config(study)
    records = []
    for rec in trial_records(study):
        if not rec.is_default and rec.launch_count:
            check = {"seconds": 0.75, "purpose": RESULT_CHECK, "t_max_us": {}, "failure": ""}
            rec = dataclasses.replace(rec, launches=(*rec.launches, check),
                                      launch_count=rec.launch_count + 1,
                                      bench_seconds=rec.bench_seconds + 0.75)
        records.append(rec)
    checked = seconds_data(records, load_baselines(study), None, config)
    plain = seconds_data(trial_records(study), load_baselines(study), None, config)
    parts = {p.label: p for p in checked.parts}
    assert parts["result checks"].launches == 4  # trials 1-4; the default is not checked
    assert parts["result checks"].seconds == pytest.approx(4 * 0.75)
    assert {p.label: (p.seconds, p.launches) for p in plain.parts} == {
        p.label: (p.seconds, p.launches) for p in checked.parts if p.label != "result checks"}
    assert checked.mean_launch_seconds == pytest.approx(plain.mean_launch_seconds)
    assert checked.launches_per_config == plain.launches_per_config == 8
    assert checked.total == pytest.approx(plain.total + 3.0)


def test_cost_counts_the_staged_sweep_and_the_full_grid_of_the_space(data):
    c = data.cost
    assert c.exact and c.note == ""
    # pml unset (UCX knobs inactive): 1; pml ucx: 3 TLS x 2 RNDV x 3 ZCOPY = 18; x 3 mappings
    assert c.grid.configs == 57 and not c.grid.capped
    # stage 1 pml x TLS x RNDV: 1 + 6; stage 2 ZCOPY over (ucx, sm, 8kb): +2; mapping: +2
    assert c.staged.configs == 11
    assert c.stages == (("pml", "UCX_TLS", "UCX_RNDV_THRESH"), ("UCX_ZCOPY_THRESH",),
                        ("mapping",))
    assert c.configs_measured == 5  # trial 5 was skipped, never launched
    assert c.launches_per_config == 8 and c.nodes == 2
    assert c.staged_seconds == pytest.approx(11 * 8 * c.mean_launch_seconds)
    assert c.grid_seconds == pytest.approx(57 * 8 * c.mean_launch_seconds)
    assert c.spent_node_seconds == pytest.approx(2 * data.seconds.total)


def test_cost_when_the_space_file_is_gone_counts_the_knobs_the_trials_saw(tmp_path):
    study = handmade_study(tmp_path, space="no-such-space")
    c = build(study).cost
    assert not c.exact and "independent" in c.note
    assert c.grid.configs == 2 * 3 * 2 * 3 * 3
    # stage 1: 2 x 3 x 2 = 12; ZCOPY over the best: +2; mapping: +2
    assert c.staged.configs == 16


def test_staged_count_depends_on_what_the_earlier_stages_picked(tmp_path):
    study = handmade_study(tmp_path)
    sp = rebuild_space(study, stored_config(study), trial_records(study))
    assert count_staged(sp, {"pml": "unset"}).configs == 7 + 0 + 2  # ZCOPY inactive: nothing new
    assert count_full_grid(sp, cap=10).capped and str(count_full_grid(sp, cap=10)) == "\u2265 10"


def test_importance_weighs_the_knobs_every_trial_set(data):
    imp = data.importance
    assert {k for k, _ in imp.importances} == {"pml", "mapping"}
    assert sum(v for _, v in imp.importances) == pytest.approx(1.0)
    assert "UCX_TLS" in imp.note
    best = {k.knob: {v[0]: (v[1], v[2]) for v in k.values} for k in imp.per_knob}
    assert best["mapping"]["block"] == (pytest.approx(1.25), 1)
    assert best["mapping"]["default"][1] == 2  # trials 0 and 4
    assert best["pml"]["ucx"][0] == pytest.approx(1.25)


def test_curves_default_is_paired_with_the_best_and_candidates_follow(data):
    labels = [c.label for c in data.curves]
    assert labels[:2] == ["untuned default (paired with trial 1)", "best: trial 1"]
    assert labels[2:] == ["candidate: trial 4"]  # trial 2 is slower: not a candidate
    default = data.curves[0]
    assert default.curve.sizes == SIZES and default.launches == (REPS,) * 4
    geo = math.exp(np.mean(np.log([1.008, 1.008 * 1.02, 1.008 * 0.98, 1.008 * 1.01])))
    assert default.curve.t_us[0] == pytest.approx(geo)
    assert all(lo <= t <= hi for lo, t, hi in zip(default.curve.low_us, default.curve.t_us,
                                                  default.curve.high_us))
    # allreduce moves 2M: MB/s = 2 * size / t_us
    assert default.throughput[3] == pytest.approx(2 * 4096 / default.curve.t_us[3])
    assert dict(data.curves[1].knobs)["UCX_RNDV_THRESH"] == "8kb"


def test_one_launch_gives_no_band():
    curve, counts = make_curve("x", {8: [2.0], 16: [1.0, 4.0]})
    assert counts == (1, 2) and curve.low_us[0] == curve.high_us[0] == 2.0
    assert curve.t_us[1] == pytest.approx(2.0)  # geometric mean


def test_cliff_rows_carry_the_knobs_in_force(tmp_path):
    study = handmade_study(tmp_path)
    record = next(r for r in trial_records(study) if r.number == 1)
    sizes = (1024, 2048, 4096, 8192, 16384)
    times = {s: [s / 1000.0 * f for f in (1.0, 1.01, 0.99)] for s in sizes}
    times[8192] = [t * 3 for t in times[8192]]  # throughput falls to a third at 8 KiB
    cc = config_curve("best", 1, "best: trial 1", times, "allreduce", 2, protocol_knobs(record))
    rows = cliffs_of([cc], "allreduce", 2)
    assert [(r.cliff.before_bytes, r.cliff.after_bytes) for r in rows] == [(4096, 8192)]
    assert rows[0].cliff.drop == pytest.approx(2 / 3, rel=0.02)
    knobs = dict(rows[0].knobs)
    assert knobs["UCX_RNDV_THRESH"] == "8kb" and knobs["UCX_ZCOPY_THRESH"] == "64kb"
    assert knobs["pml"] == "ucx"


def test_ucx_knobs_under_pml_ob1_say_they_are_unused():
    assert pml_in_force({"removed": ["pml=ob1: the same as unset here: Open MPI selects ob1 on "
                                     "its own"]}, {}) == "ob1"
    assert pml_in_force({}, {"pml": "unset", "UCX_TLS": "all"}) == "ucx"
    knobs = dict(protocol_knobs(None, "ob1"))
    assert knobs["pml"] == "unset (ob1)" and "unused" in knobs["UCX_RNDV_THRESH"]


def test_hockney_fits_every_curve_and_the_volume_of_allreduce(data):
    h = data.hockney
    assert h.volume == "2M" and h.volume_factor == 2.0 and h.nprocs == 2
    assert [cc.label for cc, _ in h.fits] == [c.label for c in data.curves]
    fit = h.fits[0][1]
    # the default's time is 1 us + M/1000 us: one region, t_L about 1 us, B = 2M / (M/1000) = 2000
    assert len(fit.regions) == 1
    assert fit.regions[0].t_latency_us == pytest.approx(1.0, rel=0.1)
    assert fit.regions[0].bandwidth_mb_s == pytest.approx(2000, rel=0.1)


def test_size_list_joins_neighbours():
    assert size_list((8, 64, 512, 65536), (8, 64, 512, 4096, 65536)) == "8 B..512 B, 64 KiB"
    assert size_list((), SIZES) == "none"


def test_a_study_without_a_completed_trial_is_one_input_error(tmp_path):
    study = optuna.create_study(study_name="empty", storage=f"sqlite:///{tmp_path / 'e.db'}")
    study.set_user_attr(CONFIG_ATTR, config_dict("openmpi-ucx", ""))
    with pytest.raises(InputError, match="no completed trial"):
        build(study)


def test_a_study_not_made_by_autotune_is_one_input_error(tmp_path):
    study = optuna.create_study(study_name="foreign", storage=f"sqlite:///{tmp_path / 'f.db'}")
    with pytest.raises(InputError, match="not made by `autotune start`"):
        build(study)


def test_stored_strings_are_escaped_and_rules_render_only_when_given(tmp_path):
    study = handmade_study(tmp_path)
    d = build(study)
    import dataclasses

    evil = dataclasses.replace(d.facts, study="<script>alert(1)</script>", host='"><img src=x>')
    page = render(dataclasses.replace(d, facts=evil), {"latency": "latency.png"})
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert '"><img src=x>' not in page
    assert 'id="rules"' not in page and "Per-size rules" not in page
    rules = RuleSet("openmpi", "allreduce", 2, (
        SizeBand(0, 4096, AlgorithmChoice(3)), SizeBand(4096, None, AlgorithmChoice(4, 8192))))
    stored = StoredRules(
        collective="allreduce", comm_size=2, trial=0, incumbent=0, per_size={}, rules=rules,
        rounds=4, variants=(RuleVariant(AlgorithmChoice(3), "the best configuration",
                                        {8: 2.0, 8192: 10.0}),
                            RuleVariant(AlgorithmChoice(4, 8192), "trial 7", {8: 3.0, 8192: 5.0})),
        vs_single=Comparison(1.25, 1.1, 1.4, 6), verdict="2 bands; composed rules ...")
    ratios = per_size_ratios(stored)
    assert [(r.label, r.ratios, r.incumbent) for r in ratios] == [
        ("alg 3", (1.0, 1.0), True), ("alg 4, seg 8 KiB", (1.5, 0.5), False)]
    page = render(dataclasses.replace(d, rules=stored), {"rules": "rules.png"})
    assert 'id="rules"' in page and "alg 4, seg 8 KiB" in page and "4 KiB..inf" in page
    assert "trial 7" in page and "1.250x (1.100x..1.400x, 6 rounds)" in page
    assert 'src="rules.png"' in page


def test_the_independent_check_per_size_is_shown_beside_the_search(tmp_path):
    from autotune.storage import VERIFICATION_ATTR, StoredVerification, VerifiedSize

    study = handmade_study(tmp_path)
    check = StoredVerification(
        benchmark="IMB-MPI1 (/opt/imb/IMB-MPI1)", independent=True, trial=1, rounds=10,
        rounds_measured=10, speedup=1.2, speedup_interval=(1.1, 1.3),
        sizes=(VerifiedSize(8, 1.3, (1.1, 1.5)), VerifiedSize(4096, 0.9, (0.8, 1.0))),
        search_speedup=1.24, search_interval=(1.1, 1.4), agrees=True)
    study.set_user_attr(VERIFICATION_ATTR, check.to_dict())
    d = build(study)
    assert d.speedup.verified_label == "IMB-MPI1"
    assert d.speedup.verified == ((8, 1.3, 1.1, 1.5), (4096, 0.9, 0.8, 1.0))
    assert any("independent check (IMB-MPI1, 10 rounds)" in line for line in d.verdict.trust)


def test_every_figure_draws_from_its_data_cliffs_and_checks_included(tmp_path):
    import dataclasses
    import io

    from PIL import Image

    from autotune.report import figures

    d = build(handmade_study(tmp_path))
    (tmp_path / "b").mkdir()
    record = next(r for r in trial_records(handmade_study(tmp_path / "b")) if r.number == 1)
    sizes = (1024, 2048, 4096, 8192, 16384)
    times = {s: [s / 1000.0 * f for f in (1.0, 1.01, 0.99)] for s in sizes}
    times[8192] = [t * 3 for t in times[8192]]
    cc = config_curve("best", 1, "best: trial 1", times, "allreduce", 2, protocol_knobs(record))
    d = dataclasses.replace(d, curves=d.curves + (cc,), cliffs=cliffs_of([cc], "allreduce", 2))
    drawn = figures(d)
    assert set(drawn) == {"latency", "throughput", "speedup", "history", "seconds", "importance",
                          "hockney", "cost"}
    for key, (name, png) in drawn.items():
        assert name == f"{key}.png"
        with Image.open(io.BytesIO(png)) as image:
            assert image.format == "PNG" and image.width > 500 and image.height > 200
            low, high = image.convert("L").getextrema()
            assert high - low > 100, key


def test_figures_without_data_are_left_out_and_the_page_says_why(tmp_path):
    import dataclasses

    from autotune.report import figures
    from autotune.report._model import HockneyData, ImportanceData

    d = build(handmade_study(tmp_path))
    bare = dataclasses.replace(
        d, speedup=None, importance=ImportanceData("fANOVA", (), "needs 3 trials", ()),
        hockney=HockneyData("allreduce", 2, "2M", 2.0, ()))
    drawn = figures(bare)
    assert set(drawn) == {"latency", "throughput", "history", "seconds", "cost"}
    page = render(bare, {k: name for k, (name, _) in drawn.items()})
    assert "nothing to compare size by size" in page and "needs 3 trials" in page
    assert "no curve has the 3 sizes a fit needs" in page
    assert 'src="speedup.png"' not in page and 'src="latency.png"' in page


# ------------------------------------------------------------------ non-blocking: overlap


NBC_SIZES = (8, 4096)


def _nbc_launch(i, columns):
    """A launch as the controller stores it, with IMB-NBC's columns per size."""
    names = ("t_pure_us", "t_ovrl_us", "t_cpu_us", "overlap_pct")
    return {"index": i, "argv": ["mpirun"], "failure": "",
            "t_max_us": {str(s): 2 - c[3] / 100 for s, c in columns.items()},
            "nbc": {str(s): dict(zip(names, c)) for s, c in columns.items()}}


def nbc_study(tmp_path, objective="overlap", confirmed=True):
    """iallreduce: trial 0 the default (overlap 0% and 10%), trial 1 better hidden (40%, 60%);
    three launches each, the middle one an outlier the trimmed mean drops."""
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import create_trial

    from autotune import objective as obj
    from autotune.storage import CONFIRMATION_ATTR, StoredSettings, trial_attrs

    study = optuna.create_study(study_name="nbc", direction="minimize",
                                storage=f"sqlite:///{tmp_path / 'nbc.db'}")
    study.set_user_attr(CONFIG_ATTR, dict(config_dict("openmpi-ucx+openmpi-libnbc", "d"),
                                          collective="iallreduce", sizes=list(NBC_SIZES),
                                          weights={str(s): 0.5 for s in NBC_SIZES}, repetitions=3,
                                          objective=objective, benchmark="mpi4py kernel"))
    runs = {0: {8: [(2.0, 4.0, 2.0, 0.0), (9.0, 30.0, 9.0, 0.0), (2.2, 4.2, 2.0, 0.0)],
                4096: [(10.0, 19.0, 10.0, 10.0), (10.0, 19.0, 10.0, 10.0),
                       (12.0, 21.0, 10.0, 10.0)]},
            1: {8: [(2.0, 2.8, 2.0, 40.0), (2.0, 2.8, 2.0, 40.0), (2.0, 2.8, 2.0, 40.0)],
                4096: [(10.0, 14.0, 10.0, 60.0), (10.0, 14.0, 10.0, 60.0),
                       (10.0, 14.0, 10.0, 60.0)]}}
    default_q = {s: [2 - c[3] / 100 for c in runs[0][s]] for s in NBC_SIZES}
    for number, columns in runs.items():
        raw = {s: [2 - c[3] / 100 for c in columns[s]] for s in NBC_SIZES}
        scores = obj.paired_scores(raw, default_q)
        value = obj.weighted_score(scores, {s: 0.5 for s in NBC_SIZES})
        launches = [_nbc_launch(i, {s: columns[s][i] for s in NBC_SIZES}) for i in range(3)]
        attrs = trial_attrs(
            is_default=number == 0, run_id="r", host={"host": "n1", "mpi": "Open MPI 4.1.4"},
            context={}, fingerprint={}, settings=StoredSettings(
                mca={} if number == 0 else {"coll_libnbc_iallreduce_algorithm": "2"}),
            raw_us=raw, default_us=default_q, baseline_ids=[], baseline_launches=0,
            launches=launches, repetitions=3, bench_seconds=3.0, controller_seconds=0.0,
            scores=scores, speedup=math.exp(-value))
        params = {"coll_libnbc_iallreduce_algorithm": 0 if number == 0 else 2}
        study.add_trial(create_trial(
            params=params, value=value, user_attrs=attrs,
            distributions={"coll_libnbc_iallreduce_algorithm":
                           CategoricalDistribution((0, 1, 2, 3, 4))}))
    if confirmed:
        study.set_user_attr(CONFIRMATION_ATTR, {
            "rounds": 5, "best_trial": 1, "finished": 0.0, "confidence": 0.95, "family": 1,
            "method": "Student t", "stopped": "",
            "candidates": [{"trial": 1, "speedup": 1.3, "speedup_interval": [1.2, 1.4],
                            "verdict": "faster", "rounds": 5}]})
    return study


def test_overlap_per_size_default_vs_best_is_the_trimmed_mean_of_each_column(tmp_path):
    data = build(nbc_study(tmp_path))
    o = data.overlap
    assert o is not None and o.objective == "overlap" and o.sizes == NBC_SIZES
    assert (o.default.trial, o.best.trial) == (0, 1) and o.best.label == "best: trial 1"
    d8 = o.default.row(8)  # three launches: the min and max dropped, the middle one kept
    assert (d8.t_pure_us, d8.t_ovrl_us, d8.t_cpu_us, d8.overlap_pct, d8.launches) == (
        2.2, 4.2, 2.0, 0.0, 3)
    d4k = o.default.row(4096)
    assert (d4k.t_pure_us, d4k.t_ovrl_us, d4k.overlap_pct) == (10.0, 19.0, 10.0)
    b4k = o.best.row(4096)
    assert (b4k.t_ovrl_us, b4k.overlap_pct) == (14.0, 60.0)
    # an overlap study's curves are t_ovrl (its scored quantity is no time), own launches
    assert [c.role for c in data.curves] == ["default", "best"]
    assert data.curves[0].curve.t_us[0] == pytest.approx((4.0 * 30.0 * 4.2) ** (1 / 3))
    assert data.curves[1].curve.t_us == pytest.approx((2.8, 14.0))
    page = render(data, {})
    assert '<section id="overlap"><h2>Overlap per size: default vs best</h2>' in page
    assert "<td class=num>60.0%</td>" in page and "exposed share" in page
    assert '<a href="#overlap">' in page


def test_latency_study_keeps_its_curves_and_blocking_studies_have_no_overlap(tmp_path):
    data = build(nbc_study(tmp_path, objective="latency"))
    assert data.overlap is not None and data.overlap.objective == "latency"
    assert data.curves[0].curve.t_us == pytest.approx((2 - 0.0, 2 - 0.1))  # raw_us as stored
    plain = build(handmade_study(tmp_path))
    assert plain.overlap is None
    assert '<section id="overlap">' not in render(plain, {})
    assert '<a href="#overlap">' not in render(plain, {})


def test_unconfirmed_overlap_best_is_labelled_and_the_cli_prints_the_table(tmp_path):
    from autotune.cli.models import BestReport
    from autotune.cli.render import Table, to_json, to_text
    from autotune.export import best_config
    from autotune.report import study_overlap

    study = nbc_study(tmp_path, confirmed=False)
    best = best_config(study)
    overlap = study_overlap(study, best)
    assert overlap.best.trial == 1 and overlap.best.label == "best: trial 1"
    text = to_text(BestReport(best, overlap=overlap))
    table = next(block for block in text if isinstance(block, Table))
    assert table.columns[:5] == ("size", "default t_pure", "default t_ovrl", "default t_CPU",
                                 "default overlap%")
    assert table.rows[1] == ("4 KiB", "10.00", "19.00", "10.00", "10.0",
                             "10.00", "14.00", "10.00", "60.0")
    assert any(isinstance(b, str) and b.startswith("overlap per size") for b in text)
    rows = to_json(BestReport(best, overlap=overlap))["overlap"]["best"]["rows"]
    assert rows[0] == {"size": 8, "t_pure_us": 2.0, "t_ovrl_us": 2.8, "t_cpu_us": 2.0,
                       "overlap_pct": 40.0, "launches": 3}
    plain = handmade_study(tmp_path)
    assert study_overlap(plain, best_config(plain)) is None


def test_a_confirmed_trial_the_search_pruned_is_the_verdict_and_says_so(tmp_path):
    """The confirmation may race (and confirm) a one-knob change the search pruned early
    (strategy.screen): the page names it, and does not show its few search launches per size as
    its result (they are what got it pruned)."""
    from autotune.report import figures

    study = handmade_study(tmp_path)
    confirmation = dict(study.user_attrs[CONFIRMATION_ATTR])
    confirmation["best_trial"] = 3  # pruned after two sizes in the search
    confirmation["candidates"] = [{"trial": 3, "speedup": 1.2, "speedup_interval": [1.1, 1.3],
                                   "verdict": "faster", "rounds": 5}]
    study.set_user_attr(CONFIRMATION_ATTR, confirmation)
    d = build(study)
    assert d.verdict.winner == 3 and d.verdict.confirmed
    assert "Trial 3 is 1.200x as fast as the untuned default" in d.verdict.headline
    assert "The search stopped it early" in d.verdict.headline
    # its two search launches (5x slower) are not shown as its per-size result, nor paired with
    assert d.speedup is None and d.verdict.slower_sizes == ()  # the default's curve
    assert 3 not in [c.trial for c in d.curves]
    assert not any("paired with trial 3" in c.label for c in d.curves)
    assert "latency" in figures(d)
    page = render(d, {"latency": "latency.png"})
    assert "The search stopped it early" in page and "Trial 3" in page
