import optuna
from optuna.distributions import CategoricalDistribution

from autotune.campaign import Case, case_candidates, distance, nearest, winners_agree
from autotune.campaign._warm import Candidate
from autotune.storage import TrialKey

KNOBS = {"tls": CategoricalDistribution(["a", "b", "c", "d"]),
         "alg": CategoricalDistribution([0, 1, 2])}


def _study(trials) -> optuna.Study:
    """trials: (tls, alg, value, is_default); value < 0 is faster than the default."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    for tls, alg, value, is_default in trials:
        study.add_trial(optuna.trial.create_trial(
            params={"tls": tls, "alg": alg}, distributions=KNOBS, value=value,
            user_attrs={TrialKey.IS_DEFAULT: is_default}))
    return study


def test_distance_prefers_the_same_collective_at_a_neighbouring_shape():
    case = Case(4, 16, "allreduce")
    finished = [Case(1, 16, "allreduce"), Case(4, 16, "alltoall"), Case(2, 16, "allreduce"),
                Case(4, 8, "allreduce")]
    assert distance(case, Case(2, 16, "allreduce")) == 1
    assert distance(case, Case(4, 16, "alltoall")) == 1.5
    assert nearest(case, finished) == [Case(2, 16, "allreduce"), Case(4, 8, "allreduce")]
    assert nearest(case, []) == []


def test_candidates_are_the_faster_distinct_non_default_trials_best_first():
    study = _study([("a", 0, 0.0, True), ("b", 1, -0.10, False), ("c", 2, -0.30, False),
                    ("c", 2, -0.20, False), ("d", 0, 0.05, False), ("b", 2, -0.01, False)])
    found = case_candidates(study, "allreduce-1n2p", top=3)
    assert [(c.params["tls"], c.params["alg"]) for c in found] == [("c", 2), ("b", 1), ("b", 2)]
    assert not any(c.winner for c in found)  # no confirmation stored: nothing is a winner
    assert found[0].note.startswith("allreduce-1n2p: trial 2, 1.350x")
    assert case_candidates(_study([("a", 0, 0.0, True), ("d", 0, 0.05, False)]), "x") == []


def test_winners_agree_only_when_two_confirmed_winners_are_one_configuration():
    default = {"tls": "unset"}
    same = [Candidate({"tls": "a"}, "n1", winner=True), Candidate({"tls": "a"}, "n2", winner=True),
            Candidate({"tls": "b"}, "n2 other")]
    assert winners_agree(same, dict, default)
    assert not winners_agree(same[:1] + same[2:], dict, default)  # one winner is no agreement
    differ = [Candidate({"tls": "a"}, "n1", winner=True), Candidate({"tls": "b"}, "n2", winner=True)]
    assert not winners_agree(differ, dict, default)
    # adapted to this case's space, two winners may become one configuration
    assert winners_agree(differ, lambda p: {"tls": "a"}, default)
    # ... but not this case's default: winners that changed only knobs it lacks say nothing
    assert not winners_agree(differ, lambda p: dict(default), default)


def test_no_candidate_from_a_study_without_trials():
    study = optuna.create_study()
    assert case_candidates(study, "x") == []


def test_a_candidate_its_own_confirmation_refuted_is_left_out():
    from autotune.storage import CONFIRMATION_ATTR

    study = _study([("a", 0, 0.0, True), ("b", 1, -0.10, False), ("c", 2, -0.30, False)])
    study.set_user_attr(CONFIRMATION_ATTR, {
        "rounds": 5, "best_trial": None, "finished": 1.0, "method": "t", "candidates": [
            {"trial": 2, "params": {}, "round_scores": [0.01] * 5, "mean": 0.01,
             "ci_low": -0.02, "ci_high": 0.04, "failed": "", "speedup": 0.99,
             "speedup_interval": [0.96, 1.02], "verdict": "not faster", "rounds": 5}]})
    assert [c.params["tls"] for c in case_candidates(study, "x")] == ["b"]
