"""What the screen strategy knows: every configuration's round scores so far (Measured), the
pooled noise of a round, and the model fitted on them over the pool of configurations the space
allows (the fit and the noise are kept until a round is added)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse, stats

from .. import objective
from ..storage import params_key
from ._surrogate import Features, Fit, Gram, KeptGram, Pool, Surrogate

NOISE_PRIOR_SD = 0.1  # per-round sd of a score before the study has measured its own
NOISE_PRIOR_DF = 4  # how many rounds' worth of evidence that prior counts for
TOP = 10  # configurations whose posterior sd is worked out when looking for the best


@dataclass
class Measured:
    """One configuration's evidence so far: its round scores over all its trials."""

    params: dict[str, Any]
    rounds: list[float] = field(default_factory=list)
    complete: list[int] = field(default_factory=list)  # its trials measured in full
    pruned: list[int] = field(default_factory=list)  # its trials stopped early
    reference: bool = False  # the default: its score is 0 by definition
    row: int | None = None  # its row in the pool, once asked for
    _mean: tuple[int, float] = field(default=(-1, 0.0), repr=False, compare=False)
    _spread: tuple[int, float] = field(default=(-1, 0.0), repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.rounds)

    @property
    def mean(self) -> float:
        """Its typical round score: the trimmed mean (the lowest and the highest round dropped
        from three on, as a trial's score drops them), 0 for the default. A launch can land on
        another latency level than its default's (here 0.18 or 0.55 us at 8 B, for minutes):
        one such round must not make or break a configuration."""
        if self.reference or not self.rounds:
            return 0.0
        if self._mean[0] != self.n:  # kept until a round is added: asked for on every fit
            self._mean = (self.n, objective.trimmed_mean(self.rounds))
        return self._mean[1]

    @property
    def median(self) -> float:
        """The median of its rounds, 0 for the default (or before any round)."""
        if self.reference or not self.rounds:
            return 0.0
        return float(np.median(self.rounds))

    @property
    def spread(self) -> float:
        """A robust sd of its rounds (the median absolute deviation scaled to a normal sd;
        from two rounds, their difference over sqrt 2). Kept until a round is added: the
        pooled noise asks every configuration's after every trial."""
        if self._spread[0] != self.n:
            if self.n == 2:
                value = abs(self.rounds[0] - self.rounds[1]) / math.sqrt(2)
            else:
                value = float(stats.median_abs_deviation(self.rounds, scale="normal"))
            self._spread = (self.n, value)
        return self._spread[1]

    def weight(self, noise_sd: float) -> float:
        """Its rounds' worth when ranking what was measured: their number, less when they
        spread wider than the study's pooled noise (inverse-variance weighting), from three
        rounds on (a spread of fewer says nothing). A configuration whose rounds mix two levels
        (one of its launches in three paired with a disturbed default reads it 2-3x faster)
        then counts for what its rounds agree on. The default counts for its number: its
        score is 0 by definition, whatever its rounds against itself spread."""
        if self.reference or self.n < 3 or self.spread <= noise_sd:
            return float(self.n)
        return self.n * (noise_sd / self.spread) ** 2

    def copy(self) -> Measured:
        """Its own list of rounds, to add to; the kept mean and spread go with it (they are
        worked out again once a round is added)."""
        return Measured(self.params, list(self.rounds), self.complete, self.pruned,
                        self.reference, self.row, self._mean, self._spread)


class Evidence:
    """The measured configurations of one study, and the model over its space's pool."""

    def __init__(self, pool: Pool, default_params: Mapping[str, Any], *,
                 pair_scale: float | None = None, noise_prior: float = NOISE_PRIOR_SD) -> None:
        self.pool = pool
        kwargs = {} if pair_scale is None else {"pair_scale": pair_scale}
        self.features = Features(pool.knobs, pool.codes(), **kwargs)
        self.default_key = params_key(dict(default_params))
        self.noise_prior = noise_prior
        self.surrogate = Surrogate()
        self.measured: dict[tuple, Measured] = {}
        self._x: sparse.csr_matrix | None = None  # features of the pool's configurations
        self._version = 0  # bumped whenever `measured` changes
        self._fitted: tuple[tuple, Fit | None] = ((), None)  # at (version, prior precision)
        self._steady: tuple[tuple, Fit | None] = ((), None)  # fit_by_spread(), the same way
        self._noise: tuple[int, float] = (-1, 0.0)  # noise_sd() at a version of `measured`
        self._gram = KeptGram()  # the study fit's X'WX, rounds as weights

    def add(self, number: int, params: dict[str, Any], rounds: list[float], state: str) -> None:
        """A trial's rounds to its configuration's, and its number by how it ended."""
        if not rounds:
            return
        key = params_key(params)
        entry = self.measured.setdefault(key, Measured(params=dict(params),
                                                       reference=key == self.default_key))
        entry.rounds.extend(rounds)
        self._version += 1
        if state == "COMPLETE":
            entry.complete.append(number)
        elif state == "PRUNED":
            entry.pruned.append(number)

    def noise_sd(self) -> float:
        """Per-round sd of a score, pooled over configurations measured more than once (each
        one's robust spread), with a prior worth NOISE_PRIOR_DF rounds. (Not the default's
        rounds: default against default, their spread is not a candidate's.)"""
        if self._noise[0] == self._version:
            return self._noise[1]
        ss = NOISE_PRIOR_DF * self.noise_prior ** 2
        df = NOISE_PRIOR_DF
        for m in self.measured.values():
            if m.n >= 2 and not m.reference:
                ss += m.spread ** 2 * (m.n - 1)
                df += m.n - 1
        self._noise = (self._version, math.sqrt(ss / df))
        return self._noise[1]

    def matrix(self) -> sparse.csr_matrix:
        """The features of every configuration of the pool (kept; rows added as it grows)."""
        pool = self.pool
        done = 0 if self._x is None else self._x.shape[0]
        if done < len(pool.configs):
            new = self.features.matrix(pool.codes(list(range(done, len(pool.configs)))))
            self._x = new if self._x is None else sparse.vstack([self._x, new]).tocsr()
        assert self._x is not None
        return self._x

    def rows(self, measured: list[Measured]) -> sparse.csr_matrix:
        """The feature rows of measured configurations (added to the pool if not in it)."""
        for m in measured:
            if m.row is None:
                m.row = self.pool.add(m.params)
        return self.matrix()[[m.row for m in measured]]

    def fit(self, measured: Mapping[tuple, Measured] | None = None) -> Fit | None:
        """The model on every configuration measured so far (the default at 0; or on
        `measured`), or None before there are two. The fit on what was measured is kept until
        a trial adds to it or the prior precision is chosen again."""
        if measured is None:
            # kept until a trial adds to it, or a fit (the race's) chose the precision again;
            # keyed by the precision it was made at (this fit may choose it too)
            if self._fitted[0] != (self._version, self.surrogate.lambda_):
                fitted = self._fit_counted(self.measured, kept=True)
                self._fitted = ((self._version, self.surrogate.lambda_), fitted)
            return self._fitted[1]
        return self._fit_counted(measured, kept=False)

    def _fit_counted(self, measured: Mapping[tuple, Measured], kept: bool) -> Fit | None:
        """The fit counting rounds by their number; `kept`: `measured` is the study's own, whose
        Gram is kept between fits (a race's what-if set is multiplied afresh)."""
        chosen = [m for m in measured.values() if m.n]
        if len(chosen) < 2:
            return None
        if kept:
            x, counts, gram = self._counted(chosen)
        else:
            x, gram = self.rows(chosen), None
            counts = np.array([m.n for m in chosen], dtype=float)
        return self.surrogate.fit(x, np.array([m.mean for m in chosen]), counts,
                                  self.noise_sd(), gram=gram)

    def fit_by_spread(self) -> Fit | None:
        """The model at the study fit's precisions, each configuration's rounds counted by
        their spread (`Measured.weight`) rather than their number: what the search proposes
        (the Thompson draw), leads from (the incumbent) and confirms is chosen on it, so a
        family of configurations sharing one wild pass does not lead the search. Not for the
        race: a trial's fresh rounds have no spread yet, and pruning on what `fit` says keeps
        a configuration whose rounds disagree measured rather than dropped. Kept until a
        trial adds to it or the prior precision is chosen again, as `fit` is."""
        fitted = self.fit()
        if fitted is None:
            return None
        at = (self._version, self.surrogate.lambda_)
        if self._steady[0] != at:
            chosen = [m for m in self.measured.values() if m.n]
            noise = self.noise_sd()
            x, counts, gram = self._counted(chosen)
            weight = np.array([m.weight(noise) for m in chosen])
            less = np.flatnonzero(weight != counts)  # rounds spread wide: they count for less
            if len(less):
                gram = gram.plus(Gram.of(x[less], weight[less] - counts[less]))
            self._steady = (at, self.surrogate.fit(
                x, np.array([m.mean for m in chosen]), weight, noise, choose=False, gram=gram))
        return self._steady[1]

    def _counted(self, chosen: list[Measured]) -> tuple[sparse.csr_matrix, np.ndarray, Gram]:
        """The rows of every measured configuration, their numbers of rounds, and the Gram of
        those rows at those weights (kept between fits: a trial changes one or two rows)."""
        x = self.rows(chosen)
        counts = np.array([m.n for m in chosen], dtype=float)
        return x, counts, self._gram.update(self.matrix(), [m.row for m in chosen], counts)

    def default_estimate(self, fitted: Fit) -> float:
        """The default's score as `fitted` reads it (its rows are held at 0, but a fit shrinks
        them towards the rest: the fit counting rounds by their number can read it at +0.12,
        and one counting them by their spread moves it further when its steadiest rows sit
        above 0); 0 while the default has no round."""
        refs = [m for m in self.measured.values() if m.n and m.reference]
        return float(np.min(fitted.mean(self.rows(refs)))) if refs else 0.0

    def ranked(self, keep: Callable[[Measured], bool], only_faster: bool = True) -> list[Measured]:
        """Measured configurations passing `keep`, best first by posterior mean plus half a
        posterior sd in the fit counting rounds by their spread (their own mean plus half a
        standard error before the model can fit); only those better than the default (as the
        same fit reads it) unless not `only_faster`."""
        chosen = [m for m in self.measured.values() if m.n and keep(m)]
        if not chosen:
            return []
        fitted = self.fit_by_spread()
        reference = 0.0
        if fitted is None:
            sd = self.noise_sd()
            values = np.array([m.mean + 0.5 * sd / math.sqrt(m.n) for m in chosen])
        else:
            reference = self.default_estimate(fitted)
            x = self.rows(chosen)
            means = fitted.mean(x)
            top = np.argsort(means)[:TOP]  # the sd of the best few only: it costs
            chosen = [chosen[i] for i in top]
            values = means[top] + 0.5 * fitted.sd(x[top])
        order = np.argsort(values)
        return [chosen[i] for i in order if values[i] < reference or not only_faster]
