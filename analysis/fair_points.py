"""Fair points: the cost at which each unit would score 50% against the roster at equal points."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .strength import _points, bradley_terry, mean_win_rate

__all__ = ["FAIR_POINTS_MODEL", "fair_points", "points_efficiency"]

FAIR_POINTS_MODEL = (
    "Fair points model: a fight's score (win 1, draw 1/2, loss 0) follows a Bradley-Terry "
    "logistic model, logit P(A beats D) = s_A - s_D + h (h: attacker advantage), fitted by maximum "
    "likelihood on the matrix counts with half a win added to each side of each cell (keeps strengths "
    "finite when a unit wins every fight). Strength is then split into points and value: "
    "s_i = alpha + beta * log(points_i) + u_i, i.e. logit P = beta * log(points ratio) + (u_A - u_D) + h, "
    "with alpha, beta fitted robustly (Theil-Sen median slopes) over the OTHER units with points "
    "(leave-one-out, so a unit's own price never pulls its suggestion; one mispriced unit does not bend the line). beta > 0 makes the win probability monotone in the points "
    "ratio. At equal points a unit's average logit against the roster is u_i; it would score 50% at the "
    "cost where u_i = 0: fair_i = exp((s_i - alpha) / beta) = points_i * exp(u_i / beta). 95% intervals "
    "come from a seeded bootstrap (the other units resampled for the line, strengths redrawn from their "
    "Bradley-Terry sampling distribution); a unit is flagged when its points lie outside its interval."
)


def _lines(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Theil-Sen lines of each row of ``x``, ``y``: (slopes, intercepts); NaN without spread in x.

    The slope is the median of the pairwise slopes (pairs with equal x left out),
    the intercept the median of ``y - slope * x``: the estimator of
    ``scipy.stats.theilslopes``, vectorised over rows for the bootstrap.
    """
    x = np.atleast_2d(x)
    y = np.atleast_2d(y)
    i, j = np.triu_indices(x.shape[1], 1)
    dx = x[:, j] - x[:, i]
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # rows without spread: NaN line
        slopes = np.where(dx != 0, (y[:, j] - y[:, i]) / np.where(dx != 0, dx, 1.0), np.nan)
        slope = np.nanmedian(slopes, axis=1) if slopes.shape[1] else np.full(len(x), np.nan)
        intercept = np.nanmedian(y - slope[:, None] * x, axis=1)
    return slope, intercept


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """One Theil-Sen line (slope, intercept)."""
    b, a = _lines(x, y)
    return float(b[0]), float(a[0])


def fair_points(matrix: Any, *, replicates: int = 500, seed: int = 0,
                bt: tuple[pd.DataFrame, dict[str, Any]] | None = None) -> pd.DataFrame:
    """Suggested cost per unit: the points at which it would score 50% against the roster at equal points.

    See :data:`FAIR_POINTS_MODEL` for the model. Each unit's line is fitted on the
    *other* units with points, so its own price never pulls its suggestion. Units
    without points get a suggestion too but no flag.

    Returns
    -------
    DataFrame
        ``unit, points, strength, value, fair_points, fair_lo, fair_hi, ratio, flagged``
        (``value``: the unit's strength above the roster line at its own points);
        ``.attrs["beta"]``, ``.attrs["alpha"]`` (the line over all units with points),
        ``.attrs["note"]``. Empty when fewer than three units have points with some spread.
    """
    pts = _points(matrix)
    bt_frame, info = bt if bt is not None else bradley_terry(matrix, full=True)
    s = bt_frame["strength"].to_numpy(float)
    units = list(bt_frame["unit"])
    p = pts.reindex(units).to_numpy(float)
    priced = np.isfinite(p) & (p > 0)
    logp = np.log(np.where(priced, p, 1.0))
    cols = ["unit", "points", "strength", "value", "fair_points", "fair_lo", "fair_hi", "ratio", "flagged"]
    if priced.sum() < 3 or np.ptp(logp[priced]) == 0:
        out = pd.DataFrame(columns=cols)
        out.attrs.update(beta=np.nan, alpha=np.nan,
                         note="fair points need at least three units with points, not all equal")
        return out
    idx = np.flatnonzero(priced)
    beta, alpha = _line(logp[idx], s[idx])
    others = [idx[idx != i] for i in range(len(s))]
    lines = [_line(logp[o], s[o]) for o in others]
    with np.errstate(all="ignore"):
        # math.exp raises on overflow whatever errstate says: clip the exponent as the bootstrap does
        fair = np.array([math.exp(min((s[i] - a_i) / b_i, 700.0)) if b_i > 0 else np.nan
                         for i, (b_i, a_i) in enumerate(lines)])
    # bootstrap: the other units resampled for the line, strengths redrawn from their sampling distribution
    rng = np.random.default_rng(seed)
    chol = np.linalg.cholesky(info["cov"] + 1e-12 * np.eye(len(s)))
    s_boot = s + rng.standard_normal((replicates, len(s))) @ chol.T
    boot = np.full((replicates, len(s)), np.nan)
    bad = 0
    for i, o in enumerate(others):
        pick = rng.choice(o, size=(replicates, len(o)))
        b_r, a_r = _lines(logp[pick], np.take_along_axis(s_boot, pick, axis=1))
        ok = b_r > 0
        bad += int((~ok).sum())
        with np.errstate(all="ignore"):
            boot[ok, i] = np.exp(np.minimum((s_boot[ok, i] - a_r[ok]) / b_r[ok], 700.0))
    note = (f"roster line beta = {beta:.4f} logit per log-point, alpha = {alpha:.4f}, "
            f"{len(idx)} units with points; {replicates} bootstrap replicates")
    if bad:
        note += f", {bad} of {replicates * len(s)} bootstrap lines without a positive slope left out"
    if not beta > 0:
        note += "; beta <= 0: strength does not rise with points, so no fair cost can be suggested"
    # a cost far outside the points any roster may use is a degenerate line, not a suggestion
    fair = _plausible(fair)
    enough = np.isfinite(boot).sum(axis=0) >= max(10, replicates // 2)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no interval, by design
        lo = np.where(enough, np.nanpercentile(np.where(np.isfinite(boot), boot, np.nan), 2.5, axis=0), np.nan)
        hi = np.where(enough, np.nanpercentile(np.where(np.isfinite(boot), boot, np.nan), 97.5, axis=0), np.nan)
        value = np.where(priced, s - (alpha + beta * logp), np.nan)
    # relative tolerance: with exact data a bound can sit on the unit's own points up to rounding
    flagged = priced & np.isfinite(lo) & ((p < lo * (1 - 1e-9)) | (p > hi * (1 + 1e-9)))
    out = pd.DataFrame({"unit": units, "points": np.where(priced, p, np.nan), "strength": s, "value": value,
                        "fair_points": fair, "fair_lo": lo, "fair_hi": hi, "ratio": fair / p, "flagged": flagged})
    out.attrs.update(beta=beta, alpha=alpha, note=note)
    return out


def _plausible(cost: np.ndarray) -> np.ndarray:
    """NaN where a suggested cost lies more than 100 times outside the allowed points (sim.limits).

    Only the suggestion: the bootstrap interval keeps its replicates as they are (its percentiles
    would move otherwise).
    """
    from sim.limits import POINTS_MAX, POINTS_MIN

    with np.errstate(invalid="ignore"):
        return np.where((cost >= POINTS_MIN / 100) & (cost <= POINTS_MAX * 100), cost, np.nan)


def points_efficiency(matrix: Any, fair: pd.DataFrame | None = None, rates: pd.DataFrame | None = None
                      ) -> pd.DataFrame:
    """Score per 100 points and value for money (fair points / points) per unit with points."""
    rates = mean_win_rate(matrix) if rates is None else rates
    fair = fair_points(matrix) if fair is None else fair
    pts = _points(matrix)
    out = rates[["unit", "score", "win_rate"]].copy()
    out["points"] = out["unit"].map(pts)
    out = out[out["points"].notna()]
    out["score_per_100_points"] = 100 * out["score"] / out["points"]
    ratio = dict(zip(fair["unit"], fair["ratio"])) if len(fair) else {}
    out["value_ratio"] = out["unit"].map(ratio).astype(float)
    return out.reset_index(drop=True)
