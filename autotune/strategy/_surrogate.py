"""A model of a configuration's score over the finite space: main effects of every knob's values
plus pairwise interactions, fitted by Bayesian linear regression (scikit-learn's BayesianRidge
chooses its prior and noise precisions by the evidence), with Thompson sampling over every
configuration the space allows.

Why this model: most knobs of an MPI stack act on their own (a transport, a threshold, an
algorithm) and a few in pairs (a transport that suits one algorithm and not another); an additive
model estimates every main effect from a handful of one-knob changes and predicts combinations
never measured, while the pair terms, shrunk harder than the main effects, learn an interaction
once the data shows one. Enumerating the space (the conditional walk a sampler follows) means an
infeasible combination is never proposed. A space too large to enumerate is represented by a
random sample of it plus the neighbours of what was measured.
"""

from __future__ import annotations

import itertools
import random
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg, sparse
from sklearn.linear_model import BayesianRidge

from ..space import Parameter, SearchSpace, TrialContext, assignments
from ..storage import params_key

INACTIVE = "<inactive>"  # the level of a knob that a configuration does not ask for
POOL_LIMIT = 20_000  # configurations enumerated at most; beyond, a sample of the space
PAIR_SCALE = 0.5  # prior sd of a pair term relative to a main effect's
SCORE_CAP = 0.4  # scores above this (1.5x slower than the default) count as this: "bad"
REFIT_GROWTH = 1.2  # choose the prior precision again once the observations grew by a fifth
NOISE_PRIOR_SHAPE = 1e6  # gamma prior on the noise precision: as good as fixed at 1/noise_sd^2


@dataclass(frozen=True)
class Knob:
    """One non-context parameter and its levels (the inactive level first)."""

    name: str
    levels: tuple[str, ...]

    def code(self, params: Mapping[str, Any]) -> int:
        if self.name not in params:
            return 0
        try:
            return self.levels.index(str(params[self.name]))
        except ValueError:  # a value the space no longer offers (a resumed study): unseen
            return 0


def knobs_of(params: Sequence[Parameter]) -> tuple[Knob, ...]:
    """The knobs the model sees: every non-context parameter, its choices as text."""
    out = []
    for p in params:
        if p.apply == "context":
            continue
        if p.type == "int" and p.low is not None and p.high is not None:
            values: Iterable[Any] = range(p.low, p.high + 1, p.step)
        else:
            values = p.choices
        out.append(Knob(p.name, (INACTIVE, *dict.fromkeys(str(v) for v in values))))
    return tuple(out)


class Pool:
    """The configurations the model ranks: the whole space when it is small enough, else a
    seeded sample of it; configurations are added as they are measured (`add`)."""

    def __init__(self, space: SearchSpace, ctx: TrialContext, context_values: Mapping[str, Any],
                 seed: int | None, limit: int = POOL_LIMIT) -> None:
        self.space, self.ctx = space, ctx
        self.context_values = dict(context_values)
        self.params_here = space.for_context(ctx)
        self.knobs = knobs_of(self.params_here)
        self.configs: list[dict[str, Any]] = []
        self.index: dict[tuple, int] = {}
        walk = assignments(self.params_here, self.context_values)
        first = list(itertools.islice(walk, limit + 1))
        self.complete = len(first) <= limit
        if self.complete:
            for params in first:
                self.add(params)
        else:
            rng = random.Random(seed)
            for _ in range(limit * 3):
                self.add(self.sample(rng))
                if len(self.configs) >= limit:
                    break

    def sample(self, rng: random.Random) -> dict[str, Any]:
        params = self.space.sample(rng, self.ctx)
        params.update({k: v for k, v in self.context_values.items() if k in params})
        return params

    def add(self, params: Mapping[str, Any]) -> int:
        key = params_key(dict(params))
        if key not in self.index:
            self.index[key] = len(self.configs)
            self.configs.append(dict(params))
        return self.index[key]

    def codes(self, rows: Sequence[int] | None = None) -> np.ndarray:
        chosen = self.configs if rows is None else [self.configs[i] for i in rows]
        return np.array([[k.code(c) for k in self.knobs] for c in chosen], dtype=np.int32
                        ).reshape(len(chosen), len(self.knobs))


class Features:
    """One-hot columns of main effects and of pairs of knobs' levels, kept only where some
    configuration of the pool has them (the rest could never be learnt or used)."""

    def __init__(self, knobs: Sequence[Knob], codes: np.ndarray,
                 pair_scale: float = PAIR_SCALE) -> None:
        self.knobs = tuple(knobs)
        self.pair_scale = pair_scale
        self.main_offsets = np.cumsum([0] + [len(k.levels) for k in knobs[:-1]]).astype(np.int64)
        self.pairs = [(i, j) for i in range(len(knobs)) for j in range(i + 1, len(knobs))]
        self.columns: dict[tuple[int, ...], int] = {}
        raw = self._raw_keys(codes)
        for key in np.unique(raw, axis=0) if raw.size else ():
            for part in key:
                if part >= 0:
                    self.columns.setdefault(int(part), len(self.columns))
        self._seen = set(self.columns)

    def _raw_keys(self, codes: np.ndarray) -> np.ndarray:
        """Per configuration, the global ids of its main and pair columns (-1: unused)."""
        n_main = int(sum(len(k.levels) for k in self.knobs))
        mains = codes + self.main_offsets[None, :]
        parts = [mains]
        base = n_main
        for i, j in self.pairs:
            li, lj = len(self.knobs[i].levels), len(self.knobs[j].levels)
            parts.append((base + codes[:, i] * lj + codes[:, j])[:, None])
            base += li * lj
        self.n_main = n_main
        return np.hstack(parts) if parts else np.zeros((len(codes), 0), dtype=np.int64)

    def matrix(self, codes: np.ndarray) -> sparse.csr_matrix:
        raw = self._raw_keys(codes)
        rows, cols, vals = [], [], []
        for r, key in enumerate(raw):
            for part in key:
                column = self.columns.get(int(part))
                if column is None:
                    continue
                rows.append(r)
                cols.append(column)
                vals.append(1.0 if part < self.n_main else self.pair_scale)
        return sparse.csr_matrix((vals, (rows, cols)), shape=(len(raw), len(self.columns)))


def _score(x: sparse.csr_matrix, y_mean: float, x_mean: np.ndarray, weights: np.ndarray
           ) -> np.ndarray:
    """Rows' scores under centred weights: y_mean + (x - x_mean) @ weights."""
    return y_mean + x @ weights - float(x_mean @ weights)


def _spread(chol: np.ndarray, centred: np.ndarray) -> np.ndarray:
    """Each centred row's c' A^-1 c, A = chol @ chol.T."""
    solved = linalg.solve_triangular(chol, centred.T, lower=True)
    return np.sum(solved ** 2, axis=0)


@dataclass(frozen=True)
class Fit:
    """The posterior of the weights of features centred on `x_mean`: N(coef, A^-1), with
    A = chol @ chol.T (lower Cholesky factor); a row's score is y_mean + (x - x_mean) @ w.
    `total`, `xy`, `alpha` and `lambda_` (the rows' total weight, X'W(y - y_mean), the noise
    and prior precisions) let `changed` work out the posterior with one row's evidence changed."""

    y_mean: float
    x_mean: np.ndarray
    coef: np.ndarray
    chol: np.ndarray
    noise_sd: float
    total: float = 0.0
    xy: np.ndarray | None = None
    alpha: float = 0.0
    lambda_: float = 0.0

    def mean(self, x: sparse.csr_matrix) -> np.ndarray:
        return _score(x, self.y_mean, self.x_mean, self.coef)

    def sd(self, x: sparse.csr_matrix) -> np.ndarray:
        """Posterior sd of each row's mean score (the weights' part, as BayesianRidge's)."""
        return np.sqrt(_spread(self.chol, x.toarray() - self.x_mean))

    def draw(self, x: sparse.csr_matrix, rng: np.random.Generator) -> np.ndarray:
        """One Thompson sample of every row's score."""
        z = rng.standard_normal(len(self.coef))
        weights = self.coef + linalg.solve_triangular(self.chol.T, z, lower=False)
        return _score(x, self.y_mean, self.x_mean, weights)

    def changed(self, row: sparse.csr_matrix, was: tuple[float, float],
                now: tuple[float, float]) -> Changed:
        """This posterior (same precisions) with one configuration's (weight, score) changed
        from `was` to `now` ((0, 0) for one not measured before): what a race asks after every
        launch ("may this one still win with these rounds?"). Changing one row's weight by dw
        moves the centred Gram matrix by total * dw / total' * d d' (d: the row less the old
        centre), so A' = A + gamma d d' and Sherman-Morrison gives A'^-1 from this factor: a
        few triangular solves instead of building and factorizing A' (4 ms at 1,000 configurations).
        """
        assert self.xy is not None, "a Fit made by posterior() carries its xy"
        (w0, y0), (w1, y1) = was, now
        dw = w1 - w0
        xj = np.asarray(row.toarray()).ravel()
        total = self.total + dw
        d = xj - self.x_mean
        gamma = self.alpha * self.total * dw / total
        x_mean = (self.total * self.x_mean + dw * xj) / total
        y_mean = (self.total * self.y_mean + w1 * y1 - w0 * y0) / total
        xy = (self.xy + self.total * self.y_mean * self.x_mean + (w1 * y1 - w0 * y0) * xj
              - total * y_mean * x_mean)
        e = linalg.cho_solve((self.chol, True), d)
        denom = 1.0 + gamma * float(d @ e)
        solved = linalg.cho_solve((self.chol, True), xy)
        coef = self.alpha * (solved - gamma * e * float(d @ solved) / denom)
        return Changed(self.chol, y_mean, x_mean, coef, e, gamma / denom)


@dataclass(frozen=True)
class Changed:
    """A Fit's posterior after one row's change (Fit.changed): means and sds, not draws. The
    precision is A + gamma d d'; with e = A^-1 d, its inverse is A^-1 - shrink e e'."""

    chol: np.ndarray
    y_mean: float
    x_mean: np.ndarray
    coef: np.ndarray
    e: np.ndarray
    shrink: float

    def mean(self, x: sparse.csr_matrix) -> np.ndarray:
        return _score(x, self.y_mean, self.x_mean, self.coef)

    def sd(self, x: sparse.csr_matrix) -> np.ndarray:
        centred = x.toarray() - self.x_mean
        variance = _spread(self.chol, centred) - self.shrink * (centred @ self.e) ** 2
        return np.sqrt(np.maximum(variance, 0.0))


class Surrogate:
    """Bayesian ridge regression over the observed configurations, as scikit-learn's
    BayesianRidge fits it (intercept, weighted rows). The noise is known: `noise_sd`, the spread
    of one round measured from repeated rounds, held by a strong gamma prior on BayesianRidge's
    noise precision (left free, with far more features than configurations measured, the
    evidence explains every observation exactly and the model claims a certainty it does not
    have). The prior precision of the weights is chosen by BayesianRidge's evidence maximization
    whenever the data has grown by REFIT_GROWTH since the last choice; in between, the exact
    posterior at those precisions costs one Cholesky factorization (BayesianRidge's own fit costs
    an SVD of the data, about a second at 1,000 configurations: too much for every trial).

    `weight` is each configuration's number of rounds (its mean's precision relative to one
    round's), or fewer when they spread wider than the study's noise (`Measured.weight`).
    Scores are capped at SCORE_CAP: how much worse a losing configuration is does not matter,
    and a 10x loser would bend the linear model."""

    def __init__(self) -> None:
        self.lambda_: float | None = None  # prior precision of the weights
        self.chosen_at = 0  # rows when it was last chosen

    def fit(self, x: sparse.csr_matrix, y: np.ndarray, weight: np.ndarray,
            noise_sd: float, *, choose: bool = True, gram: Gram | None = None) -> Fit:
        """The posterior; `choose=False` keeps the prior precision chosen before (another
        weighting of the same rows must not move the study's own choice; it still chooses
        one when none was chosen yet, which `Evidence.fit_by_spread` never asks for). `gram`:
        these rows' X'WX and X'w, when the caller kept them (else worked out here)."""
        y = np.minimum(np.asarray(y, dtype=float), SCORE_CAP)
        weight = np.asarray(weight, dtype=float)
        alpha = 1.0 / max(noise_sd, 1e-6) ** 2
        if self.lambda_ is None or (choose and self.chooses_at(len(y))):
            model = BayesianRidge(fit_intercept=True, compute_score=False, max_iter=300,
                                  alpha_init=alpha, alpha_1=NOISE_PRIOR_SHAPE,
                                  alpha_2=NOISE_PRIOR_SHAPE / alpha)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(x.toarray(), y, sample_weight=weight)
            self.lambda_ = float(model.lambda_)
            self.chosen_at = len(y)
        return posterior(x, y, weight, alpha, self.lambda_, gram)


    def chooses_at(self, rows: int) -> bool:
        """Whether a fit on `rows` observations chooses the prior precision again."""
        return self.lambda_ is None or rows >= self.chosen_at * REFIT_GROWTH


@dataclass(frozen=True)
class Gram:
    """X'WX (uncentred, dense) and X'w of weighted rows: what a fit needs of its features,
    which a study keeps and updates by the few rows whose weight changed since its last fit
    instead of multiplying every row again (the product was half of a fit's cost)."""

    xtx: np.ndarray
    xw: np.ndarray

    @classmethod
    def of(cls, x: sparse.csr_matrix, weight: np.ndarray) -> Gram:
        """Rows' products, worked out over the columns they use (a few rows touch few)."""
        width = x.shape[1]
        cols = np.unique(x.indices)
        sub = x[:, cols].toarray()
        xtx = np.zeros((width, width))
        xtx[np.ix_(cols, cols)] = (sub.T * weight) @ sub
        xw = np.zeros(width)
        xw[cols] = weight @ sub
        return cls(xtx, xw)

    def plus(self, other: Gram) -> Gram:
        return Gram(self.xtx + other.xtx, self.xw + other.xw)


class KeptGram:
    """The Gram of a growing set of rows whose weights change: each update adds the changed
    rows' differences only, so the kept products equal a fresh product's up to rounding (none
    at all while the weights are whole numbers of rounds and the features 1 or PAIR_SCALE 0.5:
    every term is then exact)."""

    def __init__(self) -> None:
        self.gram: Gram | None = None
        self.weights: dict[int, float] = {}  # row of the matrix -> its weight in `gram`

    def update(self, matrix: sparse.csr_matrix, rows: Sequence[int], weight: np.ndarray) -> Gram:
        """The Gram of `rows` of `matrix` at `weight` (rows absent here count as weight 0;
        a row named twice would be counted twice by a fresh product but once here)."""
        if len(set(rows)) != len(rows):
            raise ValueError("KeptGram.update: a row is named twice")
        changed = [(r, w - self.weights.get(r, 0.0)) for r, w in zip(rows, weight)
                   if w != self.weights.get(r, 0.0)]
        gone = set(self.weights) - set(rows)
        changed += [(r, -self.weights[r]) for r in gone]
        if self.gram is None:
            self.gram = Gram(np.zeros((matrix.shape[1], matrix.shape[1])),
                             np.zeros(matrix.shape[1]))
        if changed:
            delta = Gram.of(matrix[[r for r, _ in changed]], np.array([d for _, d in changed]))
            self.gram = self.gram.plus(delta)
            self.weights = {r: float(w) for r, w in zip(rows, weight)}
        return self.gram


def posterior(x: sparse.csr_matrix, y: np.ndarray, weight: np.ndarray, alpha: float,
              lambda_: float, gram: Gram | None = None) -> Fit:
    """The posterior of BayesianRidge(fit_intercept=True) at fixed precisions: rows centred on
    their weighted means, scaled by sqrt(weight); A = lambda I + alpha X'X, coef = alpha A^-1 X'y.
    `gram`: the rows' X'WX and X'w, when kept by the caller."""
    total = weight.sum()
    if gram is None:
        gram = Gram((x.T @ x.multiply(weight[:, None]).tocsr()).toarray(),
                    np.asarray(x.T @ weight).ravel())
    x_mean = gram.xw / total
    y_mean = float(weight @ y) / total
    a = alpha * (gram.xtx - total * np.outer(x_mean, x_mean))
    a[np.diag_indices_from(a)] += lambda_
    chol = linalg.cholesky(a, lower=True)
    xy = np.asarray(x.T @ (weight * (y - y_mean))).ravel()
    coef = alpha * linalg.cho_solve((chol, True), xy)
    return Fit(y_mean=y_mean, x_mean=x_mean, coef=coef, chol=chol,
               noise_sd=float(1.0 / np.sqrt(max(alpha, 1e-12))), total=float(total), xy=xy,
               alpha=alpha, lambda_=lambda_)
