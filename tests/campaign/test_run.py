"""The campaign loop on a real storage and real sessions (prepare_session: the space resolved
against this machine's Open MPI): neighbours whose confirmed winners agree shorten a case to the
default plus what they found; a case needing more nodes than the allocation waits. The benchmark
run is the one part replaced here (run_case records what it was asked); tests/campaign/
test_campaign_e2e.py runs the whole campaign for real."""

from __future__ import annotations

import optuna
from optuna.distributions import CategoricalDistribution

from autotune.campaign import (CAMPAIGN_ATTR, CampaignOptions, CampaignRunner, Case, CaseMark,
                               register_cases)
from autotune.events import RunSummary
from autotune.session import StartOptions, prepare_session
from autotune.storage import CONFIG_ATTR, CONFIRMATION_ATTR, open_storage
from tests.storage import CONFIG, controller_attrs

WINNER = {"pml": "ucx", "UCX_TLS": "self,sysv,cma", "UCX_RNDV_THRESH": "64kb",
          "UCX_ZCOPY_THRESH": "128kb", "mapping": "cyclic", "NPS": 1,
          "coll_tuned_allreduce_algorithm": 3}


def _finished_neighbour(storage: str, case: Case, winner_alg: int) -> None:
    """A finished allreduce case whose confirmation names WINNER (with its own algorithm)."""
    study = optuna.create_study(study_name=case.study_name("c"), storage=open_storage(storage))
    study.set_user_attr(CONFIG_ATTR, {**CONFIG, "nodes": case.nodes, "ppn": case.ppn})
    params = {**WINNER, "coll_tuned_allreduce_algorithm": winner_alg}
    default = {"pml": "unset", "mapping": "default", "NPS": 1, "coll_tuned_allreduce_algorithm": 0}
    choices = {k: list(dict.fromkeys([default.get(k, v), v])) for k, v in params.items()}
    for trial_params, value, is_default in ((default, 0.0, True), (params, -0.2, False)):
        study.add_trial(optuna.trial.create_trial(
            params=trial_params, value=value, user_attrs=controller_attrs(is_default=is_default),
            distributions={k: CategoricalDistribution(choices[k]) for k in trial_params}))
    study.set_user_attr(CONFIRMATION_ATTR, {
        "rounds": 5, "best_trial": 1, "finished": 1.0, "method": "t", "candidates": [
            {"trial": 1, "params": params, "round_scores": [-0.2] * 5, "mean": -0.2,
             "ci_low": -0.25, "ci_high": -0.15, "failed": "", "speedup": 1.22,
             "speedup_interval": [1.16, 1.28], "verdict": "faster", "rounds": 5}]})
    study.set_user_attr(CAMPAIGN_ATTR, CaseMark("c", case, trials=10, finished=1.0).to_dict())


def test_agreeing_neighbours_shorten_a_case_and_a_larger_one_waits(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path / "home"))
    storage = f"sqlite:///{tmp_path / 'c.db'}"
    for case, alg in ((Case(1, 1, "allreduce"), 3), (Case(1, 2, "allreduce"), 4)):
        _finished_neighbour(storage, case, alg)  # winners differ only in allreduce's algorithm
    target, larger = Case(1, 2, "allgather"), Case(2, 2, "allgather")
    base = StartOptions(collective="allreduce", nodes=1, ppn=1, storage=storage,
                        check_live=False, verify="no", sizes=(1024, 4096))
    options = CampaignOptions(name="c", cases=(Case(1, 1, "allreduce"), Case(1, 2, "allreduce"),
                                               target, larger), base=base, trials=10)
    asked: list[int] = []
    said: list[str] = []

    def run_case(session, opts, trials):
        asked.append(trials)
        assert opts.study_name == "c.allgather-1n2p" and opts.ppn == 2
        return RunSummary(confirmation=object())

    outcome = CampaignRunner(options, prepare=prepare_session, run_case=run_case,
                             say=said.append, allocation_nodes=1).run()
    # both winners become one allgather configuration (the allreduce algorithm is not a knob
    # of allgather): it is queued once, and the case runs the default plus it
    assert asked == [2], said
    assert any("confirmed winners agree: 2 trials" in line for line in said)
    assert outcome.finished == [target]
    assert "needs 2 nodes, this allocation has 1" in outcome.waiting[larger]
    study = optuna.load_study(study_name="c.allgather-1n2p", storage=storage)
    mark = CaseMark.from_dict(study.user_attrs[CAMPAIGN_ATTR])
    assert mark.agreed and mark.finished is not None
    assert mark.warm_started[0].startswith("queued: allreduce-1n2p: confirmed winner (trial 1)")
    assert mark.warm_started[1].startswith("skipped, already tried or queued: allreduce-1n1p")
    queued = [t for t in study.trials if t.state.name == "WAITING"]
    fixed = [t.system_attrs["fixed_params"] for t in queued]
    assert {k: v for k, v in fixed[-1].items() if k in WINNER} == {
        k: v for k, v in WINNER.items() if not k.startswith("coll_tuned_allreduce")}
    waiting = optuna.load_study(study_name="c.allgather-2n2p", storage=storage)
    assert "needs 2 nodes" in CaseMark.from_dict(waiting.user_attrs[CAMPAIGN_ATTR]).waiting
    # a second run has nothing left here: the finished case is not run again
    asked.clear()
    CampaignRunner(options, prepare=prepare_session, run_case=run_case, say=said.append,
                   allocation_nodes=1).run()
    assert asked == []
    register_cases(options)  # idempotent
