"""The default strategy: screen every knob one at a time, then let a model of main effects and
pairwise interactions choose (Thompson sampling), and race: a configuration gets more rounds only
while it may still beat the best so far.

What a person tuning by hand does first, and what the staged sweep of seeds/000 gets for free,
is to change one thing at a time: `pml=ucx` alone, then one algorithm, one threshold. Screening
does the same, knob after knob (the point-to-point layer, the collective's algorithm, the
transports, the thresholds, then the rest), each knob's values tried from the best configuration
so far (so a transport's best algorithm is looked for with that transport: the sweep's stages,
one knob per stage, for a round or two each instead of five). A knob the best does not ask for
(the UCX_* knobs while pml ob1 leads) is screened afterwards from the best configuration that
does. Then a Bayesian model over the enumerated space (autotune.strategy._surrogate) proposes:
one Thompson sample per trial, the configuration with the best sampled score among those not
measured in full. The draw, the best configuration so far that screening starts from, and the
confirmation's ranking come from a fit that counts each configuration's rounds by their spread
(`Evidence.fit_by_spread`: rounds that disagree, some on a level 2-3x faster than the rest,
count for what they agree on); the race judges on the fit that counts them by their number.

Measurement is the cost, so it is spent where it can change the answer:
- a trial is measured in rounds, one launch of every size block per round; a round is cheap to
  judge because its blocks together cover every size;
- after each round, a trial goes on only while its optimistic estimate (mean less `z_continue`
  standard errors; `z_first` after its first round), by its own rounds or by the model, beats
  the best configuration so far by `min_gain` (`_may_win`); otherwise it is pruned, having
  cost one or two rounds instead of all of them. One round is judged more leniently
  because launch noise here is not normal: a launch of pml ucx can sit on a small-message
  latency level 2-4x the usual one for minutes, and one such round pruned plain `pml=ucx`
  (1.27x under IMB) in a quick start; on a noisy replay a planted 10% gain read +0.16 to +0.28
  in its first round, and was pruned on it, in 5 of 100 seeds at 2 standard errors;
- a configuration measured in full may be proposed again by the model, once (`remeasure`):
  on a noisy machine five rounds cannot rank a 10% gain among dead values (on a noisy replay
  its five rounds averaged anywhere from -0.16 to +0.05); measured again, the planted gain
  of that replay was found in 159 of 200 seeds instead of 151;
- the default trial gets `default_rounds` rounds (it is the reference row of the report; the
  default is also measured before every few candidate launches anyway);
- one default launch pairs with up to `baseline_every` candidate launches of different trials
  (never two of the same trial: their errors would be one);
- the candidates for confirmation are the best by the model's posterior mean, which pools every
  measurement (a lucky round of one configuration is shrunk towards what its knobs do
  elsewhere), among the configurations measured in full (in the fit by spread), and of the
  one-knob changes among them, the one with the lowest median round (if below 0); when the
  leader changes several knobs and none of them alone was measured in full, the last place
  goes to the one of them alone that the search pruned (its "pruned root"), if the model
  rates it faster than the default or it had a single round.
"""

from __future__ import annotations

import fnmatch
import math
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from ..space import changed_knobs, knob_defaults, knobs_changed, one_knob_changes, spread_values
from ..storage import TrialKey, TrialRecord, params_key, trials_by_number, write_planned_params
from ._base import SearchSetup, Strategy, Verdict
from ._planned import PlannedSampler
from ._evidence import NOISE_PRIOR_SD, TOP, Evidence, Measured
from ._surrogate import SCORE_CAP, Changed, Fit, Pool

if TYPE_CHECKING:
    from ..space import Parameter, SearchSpace, TrialContext

# Screening order: the knobs seeds/000 and seeds/002 found to matter most come first (the
# point-to-point layer, the collective's algorithm, the transports, the protocol thresholds);
# the others follow in the space's order. Order matters only when trials are few.
PRIORITY = ("pml", "*_algorithm", "*ALGORITHM*", "UCX_TLS", "UCX_RNDV_THRESH*",
            "UCX_ZCOPY_THRESH", "coll_*_enable", "coll_*_priority")
# Knobs screened jointly with another, as the manual sweep's first step sweeps transports x
# rendezvous threshold: a protocol threshold's best value depends on the transport it switches, so
# a threshold is screened under the best few transports measured, not only the incumbent's.
JOINT = (("UCX_RNDV_THRESH*", "UCX_TLS"),)
JOINT_WIDTH = 3  # transports a threshold is screened under: the incumbent's and the next best
QUEUED = (TrialKey.IS_DEFAULT, TrialKey.WARM_START, TrialKey.REQUEUED_FROM, TrialKey.EXPLORED)
# A configuration measured in full whose own rounds are faster than the default by this many
# standard errors is a confirmation candidate even where the model sees it no faster
OWN_Z = 2.0


class ScreenStrategy(Strategy):
    name = "screen"
    summary = ("each knob alone from the untuned stack, then a model of main effects and pairs; "
               "losers raced out")
    prunes = "when the model's optimistic estimate cannot beat the best by 1%"
    launch_order = "rounds"
    baseline_every = 3

    @classmethod
    def from_options(cls, seed: int | None, *, prune: bool = True,
                     **declared: Any) -> ScreenStrategy:
        return cls(seed, race=prune)

    def __init__(self, seed: int | None = None, *, race: bool = True, default_rounds: int = 2,
                 z_continue: float = 1.0, z_first: float = 3.0, min_gain: float = 0.01,
                 pair_scale: float | None = None, noise_prior: float = NOISE_PRIOR_SD,
                 remeasure: int = 2) -> None:
        self.seed = seed
        self.race = race
        self.default_rounds = default_rounds
        self.z_continue = z_continue
        self.z_first = z_first
        self.min_gain = min_gain
        self.pair_scale = pair_scale
        self.noise_prior = noise_prior
        self.remeasure = remeasure
        self.rng = np.random.default_rng(seed)
        self._sampler = PlannedSampler()
        self._lock = threading.RLock()
        self._done = False
        self.setup: SearchSetup | None = None
        self.running: dict[int, dict[str, Any]] = {}  # trial number -> params
        self.refused: set[tuple] = set()  # configurations whose trial failed: never again
        self.scores: dict[int, dict[int, list[float]]] = {}  # trial -> block -> launch scores
        self.params: tuple[Parameter, ...] = ()
        self.knob_order: list[str] = []  # screening order (PRIORITY, then the space's)
        self.screened: set[str] = set()  # knobs that had their turn
        self.evidence: Evidence | None = None  # made by bind

    @property
    def measured(self) -> dict[tuple, Measured]:
        return self.evidence.measured if self.evidence is not None else {}

    # ------------------------------------------------------------------ setup

    def sampler(self, fixed: Mapping[str, Any] | None = None) -> optuna.samplers.BaseSampler:
        return self._sampler

    def bind(self, setup: SearchSetup) -> None:
        """Learn the space and what the study holds already (a resumed study keeps its
        evidence), and plan the screening."""
        with self._lock:
            self.setup = setup
            pool = Pool(setup.space, setup.ctx, setup.context_values, self.seed)
            self.evidence = Evidence(pool, setup.default_params, pair_scale=self.pair_scale,
                                     noise_prior=self.noise_prior)
            self.refused = {params_key(dict(t.params)) for t in setup.study.get_trials(
                deepcopy=False, states=(TrialState.FAIL,)) if t.params}
            for trial in setup.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,
                                                                        TrialState.PRUNED)):
                record = TrialRecord.from_trial(trial)
                rounds = setup.round_scores(record.raw_us, record.default_us)
                self.evidence.add(trial.number, dict(trial.params), rounds, trial.state.name)
            self._plan_screening()

    def _plan_screening(self) -> None:
        setup = self.setup
        assert setup is not None
        self.params = setup.space.for_context(setup.ctx)
        self.knob_order = [p.name for p in self._ordered(self.params)]
        self.screened = set()

    @staticmethod
    def _ordered(params: Sequence[Parameter]) -> list[Parameter]:
        def rank(p: Parameter) -> int:
            for i, pattern in enumerate(PRIORITY):
                if fnmatch.fnmatchcase(p.name, pattern):
                    return i
            return len(PRIORITY)
        return sorted((p for p in params if p.apply != "context"),
                      key=lambda p: rank(p))  # stable: the space's order within a rank

    def _screening_point(self, taken: set[tuple]) -> dict[str, Any] | None:
        """The next one-knob change to screen, or None once every knob had its turn. Knobs are
        screened in `knob_order`, each from the best configuration so far (the incumbent, so a
        transport's best algorithm is looked for with that transport), a knob the incumbent
        does not ask for (UCX_TLS under pml ob1) from the best measured configuration that does,
        after the others."""
        incumbent = self._incumbent()
        for second in (False, True):
            for name in self.knob_order:
                if name in self.screened:
                    continue
                if (name in incumbent) == second:
                    continue
                base = incumbent if not second else self._best_with(name)
                if base is None:
                    continue
                for start in (base, *self._joint_bases(name, base)):
                    for point in one_knob_changes(self.params, start, only={name},
                                                  values=spread_values):
                        if params_key(point) not in taken:
                            return point
                self.screened.add(name)
        return None

    def _joint_bases(self, name: str, base: dict[str, Any]) -> list[dict[str, Any]]:
        """`base` under the next best values of the knob `name` is screened jointly with (JOINT),
        once that knob was screened: its values ranked by their best measured configuration."""
        assert self.evidence is not None
        for pattern, partner in JOINT:
            if not fnmatch.fnmatchcase(name, pattern) or partner not in base \
                    or partner not in self.screened:
                continue
            values: list[Any] = []
            for m in self.evidence.ranked(lambda m: partner in m.params and not m.reference,
                                          only_faster=False):
                value = m.params[partner]
                if str(value) != str(base[partner]) and value not in values:
                    values.append(value)
            return [{**base, partner: v} for v in values[:JOINT_WIDTH - 1]]
        return []

    def _incumbent(self) -> dict[str, Any]:
        """The configuration with the best posterior mean (pessimistic by half its sd; the
        fit by spread) among those measured two rounds or more; the default before any."""
        assert self.setup is not None
        assert self.evidence is not None
        best = self.evidence.ranked(lambda m: m.n >= 2 and not m.reference)
        return dict(best[0].params) if best else dict(self.setup.default_params)

    def _best_with(self, name: str) -> dict[str, Any] | None:
        assert self.evidence is not None
        best = self.evidence.ranked(lambda m: name in m.params and not m.reference,
                                    only_faster=False)
        return dict(best[0].params) if best else None

    # ------------------------------------------------------------------ proposing

    def exhausted(self) -> bool:
        return self._done

    def suggest(self, trial: optuna.Trial, space: SearchSpace, ctx: TrialContext
                ) -> dict[str, Any]:
        if any(k in trial.user_attrs for k in QUEUED):
            params = space.suggest(trial, ctx)  # queued: the default, a warm start, a requeue
        else:
            with self._lock:
                point = self._next_point()
            self._sampler.plan = {**space.defaults(ctx), **point}
            params = write_planned_params(trial, space, ctx, self._sampler.plan)
        with self._lock:
            self.running[trial.number] = params
            self.scores[trial.number] = {}
        return params

    def _busy(self) -> set[tuple]:
        """Configurations not to propose: running, measured in full, or failed (MPI refused
        it, it crashed or gave wrong results; one the cluster lost is queued again anyway)."""
        return self._full() | self.refused | {params_key(p) for p in self.running.values()}

    def _full(self) -> set[tuple]:
        """Configurations measured as much as the search measures one: `remeasure` trials in
        full, or as many rounds; the default once (it is measured beside every trial anyway)."""
        return {k for k, m in self.measured.items()
                if (m.reference and m.complete) or len(m.complete) >= self.remeasure
                or m.n >= self._most_rounds() * self.remeasure}

    def _most_rounds(self) -> int:
        return self.setup.repetitions if self.setup else 5

    def measures_again(self, params: Mapping[str, Any]) -> bool:
        """A configuration stopped early that the model proposed again gets more rounds."""
        with self._lock:
            return params_key(dict(params)) not in self._full()

    def _next_point(self) -> dict[str, Any]:
        busy = self._busy()
        point = self._screening_point(busy | set(self.measured))  # screened once each
        return point if point is not None else self._thompson(busy)

    def _thompson(self, busy: set[tuple]) -> dict[str, Any]:
        """The configuration with the best score in one draw from the model's posterior, among
        those neither measured in full nor running (one stopped early may get more rounds)."""
        evidence = self.evidence
        assert evidence is not None
        pool = evidence.pool
        taken = {pool.index[k] for k in busy if k in pool.index}
        if len(taken) >= len(pool.configs) and not pool.complete:
            rng = np.random.default_rng(self.rng.integers(2**31))
            for _ in range(2000):  # a space too large to enumerate: sample more of it
                pool.add(pool.sample(_PyRandom(rng)))
                if len(pool.configs) - len(taken) >= 200:
                    break
        x = evidence.matrix()
        free = np.ones(x.shape[0], dtype=bool)
        free[list(taken)] = False
        if not free.any():
            self._done = True
            best = min(self.measured.values(), key=lambda m: m.mean, default=None)
            return dict(best.params) if best else dict(self.setup.default_params)  # type: ignore[union-attr]
        fitted = evidence.fit_by_spread()
        if fitted is None:
            choices = np.flatnonzero(free)
            return dict(pool.configs[int(choices[self.rng.integers(len(choices))])])
        draw = fitted.draw(x, self.rng)
        draw[~free] = np.inf
        return dict(pool.configs[int(np.argmin(draw))])

    # ------------------------------------------------------------------ measuring

    def launch_scored(self, trial_number: int, block: int, score: float) -> None:
        with self._lock:
            self.scores.setdefault(trial_number, {}).setdefault(block, []).append(score)

    def after_launch(self, trial: optuna.Trial, is_default: bool) -> Verdict:
        with self._lock:
            rounds = self._rounds_of(trial.number)
            per_block = self.scores.get(trial.number, {})
            at_boundary = (self.setup is not None and len(per_block) == self.setup.n_blocks
                           and len({len(v) for v in per_block.values()}) == 1)
            if not at_boundary or not rounds:
                return "continue"
            if is_default:
                return "complete" if len(rounds) >= self.default_rounds else "continue"
            if not self.race:
                return "continue"
            params = self.running.get(trial.number, dict(trial.params))
            return "continue" if self._may_win(params, rounds) else "prune"

    def _may_win(self, params: dict[str, Any], rounds: list[float]) -> bool:
        """Whether a configuration, with these rounds besides what was measured before, may
        still beat the best so far by `min_gain`: its optimistic estimate against the best
        configuration measured twice or more, judged pessimistically (half a sd). It goes on
        if either its own rounds (their mean less `z` standard errors of the pooled noise) or
        the model (posterior mean less `z` posterior sds: the model pools what its knobs did
        elsewhere, so one bad round of a configuration whose knobs look good does not end it)
        say it may. Not the model alone: where one value of a knob is faster and the others
        are dead, its evidence-chosen prior shrinks every effect to nearly 0 with a tiny sd,
        and it pruned single rounds of -0.13 and -0.19 of a 10% gain planted among 11 values
        of a noisy replay, which was then found in 54% of 200 seeds (76% with its own rounds
        heard as well)."""
        evidence = self.evidence
        assert evidence is not None
        key = params_key(params)
        before = evidence.measured.get(key)
        mine = before.copy() if before is not None else Measured(dict(params))
        mine.rounds.extend(rounds)
        others = [m for k, m in evidence.measured.items()
                  if m.n >= 2 and k != key and not m.reference]
        bar = -math.log1p(self.min_gain)
        z = self.z_first if mine.n == 1 else self.z_continue
        noise = evidence.noise_sd()  # its own rounds against the others' own, first
        own_best = min((m.mean + 0.5 * noise / math.sqrt(m.n) for m in others), default=0.0)
        if mine.mean - z * noise / math.sqrt(mine.n) < min(own_best, 0.0) + bar:
            return True  # its own rounds may still win
        fitted = self._fit_with(mine, before)
        if fitted is None:  # too little evidence for a model: its own rounds only
            return False
        x = evidence.rows([mine, *others])
        mean = fitted.mean(x)
        top = 1 + np.argsort(mean[1:])[:TOP]  # the sd of the best few only: it costs
        sd = fitted.sd(x[np.concatenate(([0], top))])
        best = min(0.0, float(np.min(mean[top] + 0.5 * sd[1:]))) if others else 0.0
        return float(mean[0] - z * sd[0]) < best + bar

    def _fit_with(self, mine: Measured, before: Measured | None) -> Fit | Changed | None:
        """The model with `mine` in place of what was measured of it `before`: the study's own
        fit with one row's weight and (capped) score changed, the same as a new fit up to
        rounding at a fraction of its cost (the race asks after every launch). A new fit
        instead while the study has too little for one, or when a fit on these rows would
        choose the prior precision again (BayesianRidge's evidence, every fifth more rows)."""
        evidence = self.evidence
        assert evidence is not None
        rows = sum(1 for m in evidence.measured.values() if m.n) + (before is None or not before.n)
        # asked first: the study's own fit, on fewer rows, would choose it on other data
        base = None if evidence.surrogate.chooses_at(rows) else evidence.fit()
        if base is None:
            measured = dict(evidence.measured)
            measured[params_key(mine.params)] = mine
            return evidence.fit(measured)
        was = ((float(before.n), min(before.mean, SCORE_CAP))
               if before is not None and before.n else (0.0, 0.0))
        now = (float(mine.n), min(mine.mean, SCORE_CAP))
        return base.changed(evidence.rows([mine]), was, now)

    def _rounds_of(self, number: int) -> list[float]:
        setup = self.setup
        per_block = self.scores.get(number, {})
        if setup is None or len(per_block) < setup.n_blocks:
            return []
        n = min(len(v) for v in per_block.values())
        weights = setup.block_weights
        total = sum(weights)
        return [sum(weights[b] * per_block[b][r] for b in range(setup.n_blocks)) / total
                for r in range(n)]

    def trial_finished(self, number: int, params: dict[str, Any], state: str) -> None:
        with self._lock:
            self.running.pop(number, None)
            if state == "FAIL":
                self.refused.add(params_key(params))
            rounds = self._rounds_of(number) if state in ("COMPLETE", "PRUNED") else []
            self.scores.pop(number, None)
            if rounds:
                assert self.evidence is not None
                self.evidence.add(number, params, rounds, state)

    # ------------------------------------------------------------------ confirming

    def confirm_candidates(self, study: optuna.Study, k: int) -> list[FrozenTrial]:
        """The k configurations with the best posterior mean among those measured in full that
        the model sees faster than the default (than its own estimate of the default: the
        model here counts each configuration's rounds by their spread, `fit_by_spread`, and
        its steadiest rows can lift every estimate), then those whose own rounds are faster beyond
        their noise (`faster_on_its_own`); the last place goes to the best one-knob change among
        those (plain `pml=ucx`, say) when it is not among the first k. The model pools a knob's
        effect over every configuration that has it, so the top places tend to share their
        knobs; the one-knob change is what a person tuning by hand tries first, and the
        confirmation then prefers it to a combination it cannot tell apart from it
        (confirm.simplest_equivalent). Of the one-knob changes so ranked, the place goes by
        their own rounds (the lowest median, if below 0: robust to one wild round), not by the
        model, which credits a knob's gain to the combinations sharing it. In a quick start the
        model read plain `pml=ucx` (five rounds of -0.08 to -0.25) at -0.07 beside its
        `UCX_TLS` variants, and the place went to `mapping=block`, whose median round was
        -0.07, on the strength of one round of -1.03.
        On a noisy day the model can shrink every effect to nothing (single launches of pruned
        trials reading 2-3x slow): its posterior then ranks no configuration faster, while one
        measured in full reads 1.26x over 5 rounds; the confirmation, not the model, decides.
        When nothing is so ranked, the one-knob change measured in full with the lowest median
        round below 0 is raced alone (only then: letting it displace a ranked candidate cost
        replay regret, docs/strategies.md). In quick start 82 plain `pml=ucx` read
        1.27x over five rounds (-0.44 to +0.33), yet the pooled noise of a busy hour (0.36) kept
        its own rounds from counting, the model put every configuration at +0.06, and nothing
        was raced while IMB read it at 1.22x.
        The last place may instead go to the leader's pruned root (`_pruned_root`): the one
        candidate not measured in full."""
        with self._lock:
            full = [m for m in self.measured.values() if m.complete]
            if not full:
                return []
            assert self.evidence is not None
            fitted = self.evidence.fit()
            steady = self.evidence.fit_by_spread()
            if steady is None:
                means = np.array([m.mean for m in full])
            else:
                means = steady.mean(self.evidence.rows(full))
            default_key = params_key(self.setup.default_params) if self.setup else None
            # faster than the default as the same model reads the default
            reference = 0.0 if steady is None else self.evidence.default_estimate(steady)
            ranked = [i for v, i in sorted((float(v), i) for i, v in enumerate(means))
                      if v < reference and params_key(full[i].params) != default_key]
            noise = self.evidence.noise_sd()
            ranked += sorted((i for i, m in enumerate(full) if i not in ranked
                              and params_key(m.params) != default_key
                              and faster_on_its_own(m, noise)), key=lambda i: full[i].mean)
            picked = ranked[:k]
            defaults = knob_defaults(self.params)
            one_knob = sorted((i for i, m in enumerate(full) if not m.reference
                               and params_key(m.params) != default_key
                               and knobs_changed(m.params, defaults) == 1 and m.median < 0),
                              key=lambda i: full[i].median)
            simple = [i for i in one_knob if i in ranked]
            if k >= 2 and simple and simple[0] not in picked:
                picked = picked[:k - 1] + simple[:1]
            if not ranked:  # nothing else to confirm: what a person would try first
                picked = one_knob[:min(k, 1)]
            numbers = [full[i].complete[-1] for i in picked]
            root = self._pruned_root(full[picked[0]], full, defaults, fitted) if picked else None
            if k >= 2 and root is not None:
                numbers = numbers[:k - 1] + [root]
        return trials_by_number(study, numbers, (TrialState.COMPLETE, TrialState.PRUNED))

    def _pruned_root(self, leader: Measured, full: list[Measured], defaults: dict[str, Any],
                     fitted: Fit | None) -> int | None:
        """The trial of the leader's pruned one-knob root, for the confirmation's one-knob
        place: when the leading candidate changes two or more knobs and none of them alone was
        measured in full, the one of them alone (pruned early) that the model rates best, of
        those it rates faster than the default (below the model's own estimate of the default,
        which a fit to noisy rounds can put well above 0: +0.12 in quick start 59, where plain
        `pml=ucx`, one round of +0.59, read +0.11) and those pruned on a single round, which
        cannot tell a slow knob from a slow moment (quick start 71: plain `pml=ucx`, one round
        of 0.58x, rated slower than the default, so the untuned stack was exported while IMB
        read plain `pml=ucx` at 1.24x). The confirmation then measures it in full beside the leader
        and prefers it when it cannot tell the two apart. In two of twelve quick starts plain
        `pml=ucx` was pruned after one or two rounds of a noisy start (one read +0.21 while the
        default's own two rounds read +0.09 and +0.36 against their default launches), the
        leader became `pml=ucx UCX_TLS=self,sm`, and plain `pml=ucx`, which IMB read 3.7 pp
        faster than it, was never raced. Measuring it again during the search instead changes
        the search's path: on the large replay grid that lost the `mapping` combinations."""
        changed = changed_knobs(leader.params, defaults)
        if len(changed) < 2 or fitted is None:
            return None

        def is_root(m: Measured) -> bool:
            mine = changed_knobs(m.params, defaults)
            return len(mine) == 1 and mine.items() <= changed.items()

        if any(is_root(m) for m in full):
            return None
        roots = [m for m in self.measured.values() if m.pruned and not m.reference and is_root(m)
                 and params_key(m.params) not in self.refused]  # a later trial failed: MPI refused
        if not roots:
            return None
        assert self.evidence is not None and self.setup is not None
        default = self.measured.get(params_key(self.setup.default_params))
        means = fitted.mean(self.evidence.rows(roots + ([default] if default else [])))
        reference = float(means[-1]) if default else 0.0
        eligible = [(float(means[i]), i) for i, m in enumerate(roots)
                    if means[i] < reference or m.n == 1]
        return roots[min(eligible)[1]].pruned[-1] if eligible else None

    def describe(self) -> str:
        return ("screen: every knob one at a time from the untuned stack, then a model of main "
                "effects and pairs (Thompson sampling); losing configurations raced out")


def faster_on_its_own(measured: Measured, noise_sd: float) -> bool:
    """Its own rounds are faster than the default by OWN_Z standard errors, the per-round sd
    taken as the larger of its own (robust) spread and the pooled noise: from a few rounds a
    spread can be small by chance."""
    if measured.n < 2 or measured.reference:
        return False
    sd = max(measured.spread, noise_sd)
    return measured.mean + OWN_Z * sd / math.sqrt(measured.n) < 0


class _PyRandom:
    """random.Random's `choice`/`randrange` over a numpy Generator (SearchSpace.sample)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def randrange(self, start: int, stop: int, step: int = 1) -> int:
        return start + step * int(self.rng.integers((stop - start + step - 1) // step))
