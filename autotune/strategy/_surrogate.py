"""A model of a configuration's score over the finite space: main effects of every knob's values
plus pairwise interactions, fitted by Bayesian linear regression (scikit-learn's BayesianRidge,
its prior and noise precisions chosen by the evidence), with Thompson sampling over every
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
from scipy import sparse
from sklearn.linear_model import BayesianRidge

from ..space import Parameter, SearchSpace, TrialContext, assignments
from ..storage import params_key

INACTIVE = "<inactive>"  # the level of a knob that a configuration does not ask for
POOL_LIMIT = 20_000  # configurations enumerated at most; beyond, a sample of the space
PAIR_SCALE = 0.5  # prior sd of a pair term relative to a main effect's
SCORE_CAP = 0.4  # scores above this (1.5x slower than the default) count as this: "bad"


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


@dataclass(frozen=True)
class Fit:
    """A fitted model: posterior mean and covariance of the weights."""

    intercept: float
    coef: np.ndarray
    cov: np.ndarray
    noise_sd: float

    def mean(self, x: sparse.csr_matrix) -> np.ndarray:
        return self.intercept + x @ self.coef

    def sd(self, x: sparse.csr_matrix) -> np.ndarray:
        xd = x.toarray()
        return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", xd, self.cov, xd), 0.0))

    def draw(self, x: sparse.csr_matrix, rng: np.random.Generator) -> np.ndarray:
        """One Thompson sample of every row's score."""
        try:
            chol = np.linalg.cholesky(self.cov + 1e-12 * np.eye(len(self.coef)))
        except np.linalg.LinAlgError:
            values, vectors = np.linalg.eigh(self.cov)
            chol = vectors * np.sqrt(np.maximum(values, 0.0))
        weights = self.coef + chol @ rng.standard_normal(len(self.coef))
        return self.intercept + x @ weights


def fit(x: sparse.csr_matrix, y: np.ndarray, weight: np.ndarray) -> Fit:
    """Bayesian ridge over the observed configurations; `weight` is each one's number of rounds
    (its mean's precision relative to one round). Scores are capped at SCORE_CAP: how much worse
    a losing configuration is does not matter, and a 10x loser would bend the linear model."""
    y = np.minimum(np.asarray(y, dtype=float), SCORE_CAP)
    model = BayesianRidge(fit_intercept=True, compute_score=False, max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x.toarray(), y, sample_weight=np.asarray(weight, dtype=float))
    return Fit(intercept=float(model.intercept_), coef=np.asarray(model.coef_, dtype=float),
               cov=np.asarray(model.sigma_, dtype=float),
               noise_sd=float(1.0 / np.sqrt(max(model.alpha_, 1e-12))))
