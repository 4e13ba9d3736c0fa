"""Copy curves: how a unit's score against the roster moves with the number of copies it fields.

At a budget ``B`` every unit fields ``floor(B / points)`` copies. A unit's *copy
curve* is its mean side-averaged score against the rest of the roster (each
opponent fielded at its own budget copies) as a function of how many copies
``k`` it fields itself. The fair price is where the curve crosses 50%:
``B / k*`` (:mod:`analysis.stats.fair_prices`). This module holds the curves, gathers their points
from a matrix, interpolates the crossing and picks the next copy count to fight;
:mod:`analysis.runs.copy_curves` fights them.

Units with the same fighting profile (:func:`analysis.runs.fielding.profile_key`)
share one curve: their data are pooled, so they get the same fair price, and a
clone listed at another price is a point further along the same curve. The
opponents are the whole roster as listed, the unit itself included at its own
price (so every profile faces the same opponents, and the answer depends on the
profile alone); against itself at its own copies a unit scores exactly 1/2.

Fights at ``k`` copies run on the matrix cell's stream of the profile's first
unit extended by ``(key("copies"), k)``, with the matrix's seed and precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .estimates import fought_rows, sample_sizes, score_variance

__all__ = ["CopyCurve", "curves_from_matrix", "crossing", "next_copies", "score_and_var", "curves_frame"]



@dataclass
class CopyCurve:
    """One profile's scores against its opponents at each copy count tried.

    Attributes
    ----------
    profile : str
        Profile key.
    units : list of str
        Roster units with this profile (the first one names the streams).
    opponents : list of str
        Every roster unit, in roster order (each at its budget copies).
    scores : dict
        ``k -> (score, variance)`` arrays over ``opponents`` (side-averaged score
        of ``k`` copies, and its Monte Carlo variance; NaN where not fought).
    limit_reached : bool
        The ruleset could not field more copies (the search stopped there).
    subject : str or unit profile, optional
        What fights (default ``units[0]``): a profile not in the roster (a sweep's variant) works too.
    stream_name : str, optional
        Name whose cell streams the fights use (default ``units[0]``; a variant uses its base's, so
        base and variant fight on common random numbers).
    start : int
        First copy count to fight when the curve has no point yet.
    """

    profile: str
    units: list[str]
    opponents: list[str]
    scores: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    limit_reached: bool = False
    subject: Any = None
    stream_name: str | None = None
    start: int = 1

    @property
    def who(self) -> Any:
        return self.subject if self.subject is not None else self.units[0]

    @property
    def stream_of(self) -> str:
        return self.stream_name or self.units[0]

    def ks(self) -> list[int]:
        return sorted(self.scores)

    def mean_scores(self, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(copies tried, mean score against the opponents at each), equal weights by default."""
        ks = self.ks()
        w = np.ones(len(self.opponents)) if weights is None else np.asarray(weights, float)
        s = np.array([np.average(self.scores[k][0], weights=w) for k in ks]) if ks else np.zeros(0)
        return np.asarray(ks, float), s

    def usable(self) -> bool:
        return bool(self.opponents) and bool(self.scores) and all(
            np.isfinite(v[0]).all() for v in self.scores.values())


def score_and_var(p_win: float, p_draw: float, n: float) -> tuple[float, float]:
    """Score ``p_win + p_draw / 2`` of one cell and the variance of its estimate from ``n`` fights."""
    return p_win + p_draw / 2, score_variance(p_win, p_draw, n)


def _side_averaged(cells: dict[tuple[str, str], tuple[float, float, float, float]], unit: str,
                   opp: str) -> tuple[float, float]:
    """Score of ``unit`` against ``opp`` averaged over its two roles (one role if only one was fought)."""
    if unit == opp:  # the mirror: one cell seen from both sides scores exactly 1/2
        return (0.5, 0.0) if (unit, opp) in cells else (math.nan, math.nan)
    parts = []
    att = cells.get((unit, opp))
    if att is not None:
        parts.append(score_and_var(att[0], att[2], att[3]))
    dfn = cells.get((opp, unit))
    if dfn is not None:
        parts.append(score_and_var(dfn[1], dfn[2], dfn[3]))
    if not parts:
        return math.nan, math.nan
    k = len(parts)
    return sum(p[0] for p in parts) / k, sum(p[1] for p in parts) / k ** 2


def curves_from_matrix(matrix: Any) -> dict[str, CopyCurve]:
    """One :class:`CopyCurve` per profile, holding the matrix's own copy counts.

    Units of one profile fielding the same copies are pooled (their scores
    averaged, variances combined).
    """
    long = matrix.long
    fought = fought_rows(long)
    cells = {(a, d): (pa, pd_, pdr, n) for a, d, pa, pd_, pdr, n in
             zip(fought["attacker"], fought["defender"], fought["p_attacker"], fought["p_defender"],
                 fought["p_draw"], sample_sizes(fought))}  # exact cells: n = inf, no Monte Carlo variance
    by_profile: dict[str, list[str]] = {}
    for u in matrix.units:
        by_profile.setdefault(matrix.profiles.get(u, u), []).append(u)
    curves = {}
    for key, members in by_profile.items():
        opps = list(matrix.units)  # the whole roster, the unit itself (at its listed price) included
        curve = CopyCurve(key, members, opps)
        by_k: dict[int, list[str]] = {}
        for m in members:
            by_k.setdefault(int(matrix.copies.get(m, 1)), []).append(m)
        for k, ms in by_k.items():
            sv = np.array([[_side_averaged(cells, m, o) for o in opps] for m in ms], float)  # (members, opps, 2)
            if sv.size:
                curve.scores[k] = (sv[:, :, 0].mean(axis=0), sv[:, :, 1].sum(axis=0) / len(ms) ** 2)
            else:
                curve.scores[k] = (np.zeros(0), np.zeros(0))
        curves[key] = curve
    return curves


def crossing(ks: np.ndarray, scores: np.ndarray, eps: float = 1e-4) -> float:
    """Copies at which the mean score crosses 50%: logit(score) linear in log(copies) between tried counts.

    The first tried count whose score reaches 50% and the one before it bracket
    the crossing; without a bracket the line through the two nearest counts is
    extended (an extrapolation). ``inf`` when even that line never reaches 50%
    (more copies do not help), NaN with fewer than two counts and no bracket.
    """
    ks = np.asarray(ks, float)
    y = special_logit(np.clip(np.asarray(scores, float), eps, 1 - eps))
    x = np.log(ks)
    above = np.flatnonzero(y >= 0)
    if len(above) and above[0] > 0:
        i = above[0]
        return float(np.exp(x[i - 1] + (0 - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1])))
    if len(x) < 2:
        return math.nan
    i, j = (0, 1) if len(above) else (len(x) - 2, len(x) - 1)
    slope = (y[j] - y[i]) / (x[j] - x[i])
    if not slope > 0:
        return math.inf if not len(above) else 0.0
    return float(np.exp(x[i] + (0 - y[i]) / slope))


def special_logit(p: np.ndarray) -> np.ndarray:
    return np.log(p) - np.log1p(-p)


def _step(k: int) -> int:
    """Resolution of the search near ``k`` copies: adjacent counts up to 10, about 10% beyond."""
    return max(1, round(k / 10))


def next_copies(curve: CopyCurve) -> int | None:
    """The copy count to fight next, or None once the 50% crossing is bracketed finely enough."""
    ks, s = curve.mean_scores()
    if not len(ks):
        return curve.start
    ks_i = ks.astype(int)
    above = np.flatnonzero(s >= 0.5)
    if len(above) and above[0] > 0:
        lo, hi = ks_i[above[0] - 1], ks_i[above[0]]
        if hi - lo <= _step(lo):
            return None
        guess = crossing(ks, s)
        k = int(round(guess)) if math.isfinite(guess) else (lo + hi) // 2
        return int(min(max(k, lo + 1), hi - 1))
    if len(above):  # even the fewest copies tried reach 50%
        k_min = int(ks_i[0])
        if k_min == 1:
            return None  # fair price above the budget: extrapolated below one copy
        guess = crossing(ks, s) if len(ks) > 1 else math.nan
        k = int(math.floor(guess)) if math.isfinite(guess) and guess > 0 else k_min - _step(k_min)
        return int(min(max(k, max(1, k_min // 2), 1), k_min - 1))
    if curve.limit_reached:
        # no more copies can be fielded: a count below gives the slope the crossing is extrapolated along
        if len(ks_i) == 1 and ks_i[0] > 1:
            return int(ks_i[0]) - _step(int(ks_i[0]))
        return None
    k_max = int(ks_i[-1])
    guess = crossing(ks, s) if len(ks) > 1 else math.nan
    k = int(math.ceil(guess)) if math.isfinite(guess) else k_max + _step(k_max)
    return int(max(min(k, 2 * k_max), k_max + 1))


def curves_frame(curves: dict[str, CopyCurve]) -> pd.DataFrame:
    """Every curve point as a row: ``unit, copies, fielded, opponent, score, score_se`` (for copy_curves.csv)."""
    rows = []
    for curve in curves.values():
        for k in curve.ks():
            s, v = curve.scores[k]
            for o, si, vi in zip(curve.opponents, s, v):
                rows.append({"units": "; ".join(curve.units), "copies": k, "opponent": o, "score": si,
                             "score_se": math.sqrt(vi) if vi == vi and vi >= 0 else math.nan})
    return pd.DataFrame(rows, columns=["units", "copies", "opponent", "score", "score_se"])
