"""A trial's params and its record's attributes are written in one transaction (real SQLite
behind the product's storage), exactly as Optuna's one-at-a-time calls would write them."""
import threading

import optuna
import pytest

from autotune.space import Parameter, SearchSpace, TrialContext
from autotune.storage import open_storage, write_planned_params, write_user_attrs
from autotune.storage._transaction import writes_in_one_transaction
from autotune.storage import PatientStorage
from autotune.strategy._planned import PlannedSampler
from tests.storage.test_patient import hold_read_lock, rdb

CTX = TrialContext(collective="allreduce")
SPACE = SearchSpace(name="t", description="", stack="openmpi", fixed=(), parameters=(
    Parameter(name="pml", apply="mca", type="choice", choices=("unset", "ucx", "ob1"),
              default="unset"),
    Parameter(name="UCX_TLS", apply="env", type="choice", choices=("unset", "self,sm", "self,tcp"),
              default="unset", when=(("pml", ("ucx",)),)),
    Parameter(name="segments", apply="mca", type="int", low=1, high=8, default=1),
    Parameter(name="only", apply="env", type="choice", choices=("x",), default="x"),
))


def study_at(tmp_path, sampler=None):
    storage = open_storage(f"sqlite:///{tmp_path / 't.db'}")
    return optuna.create_study(storage=storage, study_name="s", sampler=sampler)


def test_the_installed_optuna_lets_the_product_storage_write_in_one_transaction(tmp_path):
    """Else every write silently falls back to one transaction per row (an Optuna upgrade that
    renamed its writers): correct, but three times the cost."""
    assert writes_in_one_transaction(study_at(tmp_path)._storage.inner)


@pytest.mark.parametrize("plan", [{"pml": "ucx", "UCX_TLS": "self,sm", "segments": 4},
                                  {"pml": "ob1", "UCX_TLS": "self,sm", "segments": 2},
                                  {"pml": "ob1", "segments": 2, "only": "y"}])  # one value: x
def test_planned_params_are_stored_as_optunas_own_suggestions_store_them(tmp_path, plan):
    sampler = PlannedSampler()
    sampler.plan = plan
    reference = optuna.create_study(sampler=sampler)  # in memory: Optuna's own suggest calls
    expected = SPACE.suggest(reference.ask(), CTX)
    study = study_at(tmp_path)
    trial = study.ask()
    assert write_planned_params(trial, SPACE, CTX, plan) == expected
    assert trial.params == expected  # the trial object knows without a query
    stored = study.trials[0]
    assert stored.params == expected
    assert stored.distributions == reference.trials[0].distributions
    assert "UCX_TLS" not in stored.params or plan["pml"] == "ucx"  # inactive: never asked


def test_a_queued_trials_own_params_come_before_the_plan(tmp_path):
    plan = {"pml": "ucx", "UCX_TLS": "self,sm", "segments": 1, "only": "x"}
    sampler = PlannedSampler()
    sampler.plan = plan
    reference = optuna.create_study(sampler=sampler)
    reference.enqueue_trial({"pml": "ob1", "segments": 8})
    SPACE.suggest(reference.ask(), CTX)
    study = study_at(tmp_path)
    study.enqueue_trial({"pml": "ob1", "segments": 8})
    trial = study.ask()
    params = write_planned_params(trial, SPACE, CTX, plan)
    assert params == {"pml": "ob1", "segments": 8, "only": "x"} == study.trials[0].params
    assert study.trials[0].distributions == reference.trials[0].distributions


def test_a_bad_value_or_a_changed_distribution_writes_none_of_the_params(tmp_path):
    study = study_at(tmp_path)
    with pytest.raises(ValueError):
        write_planned_params(study.ask(), SPACE, CTX, {"pml": "psm2", "segments": 1})
    assert study.trials[0].params == {}
    first = study.ask()
    write_planned_params(first, SPACE, CTX, {"pml": "ucx", "UCX_TLS": "self,sm", "segments": 2})
    other = SearchSpace(name="t", description="", stack="openmpi", fixed=(), parameters=(
        SPACE.parameters[0],  # pml as before: one call at a time would write it, then fail
        Parameter(name="UCX_TLS", apply="env", type="choice", choices=("unset", "self,sm"),
                  default="unset", when=(("pml", ("ucx",)),))))
    with pytest.raises(ValueError):  # the controller names this "no longer matches the trials"
        write_planned_params(study.ask(), other, CTX, {"pml": "ucx", "UCX_TLS": "self,sm"})
    assert study.trials[2].params == {}


def test_user_attrs_are_written_together_and_known_to_the_trial(tmp_path):
    study = study_at(tmp_path)
    trial = study.ask()
    attrs = {f"key{i}": {"values": [i, i + 0.5]} for i in range(24)}
    write_user_attrs(trial, attrs)
    assert trial.user_attrs == attrs
    assert study.trials[0].user_attrs == attrs


def test_a_storage_without_batches_is_written_one_call_at_a_time(tmp_path):
    """A journal file (or a bare Optuna storage): the same result through Optuna's calls."""
    storage = open_storage(f"journal:{tmp_path / 'j.log'}")
    sampler = PlannedSampler()
    study = optuna.create_study(storage=storage, study_name="s", sampler=sampler)
    trial = study.ask()
    sampler.plan = {"pml": "ucx", "UCX_TLS": "self,tcp", "segments": 3}
    params = write_planned_params(trial, SPACE, CTX, sampler.plan)
    write_user_attrs(trial, {"a": 1, "b": [2]})
    stored = study.trials[0]
    assert stored.params == params == {"pml": "ucx", "UCX_TLS": "self,tcp", "segments": 3,
                                       "only": "x"}
    assert stored.user_attrs == {"a": 1, "b": [2]}


def test_a_locked_database_is_waited_out_and_the_batch_written_whole(tmp_path):
    path = tmp_path / "s.db"
    heard = []
    storage = PatientStorage(rdb(path, 0.5), str(path), notify=heard.append)
    study = optuna.create_study(storage=storage, study_name="s")
    trial = study.ask()
    started = threading.Event()
    reader = threading.Thread(target=hold_read_lock, args=(path, 2.0, started))
    reader.start()
    started.wait(5)
    attrs = {f"key{i}": i for i in range(10)}
    write_user_attrs(trial, attrs)  # blocked by the reader beyond the busy timeout, then written
    reader.join()
    assert storage.waited["locked"] >= 1 and heard
    assert optuna.load_study(study_name="s", storage=rdb(path, 5)).trials[0].user_attrs == attrs


def test_later_trials_written_from_what_this_process_knows_store_what_optuna_would(tmp_path):
    """The first trial's params go through Optuna's writer; later ones are checked against the
    distributions this process wrote: they must land exactly as Optuna's own calls land them."""
    plans = [{"pml": "ucx", "UCX_TLS": "self,sm", "segments": 4},
             {"pml": "ob1", "segments": 2}, {"pml": "ucx", "UCX_TLS": "self,tcp", "segments": 8}]
    sampler = PlannedSampler()
    reference = optuna.create_study(sampler=sampler)
    study = study_at(tmp_path)
    for plan in plans:
        sampler.plan = plan
        expected = SPACE.suggest(reference.ask(), CTX)
        assert write_planned_params(study.ask(), SPACE, CTX, plan) == expected
    for stored, mine in zip(study.trials, reference.trials):
        assert stored.params == mine.params
        assert stored.distributions == mine.distributions


def test_a_distribution_another_program_wrote_is_checked_too(tmp_path):
    """What this process has not written itself, Optuna's writer checks against the study."""
    elsewhere = optuna.create_study(study_name="s", storage=rdb(tmp_path / "t.db", 5))
    elsewhere.ask().suggest_categorical("pml", ["unset", "ucx"])  # an Optuna script's trial
    storage = open_storage(f"sqlite:///{tmp_path / 't.db'}")
    study = optuna.load_study(study_name="s", storage=storage)
    with pytest.raises(ValueError):
        write_planned_params(study.ask(), SPACE, CTX, {"pml": "ucx", "UCX_TLS": "self,sm",
                                                       "segments": 1})
    assert study.trials[1].params == {}


def test_two_studies_in_one_storage_may_give_one_name_two_distributions(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path / 't.db'}")
    narrow = SearchSpace(name="t", description="", stack="openmpi", fixed=(), parameters=(
        Parameter(name="pml", apply="mca", type="choice", choices=("unset", "ucx"),
                  default="unset"),))
    for name, space in (("a", SPACE), ("b", narrow), ("a", SPACE), ("b", narrow)):
        study = optuna.create_study(storage=storage, study_name=name, load_if_exists=True)
        write_planned_params(study.ask(), space, CTX, {"pml": "ucx", "UCX_TLS": "self,sm",
                                                       "segments": 1})
    assert [len(optuna.load_study(study_name=n, storage=storage).trials) for n in "ab"] == [2, 2]


def test_a_finished_trial_takes_no_params(tmp_path):
    study = study_at(tmp_path)
    write_planned_params(study.ask(), SPACE, CTX, {"pml": "ob1", "segments": 1})
    trial = study.ask()
    study.tell(trial, 1.0)
    with pytest.raises(RuntimeError):
        write_planned_params(trial, SPACE, CTX, {"pml": "ob1", "segments": 1})
    assert study.trials[1].params == {}
