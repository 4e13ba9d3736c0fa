"""Balance metrics from a matchup matrix: rankings, strengths, equilibrium, dominance, cycles, fair points.

Every function accepts a :class:`analysis.matrix.MatchupMatrix` or its ``long``
frame alone (one row per attacker-defender pair with at least ``attacker``,
``defender``, ``p_attacker``, ``p_defender``, ``p_draw``; ``trials`` gives the
standard errors, ``points_attacker``/``points_defender`` the points), so the
metrics are tested on hand-built matrices with known answers.

Conventions
-----------
* A fight's *score* for a unit is 1 for a win, 1/2 for a draw, 0 for a loss.
* *Side-averaged* numbers average the unit's two roles against an opponent
  (as attacker against it, and as defender against it), so charging advantage
  cancels out. The *payoff* is side-averaged P(win) - P(loss).
* Mirror matches are kept in the matrix but left out of mean win rates.
* A difference "counts" (dominance, cycles) when it exceeds a multiple of the
  Monte Carlo standard error (1.96, Bonferroni-corrected where many pairs are
  compared; point estimates when no ``trials`` column gives errors).

This module holds the game-theoretic metrics (Nash equilibrium, dominance,
cycles) and the summary; strengths come from :mod:`analysis.strength` and fair
points from :mod:`analysis.fair_points`, both re-exported here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from sim.errors import InputError

from .fair_points import FAIR_POINTS_MODEL, fair_points, points_efficiency
from .io import atomic_write_text
from .pooling import collapse, expand_pairs, expand_units, twin_classes
from .strength import (
    Z,
    _units,
    _points,
    bradley_terry,
    long_frame,
    mean_win_rate,
    payoff_matrix,
    side_averaged,
)

__all__ = [
    "Z",
    "long_frame",
    "side_averaged",
    "payoff_matrix",
    "mean_win_rate",
    "bradley_terry",
    "nash_equilibrium",
    "dominated_units",
    "intransitive_triples",
    "fair_points",
    "points_efficiency",
    "balance_summary",
    "BalanceSummary",
    "FAIR_POINTS_MODEL",
]


# ------------------------------------------------------------------ the game
def _complete_block(pay: pd.DataFrame) -> pd.DataFrame:
    """Drop units (most missing cells first) until the payoff table has no gaps."""
    pay = pay.copy()
    while pay.isna().to_numpy().any():
        worst = pay.isna().sum(axis=0) + pay.isna().sum(axis=1)
        pay = pay.drop(index=worst.idxmax(), columns=worst.idxmax())
    return pay


def nash_equilibrium(payoff: pd.DataFrame) -> pd.Series:
    """Equilibrium mix of the symmetric zero-sum game with this payoff table.

    Solves max v s.t. sum_i x_i A[i, j] >= v for every opponent j, sum x = 1,
    x >= 0 with ``scipy.optimize.linprog`` (HiGHS). For an antisymmetric payoff
    the value is 0. Units in cells that were not fought are left out (weight NaN).
    When several equilibria exist, HiGHS returns one vertex of the set.

    Returns
    -------
    Series
        Weight per unit (sums to 1); ``.attrs["value"]`` the game value.
    """
    block = _complete_block(payoff)
    out = pd.Series(np.nan, index=payoff.index, name="weight")
    if len(block) == 0:
        return out
    x, value = _solve_game(block.to_numpy(float))
    out[block.index] = x
    out.attrs["value"] = value
    return out


def _solve_game(a: np.ndarray) -> tuple[np.ndarray, float]:
    """Row player's equilibrium mix and the value of the zero-sum game with payoff ``a``."""
    k = len(a)
    c = np.zeros(k + 1)
    c[-1] = -1.0
    a_ub = np.hstack([-a.T, np.ones((k, 1))])
    a_eq = np.hstack([np.ones((1, k)), np.zeros((1, 1))])
    res = optimize.linprog(c, A_ub=a_ub, b_ub=np.zeros(k), A_eq=a_eq, b_eq=[1.0],
                           bounds=[(0, None)] * k + [(None, None)], method="highs")
    if not res.success:  # pragma: no cover - a finite game always has an equilibrium
        raise RuntimeError(f"linprog failed: {res.message}")
    x = np.clip(res.x[:k], 0, None)
    x[x < 1e-9] = 0.0
    return x / x.sum(), float(res.x[-1])


def _nash_support_share(pay: pd.DataFrame, se: pd.DataFrame, replicates: int = 100, seed: int = 0) -> pd.Series:
    """Share of payoff tables redrawn within Monte Carlo error whose equilibrium uses each unit."""
    block = _complete_block(pay)
    err = se.reindex(index=block.index, columns=block.columns).fillna(0).to_numpy(float)
    a = block.to_numpy(float)
    rng = np.random.default_rng(seed)
    hits = np.zeros(len(a))
    for _ in range(replicates):
        noise = rng.standard_normal(a.shape) * err
        noise = np.triu(noise, 1) - np.triu(noise, 1).T  # keep the table antisymmetric
        hits += _solve_game(a + noise)[0] > 1e-6
    out = pd.Series(np.nan, index=pay.index, name="support_share")
    out[block.index] = hits / replicates
    return out


def _bonferroni(m: int) -> float:
    """Normal quantile for a two-sided 5% family-wise level over ``m`` comparisons."""
    return float(stats.norm.ppf(1 - 0.025 / max(m, 1)))


def dominated_units(matrix: Any, z: float = Z, z_better: float | None = None, *,
                    sa: pd.DataFrame | None = None) -> pd.DataFrame:
    """Units weakly dominated by another unit on side-averaged payoff.

    ``j`` dominates ``i`` when, against every unit k (i and j included), j's
    payoff is not significantly worse than i's (difference > -z s.e., or an exact
    tie when the error is zero) and it is
    significantly better against at least one (difference > ``z_better`` s.e.,
    by default Bonferroni-corrected over all K^2 (K-1) unit-pair-opponent
    comparisons, so that two identical units are not declared to dominate each
    other by chance).

    Returns
    -------
    DataFrame
        ``unit, dominated_by, strictly`` (strictly: significantly better against
        every unit), one row per dominated unit, dominators joined by ``"; "``.
    """
    sa = side_averaged(matrix) if sa is None else sa
    pay = payoff_matrix(matrix, sa=sa)
    se = payoff_matrix(matrix, "payoff_se", sa=sa).fillna(0)
    block = _complete_block(pay)
    names = list(block.index)
    k = len(names)
    zb = _bonferroni(k * k * (k - 1)) if z_better is None else z_better
    a = block.to_numpy(float)
    e = se.reindex(index=names, columns=names).to_numpy(float)
    rows = []
    for i, ui in enumerate(names):
        by, strict = [], []
        for j, uj in enumerate(names):
            if i == j:
                continue
            diff = a[j] - a[i]
            err = np.sqrt(e[j] ** 2 + e[i] ** 2)
            # "not worse" includes an exact tie: with zero error (a mirror cell, or exact data) the
            # strict comparison would call a tie worse and miss B weakly dominating A
            not_worse = (diff > -z * err) | ((err == 0) & (diff >= 0))
            better = diff > zb * err
            if not_worse.all() and better.any():
                by.append(uj)
                strict.append(bool(better.all()))
        if by:
            rows.append({"unit": ui, "dominated_by": "; ".join(by), "strictly": any(strict)})
    return pd.DataFrame(rows, columns=["unit", "dominated_by", "strictly"])


def intransitive_triples(matrix: Any, z: float | None = None, *, sa: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rock-paper-scissors cycles: a beats b, b beats c, c beats a (side-averaged).

    "Beats" means a side-averaged payoff above ``z`` standard errors (above 0
    when there are no errors); by default ``z`` is Bonferroni-corrected over the
    K (K-1) / 2 pairs, so noise between near-equal units does not make cycles.
    Each cycle is listed once, starting with the unit that comes first in the roster.
    """
    sa = side_averaged(matrix) if sa is None else sa
    pay = payoff_matrix(matrix, sa=sa)
    se = payoff_matrix(matrix, "payoff_se", sa=sa).fillna(0)
    names = list(pay.index)
    z = _bonferroni(len(names) * (len(names) - 1) // 2) if z is None else z
    a = pay.to_numpy(float)
    thr = z * se.to_numpy(float)
    beats = np.nan_to_num(a, nan=0.0) > thr
    rows = []
    for i, j, k in itertools.combinations(range(len(names)), 3):
        for x, y, w in ((i, j, k), (i, k, j)):
            if beats[x, y] and beats[y, w] and beats[w, x]:
                rows.append({"unit_a": names[x], "unit_b": names[y], "unit_c": names[w],
                             "payoff_ab": a[x, y], "payoff_bc": a[y, w], "payoff_ca": a[w, x],
                             "weakest_link": min(a[x, y], a[y, w], a[w, x])})
    return pd.DataFrame(rows, columns=["unit_a", "unit_b", "unit_c", "payoff_ab", "payoff_bc", "payoff_ca",
                                       "weakest_link"])


# ---------------------------------------------------------------- summary
@dataclass(frozen=True)
class BalanceSummary:
    """Every balance table for one matrix.

    Attributes
    ----------
    ruleset : str
    units : list of str
    rankings : DataFrame
        Per unit: mean win/draw/loss/score with intervals, Bradley-Terry strength with
        interval and Elo, Nash weight and support share, rank by strength (ties share a rank).
    side_averaged, payoff, bradley_terry, nash, dominated, cycles, fair_points, efficiency : DataFrame
    attacker_advantage : dict
        Logit advantage of attacking, its s.e. and the BT dispersion.
    misfit : dict
        How far the strength model is from the cells (see :func:`analysis.strength.bt_misfit`).
    model : str
        The statistical conventions and the fair-price model, stated in words.
    notes : list of str
    budget : float or None
        Equal-points budget of the matrix (None: one unit a side).
    twins : dict
        Representative -> units pooled with it (identical profile and copies).
    """

    ruleset: str
    units: list[str]
    rankings: pd.DataFrame
    side_averaged: pd.DataFrame
    payoff: pd.DataFrame
    bradley_terry: pd.DataFrame
    nash: pd.DataFrame
    dominated: pd.DataFrame
    cycles: pd.DataFrame
    fair_points: pd.DataFrame
    efficiency: pd.DataFrame
    attacker_advantage: dict[str, float]
    model: str
    notes: list[str] = field(default_factory=list)
    misfit: dict[str, Any] = field(default_factory=dict)
    budget: float | None = None
    twins: dict[str, list[str]] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """CSV name -> frame for every table."""
        out = {"rankings": self.rankings, "side_averaged": self.side_averaged,
               "payoff": self.payoff.rename_axis("unit").reset_index(), "nash": self.nash,
               "dominated": self.dominated, "cycles": self.cycles, "fair_points": self.fair_points,
               "points_efficiency": self.efficiency}
        worst = self.misfit.get("worst")
        if isinstance(worst, pd.DataFrame):
            out["model_misfit"] = worst
        curves = self.fair_points.attrs.get("curves")
        if curves:
            from .copy_curves import curves_frame

            out["copy_curves"] = curves_frame(curves)
        return out

    def write(self, out_dir: str | Path) -> list[Path]:
        """Write every table as ``<name>.csv`` (atomic, deterministic) and ``balance_model.txt``."""
        out = Path(out_dir)
        paths = [atomic_write_text(out / f"{name}.csv", to_csv(frame)) for name, frame in self.tables().items()]
        paths.append(atomic_write_text(out / "balance_model.txt", self.model_text() + "\n"))
        return paths

    def model_text(self) -> str:
        return "\n".join([self.model] + self.notes)

    def text(self) -> str:
        """The tables as plain text for a terminal."""
        def show(title: str, frame: pd.DataFrame) -> list[str]:
            body = frame.to_string(index=False, float_format=_fmt_float, na_rep="-") if len(frame) else "(none)"
            return [title, body, ""]

        rk = self.rankings[["rank", "unit", "win_rate", "win_rate_lo", "win_rate_hi", "score", "strength",
                            "strength_lo", "strength_hi", "nash_weight"]]
        adv = self.attacker_advantage
        head = (f"{self.ruleset}: balance of {len(self.units)} units at equal points (budget {self.budget:g})"
                if self.budget is not None else f"{self.ruleset}: balance of {len(self.units)} units, one a side")
        lines = [head, ""]
        lines += show("Rankings (side-averaged, mirror matches excluded; strength: Bradley-Terry logit, "
                      "intervals from Monte Carlo noise)", rk)
        if self.misfit.get("warning"):
            lines += [self.misfit["warning"], ""]
        lines += [f"Attacker advantage (logit): {adv['attacker_advantage']:.4f} (s.e. {adv['attacker_advantage_se']:.4f})", ""]
        lines += show("Nash equilibrium mix (payoff = side-averaged P(win) - P(loss))", self.nash)
        lines += show("Dominated units", self.dominated)
        lines += show("Intransitive triples (a beats b beats c beats a)", self.cycles)
        fp = self.fair_points[[c for c in ("unit", "points", "copies", "fair_points", "fair_lo", "fair_hi", "verdict",
                                           "beyond") if c in self.fair_points]]
        lines += show("Fair prices (" + str(self.fair_points.attrs.get("method", "")) + ")", fp)
        lines += [self.model_text()]
        return "\n".join(lines)


def _fmt_float(v: float) -> str:
    return "0" if abs(v) < 1e-9 else f"{v:.4g}"


def to_csv(frame: pd.DataFrame) -> str:
    """Deterministic CSV text: fixed float format, no index, ``\\n`` line ends, zero for float noise,
    spreadsheet formulas neutralised."""
    from .safe_csv import csv_text

    clean = frame.copy()
    for c in clean.columns:
        if clean[c].dtype.kind == "f":
            v = clean[c].to_numpy(float, copy=True)
            v[np.abs(v) < 5e-7] = 0.0  # 6.7e-16 is zero, and "-0.000000" is not a number a designer wants
            clean[c] = v
    return csv_text(clean)


class _Collapsed:
    """A matrix-like view (``long``, ``units``) of the twin-collapsed long frame."""

    def __init__(self, long: pd.DataFrame, units: list[str]) -> None:
        self.long = long
        self.units = units


def _rank_with_ties(values: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """Competition ranks by value (descending); values equal to 1e-9 share a rank."""
    order = np.argsort(-values, kind="mergesort")
    ranks = np.empty(len(values), int)
    for pos, i in enumerate(order):
        if pos and abs(values[i] - values[order[pos - 1]]) <= 1e-9:
            ranks[i] = ranks[order[pos - 1]]
        else:
            ranks[i] = pos + 1
    return ranks


def balance_summary(matrix: Any, *, seed: int = 0, progress: Any = None, curves: Any = None) -> BalanceSummary:
    """Compute every balance metric for ``matrix`` (a MatchupMatrix or its long frame).

    Twins (units with the same profile that field the same copies) are pooled
    first (:mod:`analysis.pooling`), so they get identical rows, prices and
    flags, and share one Nash weight equally. With a budgeted ``MatchupMatrix``
    the fair prices come from equal-points fights at neighbouring copy counts
    (``progress`` reports those cells); otherwise from the calibration model.
    """
    frame = long_frame(matrix)
    units = _units(matrix, frame)
    if len(units) < 2:
        raise InputError(f"balance: needs at least two units that fought (got {len(units)}: {', '.join(units)})")
    if isinstance(matrix, pd.DataFrame):
        ruleset = str(matrix.attrs.get("ruleset", ""))
    else:
        ruleset = getattr(matrix.ruleset, "id", None) or str(matrix.ruleset)
    classes = twin_classes(matrix, units)
    if len(classes) < 2:
        raise InputError(f"balance: {', '.join(units)} fight exactly alike (same profile and copies): "
                         "a balance needs at least two units that differ")
    cm = _Collapsed(collapse(frame, classes), list(classes))
    sa = side_averaged(cm)
    pay = payoff_matrix(cm, sa=sa)
    pay_se = payoff_matrix(cm, "payoff_se", sa=sa)
    rates = mean_win_rate(cm, sa=sa)
    bt, info = bradley_terry(cm, full=True)
    weights = nash_equilibrium(pay)
    share = _nash_support_share(pay, pay_se, seed=seed)
    reps = list(classes)
    nash_rows = []
    for r in reps:
        w = weights.get(r, np.nan)
        for m in classes[r]:
            nash_rows.append({"unit": m, "weight": w / len(classes[r]) if w == w else np.nan,
                              "support_share": share.get(r, np.nan)})
    nash = pd.DataFrame(nash_rows, columns=["unit", "weight", "support_share"])
    fair = fair_points(matrix, seed=seed, bt=(bt, info), classes=classes, progress=progress, curves=curves)
    dominated = dominated_units(cm, sa=sa)
    if len(dominated):
        dominated = expand_units(dominated, classes)
        dominated["dominated_by"] = ["; ".join(m for d in str(by).split("; ") for m in classes.get(d, [d]))
                                     for by in dominated["dominated_by"]]
    cycles = intransitive_triples(cm, sa=sa)
    rates_x = expand_units(rates, classes)
    bt_x = expand_units(bt, classes)
    eff = points_efficiency(rates_x, fair, _points(matrix))
    rk = rates_x.merge(bt_x.rename(columns={"lo": "strength_lo", "hi": "strength_hi", "se": "strength_se"}), on="unit")
    rk["nash_weight"] = rk["unit"].map(dict(zip(nash["unit"], nash["weight"])))
    rk = rk.sort_values("strength", ascending=False, kind="mergesort").reset_index(drop=True)
    rk.insert(0, "rank", _rank_with_ties(rk["strength"].to_numpy(float), rk["strength_se"].to_numpy(float)))
    sa_x = expand_pairs(sa, classes)
    pay_x = payoff_matrix(_Collapsed(frame, units), sa=sa_x) if any(len(m) > 1 for m in classes.values()) else pay
    misfit = info.get("misfit", {})
    notes = [f"Nash value {abs(weights.attrs.get('value', float('nan'))):.2e} (0 for a symmetric game); "
             "support_share: share of 100 payoff tables redrawn within Monte Carlo error whose equilibrium "
             "gives the unit weight.",
             "Bradley-Terry intervals measure Monte Carlo noise only. Model misfit: "
             f"{misfit.get('rms_pp', float('nan')):.2f} pp RMS between model and cells against "
             f"{misfit.get('noise_rms_pp', float('nan')):.2f} pp of noise"
             + (f" ({misfit['warning']})" if misfit.get("warning") else " (within the noise)") + ".",
             f"Fair prices: {fair.attrs.get('note', '')}."]
    twins = {r: m for r, m in classes.items() if len(m) > 1}
    if twins:
        notes.append("Twins pooled (same profile and copies, identical answers): "
                     + "; ".join(", ".join(m) for m in twins.values()) + ".")
    left_out = [u for u in reps if u not in _complete_block(pay).index]
    if left_out:
        notes.append("Left out of the equilibrium and dominance (some of their matchups were not fought): "
                     + ", ".join(left_out) + ".")
    budget = getattr(matrix, "budget", None)
    fielding = (f"Equal points: each side fields floor({budget:g} / points) copies of its unit." if budget is not None
                else "One unit a side (no budget).")
    model = (f"{fielding}\nConventions: score = win + draw/2; side-averaged = the mean of the unit's attacker and "
             "defender cells against an opponent; payoff = side-averaged P(win) - P(loss); mirror matches "
             "excluded from mean rates; dominance needs no opponent where the dominator is worse by 1.96 s.e. "
             "(an exact tie is not worse) and one where it is better by a Bonferroni-corrected margin; cycle "
             "edges are Bonferroni-corrected over pairs.\n"
             + " ".join(str(fair.attrs.get(k, "")) for k in ("definition", "model", "intervals")))
    adv = {k: float(info[k]) for k in ("attacker_advantage", "attacker_advantage_se", "dispersion")}
    return BalanceSummary(ruleset, units, rk, sa_x, pay_x, bt_x, nash, dominated, cycles, fair, eff, adv, model,
                          notes, misfit, budget, twins)
