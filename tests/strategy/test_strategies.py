"""Strategies by name, under ask/tell as the controller drives them."""
import optuna
import pytest

from autotune.errors import InputError
from autotune.strategy import STRATEGIES, GridStrategy, make_strategy


def ask_tell(strategy, trials):
    study = optuna.create_study(sampler=strategy.sampler(), pruner=strategy.pruner())
    seen = []
    for _ in range(trials):
        if strategy.exhausted():
            break
        trial = study.ask()
        a = trial.suggest_categorical("a", ["x", "y"])
        if a == "y":
            trial.suggest_categorical("b", ["1", "2"])
        seen.append(dict(trial.params))
        study.tell(trial, 1.0)
    return seen


def test_grid_proposes_every_conditional_configuration_once_then_is_exhausted():
    strategy = GridStrategy(seed=0)
    seen = ask_tell(strategy, 10)
    assert sorted(map(str, seen)) == sorted(map(str, [{"a": "x"}, {"a": "y", "b": "1"},
                                                      {"a": "y", "b": "2"}]))
    assert strategy.exhausted()


@pytest.mark.parametrize("name", [n for n in STRATEGIES if n not in ("staged", "screen")])
def test_every_sampling_strategy_runs_under_ask_and_tell(name):
    """(staged and screen propose through Strategy.suggest over a space: tests/test_replay.py,
    tests/strategy/test_screen.py)"""
    strategy = make_strategy(name, seed=1)
    assert strategy.name == name and len(ask_tell(strategy, 6)) >= 3


def test_an_unknown_strategy_is_an_input_error():
    with pytest.raises(InputError, match="unknown strategy 'bayes'"):
        make_strategy("bayes")
