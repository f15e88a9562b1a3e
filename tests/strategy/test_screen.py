"""The screen strategy on replayed grids: it screens one knob at a time from the default (pml
first, the knobs pml=ucx switches on right after it when it looks good), races losers out after
one round, proposes from its model once screening is done, and picks confirmation candidates by
the model's posterior mean (and by their own rounds where the model sees none faster); the
controller shares a default launch between trials, never within one."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from autotune.replay import replay_once, replay_study
from autotune.space import Parameter, SearchSpace, TrialContext
from autotune.storage import TrialRecord, params_key
from autotune.storage._grid import config_key, read_grid
from autotune.strategy import ScreenStrategy
from autotune.strategy._surrogate import Features, Pool, Surrogate, posterior
from tests.grids import OPTIMUM, write_synthetic

GRIDS = Path(__file__).resolve().parents[2] / "docs" / "grids"


@pytest.fixture
def grid(tmp_path):
    path = tmp_path / "synthetic.csv"
    write_synthetic(path)
    return read_grid(path)


def changed(params: dict) -> dict:
    return {k: v for k, v in params.items() if v not in ("unset", "all")}


def test_screening_changes_one_knob_at_a_time_from_the_best_so_far(grid):
    _, study = replay_study(grid, "screen", budget=8, seed=0)
    trials = sorted(study.trials, key=lambda t: t.number)
    assert TrialRecord.from_trial(trials[0]).is_default
    proposals = [changed(t.params) for t in trials[1:7]]
    assert proposals[0] == {"pml": "ucx"}  # the point-to-point layer first
    # pml=ucx beats the default here: the algorithms are tried with it, then its transports
    # from the best so far (pml=ucx with algorithm 3)
    assert proposals[1:4] == [{"pml": "ucx", "coll_tuned_allreduce_algorithm": a}
                              for a in ("1", "2", "3")]
    assert proposals[4:6] == [{"pml": "ucx", "coll_tuned_allreduce_algorithm": "3",
                               "UCX_TLS": tls} for tls in ("self,sm", "self,tcp")]


def test_losers_stop_after_one_round_and_the_default_after_two(grid):
    _, study = replay_study(grid, "screen", budget=8, seed=0)
    by_params = {config_key(t.params): t for t in study.trials}
    tcp = by_params[(("UCX_TLS", "self,tcp"), ("coll_tuned_allreduce_algorithm", "3"),
                     ("pml", "ucx"))]  # 3x slower
    assert tcp.state == TrialState.PRUNED and len(tcp.intermediate_values) == 2  # 2 blocks
    default = next(t for t in study.trials if TrialRecord.from_trial(t).is_default)
    assert default.state == TrialState.COMPLETE and len(default.intermediate_values) == 4
    winner = by_params[(("pml", "ucx"),)]
    assert winner.state == TrialState.COMPLETE and len(winner.intermediate_values) == 10


def test_a_default_launch_serves_several_trials_but_never_two_launches_of_one(grid):
    _, study = replay_study(grid, "screen", budget=12, seed=2)
    users: dict[int, list[int]] = {}
    for t in study.trials:
        record = TrialRecord.from_trial(t)
        ids = list(record.baseline_ids)
        assert len(ids) == len(set(ids)), f"trial {t.number} paired twice with one default launch"
        for i in ids:
            users.setdefault(i, []).append(t.number)
    assert max(len(v) for v in users.values()) >= 2  # shared across trials
    assert max(len(v) for v in users.values()) <= ScreenStrategy.baseline_every


def test_finds_the_optimum_for_less_than_the_staged_sweep(grid):
    screen = [replay_once(grid, "screen", budget=20, seed=s) for s in range(3)]
    staged = [replay_once(grid, "staged", budget=40, seed=s) for s in range(3)]
    assert all(r.reported == OPTIMUM for r in screen)
    assert max(r.size_launches for r in screen) < min(r.size_launches for r in staged)


def test_after_screening_the_model_proposes_the_unmeasured_combination_of_good_main_effects():
    """Two knobs, each good alone: the model predicts their combination best, unmeasured."""
    params = (Parameter("a", "mca", "categorical", "0", choices=("0", "1", "2")),
              Parameter("b", "mca", "categorical", "0", choices=("0", "1", "2")))
    space = SearchSpace("t", "", "any", (), params)
    pool = Pool(space, TrialContext("allreduce"), {}, seed=0)
    features = Features(pool.knobs, pool.codes())
    measured = {("0", "0"): 0.0, ("1", "0"): -0.2, ("2", "0"): 0.1, ("0", "1"): -0.15,
                ("0", "2"): 0.05}
    rows = [pool.add({"a": a, "b": b}) for a, b in measured]
    fitted = Surrogate().fit(features.matrix(pool.codes(rows)),
                             np.array(list(measured.values())), np.full(len(rows), 5.0), 0.03)
    means = fitted.mean(features.matrix(pool.codes()))
    best = pool.configs[int(np.argmin(means))]
    assert best == {"a": "1", "b": "1"}
    assert fitted.draw(features.matrix(pool.codes()), np.random.default_rng(0)).shape == (9,)


def test_a_resumed_study_keeps_its_evidence_and_does_not_screen_again(grid):
    _, study = replay_study(grid, "screen", budget=6, seed=0)
    strategy = ScreenStrategy(seed=0)
    from autotune.replay import CONTEXT
    from autotune.launch._replay import space_from_grid
    from autotune.strategy import SearchSetup

    space = space_from_grid(grid)
    sizes = grid.sizes
    setup = SearchSetup(study=study, space=space, ctx=CONTEXT, context_values={},
                        default_params=space.defaults(CONTEXT),
                        blocks=(sizes[:3], sizes[3:]), weights={s: 1 / len(sizes) for s in sizes},
                        repetitions=5)
    strategy.bind(setup)
    measured = {config_key(t.params) for t in study.trials
                if t.state in (TrialState.COMPLETE, TrialState.PRUNED)}
    assert {config_key(m.params) for m in strategy.measured.values()} == measured
    taken = strategy._busy() | set(strategy.measured)
    following = strategy._screening_point(taken)
    assert following is not None and config_key(following) not in measured


def test_no_race_measures_every_proposal_in_full(grid):
    from autotune.strategy import make_strategy

    assert not make_strategy("screen", prune=False).race
    strategy = ScreenStrategy(seed=0, race=False)
    assert strategy.after_launch(optuna.create_study().ask(), False) == "continue"


def test_the_posterior_between_evidence_fits_is_bayesian_ridges_own():
    """At BayesianRidge's chosen precisions, the Cholesky posterior gives its coefficients."""
    from scipy import sparse
    from sklearn.linear_model import BayesianRidge

    rng = np.random.default_rng(3)
    x = sparse.csr_matrix((rng.random((40, 12)) < 0.3).astype(float))
    y = x @ rng.normal(size=12) * 0.1 + rng.normal(size=40) * 0.02
    weight = rng.integers(1, 6, size=40).astype(float)
    model = BayesianRidge(fit_intercept=True).fit(x.toarray(), y, sample_weight=weight)
    fitted = posterior(x, y, weight, model.alpha_, model.lambda_)
    assert np.allclose(fitted.coef, model.coef_, atol=1e-6)
    assert np.allclose(fitted.mean(x), model.predict(x.toarray()), atol=1e-6)
    _, sd = model.predict(x.toarray()[:5], return_std=True)
    noise = 1 / np.sqrt(model.alpha_)
    assert np.allclose(np.sqrt(fitted.sd(x[:5]) ** 2 + noise ** 2), sd, rtol=1e-4)


@pytest.mark.parametrize("change", ["more rounds", "a new configuration", "fewer rounds"])
def test_one_configurations_changed_evidence_gives_the_posterior_of_a_new_fit(change):
    """The race's question after each launch (Fit.changed) is answered exactly: the same means
    and sds as a posterior fitted anew at the same precisions."""
    from scipy import sparse

    rng = np.random.default_rng(5)
    x = sparse.csr_matrix((rng.random((41, 30)) < 0.2).astype(float))
    y = rng.normal(0, 0.1, 41)
    weight = rng.integers(1, 6, 41).astype(float)
    if change == "a new configuration":
        base = posterior(x[:40], y[:40], weight[:40], 30.0, 2.0)
        row, was, now = 40, (0.0, 0.0), (3.0, -0.05)
    else:
        base = posterior(x, y, weight, 30.0, 2.0)
        row, was = 7, (weight[7], y[7])
        now = (weight[7] + (4 if change == "more rounds" else -0.5), 0.02)
    y[row], weight[row] = now[1], now[0]
    fresh = posterior(x, y, weight, 30.0, 2.0)
    updated = base.changed(x[row], was, now)
    assert np.allclose(updated.mean(x), fresh.mean(x), atol=1e-12)
    assert np.allclose(updated.sd(x), fresh.sd(x), atol=1e-12)
    assert not np.allclose(base.mean(x), fresh.mean(x), atol=1e-4)  # the change mattered


def test_a_kept_gram_is_the_product_of_the_rows_at_their_latest_weights():
    """The study keeps X'WX between fits and adds only the rows whose weight changed: after
    rows arrive, gain rounds and are weighed down by their spread, it must be the product a
    fit would work out afresh, and a posterior from it the fresh posterior."""
    from scipy import sparse

    from autotune.strategy._surrogate import Gram, KeptGram

    rng = np.random.default_rng(11)
    matrix = sparse.csr_matrix((rng.random((60, 25)) < 0.2).astype(float) * 0.5 +
                               (rng.random((60, 25)) < 0.1))
    kept = KeptGram()
    rows: list[int] = []
    weight = np.zeros(0)
    for step in range(40):
        if step < 30:
            rows.append(int(rng.integers(60)) if step % 7 == 6 and rows else step)
            rows = list(dict.fromkeys(rows))
            weight = np.append(weight, 1.0)[:len(rows)]
        weight[rng.integers(len(rows))] += 1  # a round more
        if step % 5 == 4:  # a wide spread: counted for less
            weight[rng.integers(len(rows))] *= 0.37
        gram = kept.update(matrix, rows, weight)
        x = matrix[rows]
        fresh = Gram((x.T @ x.multiply(weight[:, None]).tocsr()).toarray(),
                     np.asarray(x.T @ weight).ravel())
        assert np.allclose(gram.xtx, fresh.xtx, atol=1e-10)
        assert np.allclose(gram.xw, fresh.xw, atol=1e-10)
    y = rng.normal(0, 0.1, len(rows))
    with_kept = posterior(x, y, weight, 30.0, 2.0, gram)
    anew = posterior(x, y, weight, 30.0, 2.0)
    assert np.allclose(with_kept.mean(matrix), anew.mean(matrix), atol=1e-10)
    assert np.allclose(with_kept.sd(matrix), anew.sd(matrix), atol=1e-10)
    fewer = kept.update(matrix, rows[:-1], weight[:-1])  # a row left out: its weight goes
    x = matrix[rows[:-1]]
    assert np.allclose(fewer.xtx, (x.T @ x.multiply(weight[:-1, None]).tocsr()).toarray(),
                       atol=1e-10)
    assert not np.allclose(fewer.xtx, gram.xtx)
    with pytest.raises(ValueError):
        kept.update(matrix, [0, 0, 1], np.array([3.0, 2.0, 1.0]))


def test_the_studys_fits_from_the_kept_gram_are_fresh_fits(grid):
    """After a replayed study, both fits the strategy keeps (rounds counted by number and by
    spread) are the posteriors a fit on every row afresh gives at the same precisions."""
    strategy = ScreenStrategy(seed=2)
    replay_study(grid, strategy, 40, 2)
    evidence = strategy.evidence
    chosen = [m for m in evidence.measured.values() if m.n]
    x = evidence.rows(chosen)
    noise = evidence.noise_sd()
    y = np.minimum([m.mean for m in chosen], 0.4)
    alpha, lambda_ = 1 / noise ** 2, evidence.surrogate.lambda_
    spread = np.array([m.weight(noise) for m in chosen])
    assert (spread != [m.n for m in chosen]).any()  # some rounds counted for less
    for fitted, weight in ((evidence.fit(), np.array([m.n for m in chosen], dtype=float)),
                           (evidence.fit_by_spread(), spread)):
        anew = posterior(x, y, weight, alpha, lambda_)
        pool = evidence.matrix()
        assert np.allclose(fitted.mean(pool), anew.mean(pool), atol=1e-9)
        assert np.allclose(fitted.sd(pool[:50]), anew.sd(pool[:50]), atol=1e-9)


class RefitEveryLaunch(ScreenStrategy):
    """The race as it was before Fit.changed: a new fit of the model for every question."""

    def _fit_with(self, mine, before):  # noqa: ANN001, ANN202
        measured = dict(self.evidence.measured)
        measured[params_key(mine.params)] = mine
        return self.evidence.fit(measured)


def test_the_race_decides_as_it_did_with_a_new_fit_after_every_launch():
    """On a real grid, 60 trials: every trial's state and score are the same whether the race
    updates the study's fit or fits anew (the update is exact, and only taken where a new fit
    would not choose the prior precision again)."""
    from autotune.strategy import _surrogate

    grid = read_grid(GRIDS / "alltoall-1n2p-imb.csv")
    updates, questions = [], []
    changed, fit_with = _surrogate.Fit.changed, ScreenStrategy._fit_with

    def counted(self, *args):  # noqa: ANN001, ANN202
        updates.append(1)
        return changed(self, *args)

    def asked(self, *args):  # noqa: ANN001, ANN202
        questions.append(1)
        return fit_with(self, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_surrogate.Fit, "changed", counted)
        patch.setattr(ScreenStrategy, "_fit_with", asked)
        updated = replay_study(grid, ScreenStrategy(seed=1), budget=60, seed=1)[1]
    refitted = replay_study(grid, RefitEveryLaunch(seed=1), budget=60, seed=1)[1]
    outcome = [[(t.number, t.state, t.value) for t in study.trials]
               for study in (updated, refitted)]
    assert outcome[0] == outcome[1]
    assert sum(t.state == TrialState.PRUNED for t in updated.trials) >= 10  # the race ran
    assert len(questions) >= 30 and len(updates) > len(questions) / 2  # mostly the update


def test_the_studys_fit_is_made_again_once_the_prior_precision_is_chosen_again(grid):
    """A race's new fit may choose the precision (with trials in parallel, between two of the
    study's own fits): the study's kept fit is then not served at the old precision."""
    strategy = ScreenStrategy(seed=0)
    replay_study(grid, strategy, budget=12, seed=0)
    evidence = strategy.evidence
    kept = evidence.fit()
    assert evidence.fit() is kept and kept.lambda_ == evidence.surrogate.lambda_
    evidence.surrogate.lambda_ *= 3  # what a race's fit on one more row may have chosen
    again = evidence.fit()
    assert again is not kept and again.lambda_ == evidence.surrogate.lambda_


def test_a_configuration_that_failed_is_never_proposed_again(tmp_path):
    """A combination the grid lacks fails as MPI would refuse it: screening and the model move on
    instead of proposing it until the controller gives up."""
    import pandas as pd

    path = tmp_path / "holes.csv"
    write_synthetic(path)
    frame = pd.read_csv(path, keep_default_na=False, dtype=str)
    lost = (frame["pml"] == "ucx") & frame["coll_tuned_allreduce_algorithm"].isin(["", "1"])
    frame = frame[~lost]  # pml=ucx with algorithm unset or 1 fails, whatever UCX_TLS
    frame.to_csv(path, index=False)
    _, study = replay_study(read_grid(path), "screen", budget=12, seed=0)
    failed = [config_key(t.params) for t in study.trials if t.state == TrialState.FAIL]
    assert len(failed) >= 2 and len(failed) == len(set(failed))
    assert len([t for t in study.trials if t.state != TrialState.FAIL]) >= 8


def write_ucx_grid(path, tls: dict, rndv: dict, together: dict | None = None) -> None:
    """pml x UCX_TLS x UCX_RNDV_THRESH, 3 passes, 1% noise: a configuration's time is the
    default's times 0.8 under pml=ucx, times its transport's and threshold's factors, or times
    `together[(tls, rndv)]` instead of both for a pair that acts only together."""
    import math
    import random

    import pandas as pd

    from autotune.storage._grid import grid_rows

    knobs = ("pml", "UCX_TLS", "UCX_RNDV_THRESH")
    rng, rows = random.Random(0), []
    for pass_ in range(3):
        for pml in ("", "ucx"):
            for t in (tls if pml else {"": 1.0}):
                for r in (rndv if pml else {"": 1.0}):
                    both = (together or {}).get((t, r), tls[t] * rndv[r])
                    factor = (0.8 if pml else 1.0) * both
                    config = tuple(sorted((k, v) for k, v in zip(knobs, (pml, t, r)) if v))
                    times = {s: (2 + s / 1000) * factor * math.exp(rng.gauss(0, 0.01))
                             for s in (8, 512, 32768)}
                    rows += grid_rows(config, knobs, pass_, 1e9 + pass_, times)
    pd.DataFrame(rows).to_csv(path, index=False)


def write_interaction_grid(path) -> tuple:
    """The best is a pair whose halves each look worse alone than plain pml=ucx: shared-memory
    transports with a 64kb rendezvous threshold, together 15% faster than plain pml=ucx."""
    write_ucx_grid(path,
                   {"": 1.0, "self,sm": 1.05, "sm": 1.1, "self,posix": 1.08, "self,tcp": 3.0},
                   {"": 1.0, "4kb": 1.3, "8kb": 1.2, "16kb": 1.15, "32kb": 1.1, "64kb": 1.05,
                    "128kb": 1.1},
                   together={("self,sm", "64kb"): 0.85})
    return (("UCX_RNDV_THRESH", "64kb"), ("UCX_TLS", "self,sm"), ("pml", "ucx"))


def test_a_threshold_is_screened_under_the_next_best_transports_too(tmp_path):
    """The manual sweep's first step sweeps transports x rendezvous threshold jointly; screening
    one knob at a time from plain pml=ucx would miss a pair whose halves each look worse alone."""
    path = tmp_path / "interaction.csv"
    pair = write_interaction_grid(path)
    grid = read_grid(path)
    for seed in range(3):
        # the default, pml=ucx, 4 transports, 6 thresholds under plain pml=ucx, then 6 under the
        # runner-up transport (self,sm): the pair is among the first 18 of 36 configurations
        _, study = replay_study(grid, "screen", budget=18, seed=seed)
        proposed = [config_key(t.params) for t in sorted(study.trials, key=lambda t: t.number)]
        assert pair in proposed, proposed
        assert replay_once(grid, "screen", budget=18, seed=seed).reported == pair


def write_shared_transport_grid(path) -> None:
    """One transport helps under every threshold, so the model's best few all share it and plain
    pml=ucx is not among them."""
    write_ucx_grid(path, {"": 1.0, "self,sm": 0.9, "self,tcp": 3.0},
                   {"": 1.0, "8kb": 0.97, "32kb": 0.98, "128kb": 1.2})


def test_the_best_one_knob_change_is_confirmed_beside_the_best_combinations(tmp_path):
    """What a person tuning by hand tries first is always among the candidates, and a
    combination that beats it by a gain worth having still wins."""
    from autotune.space import knob_defaults, knobs_changed

    path = tmp_path / "shared.csv"
    write_shared_transport_grid(path)
    grid = read_grid(path)
    for seed in range(2):
        strategy = ScreenStrategy(seed=seed)
        run, study = replay_study(grid, strategy, budget=16, seed=seed)
        defaults = knob_defaults(strategy.params)
        picked = strategy.confirm_candidates(study, 3)
        assert all(knobs_changed(t.params, defaults) >= 2 for t in picked[:2]), picked
        assert changed(picked[-1].params) == {"pml": "ucx"}
        assert dict(run.reported) == {"pml": "ucx", "UCX_TLS": "self,sm", "UCX_RNDV_THRESH": "8kb"}


def test_own_rounds_faster_beyond_their_noise_make_a_candidate():
    from autotune.strategy._evidence import Measured
    from autotune.strategy._screen import faster_on_its_own

    # pml=ucx on a noisy day (2026-11-29): 1.26x by the trimmed mean of 5 rounds
    ucx = Measured({"pml": "ucx"}, rounds=[-0.727, -0.119, -0.209, -0.107, -0.358])
    assert faster_on_its_own(ucx, noise_sd=0.24)
    assert not faster_on_its_own(ucx, noise_sd=0.5)  # the pooled noise bounds the spread
    flat = Measured({"pml": "ucx"}, rounds=[-0.05, 0.03, -0.02, 0.01, -0.04])
    assert not faster_on_its_own(flat, noise_sd=0.05)
    assert not faster_on_its_own(Measured({}, rounds=[-0.5]), noise_sd=0.01)  # one round


def test_when_the_model_sees_nothing_faster_own_measurements_still_reach_the_confirmation(grid):
    """The model shrunk to its intercept (every posterior mean +0.05, as on a noisy day): the
    configurations measured in full whose own rounds are surely faster are still confirmed."""
    strategy = ScreenStrategy(seed=0)
    _, study = replay_study(grid, strategy, budget=8, seed=0)

    class Flat:
        def mean(self, x):
            return np.full(x.shape[0], 0.05)

    strategy.evidence.fit = strategy.evidence.fit_by_spread = lambda measured=None: Flat()
    picked = strategy.confirm_candidates(study, 3)
    assert picked and {"pml": "ucx"} in [changed(t.params) for t in picked]
    full = {params_key(m.params): m for m in strategy.measured.values() if m.complete}
    for trial in picked:
        assert full[params_key(dict(trial.params))].mean < 0
    strategy.evidence.noise_sd = lambda: 10.0  # nothing is sure under that much noise: only
    one_knob = [changed(t.params) for t in strategy.confirm_candidates(study, 3)]  # a one-knob
    assert one_knob == [{"pml": "ucx"}]  # change with the lowest median round below 0 is raced


def test_a_one_knob_change_measured_in_full_is_raced_when_nothing_else_qualifies(grid):
    """Quick start 82 (2026-12-06, a busy hour): plain pml=ucx read 1.27x over five rounds, but
    the pooled round noise (0.357) kept its own rounds from counting, the model put every
    configuration at +0.06, and the confirmation had no candidate while IMB read it at 1.22x.
    A one-knob change whose median round is not below 0 is not raced, nor a combination."""
    from autotune.strategy._evidence import Measured

    strategy = ScreenStrategy(seed=0, race=False, remeasure=1)  # every proposal in full, once
    _, study = replay_study(grid, strategy, budget=12, seed=0)
    by_changed = {tuple(sorted(changed(m.params).items())): k for k, m in strategy.measured.items()}
    plain_key = by_changed[(("pml", "ucx"),)]
    runs_82 = [-0.44, 0.33, -0.63, -0.13, -0.31]
    slower = [0.05, -0.02, 0.1, 0.02, -0.01]  # median +0.02
    for key, m in list(strategy.measured.items()):
        if m.complete and not m.reference:
            rounds = runs_82 if key == plain_key else slower
            strategy.measured[key] = Measured(m.params, list(rounds), list(m.complete), row=m.row)

    class Flat:
        def mean(self, x):
            return np.full(x.shape[0], 0.06)

    strategy.evidence.fit = strategy.evidence.fit_by_spread = lambda measured=None: Flat()
    strategy.evidence.noise_sd = lambda: 0.357
    assert [changed(t.params) for t in strategy.confirm_candidates(study, 3)] == [{"pml": "ucx"}]
    assert [changed(t.params) for t in strategy.confirm_candidates(study, 1)] == [{"pml": "ucx"}]
    combination = next(k for k, m in strategy.measured.items()
                       if m.complete and len(changed(m.params)) >= 2)

    class SeesOne:  # the model ranks one combination faster: it alone is raced, as before
        def mean(self, x):
            return np.asarray(x)[:, 0]

    strategy.evidence.fit = strategy.evidence.fit_by_spread = lambda measured=None: SeesOne()
    strategy.evidence.rows = lambda ms: np.array(
        [[-0.1 if params_key(m.params) == combination else 0.06] for m in ms])
    assert [params_key(dict(t.params)) for t in strategy.confirm_candidates(study, 3)] == [
        combination]
    strategy.evidence.fit = strategy.evidence.fit_by_spread = lambda measured=None: Flat()
    plain = strategy.measured[plain_key]
    strategy.measured[plain_key] = Measured(plain.params, slower, list(plain.complete),
                                            row=plain.row)
    m = strategy.measured[combination]
    strategy.measured[combination] = Measured(m.params, list(runs_82), list(m.complete), row=m.row)
    assert strategy.confirm_candidates(study, 3) == []  # no one-knob change below 0 by its median


def test_the_one_knob_place_goes_by_its_own_rounds_not_the_models_pooling(grid):
    """Quick start 50 (2026-11-29): plain pml=ucx read -0.08 to -0.25 in all five rounds, but the
    model, crediting its gain to UCX_TLS variants, put it at -0.07, below mapping=block, whose
    median round was -0.07 and whose place came from one wild round of -1.03."""
    from autotune.strategy._evidence import Measured

    strategy = ScreenStrategy(seed=0, race=False, remeasure=1)  # every proposal in full, once
    _, study = replay_study(grid, strategy, budget=12, seed=0)
    by_changed = {tuple(sorted(changed(m.params).items())): m for m in strategy.measured.values()}
    plain = by_changed[(("pml", "ucx"),)]
    wild = by_changed[(("coll_tuned_allreduce_algorithm", "3"),)]
    assert plain.complete and wild.complete
    for m, rounds in ((plain, [-0.253, -0.084, -0.214, -0.187, -0.111]),
                      (wild, [-1.031, -0.029, -0.066, -0.072, -0.357])):
        key = params_key(m.params)
        strategy.measured[key] = Measured(m.params, rounds, list(m.complete), row=m.row)
    plain, wild = (strategy.measured[params_key(m.params)] for m in (plain, wild))
    full = [m for m in strategy.measured.values() if m.complete]
    pooled = {id(plain): -0.066, id(wild): -0.134}

    class Pooling:  # the run's posterior means: the wild one ahead of plain pml=ucx
        def mean(self, x):  # rows in the order of `full`, as confirm_candidates asks for them
            return np.array([pooled.get(id(m), -0.2) for m in full])

    strategy.evidence.fit = strategy.evidence.fit_by_spread = lambda measured=None: Pooling()
    picked = [changed(t.params) for t in strategy.confirm_candidates(study, 3)]
    assert picked[-1] == {"pml": "ucx"}, picked
    assert {"coll_tuned_allreduce_algorithm": "3"} not in picked


def test_the_leaders_pruned_one_knob_root_takes_the_one_knob_place(grid):
    """Quick start 55 (2026-11-29): plain pml=ucx was pruned after one round of a noisy start
    (+0.21), the leader became pml=ucx with a UCX_TLS, and plain pml=ucx, which IMB read 3.7 pp
    faster than the leader, never reached the confirmation. The leader's pruned root is raced
    now, when none of its roots was measured in full and the model rates it faster than the
    default or it was pruned on a single round (quick start 71: plain pml=ucx pruned on one
    round of 0.58x, the model then rated it slower than the default, and the study exported
    the untuned stack)."""
    from autotune.strategy._evidence import Measured

    strategy = ScreenStrategy(seed=0, race=False, remeasure=1)  # every proposal in full, once
    _, study = replay_study(grid, strategy, budget=12, seed=0)
    key_of = {tuple(sorted(changed(m.params).items())): k for k, m in strategy.measured.items()}
    plain_key = key_of[(("pml", "ucx"),)]
    leader_key = key_of[(("coll_tuned_allreduce_algorithm", "3"), ("pml", "ucx"))]
    other_key = key_of[(("coll_tuned_allreduce_algorithm", "3"),)]  # the leader's other root
    for key in (plain_key, other_key):  # both pruned after one slow round
        m = strategy.measured[key]
        strategy.measured[key] = Measured(m.params, [0.205], pruned=m.complete[-1:], row=m.row)
    number = strategy.measured[plain_key].pruned[-1]
    model = {leader_key: -0.3, plain_key: -0.2, other_key: -0.1}

    class Model:  # rows carry their configuration's posterior mean
        def mean(self, x):
            return np.asarray(x)[:, 0]

    def rows(ms):
        return np.array([[model.get(params_key(m.params), -0.01)] for m in ms])

    strategy.evidence.fit = strategy.evidence.fit_by_spread = lambda measured=None: Model()
    strategy.evidence.rows = rows
    picked = strategy.confirm_candidates(study, 3)
    assert changed(picked[0].params) == {"pml": "ucx", "coll_tuned_allreduce_algorithm": "3"}
    assert picked[-1].number == number and len(picked) == 3
    plain, other = strategy.measured[plain_key], strategy.measured[other_key]
    other.rounds.append(0.19)  # the other root: two slow rounds, and the model sees it slower
    model.update({plain_key: 0.05, other_key: 0.2})  # and plain pml=ucx too, on its one round:
    assert strategy.confirm_candidates(study, 3)[-1].number == number  # raced (quick start 71)
    plain.rounds.append(0.19)  # two slow rounds of it as well: neither is raced
    assert number not in [t.number for t in strategy.confirm_candidates(study, 3)]
    default_key = params_key(strategy.setup.default_params)
    model.update({default_key: 0.12, plain_key: 0.11})  # quick start 59: the fit puts the
    assert strategy.confirm_candidates(study, 3)[-1].number == number  # default > 0, plain below
    strategy.refused.add(plain_key)  # a later trial of it failed (MPI refused it): never raced
    assert number not in [t.number for t in strategy.confirm_candidates(study, 3)]


def test_rounds_spread_wider_than_the_studys_noise_count_for_less_in_the_ranking(grid):
    """The tls replay grid (docs/strategies.md): a configuration with one recorded pass 2-3x
    fast read 1.6-2.7x over five rounds, each round mixing passes, and the model, counting its
    rounds as it counted those of configurations steady at 1.45x, ranked it first for the
    confirmation. Ranking the configurations measured in full, and choosing the incumbent the
    search leads from, its rounds now count for what they agree on; the race's fit is
    unchanged."""
    from autotune.strategy._evidence import Measured

    strategy = ScreenStrategy(seed=0, race=False, remeasure=1)  # every proposal in full, once
    _, study = replay_study(grid, strategy, budget=12, seed=0)
    full = [m for m in strategy.measured.values() if m.complete and not m.reference]
    assert len(full) >= 4
    rounds = {params_key(full[0].params): [-0.36, -0.38, -0.35, -0.39, -0.37],  # 1.45x
              params_key(full[1].params): [-0.12, -0.35, -0.62, -0.95, -1.2]}  # 1.9x, wild
    for m in full:
        key = params_key(m.params)
        strategy.measured[key] = Measured(m.params, rounds.get(key, [0.04, 0.05, 0.06, 0.05, 0.04]),
                                          list(m.complete), row=m.row)
    strategy.evidence._version += 1  # its kept fit and noise were of the rounds replaced
    steady, wild = (strategy.measured[params_key(m.params)] for m in full[:2])
    evidence = strategy.evidence
    noise = evidence.noise_sd()
    assert steady.weight(noise) == 5 and wild.weight(noise) < 1
    assert Measured({}, rounds=[-0.1, -1.0]).weight(noise) == 2  # two rounds: a spread says nothing
    assert wild.mean < steady.mean  # by its own rounds it looks faster
    rows = evidence.rows([steady, wild])
    searched, ranked = evidence.fit().mean(rows), evidence.fit_by_spread().mean(rows)
    assert searched[1] < searched[0]  # the race's fit: the wild one first, as before
    assert ranked[0] < ranked[1]
    assert strategy.confirm_candidates(study, 1)[0].number == steady.complete[-1]
    # the search leads from the steady one too: its next knob is screened from there
    assert strategy._incumbent() == dict(steady.params)


def test_faster_is_judged_against_the_models_own_reading_of_the_default(grid):
    """Quick start 85's study (2026-12-06, a busy hour): weighted by their spread, the steadiest
    rows sat at +0.05 and every estimate rose with them, the default's to +0.09 and the best
    configuration's to +0.004; measured against 0, nothing was faster and nothing was raced."""
    from autotune.strategy._evidence import Measured

    strategy = ScreenStrategy(seed=0, race=False)
    _, study = replay_study(grid, strategy, budget=12, seed=0)
    for key, m in list(strategy.measured.items()):
        if m.complete and not m.reference:  # none faster by its own median round
            strategy.measured[key] = Measured(m.params, [0.02, -0.01, 0.03], list(m.complete),
                                              row=m.row)
    full = [m for m in strategy.measured.values() if m.complete]
    default_key = params_key(strategy.setup.default_params)
    best = next(m for m in full if not m.reference)
    lifted = {params_key(best.params): 0.004, default_key: 0.09}

    class Lifted:
        def mean(self, x):
            return np.asarray(x)[:, 0]

    strategy.evidence.fit_by_spread = lambda: Lifted()
    strategy.evidence.rows = lambda ms: np.array(
        [[lifted.get(params_key(m.params), 0.2)] for m in ms])
    strategy.evidence.noise_sd = lambda: 10.0  # nothing faster on its own rounds
    assert [t.number for t in strategy.confirm_candidates(study, 1)] == [best.complete[-1]]
    lifted[default_key] = 0.0  # the model's default at 0: +0.004 is not faster
    assert strategy.confirm_candidates(study, 1) == []


def test_the_incumbent_is_faster_than_the_default_as_the_fit_by_spread_reads_it(grid):
    """The fit by spread can lift every estimate, the default's too (quick start 85: +0.09).
    A configuration at +0.004 there is faster than the default, and screening must start
    from it, not from the default; the default's own rounds count for their number however
    they spread, since its score is 0 by definition."""
    from autotune.strategy._evidence import Measured

    strategy = ScreenStrategy(seed=0, race=False)
    replay_study(grid, strategy, budget=12, seed=0)
    evidence = strategy.evidence
    default = next(m for m in strategy.measured.values() if m.reference)
    assert Measured(default.params, [0.3, -0.4, 0.5, -0.6], reference=True).weight(0.01) == 4
    best = next(m for m in strategy.measured.values() if m.n >= 2 and not m.reference)
    level = {params_key(best.params): 0.004, params_key(default.params): 0.09}

    class Lifted:
        def mean(self, x):
            return np.asarray(x)[:, 0]

        def sd(self, x):
            return np.zeros(np.asarray(x).shape[0])

    evidence.fit_by_spread = lambda: Lifted()
    evidence.rows = lambda ms: np.array([[level.get(params_key(m.params), 0.2)] for m in ms])
    assert strategy._incumbent() == dict(best.params)
    level[params_key(default.params)] = 0.0  # the default read at 0: +0.004 is not faster
    assert strategy._incumbent() == dict(strategy.setup.default_params)


def test_the_race_judges_on_the_fit_counting_rounds_by_their_number(grid):
    """A trial's fresh rounds have no spread yet: pruning stays on `Evidence.fit`, so a
    configuration whose rounds disagree is measured again rather than dropped."""
    strategy = ScreenStrategy(seed=0)
    replay_study(grid, strategy, budget=12, seed=0)

    def refuse():
        raise AssertionError("the race asked for the fit by spread")

    strategy.evidence.fit_by_spread = refuse
    fresh = next(c for c in strategy.evidence.pool.configs
                 if params_key(dict(c)) not in strategy.measured)
    assert strategy._may_win(dict(fresh), [-0.9])  # a first round 2.5x faster may win
    assert not strategy._may_win(dict(fresh), [0.9, 0.9])  # two rounds 2.5x slower may not


class _Shrunk:
    """A fit that reads every configuration at 0 with a tiny sd: a model whose prior shrank
    every effect away (one faster value among eleven dead ones)."""

    def mean(self, x):  # noqa: ANN001, ANN201
        return np.zeros(x.shape[0])

    def sd(self, x):  # noqa: ANN001, ANN201
        return np.full(x.shape[0], 1e-3)


def test_a_configuration_whose_own_rounds_may_win_is_not_pruned_by_a_shrunk_model(grid):
    """The noisy replay of bench_calibration: the model pruned single rounds of -0.13 and -0.19
    of the one real gain. Its own rounds are heard too; a slow round is still pruned."""
    strategy = ScreenStrategy(seed=0)
    replay_study(grid, strategy, budget=6, seed=0)
    strategy._fit_with = lambda mine, before: _Shrunk()
    fresh = {**strategy.setup.default_params, "pml": "ob1"}
    assert params_key(fresh) not in strategy.measured
    noise = strategy.evidence.noise_sd()
    bar = min(0.0, min(m.mean + 0.5 * noise / np.sqrt(m.n) for m in strategy.measured.values()
                       if m.n >= 2 and not m.reference)) - np.log1p(strategy.min_gain)
    assert strategy._may_win(fresh, [bar + 0.5 * noise])  # its own round may still win
    assert not strategy._may_win(fresh, [bar + 3.5 * noise])  # far slower: pruned
    assert strategy._may_win(fresh, [bar + 2.5 * noise])  # the first round judged at z 3
    strategy.z_first = 2.0  # (a real gain read +0.16 to +0.28 in one first round in 20)
    assert not strategy._may_win(fresh, [bar + 2.5 * noise])


def test_a_configuration_measured_in_full_may_be_proposed_once_more():
    """Five rounds cannot rank a 10% gain among dead values on a noisy machine: the model may
    propose a configuration measured in full again, once (`remeasure`), never a third time."""
    from autotune.strategy._evidence import Measured

    strategy = ScreenStrategy(seed=0)
    strategy.evidence = type("E", (), {"measured": {}})()
    params = {"knob": "v1"}
    key = params_key(params)
    strategy.evidence.measured[key] = Measured(params, [-0.1] * 5, complete=[3])
    assert strategy.measures_again(params) and key not in strategy._busy()
    strategy.evidence.measured[key] = Measured(params, [-0.1] * 10, complete=[3, 9])
    assert not strategy.measures_again(params) and key in strategy._busy()
    default = {"knob": "unset"}  # the default: once (it is measured beside every trial)
    strategy.evidence.measured[params_key(default)] = Measured(default, [0.0, 0.0], complete=[0],
                                                               reference=True)
    assert not strategy.measures_again(default)
    once = ScreenStrategy(seed=0, remeasure=1)
    once.evidence = type("E", (), {"measured": {key: Measured(params, [-0.1] * 5,
                                                              complete=[3])}})()
    assert not once.measures_again(params)  # as before: measured in full, once
