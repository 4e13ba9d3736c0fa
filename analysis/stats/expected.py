"""Fair prices under expected fielding: where a unit's continuous score against the roster crosses 50%.

At a budget ``B`` a unit costing ``p`` fields ``c = B / p`` copies on average:
``k + 1`` in a fraction ``f`` of its fights and ``k`` in the rest
(:func:`analysis.runs.fielding.copy_mixture`). Its *score against the roster*
is its mean side-averaged score (win + draw / 2, both roles) against every
roster unit, each fielded at its own expected copies, and against itself at the
same price: exactly 1/2, whatever the price (so a unit is priced against
itself at the candidate price, never at its listed one). As a function of its
own copies the score is exactly piecewise linear between whole copies,

    ``M(k + f) = (1 - f) M(k) + f M(k + 1)``,

so the 50% crossing ``c*`` is found by linear interpolation between the two
whole copy counts that bracket it (no model), and the fair price is ``B / c*``.
A direct run at that price scores 50% by construction, up to the noise of its
cells.

Two uncertainties are kept apart:

* **Monte Carlo** (``fair_lo``/``fair_hi``, and the score's interval): the
  cells redrawn within their standard errors; more trials narrow it.
* **The roster** (``roster_lo``/``roster_hi``): the range of the price when each
  opponent in turn is left out of the roster; more trials do not narrow it.

A unit is flagged only on the first, with a practical tolerance: its score at
its listed price is over- (under-) priced when the whole 95% interval of that
score lies below ``50% - tolerance`` (above ``50% + tolerance``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .estimates import row_trials, score_variance
from .fair_prices import FAIR_COLUMNS, _quantiles

__all__ = ["ExpectedCurve", "linear_crossing", "price_curve", "EXPECTED_COLUMNS", "EXPECTED_MODEL",
           "DEFAULT_TOLERANCE", "verdict_of", "unit_scores", "SCORE_DEFINITION", "expected_curves_frame", "expected_frame"]

#: Practical tolerance of a verdict and of a rebalance, in score (0.02 = 2 percentage points).
DEFAULT_TOLERANCE = 0.02
#: Bootstrap replicates behind a price's Monte Carlo interval.
REPLICATES = 400

EXPECTED_COLUMNS = FAIR_COLUMNS + ["score", "score_lo", "score_hi", "roster_lo", "roster_hi", "tolerance",
                                   "fieldable", "nearest_price", "extrapolated", "copies_tried"]

EXPECTED_MODEL = (
    "Computed under expected fielding (method 'expected'): at a budget B a unit costing p fields B / p copies on "
    "average (k + 1 copies in a fraction f of its fights, k in the rest), so its score against the roster (every "
    "unit at its own expected copies, itself at the same price scoring 1/2) is exactly linear between whole "
    "copies. The fair price is B / c*, where c* is the crossing of 50% between the two whole copy counts that "
    "bracket it. fair_lo/fair_hi is the Monte Carlo interval (cells redrawn within their errors); "
    "roster_lo/roster_hi the range when each opponent in turn is left out of the roster. This is each unit's fair "
    "price alone, every other price as listed; the verdicts and the advised prices come from one joint answer "
    "(the fewest price changes that balance the roster), not from these.")


@dataclass
class ExpectedCurve:
    """A class of identical units (same profile and price): its score against the roster at each whole copy count.

    Attributes
    ----------
    units : list of str
        The class's units (the first one's cells are fought; the others are its twins).
    opponents : list of str
        One unit of every other class of the roster (its representative), each at its own expected copies.
    roster_size : int
        Units in the roster: the class's own units count as opponents scoring 1/2.
    scores : dict
        ``k -> (score, variance)`` arrays over ``opponents`` (side-averaged, NaN where not fought).
    limit : int or None
        The most copies a side can field (None: not reached by the search).
    weights : array or None
        Units of the roster each opponent stands for (its class's size; None: one each).
    """

    units: list[str]
    opponents: list[str]
    roster_size: int
    scores: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    limit: int | None = None
    weights: np.ndarray | None = None

    def _w(self) -> np.ndarray:
        return np.ones(len(self.opponents)) if self.weights is None else np.asarray(self.weights, float)

    def ks(self) -> list[int]:
        return sorted(self.scores)

    def mean(self, k: int, drop: int | None = None) -> float:
        """Score against the roster fielding ``k`` copies (``drop``: one unit of opponent ``drop`` left out)."""
        s = self.scores[k][0]
        own, w = len(self.units), self._w()
        if drop is None:
            return float((0.5 * own + (w * s).sum()) / self.roster_size)
        return float((0.5 * own + (w * s).sum() - s[drop]) / (self.roster_size - 1))

    def means(self, drop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(copies tried, score against the roster at each)."""
        ks = self.ks()
        return np.asarray(ks, float), np.array([self.mean(k, drop) for k in ks])

    def at(self, copies: float) -> tuple[float, float]:
        """Score against the roster at ``copies`` expected copies and its standard error (NaN if not fought)."""
        k = math.floor(copies + 1e-9)
        f = copies - k
        parts = [(k, 1.0 - f)] + ([(k + 1, f)] if f > 1e-9 else [])
        if any(kk not in self.scores for kk, _ in parts):
            return math.nan, math.nan
        own, w = len(self.units), self._w()
        m = sum(wt * (0.5 * own + (w * self.scores[kk][0]).sum()) for kk, wt in parts) / self.roster_size
        var = sum(wt * wt * (w * w * self.scores[kk][1]).sum() for kk, wt in parts) / self.roster_size ** 2
        return float(m), math.sqrt(max(var, 0.0))

    def usable(self) -> bool:
        return bool(self.scores) and all(np.isfinite(v[0]).all() for v in self.scores.values())


def linear_crossing(ks: np.ndarray, scores: np.ndarray) -> float:
    """Copies at which the piecewise-linear score crosses 50%.

    Between two tried counts the line through them; beyond them, the line through
    the two nearest counts extended (an extrapolation). ``inf`` when more copies
    never reach 50%, ``0`` when even fewer copies stay above it (slope not
    positive), NaN with a single count that does not bracket.
    """
    ks = np.asarray(ks, float)
    y = np.asarray(scores, float) - 0.5
    above = np.flatnonzero(y >= 0)
    if len(above) and above[0] > 0:
        i = above[0]
        return float(ks[i - 1] + (0 - y[i - 1]) * (ks[i] - ks[i - 1]) / (y[i] - y[i - 1]))
    if len(ks) < 2:
        return math.nan
    i, j = (0, 1) if len(above) else (len(ks) - 2, len(ks) - 1)
    slope = (y[j] - y[i]) / (ks[j] - ks[i])
    if not slope > 0:
        return math.inf if not len(above) else 0.0
    return float(ks[i] - y[i] / slope)


def verdict_of(score_lo: float, score_hi: float, tolerance: float) -> str:
    """``overpriced`` / ``underpriced`` when the score's interval lies wholly outside 50% +- ``tolerance``."""
    if not (math.isfinite(score_lo) and math.isfinite(score_hi)):
        return ""
    if score_hi < 0.5 - tolerance:
        return "overpriced"
    if score_lo > 0.5 + tolerance:
        return "underpriced"
    return "fair"


def _price(budget: float, c: float) -> float:
    if not math.isfinite(c):
        return 0.0 if c > 0 else math.nan
    return budget / c if c > 0 else math.inf


def price_curve(curve: ExpectedCurve, budget: float, points: float, *, tolerance: float = DEFAULT_TOLERANCE,
                rng: np.random.Generator, replicates: int = REPLICATES) -> dict[str, Any]:
    """The fair price of one class, its two intervals, its score at ``points`` and its verdict.

    Returns
    -------
    dict
        ``fair_points``, ``fair_lo``, ``fair_hi`` (Monte Carlo), ``roster_lo``, ``roster_hi``, ``score``,
        ``score_lo``, ``score_hi``, ``verdict``, ``flagged``, ``fieldable``, ``nearest_price``,
        ``extrapolated``, ``k_star``, ``copies_tried``, ``note``, ``replicates`` (the bootstrap prices).
    """
    nan = math.nan
    out: dict[str, Any] = {"fair_points": nan, "fair_lo": nan, "fair_hi": nan, "roster_lo": nan, "roster_hi": nan,
                           "score": nan, "score_lo": nan, "score_hi": nan, "verdict": "", "flagged": False,
                           "fieldable": False, "nearest_price": nan, "extrapolated": False, "k_star": nan,
                           "copies_tried": "", "note": "", "replicates": np.full(replicates, nan)}
    if not curve.usable():
        out["note"] = "no opponent could be fought"
        return out
    ks, m = curve.means()
    k_star = linear_crossing(ks, m)
    out["k_star"] = k_star
    out["copies_tried"] = ", ".join(str(int(k)) for k in ks)
    # Monte Carlo: every (copies, opponent) score redrawn within its error, the same draws for every quantity
    sc = np.stack([curve.scores[int(k)][0] for k in ks])
    sd = np.sqrt(np.stack([curve.scores[int(k)][1] for k in ks]))
    own = len(curve.units)
    noisy = sc[None] + rng.standard_normal((replicates, *sc.shape)) * sd[None]
    boot_m = (0.5 * own + (noisy * curve._w()).sum(axis=2)) / curve.roster_size
    boot = np.array([_price(budget, linear_crossing(ks, row)) for row in boot_m])
    out["replicates"] = boot
    out["fair_points"] = _price(budget, k_star)
    out["fair_lo"], out["fair_hi"] = _quantiles(boot)
    if len(curve.opponents) >= 2:
        loo = [_price(budget, linear_crossing(ks, curve.means(drop=i)[1])) for i in range(len(curve.opponents))]
        finite = [p for p in loo if math.isfinite(p)]
        if len(finite) == len(loo):
            out["roster_lo"], out["roster_hi"] = min(finite), max(finite)
    # the score at the listed price, and the verdict on it
    if math.isfinite(points) and points > 0:
        s, se = curve.at(budget / points)
        if math.isfinite(s):
            out["score"], out["score_lo"], out["score_hi"] = s, s - 1.96 * se, s + 1.96 * se
            out["verdict"] = verdict_of(s - 1.96 * se, s + 1.96 * se, tolerance)
            out["flagged"] = out["verdict"] in ("overpriced", "underpriced")
    # can the price be fielded at this budget, and was it bracketed by copies tried?
    lo_k, hi_k = float(ks.min()), float(ks.max())
    out["extrapolated"] = bool(not (lo_k <= k_star <= hi_k)) if math.isfinite(k_star) else True
    most = curve.limit
    if math.isnan(k_star):
        out["note"] = "too few copies fought to place 50%"
    elif k_star == math.inf or (most is not None and k_star > most):
        # the cheapest price a side can field (its most copies); worthless at any price when copies never help
        out["nearest_price"] = float(budget) / most if most else nan
        out["note"] = ("more copies do not raise its score to 50%" if k_star == math.inf else
                       f"needs {k_star:.3g} copies, more than a side can field ({most})")
    elif k_star < 1:
        out["nearest_price"] = float(budget)  # one copy: the dearest price a budget can field
        out["note"] = "scores above 50% even with one copy: worth more than the whole budget"
    else:
        out["fieldable"] = True
        out["nearest_price"] = out["fair_points"]
        if out["extrapolated"]:
            out["note"] = f"50% lies beyond the copies tried (k* = {k_star:.2f}), extrapolated"
    return out


def expected_frame(rows: Sequence[dict[str, Any]], budget: float, tolerance: float) -> pd.DataFrame:
    """The fair-price table (:data:`EXPECTED_COLUMNS`) from one row per unit."""
    out = pd.DataFrame(list(rows), columns=EXPECTED_COLUMNS)
    out.attrs.update(method="expected", budget=budget, tolerance=tolerance, model=EXPECTED_MODEL)
    return out


def expected_curves_frame(curves: dict[str, ExpectedCurve]) -> pd.DataFrame:
    """Every curve point as a row: ``units, copies, opponent, score, score_se`` (copy_curves.csv)."""
    rows = []
    for curve in curves.values():
        for k in curve.ks():
            s, v = curve.scores[k]
            for o, si, vi in zip(curve.opponents, s, v):
                rows.append({"units": "; ".join(curve.units), "copies": k, "opponent": o, "score": si,
                             "score_se": math.sqrt(vi) if vi == vi and vi >= 0 else math.nan})
    return pd.DataFrame(rows, columns=["units", "copies", "opponent", "score", "score_se"])


#: The one score of a unit, in every table, file and sentence.
SCORE_DEFINITION = ("Score: win + draw/2 against the roster as listed, both roles averaged, every unit of the roster "
                    "counted once (the unit's own mirror match and its twins, units with the same profile and price, "
                    "count 1/2 each: they fight exactly alike).")


def unit_scores(long: pd.DataFrame, classes: Mapping[str, Sequence[str]],
                tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    """Each unit's one score (:data:`SCORE_DEFINITION`) from a matrix's cells, with its 95% interval.

    Units of one class (twins: same profile and price) fight exactly alike, so a
    class scores once, from its representative's cells (the first member's),
    against one representative of every other class weighted by that class's
    size, and its own members count 1/2. A mirror match side-averaged is exactly
    1/2 whatever its cell says. Under expected fielding a matrix cell is already
    the mixture at every unit's expected copies. The standard error combines the
    cells' (independent streams); an exact cell adds none.

    Returns
    -------
    pandas.DataFrame
        ``unit, score, score_se, score_lo, score_hi, verdict`` (``verdict``: whether the interval lies wholly
        outside ``50% +- tolerance``), in the classes' member order.
    """
    by = _cells_by_pair(long)
    n = sum(len(m) for m in classes.values())
    rows = []
    for rep, members in classes.items():
        total, var = 0.5 * len(members), 0.0
        for other, theirs in classes.items():
            if other == rep:
                continue
            a, d = by.get((rep, other)), by.get((other, rep))
            if a is None or d is None:
                total = var = math.nan
                break
            w = len(theirs)
            total += w * (a[0] + a[2] / 2 + d[1] + d[2] / 2) / 2
            for (_, _, draw, trials), win in ((a, a[0]), (d, d[1])):
                var += w * w * score_variance(win, draw, trials) / 4  # exact: 0
        score, se = total / n, math.sqrt(var) / n
        lo, hi = score - 1.96 * se, score + 1.96 * se
        for u in members:
            rows.append({"unit": u, "score": score, "score_se": se, "score_lo": lo, "score_hi": hi,
                         "verdict": verdict_of(lo, hi, tolerance)})
    return pd.DataFrame(rows, columns=["unit", "score", "score_se", "score_lo", "score_hi", "verdict"])


def _cells_by_pair(long: pd.DataFrame) -> dict[tuple[Any, Any], tuple[float, float, float, float]]:
    """(attacker, defender) -> (p_attacker, p_defender, p_draw, fights: ``inf`` when exact) of every row, read
    once (a lookup per pair in an indexed frame cost 1.6 s a call at 100 units)."""
    trials = [row_trials({"method": m, "trials": t}) for m, t in zip(
        long["method"] if "method" in long else ["mc"] * len(long),
        long["trials"] if "trials" in long else [math.nan] * len(long))]
    return {(a, d): (pa, pd_, pw, n) for a, d, pa, pd_, pw, n in zip(
        long["attacker"], long["defender"], long["p_attacker"].to_numpy(float), long["p_defender"].to_numpy(float),
        long["p_draw"].to_numpy(float), trials)}
