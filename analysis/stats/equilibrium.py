"""The game behind a balance table: its equilibrium mix and how firmly each unit holds its place in it.

The roster is read as a symmetric zero-sum game: each player picks a unit, and
the payoff is the picker's side-averaged P(win) - P(loss) against the other's
pick. :func:`nash_equilibrium` solves it with a linear programme (HiGHS);
:func:`nash_support_share` redraws the payoff table within its Monte Carlo error
and counts how often each unit keeps weight.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize

from sim.errors import InputError

__all__ = ["nash_equilibrium", "complete_block", "solve_game", "nash_support_share", "nash_ranges", "nash_spread"]


def complete_block(pay: pd.DataFrame) -> pd.DataFrame:
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

    Raises
    ------
    sim.errors.InputError
        ``payoff`` is not a square table of numbers with the same units on both axes.
    """
    payoff = _check_payoff(payoff)
    block = complete_block(payoff)
    out = pd.Series(np.nan, index=payoff.index, name="weight")
    if len(block) == 0:
        return out
    x, value = solve_game(block.to_numpy(float))
    out[block.index] = x
    out.attrs["value"] = value
    return out


def _check_payoff(payoff: Any) -> pd.DataFrame:
    """``payoff`` as a square float table (units x the same units), finite where not NaN (not fought)."""
    if not isinstance(payoff, pd.DataFrame):
        raise InputError(f"payoff: got {type(payoff).__name__}, expected a unit x unit DataFrame "
                         "(MatchupMatrix.payoff_matrix())")
    if payoff.shape[0] != payoff.shape[1] or list(payoff.index) != list(payoff.columns) or \
            payoff.index.has_duplicates:
        raise InputError(f"payoff: a {payoff.shape[0]} x {payoff.shape[1]} table, expected the same units, once "
                         "each, as rows and as columns")
    try:
        values = payoff.apply(pd.to_numeric, errors="raise").to_numpy(float)
    except (TypeError, ValueError):
        raise InputError("payoff: expected numbers in every cell (NaN for a pair that was not fought)") from None
    if np.isinf(values).any():
        raise InputError("payoff: infinite values; expected payoffs between -1 and 1")
    return pd.DataFrame(values, index=payoff.index, columns=payoff.columns)


def solve_game(a: np.ndarray) -> tuple[np.ndarray, float]:
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


def nash_support_share(pay: pd.DataFrame, se: pd.DataFrame, replicates: int = 100, seed: int = 0) -> pd.Series:
    """Share of payoff tables redrawn within Monte Carlo error whose equilibrium uses each unit."""
    block = complete_block(pay)
    out = pd.Series(np.nan, index=pay.index, name="support_share")
    if len(block) == 0:  # no complete block of fought cells: no game to redraw
        return out
    err = se.reindex(index=block.index, columns=block.columns).fillna(0).to_numpy(float)
    a = block.to_numpy(float)
    rng = np.random.default_rng(seed)
    hits = np.zeros(len(a))
    for _ in range(replicates):
        noise = rng.standard_normal(a.shape) * err
        noise = np.triu(noise, 1) - np.triu(noise, 1).T  # keep the table antisymmetric
        hits += solve_game(a + noise)[0] > 1e-6
    out[block.index] = hits / replicates
    return out


def nash_ranges(payoff: pd.DataFrame, tol: float = 1e-7) -> pd.DataFrame:
    """Each unit's least and greatest weight over *every* equilibrium mix (equilibria are often not unique).

    The equilibrium set of a zero-sum game is the polytope ``{x >= 0, sum x = 1,
    x^T A >= v*}``; its bounds per unit are two linear programmes each (HiGHS).
    A unit whose range is [0, 0] is never part of a best mix; [0.885, 1] says the
    single equilibrium reported is one vertex of many.

    Returns
    -------
    DataFrame
        ``unit, weight_min, weight_max`` (NaN for units left out of the game).
    """
    block = complete_block(payoff)
    out = pd.DataFrame({"unit": list(payoff.index), "weight_min": np.nan, "weight_max": np.nan})
    if len(block) == 0:
        return out
    a = block.to_numpy(float)
    k = len(a)
    value = solve_game(a)[1]
    a_ub = -a.T  # x^T A >= v*  <=>  -A^T x <= -v*
    b_ub = np.full(k, -(value - tol))
    a_eq, b_eq = np.ones((1, k)), [1.0]
    lo, hi = np.zeros(k), np.zeros(k)
    for i in range(k):
        c = np.zeros(k)
        c[i] = 1.0
        for sign, dest in ((1.0, lo), (-1.0, hi)):
            res = optimize.linprog(sign * c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=[(0, None)] * k,
                                   method="highs")
            dest[i] = float(np.clip(res.x[i], 0.0, 1.0)) if res.success else np.nan
    where = {u: i for i, u in enumerate(block.index)}
    out["weight_min"] = [lo[where[u]] if u in where else np.nan for u in out["unit"]]
    out["weight_max"] = [hi[where[u]] if u in where else np.nan for u in out["unit"]]
    for c in ("weight_min", "weight_max"):
        v = out[c].to_numpy(float, copy=True)
        v[np.abs(v) < 1e-6] = 0.0  # the tolerance of the optimality constraint
        out[c] = v
    return out


def nash_spread(pay: pd.DataFrame, se: pd.DataFrame, replicates: int = 100, seed: int = 0) -> pd.DataFrame:
    """The equilibrium weight of each unit over payoff tables redrawn within their Monte Carlo error.

    Returns
    -------
    DataFrame
        ``unit, weight_lo, weight_hi`` (2.5% and 97.5% of the redrawn weights) and
        ``support_share`` (share of redraws whose equilibrium uses the unit).
    """
    block = complete_block(pay)
    err = se.reindex(index=block.index, columns=block.columns).fillna(0).to_numpy(float)
    a = block.to_numpy(float)
    rng = np.random.default_rng(seed)
    draws = np.zeros((replicates, len(a)))
    for r in range(replicates):
        noise = rng.standard_normal(a.shape) * err
        noise = np.triu(noise, 1) - np.triu(noise, 1).T  # keep the table antisymmetric
        draws[r] = solve_game(a + noise)[0]
    out = pd.DataFrame({"unit": list(pay.index), "weight_lo": np.nan, "weight_hi": np.nan, "support_share": np.nan})
    where = {u: i for i, u in enumerate(block.index)}
    for col, f in (("weight_lo", lambda x: np.quantile(x, 0.025)), ("weight_hi", lambda x: np.quantile(x, 0.975)),
                   ("support_share", lambda x: float(np.mean(x > 1e-6)))):
        out[col] = [f(draws[:, where[u]]) if u in where else np.nan for u in out["unit"]]
    return out
