import math

import pytest

from autotune import objective
from autotune.errors import InputError


def test_trimmed_mean_drops_one_min_and_one_max():
    # seeds/000: 5 runs, drop max and min, average the other 3 -> (2 + 3 + 4) / 3
    assert objective.trimmed_mean([10.0, 2.0, 3.0, 4.0, 1.0]) == pytest.approx(3.0)


def test_trimmed_mean_drops_only_one_of_repeated_extremes():
    assert objective.trimmed_mean([1.0, 1.0, 5.0, 9.0, 9.0]) == pytest.approx((1 + 5 + 9) / 3)


def test_trimmed_mean_of_three_is_the_median():
    assert objective.trimmed_mean([7.0, 1.0, 100.0]) == 7.0


def test_trimmed_mean_with_two_values_is_plain_mean():
    assert objective.trimmed_mean([1.0, 3.0]) == 2.0


def test_trimmed_mean_rejects_empty():
    with pytest.raises(ValueError):
        objective.trimmed_mean([])


def test_log_ratio_sign_and_value():
    assert objective.log_ratio(1.0, 2.0) == pytest.approx(math.log(0.5))
    assert objective.log_ratio(3.0, 3.0) == 0.0
    with pytest.raises(ValueError):
        objective.log_ratio(0.0, 1.0)


def test_uniform_weights_sum_to_one():
    weights = objective.uniform_weights([8, 16, 32, 64])
    assert weights == {8: 0.25, 16: 0.25, 32: 0.25, 64: 0.25}


def test_weighted_score_hand_computed():
    # sizes 8 and 16: config twice as fast at 8, equal at 16; weights 3:1
    scores = {8: math.log(0.5), 16: 0.0}
    weights = objective.normalize_weights({8: 3.0, 16: 1.0})
    value = objective.weighted_score(scores, weights)
    assert value == pytest.approx(0.75 * math.log(0.5))
    # speedup = exp(-value) = 2 ** 0.75
    assert objective.speedup(value) == pytest.approx(2 ** 0.75)


def test_weighted_score_renormalizes_over_present_sizes():
    weights = {8: 0.5, 16: 0.25, 32: 0.25}
    # only 8 and 16 measured (a pruned trial): weights 2:1 among them
    assert objective.weighted_score({8: 0.3, 16: 0.6}, weights) == pytest.approx((2 * 0.3 + 0.6) / 3)


def test_paired_scores_trim_the_per_launch_log_ratios():
    # size 8: five launches paired with the default launch right before each; the fourth pair
    # straddles a machine-wide slowdown (config 9 vs default 3): trimmed away as the max.
    config = {8: [2.0, 2.0, 4.0, 9.0, 1.0]}
    default = {8: [4.0, 2.0, 4.0, 3.0, 1.0]}
    # log-ratios: log .5, 0, 0, log 3, 0 -> drop log .5 and log 3 -> mean of (0, 0, 0)
    assert objective.paired_scores(config, default) == {8: 0.0}


def test_paired_scores_skip_sizes_without_a_full_pairing():
    assert objective.paired_scores({8: [1.0, 2.0], 16: [1.0]}, {8: [2.0, 4.0]}) == {
        8: pytest.approx(math.log(0.5))}


def test_full_aggregation_hand_computed():
    """Three sizes, five paired launches each, uniform weights: the whole objective by hand."""
    config = {8: [2, 2, 2, 9, 1], 1024: [5, 5, 5, 5, 5], 65536: [30, 10, 20, 40, 20]}
    default = {8: [4, 4, 4, 4, 4], 1024: [5, 5, 5, 5, 10], 65536: [10, 10, 10, 10, 10]}
    scores = objective.paired_scores(config, default)
    # 8: ratios .5 .5 .5 2.25 .25 -> drop .25 and 2.25 -> log .5
    # 1024: ratios 1 1 1 1 .5 -> drop .5 and one 1 -> log 1 = 0
    # 65536: ratios 3 1 2 4 2 -> drop 1 and 4 -> mean(log 3, log 2, log 2)
    expected_65536 = (math.log(3) + 2 * math.log(2)) / 3
    assert scores == {8: pytest.approx(math.log(0.5)), 1024: pytest.approx(0.0),
                      65536: pytest.approx(expected_65536)}
    value = objective.weighted_score(scores, objective.uniform_weights(config))
    assert value == pytest.approx((math.log(0.5) + expected_65536) / 3)
    assert objective.speedup(value) == pytest.approx(math.exp(-value))


def test_load_weights_yaml_with_suffixes(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("weights:\n  8: 1\n  4k: 2\n  1m: 1\n")
    assert objective.load_weights(path) == {8: 0.25, 4096: 0.5, 1048576: 0.25}


def test_load_weights_csv_with_header(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("size,weight\n8,1\n64kb,3\n")
    assert objective.load_weights(path) == {8: 0.25, 65536: 0.75}


@pytest.mark.parametrize("content, message", [
    ("8: -1\n", "must be >= 0"),
    ("8: nan\n", "must be >= 0"),
    ("8: abc\n", "not a number"),
    ("x7: 1\n", "invalid size"),
    ("8: 0\n16: 0\n", "at least one positive"),
    ("- 1\n- 2\n", "expected a mapping"),
    ("a: [\n", "not valid YAML"),
])
def test_load_weights_rejects_bad_files(tmp_path, content, message):
    path = tmp_path / "w.yaml"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        objective.load_weights(path)


def test_load_weights_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read weights file"):
        objective.load_weights(tmp_path / "absent.yaml")


# ------------------------------------------------------------------ non-blocking objectives


def _timing(overlap=None, t_max=3.0):
    from autotune.benchmarks import NbcTiming, SizeTiming

    nbc = None if overlap is None else NbcTiming(t_pure_us=2.0, t_ovrl_us=3.5, t_cpu_us=2.0,
                                                 overlap_pct=overlap)
    return SizeTiming(size=64, iters=10, t_max_us=t_max, t_min_us=1.0, t_avg_us=2.0, nbc=nbc)


def test_each_objective_scores_its_quantity():
    timing = _timing(overlap=25.0)
    assert objective.size_quantity(timing, "latency") == 3.0  # t_max over ranks, as ever
    assert objective.size_quantity(timing, "t_ovrl") == 3.5
    assert objective.size_quantity(timing, "overlap") == pytest.approx(1.75)  # 2 - 0.25
    assert objective.size_quantity(_timing(), "latency") == 3.0


def test_exposed_share_is_positive_and_ordered():
    assert objective.exposed_share(100.0) == 1.0 and objective.exposed_share(0.0) == 2.0
    assert objective.exposed_share(40.0) == pytest.approx(1.6)
    # more overlap scores lower (better) against the default, as a shorter time does
    assert objective.log_ratio(objective.exposed_share(60.0), objective.exposed_share(20.0)) < 0


def test_overlap_objective_without_nbc_columns_is_damaged_output():
    from autotune.errors import BenchmarkOutputError

    with pytest.raises(BenchmarkOutputError, match="no t_ovrl/overlap columns"):
        objective.size_quantity(_timing(), "overlap")


def test_blocking_collectives_are_scored_on_latency_only():
    objective.check_objective("allreduce", "latency")
    objective.check_objective("iallreduce", "overlap")
    objective.check_objective("ibcast", "t_ovrl")
    with pytest.raises(InputError) as info:
        objective.check_objective("allreduce", "overlap")
    assert str(info.value) == ("--objective overlap needs a non-blocking collective (e.g. "
                               "--collective iallreduce); allreduce is scored on latency only")
    with pytest.raises(InputError, match="choose from latency, overlap, t_ovrl"):
        objective.check_objective("iallreduce", "bandwidth")
