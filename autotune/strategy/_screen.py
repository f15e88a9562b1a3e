"""The default strategy: screen every knob one at a time from the untuned stack, then let a model
of main effects and pairwise interactions choose (Thompson sampling), and race: a configuration
gets more rounds only while it may still beat the best so far.

What a person tuning by hand does first, and what the staged sweep of seeds/000 gets for free,
is to change one thing from the default: `pml=ucx` alone, one algorithm, one threshold. Those
points estimate every knob's main effect for a few launches each. Knobs a value switches on (the
UCX_* knobs under pml=ucx, a segment size under a segmenting algorithm) are screened from that
value as soon as it looks promising, else after the first level. Then a Bayesian model over the
enumerated space (autotune.strategy._surrogate) proposes: one Thompson sample per trial, the
configuration with the best sampled score among those not yet measured.

Measurement is the cost, so it is spent where it can change the answer:
- a trial is measured in rounds, one launch of every size block per round; a round is cheap to
  judge because its blocks together cover every size;
- after each round, a trial goes on only while its optimistic estimate (mean less `z_continue`
  standard errors) beats the best configuration so far by `min_gain`; otherwise it is pruned,
  having cost one or two rounds instead of all of them;
- the default trial gets `default_rounds` rounds (it is the reference row of the report; the
  default is also measured before every few candidate launches anyway);
- one default launch pairs with up to `baseline_every` candidate launches of different trials
  (never two of the same trial: their errors would be one);
- the candidates for confirmation are the best by the model's posterior mean, which pools every
  measurement (a lucky round of one configuration is shrunk towards what its knobs do
  elsewhere), among the configurations measured in full.
"""

from __future__ import annotations

import fnmatch
import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from ..space import one_knob_changes
from ..storage import TrialKey, TrialRecord, params_key
from ._base import SearchSetup, Strategy, Verdict
from ._planned import PlannedSampler
from ._surrogate import Features, Pool, fit

if TYPE_CHECKING:
    from ..space import Parameter, SearchSpace, TrialContext

# Screening order: the knobs seeds/000 and seeds/002 found to matter most come first (the
# point-to-point layer, the collective's algorithm, the transports, the protocol thresholds);
# the others follow in the space's order. Order matters only when trials are few.
PRIORITY = ("pml", "*_algorithm", "*ALGORITHM*", "UCX_TLS", "UCX_RNDV_THRESH*",
            "UCX_ZCOPY_THRESH", "coll_*_enable", "coll_*_priority")
NOISE_PRIOR_SD = 0.05  # per-round sd of a score before the study has measured its own
NOISE_PRIOR_DF = 4  # how many rounds' worth of evidence that prior counts for
QUEUED = (TrialKey.IS_DEFAULT, TrialKey.WARM_START, TrialKey.REQUEUED_FROM, TrialKey.EXPLORED)


@dataclass
class Measured:
    """One configuration's evidence so far: its round scores over all its trials."""

    params: dict[str, Any]
    rounds: list[float] = field(default_factory=list)
    complete: list[int] = field(default_factory=list)  # its trials measured in full
    reference: bool = False  # the default: its score is 0 by definition

    @property
    def n(self) -> int:
        return len(self.rounds)

    @property
    def mean(self) -> float:
        if self.reference or not self.rounds:
            return 0.0
        return float(np.mean(self.rounds))


class ScreenStrategy(Strategy):
    name = "screen"
    launch_order = "rounds"
    baseline_every = 3

    def __init__(self, seed: int | None = None, *, race: bool = True, default_rounds: int = 2,
                 z_continue: float = 1.0, min_gain: float = 0.01,
                 pair_scale: float | None = None) -> None:
        self.seed = seed
        self.race = race
        self.default_rounds = default_rounds
        self.z_continue = z_continue
        self.min_gain = min_gain
        self.pair_scale = pair_scale
        self.rng = np.random.default_rng(seed)
        self._sampler = PlannedSampler()
        self._lock = threading.RLock()
        self._done = False
        self.setup: SearchSetup | None = None
        self.measured: dict[tuple, Measured] = {}
        self.running: dict[int, dict[str, Any]] = {}  # trial number -> params
        self.scores: dict[int, dict[int, list[float]]] = {}  # trial -> block -> launch scores
        self.queue: deque[dict[str, Any]] = deque()
        self.later: list[dict[str, Any]] = []  # children of parents that did not look promising
        self.parents: dict[tuple, list[dict[str, Any]]] = {}  # parent key -> its children's points
        self.pool: Pool | None = None
        self.features: Features | None = None

    # ------------------------------------------------------------------ setup

    def sampler(self, fixed: Mapping[str, Any] | None = None) -> optuna.samplers.BaseSampler:
        return self._sampler

    def bind(self, setup: SearchSetup) -> None:
        """Learn the space and what the study holds already (a resumed study keeps its
        evidence), and plan the screening."""
        with self._lock:
            self.setup = setup
            self.pool = Pool(setup.space, setup.ctx, setup.context_values, self.seed)
            kwargs = {} if self.pair_scale is None else {"pair_scale": self.pair_scale}
            self.features = Features(self.pool.knobs, self.pool.codes(), **kwargs)
            self.measured.clear()
            for trial in setup.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,
                                                                        TrialState.PRUNED)):
                record = TrialRecord.from_trial(trial)
                rounds = setup.round_scores(record.raw_us, record.default_us)
                self._add(trial.number, dict(trial.params), rounds, trial.state.name)
            self._plan_screening()

    def _plan_screening(self) -> None:
        setup = self.setup
        assert setup is not None
        params = setup.space.for_context(setup.ctx)
        reference = dict(setup.default_params)
        self.queue = deque()
        self.parents = {}
        self.later = []
        for point in self._one_knob_changes(params, reference):
            self.queue.append(point)
            children = self._children(params, reference, point)
            if children:
                self.parents[params_key(point)] = children
        for key in list(self.parents):  # resumed: parents already judged
            if key in self.measured:
                self._release_children(key)
        self.queue = deque(p for p in self.queue if params_key(p) not in self.measured)

    @staticmethod
    def _ordered(params: Sequence[Parameter]) -> list[Parameter]:
        def rank(p: Parameter) -> int:
            for i, pattern in enumerate(PRIORITY):
                if fnmatch.fnmatchcase(p.name, pattern):
                    return i
            return len(PRIORITY)
        return sorted((p for p in params if p.apply != "context"),
                      key=lambda p: rank(p))  # stable: the space's order within a rank

    def _one_knob_changes(self, params: Sequence[Parameter], base: dict[str, Any],
                          only: set[str] | None = None) -> list[dict[str, Any]]:
        """`base` with one knob (of `only` if given) changed, the most telling knobs first."""
        order = {p.name: i for i, p in enumerate(self._ordered(params))}
        points = one_knob_changes(params, base, only)
        changed = [next(k for k in p if str(p.get(k)) != str(base.get(k, object()))) for p in points]
        return [p for _, p in sorted(zip(changed, points), key=lambda cp: order.get(cp[0], 0))]

    def _children(self, params: Sequence[Parameter], base: dict[str, Any],
                  point: dict[str, Any]) -> list[dict[str, Any]]:
        """One-knob changes, from `point`, of the knobs `point` switches on that `base` had off."""
        new = {name for name in point if name not in base}
        return self._one_knob_changes(params, point, only=new) if new else []

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
            params = space.suggest(trial, ctx)
        with self._lock:
            self.running[trial.number] = params
            self.scores[trial.number] = {}
        return params

    def _busy(self) -> set[tuple]:
        """Configurations not to propose: running, or measured in full."""
        return ({k for k, m in self.measured.items() if m.complete or m.n >= self._most_rounds()}
                | {params_key(p) for p in self.running.values()})

    def _most_rounds(self) -> int:
        return self.setup.repetitions if self.setup else 5

    def measures_again(self, params: Mapping[str, Any]) -> bool:
        with self._lock:
            return params_key(dict(params)) not in self._busy()

    def _next_point(self) -> dict[str, Any]:
        busy = self._busy()
        screened = busy | set(self.measured)  # screening measures each point once
        for source in (self.queue, self.later):
            while source:
                point = source.popleft() if isinstance(source, deque) else source.pop(0)
                if params_key(point) not in screened:
                    return point
        return self._thompson(busy)

    def _thompson(self, busy: set[tuple]) -> dict[str, Any]:
        """The configuration with the best score in one draw from the model's posterior, among
        those neither measured in full nor running (one stopped early may get more rounds)."""
        pool, features = self.pool, self.features
        assert pool is not None and features is not None
        free = [i for i, c in enumerate(pool.configs) if params_key(c) not in busy]
        if not free and not pool.complete:
            rng = np.random.default_rng(self.rng.integers(2**31))
            for _ in range(2000):
                before = len(pool.configs)
                index = pool.add(pool.sample(_PyRandom(rng)))
                if len(pool.configs) > before and params_key(pool.configs[index]) not in busy:
                    free.append(index)
                if len(free) >= 200:
                    break
        if not free:
            self._done = True
            best = min(self.measured.values(), key=lambda m: m.mean, default=None)
            return dict(best.params) if best else dict(self.setup.default_params)  # type: ignore[union-attr]
        fitted = self._fit()
        x = features.matrix(pool.codes(free))
        if fitted is None:
            return dict(pool.configs[free[int(self.rng.integers(len(free)))]])
        draw = fitted.draw(x, self.rng)
        return dict(pool.configs[free[int(np.argmin(draw))]])

    def _fit(self):  # noqa: ANN202 - a Fit or None
        pool, features = self.pool, self.features
        assert pool is not None and features is not None
        rows = [(m, pool.add(m.params)) for m in self.measured.values() if m.n]
        if len(rows) < 2:
            return None
        x = features.matrix(pool.codes([r for _, r in rows]))
        y = np.array([m.mean for m, _ in rows])
        weight = np.array([m.n for m, _ in rows], dtype=float)
        return fit(x, y, weight)

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
            key = params_key(params)
            earlier = self.measured.get(key)
            mine = (earlier.rounds if earlier else []) + rounds
            optimistic = float(np.mean(mine)) - self.z_continue * self.noise_sd() / math.sqrt(len(mine))
            return "continue" if optimistic < self.incumbent(exclude=key) - math.log1p(
                self.min_gain) else "prune"

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

    def incumbent(self, exclude: tuple | None = None) -> float:
        """The best configuration so far, judged pessimistically (mean plus half a standard
        error): one lucky round does not raise the bar for every other configuration. The
        default counts as 0 until it is measured."""
        sd = self.noise_sd()
        values = [m.mean + 0.5 * sd / math.sqrt(m.n) for k, m in self.measured.items()
                  if m.n >= 2 and k != exclude and not m.reference]
        return min(values, default=0.0)

    def noise_sd(self) -> float:
        """Per-round sd of a score, pooled over configurations measured more than once, with a
        prior worth NOISE_PRIOR_DF rounds. (Not the default's rounds: default against default,
        their spread is not a candidate's.)"""
        ss = NOISE_PRIOR_DF * NOISE_PRIOR_SD ** 2
        df = NOISE_PRIOR_DF
        for m in self.measured.values():
            if m.n >= 2 and not m.reference:
                ss += float(np.var(m.rounds, ddof=1)) * (m.n - 1)
                df += m.n - 1
        return math.sqrt(ss / df)

    def trial_finished(self, number: int, params: dict[str, Any], state: str) -> None:
        with self._lock:
            self.running.pop(number, None)
            rounds = self._rounds_of(number) if state in ("COMPLETE", "PRUNED") else []
            self.scores.pop(number, None)
            if rounds:
                self._add(number, params, rounds, state)
                key = params_key(params)
                if key in self.parents:
                    self._release_children(key)

    def _add(self, number: int, params: dict[str, Any], rounds: list[float], state: str) -> None:
        if not rounds:
            return
        key = params_key(params)
        reference = self.setup is not None and key == params_key(dict(self.setup.default_params))
        entry = self.measured.setdefault(key, Measured(params=dict(params), reference=reference))
        entry.rounds.extend(rounds)
        if state == "COMPLETE":
            entry.complete.append(number)

    def _release_children(self, key: tuple) -> None:
        """Screen the knobs a value switches on: next if that value looks promising (its
        optimistic estimate beats the default), else after every first-level point."""
        children = self.parents.pop(key, [])
        parent = self.measured.get(key)
        if parent is None or not children:
            return
        sd = self.noise_sd() / math.sqrt(parent.n)
        if parent.mean - self.z_continue * sd < 0.0:
            self.queue.extendleft(reversed(children))
        else:
            self.later.extend(children)

    # ------------------------------------------------------------------ confirming

    def confirm_candidates(self, study: optuna.Study, k: int) -> list[FrozenTrial]:
        """The k configurations with the best posterior mean among those measured in full that
        the model sees faster than the default."""
        with self._lock:
            full = [m for m in self.measured.values() if m.complete]
            if not full:
                return []
            fitted = self._fit()
            pool, features = self.pool, self.features
            assert pool is not None and features is not None
            if fitted is None:
                means = np.array([m.mean for m in full])
            else:
                means = fitted.mean(features.matrix(pool.codes([pool.add(m.params) for m in full])))
            default_key = params_key(self.setup.default_params) if self.setup else None
            ranked = sorted((float(v), i) for i, v in enumerate(means))
            numbers = [full[i].complete[-1] for v, i in ranked
                       if v < 0 and params_key(full[i].params) != default_key][:k]
        trials = {t.number: t for t in study.get_trials(deepcopy=False,
                                                        states=(TrialState.COMPLETE,))}
        return [trials[n] for n in numbers if n in trials]

    def describe(self) -> str:
        return ("screen: every knob one at a time from the untuned stack, then a model of main "
                "effects and pairs (Thompson sampling); losing configurations raced out")


class _PyRandom:
    """random.Random's `choice`/`randrange` over a numpy Generator (SearchSpace.sample)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def randrange(self, start: int, stop: int, step: int = 1) -> int:
        return start + step * int(self.rng.integers((stop - start + step - 1) // step))
