"""Fair prices: the points at which a unit would score 50% against the roster at equal points.

One definition, computed two ways:

``copies`` (direct, wherever the ruleset fields copies and a budget is set)
    Fights at the unit's own copy count and its neighbours give its copy curve
    (:mod:`analysis.stats.copy_curves`); the fair price is ``budget / k*`` where the
    curve crosses 50%.
``calibration`` (one unit a side: mecha, or a roster without a budget)
    Bradley-Terry strengths of the whole roster are calibrated on log(points)
    with one robust line; the fair price is the cost at which the unit's
    strength, less the line, would give it a 50% mean score against the roster
    (each unit at its own value).

Both give 95% intervals from the Monte Carlo noise of the fights plus
resampling the roster's units (the price depends on which opponents the roster
holds). A price or bound outside ``[min points / 4, 4 x max points]`` is an
extrapolation: reported as such (``beyond``), never as a number. Units with the
same profile share one curve (or strength), so twins get identical prices and
flags, and a clone listed at another price gets the same fair price.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .calibration import Calibration, calibrate
from .copy_curves import CopyCurve, crossing
from .strength import _points, bradley_terry

__all__ = ["FAIR_PRICE_DEFINITION", "FAIR_POINTS_MODEL", "COPIES_MODEL", "CALIBRATION_MODEL", "FAIR_COLUMNS",
           "fair_prices", "fair_from_curves", "curve_price", "roster_calibration", "points_efficiency",
           "price_range", "REPLICATES"]

FAIR_PRICE_DEFINITION = ("Fair price alone: the points at which the unit would score 50% (win + draw/2, both roles "
                         "averaged) against the roster at equal points, every other unit as listed (itself included).")
COPIES_MODEL = (
    "Computed from equal-points fights (method 'copies'): at a budget B every unit fields floor(B / points) "
    "copies; a unit's copy curve is its mean score against every unit of the roster (each fielded "
    "at its own budget copies; against itself at its own copies it scores exactly 1/2) as a function of the copies k it fields itself. Fights at neighbouring copy counts "
    "are run until the 50% crossing is bracketed, logit(score) is interpolated linearly in log(k), and the unit "
    "scores 50% when it fields k* copies: a fair price of B / k*. Beyond the copies tried the line through the "
    "two nearest counts is extended (noted).")
CALIBRATION_MODEL = (
    "Computed from a calibration (method 'calibration', where a side is one unit): Bradley-Terry strengths s of "
    "the whole roster are regressed on log(points) with one Theil-Sen line s = alpha + beta log p (beta > 0: "
    "points buy strength); a unit's value is its distance from the line, u = s - alpha - beta log p. Repriced at "
    "p, its value would be s - alpha - beta log p; the fair price is the p at which its mean win probability "
    "against the roster, logistic(value - u_j) averaged over every unit j, is 50%.")
INTERVALS = (
    "95% intervals: percentiles of {R} replicates, each redrawing the fights' results within their Monte Carlo "
    "error and resampling with replacement the roster's units the price must score 50% against. Prices or "
    "bounds outside [min points / 4, 4 x max points] are extrapolations and shown as such. A unit is flagged when its points lie outside its "
    "interval (overpriced above it, underpriced below it).")
FAIR_POINTS_MODEL = FAIR_PRICE_DEFINITION + " " + COPIES_MODEL + " " + CALIBRATION_MODEL

FAIR_COLUMNS = ["unit", "points", "copies", "fair_points", "fair_lo", "fair_hi", "ratio", "flagged", "verdict",
                "beyond", "method", "note", "fielded"]

#: Bootstrap replicates behind each interval.
REPLICATES = 400


def price_range(points: np.ndarray) -> tuple[float, float]:
    """Prices the roster can vouch for: ``[min / 4, 4 x max]`` of its positive points."""
    p = points[np.isfinite(points) & (points > 0)]
    return (float(p.min() / 4), float(p.max() * 4)) if len(p) else (0.0, math.inf)


def _quantiles(values: np.ndarray) -> tuple[float, float]:
    """2.5% and 97.5% order statistics, robust to infinities; NaN replicates (no estimate) are left out,
    and with more than 5% of them there is no interval."""
    values = np.asarray(values, float)
    v = np.sort(values[~np.isnan(values)])
    n = len(v)
    if n == 0 or n < 0.95 * len(values):
        return math.nan, math.nan
    return float(v[int(math.floor(0.025 * (n - 1)))]), float(v[int(math.ceil(0.975 * (n - 1)))])


def _seed_for(seed: int, key: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(str(key).encode("utf-8").hex()[:15] or "0", 16)])


def _row(unit: str, points: float, copies: int | None, fair: float, lo: float, hi: float, limits: tuple[float, float],
         method: str, note: str) -> dict[str, Any]:
    """One output row: clip to the vouched range, flag, verdict."""
    lim_lo, lim_hi = limits
    beyond = []
    if not math.isfinite(fair) or fair > lim_hi or fair < lim_lo:
        beyond.append(f"estimate {'above' if not fair < lim_lo else 'below'} "
                      f"{lim_hi if not fair < lim_lo else lim_lo:,.0f}")
    if not lo <= lim_hi:  # lower bound above the range (or NaN)
        beyond.append(f"interval above {lim_hi:,.0f}")
    elif lo < lim_lo:
        beyond.append(f"lower bound below {lim_lo:,.0f}")
    if hi > lim_hi or not math.isfinite(hi):
        beyond.append(f"upper bound above {lim_hi:,.0f}")
    shown = fair if lim_lo <= fair <= lim_hi else math.nan
    lo_s = lo if lim_lo <= lo <= lim_hi else math.nan
    hi_s = hi if lim_lo <= hi <= lim_hi else math.nan
    priced = math.isfinite(points) and points > 0
    lo_cmp = lo if math.isfinite(lo) else (-math.inf if lo < 0 else math.inf)
    hi_cmp = hi if not math.isnan(hi) else math.inf
    verdict = ""
    if priced and not (math.isnan(lo) and math.isnan(hi)):
        verdict = ("overpriced" if points > hi_cmp * (1 + 1e-9) else
                   "underpriced" if points < lo_cmp * (1 - 1e-9) else "fair")
    # Points on the table: whole copies leave part of a budget unspent, a handicap the matrix carries and the
    # (per point) fair price does not, so the report can say which units it hits.
    fielded = copies * points if priced and copies else math.nan
    return {"unit": unit, "points": points if priced else math.nan, "copies": copies, "fielded": fielded,
            "fair_points": shown,
            "fair_lo": lo_s, "fair_hi": hi_s, "ratio": shown / points if priced else math.nan,
            "flagged": verdict in ("overpriced", "underpriced"), "verdict": verdict, "beyond": "; ".join(beyond),
            "method": method, "note": note}


# ------------------------------------------------------------------ copies
def curve_price(curve: CopyCurve, budget: float, *, replicates: int = REPLICATES,
                rng: np.random.Generator | None = None) -> dict[str, Any]:
    """Fair price of one copy curve: ``budget / k*``, its bootstrap interval and replicates.

    Returns
    -------
    dict
        ``fair``, ``lo``, ``hi``, ``replicates`` (array of replicate prices), ``k_star``, ``note``.
    """
    if not curve.usable():
        nan = math.nan
        return {"fair": nan, "lo": nan, "hi": nan, "replicates": np.full(replicates, np.nan), "k_star": nan,
                "note": "no opponent could be fought"}
    rng = rng or _seed_for(0, curve.profile)
    ks, s = curve.mean_scores()
    k_star = crossing(ks, s)
    m = len(curve.opponents)
    w = rng.multinomial(m, np.full(m, 1.0 / m), size=replicates).astype(float)
    sc = np.stack([curve.scores[int(k)][0] for k in ks])  # (copies tried, opponents)
    sd = np.sqrt(np.stack([curve.scores[int(k)][1] for k in ks]))
    boot = np.empty(replicates)
    for r in range(replicates):
        noisy = sc + rng.standard_normal(sc.shape) * sd
        boot[r] = crossing(ks, noisy @ w[r] / w[r].sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        prices = budget / boot
        fair = (budget / k_star if k_star > 0 else math.inf) if math.isfinite(k_star) else 0.0
    lo, hi = _quantiles(prices)
    note = "copies tried: " + ", ".join(str(int(k)) for k in ks)
    if math.isfinite(k_star) and (k_star < ks.min() or k_star > ks.max()):
        note += (f"; 50% lies beyond them (k* = {k_star:.2f}), extrapolated"
                 + (" below one copy" if k_star < 1 else "")
                 + ("; the ruleset's per-side limit stopped the search" if curve.limit_reached else ""))
    elif not math.isfinite(k_star):
        note += "; more copies do not raise the score: no finite crossing"
    return {"fair": fair, "lo": lo, "hi": hi, "replicates": prices, "k_star": k_star, "note": note}


def fair_from_curves(curves: dict[str, CopyCurve], budget: float, units: list[str], points: dict[str, float],
                     copies: dict[str, int], *, replicates: int = REPLICATES, seed: int = 0) -> pd.DataFrame:
    """Fair prices from copy curves (method ``copies``): ``budget / k*`` with bootstrap intervals."""
    limits = price_range(np.array([points.get(u, math.nan) for u in units], float))
    by_unit: dict[str, dict[str, Any]] = {}
    for key, curve in curves.items():
        est = curve_price(curve, budget, replicates=replicates, rng=_seed_for(seed, key))
        for u in curve.units:
            by_unit[u] = _row(u, points.get(u, math.nan), copies.get(u), est["fair"], est["lo"], est["hi"], limits,
                              "copies", est["note"])
    out = pd.DataFrame([by_unit[u] for u in units if u in by_unit], columns=FAIR_COLUMNS)
    out.attrs.update(method="copies", budget=budget, replicates=replicates, limits=limits)
    return out


# -------------------------------------------------------------- calibration
def roster_calibration(matrix: Any, *, bt: tuple[pd.DataFrame, dict[str, Any]] | None = None,
                       classes: dict[str, list[str]] | None = None, replicates: int = REPLICATES,
                       seed: int = 0) -> tuple[Calibration, list[str], dict[str, list[str]]]:
    """The calibration of a one-unit-a-side matrix: (Calibration, representatives, twin classes)."""
    if bt is None or classes is None:
        from .pooling import collapse, twin_classes
        from .strength import _units, long_frame

        frame = long_frame(matrix)
        classes = twin_classes(matrix, _units(matrix, frame))

        class _View:
            long = collapse(frame, classes)
            units = list(classes)

        bt = bradley_terry(_View(), full=True)
    bt_frame, info = bt
    reps = list(bt_frame["unit"])
    pts = _points(matrix)
    cal = calibrate(bt_frame["strength"].to_numpy(float), info.get("cov", np.zeros((len(reps), len(reps)))),
                    np.array([float(pts.get(u, math.nan)) for u in reps]),
                    np.array([len(classes.get(u, [u])) for u in reps]), float(info.get("attacker_advantage", 0.0)),
                    replicates=replicates, seed=seed)
    return cal, reps, classes


# ---------------------------------------------------------------- dispatch
def fair_prices(matrix: Any, *, replicates: int = REPLICATES, seed: int = 0,
                bt: tuple[pd.DataFrame, dict[str, Any]] | None = None, curves: dict[str, CopyCurve] | None = None,
                classes: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """Fair price per unit, with its interval, verdict and method (:data:`FAIR_COLUMNS`).

    With a budget and the roster's copy curves (``curves``, completed by
    :func:`analysis.runs.pricing.fair_points`, which fights the neighbouring copy
    counts) the price is where each curve crosses 50% (method ``copies``).
    Otherwise the calibration model is used on the matrix's Bradley-Terry
    strengths (``bt``, computed if not given, on the twin-collapsed matrix
    described by ``classes``). Nothing is fought here.

    Returns
    -------
    DataFrame
        ``.attrs``: ``method``, ``definition``, ``model`` (the method in words),
        ``note``, and the calibration's ``alpha``/``beta`` when used.
    """
    units = list(getattr(matrix, "units", None) or [])
    pts = _points(matrix)
    budget = getattr(matrix, "budget", None)
    if budget is not None and curves is not None:
        out = fair_from_curves(curves, budget, units, {u: float(pts.get(u, math.nan)) for u in units},
                               dict(matrix.copies), replicates=replicates, seed=seed)
        out.attrs.update(definition=FAIR_PRICE_DEFINITION, model=COPIES_MODEL,
                         intervals=INTERVALS.format(R=replicates), curves=curves,
                         note=f"budget {budget:g} points; {replicates} bootstrap replicates")
        return out
    if bt is None:
        classes = None
    cal, reps, classes = roster_calibration(matrix, bt=bt, classes=classes, replicates=replicates, seed=seed)
    fair, boot = cal.prices()
    lo, hi = (np.array([_quantiles(boot[:, i]) for i in range(len(reps))]).T if len(boot)
              else (np.full(len(reps), np.nan), np.full(len(reps), np.nan)))
    # no price without a model: bootstrap lines that happen to slope upwards do not make an interval
    lo, hi = np.where(np.isnan(fair), np.nan, lo), np.where(np.isnan(fair), np.nan, hi)
    all_units = [m for u in reps for m in classes.get(u, [u])]
    limits = price_range(np.array([float(pts.get(u, math.nan)) for u in all_units]))
    rows = []
    for i, u in enumerate(reps):
        for m in classes.get(u, [u]):
            rows.append(_row(m, float(pts.get(m, math.nan)), 1, float(fair[i]), float(lo[i]), float(hi[i]), limits,
                             "calibration", cal.note if not np.isfinite(fair[i]) else ""))
    order = {u: i for i, u in enumerate(units or all_units)}
    out = pd.DataFrame(rows, columns=FAIR_COLUMNS).sort_values("unit", key=lambda c: c.map(order), kind="stable")
    out = out.reset_index(drop=True)
    out.attrs.update(method="calibration", definition=FAIR_PRICE_DEFINITION, model=CALIBRATION_MODEL,
                     intervals=INTERVALS.format(R=replicates), note=cal.note, alpha=cal.alpha, beta=cal.beta,
                     limits=limits, calibration=cal)
    return out


def points_efficiency(rates: pd.DataFrame, fair: pd.DataFrame, points: pd.Series) -> pd.DataFrame:
    """Score per 100 fielded points and value for money (fair price / points) per unit with points."""
    out = rates.reindex(columns=["unit", "score", "win_rate"]).copy()  # a lone unit has no rates
    out["points"] = out["unit"].map(points)
    out = out[out["points"].notna() & (out["points"] > 0)]
    out["score_per_100_points"] = 100 * out["score"] / out["points"]
    ratio = dict(zip(fair["unit"], fair["ratio"])) if len(fair) else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        out["value_ratio"] = out["unit"].map(ratio).astype(float)
    return out.reset_index(drop=True)
