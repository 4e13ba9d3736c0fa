"""The calibration model of fair prices, for rosters fought one unit a side.

Bradley-Terry strengths ``s`` of the roster (twins pooled) are regressed on
log(points) with one Theil-Sen line ``s = alpha + beta log p`` over the whole
roster; a unit's *value* is its distance from the line, ``u = s - alpha - beta
log p``. The *par* value is the one that scores 50% against the roster (every
unit at its own value): ``mean_j logistic(par - u_j) = 1/2``. A unit is fairly
priced at the ``p`` where its value would be par: ``p* = exp((s - alpha - par) /
beta)``. Every unit is measured against the same par, so equal strengths get
equal prices.

The bootstrap redraws the strengths within their Monte Carlo covariance (and
refits the line on them) and resamples the roster's units that the price must
score 50% against (the par), and keeps
each replicate's ``(strengths, alpha, beta, par)`` so that a new profile (a
sweep's variant) is priced against the same replicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special

__all__ = ["Calibration", "calibrate", "theil_sen", "strength_from_scores"]


def theil_sen(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    """Theil-Sen slope and intercept; ``w`` repeats points (bootstrap counts). NaN without spread in x."""
    if w is not None:
        x, y = np.repeat(x, w), np.repeat(y, w)
    i, j = np.triu_indices(len(x), 1)
    dx = x[j] - x[i]
    ok = dx != 0
    if not ok.any():
        return math.nan, math.nan
    slope = float(np.median((y[j] - y[i])[ok] / dx[ok]))
    return slope, float(np.median(y - slope * x))


def _par_value(values: np.ndarray, weights: np.ndarray) -> float:
    """The value whose mean win probability against units of ``values`` (weighted) is 50%."""
    if len(values) == 0 or weights.sum() <= 0:
        return math.nan

    def f(v: float) -> float:
        return float(np.average(special.expit(v - values), weights=weights)) - 0.5

    return float(optimize.brentq(f, float(values.min()) - 60.0, float(values.max()) + 60.0, xtol=1e-12))


def _sqrt_cov(cov: np.ndarray) -> np.ndarray:
    cov = np.asarray(cov, float)
    if cov.size == 0:
        return cov
    vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
    return vecs * np.sqrt(np.clip(vals, 0, None))


def strength_from_scores(scores: np.ndarray, weights: np.ndarray, opponents: np.ndarray,
                         advantage: float) -> float:
    """The strength whose side-averaged scores against ``opponents`` (strengths) match ``scores`` on average.

    Solves ``sum_j w_j [score_j - (logistic(s - s_j + h) + logistic(s - s_j - h)) / 2] = 0``.
    """
    scores = np.clip(np.asarray(scores, float), 1e-6, 1 - 1e-6)

    def f(s: float) -> float:
        model = (special.expit(s - opponents + advantage) + special.expit(s - opponents - advantage)) / 2
        return float(np.sum(weights * (scores - model)))

    lo, hi = float(opponents.min()) - 40.0, float(opponents.max()) + 40.0
    if f(lo) <= 0:
        return lo
    if f(hi) >= 0:
        return hi
    return float(optimize.brentq(f, lo, hi, xtol=1e-12))


@dataclass(frozen=True)
class Calibration:
    """A fitted calibration and its bootstrap replicates (see the module docstring).

    Attributes
    ----------
    strengths, points, multiplicity : arrays over the roster's twin classes
    advantage : float
        Bradley-Terry attacker advantage (logit).
    alpha, beta, par : float
    boot_strengths : (R, K) array; boot_alpha, boot_beta, boot_par, boot_weights (R, K)
    note : str
    """

    strengths: np.ndarray
    points: np.ndarray
    multiplicity: np.ndarray
    advantage: float
    alpha: float
    beta: float
    par: float
    boot_strengths: np.ndarray
    boot_alpha: np.ndarray
    boot_beta: np.ndarray
    boot_par: np.ndarray
    boot_weights: np.ndarray
    note: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.beta > 0 and math.isfinite(self.par))

    def _price(self, s: np.ndarray | float, alpha: Any, beta: Any, par: Any) -> Any:
        with np.errstate(all="ignore"):
            return np.where(np.asarray(beta) > 0, np.exp(np.minimum((np.asarray(s) - alpha - par) / beta, 700.0)),
                            np.nan)

    def prices(self) -> tuple[np.ndarray, np.ndarray]:
        """(fair price per class, bootstrap replicate prices (R, K))."""
        fair = self._price(self.strengths, self.alpha, self.beta, self.par) if self.ok else \
            np.full(len(self.strengths), np.nan)
        boot = self._price(self.boot_strengths, self.boot_alpha[:, None], self.boot_beta[:, None],
                           self.boot_par[:, None])
        return fair, boot

    def _value_of(self, cls: int, s: np.ndarray, alpha: float, beta: float) -> float:
        return float(s[cls] - alpha - beta * math.log(self.points[cls]))

    def price_of(self, scores: np.ndarray, variances: np.ndarray, rng: np.random.Generator,
                 against: int | None = None) -> tuple[float, np.ndarray]:
        """Fair price of a profile from its side-averaged scores against each class (and replicates).

        ``against``: price it to score 50% against that class alone (its value is the par) instead
        of against the whole roster.
        """
        w = self.multiplicity.astype(float)
        s = strength_from_scores(scores, w, self.strengths, self.advantage)
        par = self.par if against is None else self._value_of(against, self.strengths, self.alpha, self.beta)
        fair = float(self._price(s, self.alpha, self.beta, par)) if self.ok else math.nan
        sd = np.sqrt(np.clip(variances, 0, None))
        boot = np.empty(len(self.boot_alpha))
        for r in range(len(boot)):
            noisy = scores + rng.standard_normal(len(scores)) * sd
            wr = self.boot_weights[r]
            s_r = strength_from_scores(noisy, np.where(wr > 0, wr, 0.0) + 1e-12, self.boot_strengths[r],
                                       self.advantage)
            par_r = self.boot_par[r] if against is None else self._value_of(
                against, self.boot_strengths[r], self.boot_alpha[r], self.boot_beta[r])
            boot[r] = float(self._price(s_r, self.boot_alpha[r], self.boot_beta[r], par_r))
        return fair, boot


def calibrate(strengths: np.ndarray, cov: np.ndarray, points: np.ndarray, multiplicity: np.ndarray,
              advantage: float = 0.0, *, replicates: int = 400, seed: int = 0) -> Calibration:
    """Fit the calibration line and par value on twin classes, with bootstrap replicates."""
    s0 = np.asarray(strengths, float)
    k = len(s0)
    points = np.asarray(points, float)
    mult = np.asarray(multiplicity, int)
    priced = np.isfinite(points) & (points > 0)
    logp = np.log(np.where(priced, points, 1.0))

    def fit(s: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
        use = priced & (w > 0)
        if use.sum() < 2:
            return math.nan, math.nan, math.nan
        beta, alpha = theil_sen(logp[use], s[use], w[use].astype(int))
        if not beta > 0:
            return alpha, beta, math.nan
        u = s - alpha - beta * logp
        return alpha, beta, _par_value(u[use], w[use].astype(float))

    empty = np.zeros((0, k))
    if priced.sum() < 3 or np.ptp(logp[priced]) == 0:
        nan = np.full(0, np.nan)
        return Calibration(s0, points, mult, advantage, math.nan, math.nan, math.nan, empty, nan, nan, nan, empty,
                           "the calibration needs at least three units with points, and different points")
    alpha, beta, par = fit(s0, mult.astype(float))
    rng = np.random.default_rng([int(seed), 2026])
    units = np.repeat(np.arange(k), mult)
    root = _sqrt_cov(cov) if np.size(cov) else np.zeros((k, k))
    boot_s = np.empty((replicates, k))
    boot_w = np.empty((replicates, k))
    ab = np.empty((replicates, 3))
    for r in range(replicates):
        boot_s[r] = s0 + root @ rng.standard_normal(k)
        boot_w[r] = np.bincount(rng.choice(units, size=len(units)), minlength=k)
        # the line is refitted on the whole roster (Monte Carlo noise only): refitting a robust line on
        # a resample of a handful of units breaks it whenever the resample repeats an outlier; the
        # resampled units are the roster the price must score 50% against (the par)
        alpha_r, beta_r, _ = fit(boot_s[r], mult.astype(float))
        par_r = (_par_value((boot_s[r] - alpha_r - beta_r * logp)[priced & (boot_w[r] > 0)],
                            boot_w[r][priced & (boot_w[r] > 0)]) if beta_r > 0 else math.nan)
        ab[r] = (alpha_r, beta_r, par_r)
    note = (f"calibration line: strength = {alpha:.3f} + {beta:.3f} log(points); par value {par:+.3f}"
            if beta > 0 else "strength does not rise with points in this roster (calibration slope <= 0): "
            "no fair prices")
    return Calibration(s0, points, mult, advantage, alpha, beta, par, boot_s, ab[:, 0], ab[:, 1], ab[:, 2], boot_w,
                       note)
