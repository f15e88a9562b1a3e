"""Which failed trials are never launched again on resume: MPI refused them (config) or they
returned a wrong answer (wrong-result); a crash or a timeout may be the machine's fault."""
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState, create_trial

from autotune.storage import NEVER_AGAIN, TrialKey, failure_attrs, known_invalid_params


def failed(value, reason, **extra):
    return create_trial(state=TrialState.FAIL, params={"knob": value},
                        distributions={"knob": CategoricalDistribution(list("abcde"))},
                        user_attrs={**failure_attrs(reason, "why"), **extra})


def test_config_and_wrong_result_are_never_again_crash_and_skips_are_not():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    for trial in (failed("a", "config"), failed("b", "wrong-result"), failed("c", "crash"),
                  failed("d", "timeout"), failed("e", "wrong-result", **{TrialKey.SKIPPED: True})):
        study.add_trial(trial)
    assert set(NEVER_AGAIN) == {"config", "wrong-result"}
    assert known_invalid_params(study) == {(("knob", "a"),): 0, (("knob", "b"),): 1}
