"""Strengths from a matchup matrix: side-averaged rates, mean win rates, Bradley-Terry.

The inputs every balance metric shares. Functions accept a
:class:`analysis.runs.matrix.MatchupMatrix` or its ``long`` frame alone; see
:mod:`analysis.stats.summary` for the conventions (score, side-averaging, errors).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from sim.errors import InputError

from .checks import check_choice, check_flag, check_frame
from .estimates import fought_rows, is_exact, sample_sizes

__all__ = ["Z", "ELO_PER_LOGIT", "long_frame", "side_averaged", "payoff_matrix", "mean_win_rate", "bradley_terry",
           "bt_misfit"]

#: Two-sided 95% normal quantile: the significance threshold for differences.
Z: float = float(stats.norm.ppf(0.975))
#: Elo points per logit (Elo's 400 points per factor 10 in odds).
ELO_PER_LOGIT: float = 400.0 / math.log(10.0)

#: Columns of a long frame the balance metrics read as numbers.
NUMERIC_LONG_COLUMNS = ("p_attacker", "p_defender", "p_draw", "trials", "points_attacker", "points_defender")


# ----------------------------------------------------------------- inputs
def long_frame(matrix: Any) -> pd.DataFrame:
    """The matrix's long frame with the cells that were fought (``p_attacker`` not NaN)."""
    frame = matrix.long if hasattr(matrix, "long") else matrix
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"matrix: got {type(matrix).__name__}, expected a MatchupMatrix or its long DataFrame")
    missing = {"attacker", "defender", "p_attacker", "p_defender", "p_draw"} - set(frame.columns)
    if missing:
        raise InputError(f"matrix: its frame lacks the columns {', '.join(sorted(missing))}")
    # numbers (text such as "0.5" read as one), so that a cell of "x" is one line here, not a TypeError below
    frame = check_frame(frame, "matrix", "a matrix's long frame", (), NUMERIC_LONG_COLUMNS)
    out = fought_rows(frame[frame["p_attacker"].notna()]).copy()  # Monte Carlo cells with trials, exact cells
    out["attacker"] = out["attacker"].astype(str)
    out["defender"] = out["defender"].astype(str)
    return out.reset_index(drop=True)


def _units(matrix: Any, frame: pd.DataFrame) -> list[str]:
    """Units in the matrix's order; those with no fought cell are dropped."""
    seen = set(frame["attacker"]) | set(frame["defender"])
    order = list(getattr(matrix, "units", None) or [])
    for name in list(frame["attacker"]) + list(frame["defender"]):
        if name not in order:
            order.append(name)
    return [u for u in order if u in seen]


def _points(matrix: Any) -> pd.Series:
    """Points per unit (NaN when absent)."""
    units = _units(matrix, long_frame(matrix))
    frame = check_frame(matrix.long if hasattr(matrix, "long") else matrix, "matrix", "a matrix's long frame", (),
                        NUMERIC_LONG_COLUMNS)
    pts: dict[str, float] = {}
    for col, side in (("points_attacker", "attacker"), ("points_defender", "defender")):
        if col in frame:
            for name, value in zip(frame[side].astype(str), frame[col]):
                if value is not None and not pd.isna(value):
                    pts.setdefault(name, float(value))
    return pd.Series([pts.get(u, np.nan) for u in units], index=units, name="points", dtype=float)


def _cell_var(p: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.where(n > 0, p * (1 - p) / np.where(n > 0, n, 1), 0.0)


# ------------------------------------------------------------ side-averaged
def side_averaged(matrix: Any) -> pd.DataFrame:
    """One row per (unit, opponent): the unit's two roles against the opponent averaged.

    Returns
    -------
    DataFrame
        ``unit, opponent, p_win, p_loss, p_draw, score, payoff, p_win_se, payoff_se, roles``
        (``roles``: how many of the two role cells were fought; with one, it is used alone).
    """
    frame = long_frame(matrix)
    n = sample_sizes(frame, 0.0)  # an exact cell: inf, so its variances are 0
    pa, pd_, pdr = (frame[c].to_numpy(float) for c in ("p_attacker", "p_defender", "p_draw"))
    pay_var = np.where(n > 0, (pa + pd_ - (pa - pd_) ** 2) / np.where(n > 0, n, 1), 0.0)
    # each cell seen from both units: (unit, opponent, win, loss, draw, var_win, var_payoff)
    rows = pd.concat([
        pd.DataFrame({"unit": frame["attacker"], "opponent": frame["defender"], "w": pa, "l": pd_, "d": pdr,
                      "vw": _cell_var(pa, n), "vp": pay_var}),
        pd.DataFrame({"unit": frame["defender"], "opponent": frame["attacker"], "w": pd_, "l": pa, "d": pdr,
                      "vw": _cell_var(pd_, n), "vp": pay_var}),
    ])
    g = rows.groupby(["unit", "opponent"], sort=False)
    out = g[["w", "l", "d"]].mean()
    k = g.size()
    out["p_win_se"] = np.sqrt(g["vw"].sum()) / k
    out["payoff_se"] = np.sqrt(g["vp"].sum()) / k
    out["roles"] = k
    out = out.rename(columns={"w": "p_win", "l": "p_loss", "d": "p_draw"}).reset_index()
    out["score"] = out["p_win"] + out["p_draw"] / 2
    out["payoff"] = out["p_win"] - out["p_loss"]
    mirror = out["unit"] == out["opponent"]
    out.loc[mirror, "payoff"] = 0.0  # both roles are the same cell: exactly even
    out.loc[mirror, "payoff_se"] = 0.0
    order = {u: i for i, u in enumerate(_units(matrix, frame))}
    out = out.sort_values(["unit", "opponent"], key=lambda s: s.map(order)).reset_index(drop=True)
    return out[["unit", "opponent", "p_win", "p_loss", "p_draw", "score", "payoff", "p_win_se", "payoff_se", "roles"]]


def payoff_matrix(matrix: Any, value: str = "payoff", sa: pd.DataFrame | None = None) -> pd.DataFrame:
    """Unit x opponent table of a side-averaged column (default the antisymmetric payoff)."""
    check_choice(value, "value", SIDE_AVERAGED_VALUES)
    sa = side_averaged(matrix) if sa is None else check_frame(sa, "sa", "a side_averaged() table",
                                                              ("unit", "opponent", value), (value,))
    units = _units(matrix, long_frame(matrix))
    return sa.pivot(index="unit", columns="opponent", values=value).reindex(index=units, columns=units)


#: The columns of :func:`side_averaged` that :func:`payoff_matrix` can tabulate.
SIDE_AVERAGED_VALUES = ("p_win", "p_loss", "p_draw", "score", "payoff", "p_win_se", "payoff_se", "roles")


# ----------------------------------------------------------------- rankings
def mean_win_rate(matrix: Any, sa: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean side-averaged win, draw, loss and score against the other units, with 95% intervals.

    Mirror matches are excluded. The standard error is that of a mean of
    independent cell estimates; intervals are normal, clipped to [0, 1].
    """
    sa = side_averaged(matrix) if sa is None else check_frame(sa, "sa", "a side_averaged() table",
                                                              ("unit", "opponent"))
    sa = sa[sa["unit"] != sa["opponent"]]
    units = _units(matrix, long_frame(matrix))
    rows = []
    for u in units:
        s = sa[sa["unit"] == u]
        m = len(s)
        if m == 0:
            rows.append({"unit": u, "opponents": 0})
            continue
        se = math.sqrt(float((s["p_win_se"] ** 2).sum())) / m
        win = float(s["p_win"].mean())
        score = float(s["score"].mean())
        # score = (1 + payoff) / 2 cell by cell, so its standard error is half the payoff's
        score_se = math.sqrt(float((s["payoff_se"].fillna(0) ** 2).sum())) / m / 2 if "payoff_se" in s else math.nan
        rows.append({"unit": u, "opponents": m, "win_rate": win, "win_rate_se": se,
                     "win_rate_lo": max(0.0, win - Z * se), "win_rate_hi": min(1.0, win + Z * se),
                     "draw_rate": float(s["p_draw"].mean()), "loss_rate": float(s["p_loss"].mean()),
                     "score": score, "score_se": score_se, "score_lo": max(0.0, score - Z * score_se),
                     "score_hi": min(1.0, score + Z * score_se), "payoff": float(s["payoff"].mean())})
    return pd.DataFrame(rows)


def _bt_cells(frame: pd.DataFrame, units: list[str]) -> tuple[np.ndarray, ...]:
    idx = {u: i for i, u in enumerate(units)}
    a = frame["attacker"].map(idx).to_numpy(int)
    d = frame["defender"].map(idx).to_numpy(int)
    n = sample_sizes(frame, 1e6)
    score = frame["p_attacker"].to_numpy(float) + frame["p_draw"].to_numpy(float) / 2
    return a, d, n, score


#: The weight of an exact cell in the Bradley-Terry fit when no Monte Carlo cell sets one: the fit's point
#: estimate weighs cells as fights, and an exact cell has no fight count (its noise is 0, see :func:`_fit_bt`).
EXACT_WEIGHT = 1e6


def _fit_bt(a: np.ndarray, d: np.ndarray, n: np.ndarray, score: np.ndarray, k: int
            ) -> tuple[np.ndarray, float, np.ndarray, float]:
    """Maximum-likelihood strengths (centred), attacker advantage, covariance, dispersion.

    ``n`` is ``inf`` for an exact cell. Such a cell is weighted in the fit as the
    most-fought Monte Carlo cell (:data:`EXACT_WEIGHT` when every cell is exact),
    and adds nothing to the noise: the covariance is the sandwich
    ``H^-1 J H^-1``, ``J`` the binomial information of the Monte Carlo cells
    alone (``H^-1`` when no cell is exact, 0 when every cell is).
    """
    exact = ~np.isfinite(n)
    finite = n[~exact]
    n = np.where(exact, float(finite.max()) if finite.size and finite.max() > 0 else EXACT_WEIGHT, n)
    succ = score * n + 0.5  # half a win to each side of each cell
    tot = n + 1.0
    x = np.zeros((len(a), k + 1))
    np.add.at(x, (np.arange(len(a)), a), 1.0)
    np.add.at(x, (np.arange(len(a)), d), -1.0)
    x[:, k] = 1.0
    x = x[:, 1:]  # strength of the first unit fixed at 0 for the fit

    def nll(theta: np.ndarray) -> float:
        eta = x @ theta
        return float(-(succ * -np.logaddexp(0, -eta) + (tot - succ) * -np.logaddexp(0, eta)).sum())

    def grad(theta: np.ndarray) -> np.ndarray:
        return x.T @ (tot * special.expit(x @ theta) - succ)

    def hess(theta: np.ndarray) -> np.ndarray:
        p = special.expit(x @ theta)
        return (x * (tot * p * (1 - p))[:, None]).T @ x

    res = optimize.minimize(nll, np.zeros(k), jac=grad, hess=hess, method="trust-exact",
                            options={"gtol": 1e-9})
    theta = res.x
    p = special.expit(x @ theta)
    info = hess(theta)
    cov_t = np.linalg.pinv(info)
    if exact.any():  # the Monte Carlo cells' noise only: an exact cell's score has none
        noisy = (x * np.where(exact, 0.0, tot * p * (1 - p))[:, None]).T @ x
        cov_t = cov_t @ noisy @ cov_t
    df = len(a) - k
    pearson = float((((succ - tot * p) ** 2) / (tot * p * (1 - p)))[~exact].sum())
    dispersion = pearson / df if df > 0 else 1.0
    # The covariance is the Monte Carlo noise alone (binomial Fisher information): it shrinks as trials
    # grow. How far the one-number-per-unit model is from the cells is reported beside it (misfit),
    # never folded into these errors.
    full = np.zeros((k + 1, k + 1))
    full[1:, 1:] = cov_t
    strengths = np.concatenate([[0.0], theta[: k - 1]])
    centre = np.eye(k) - 1.0 / k
    s = centre @ strengths
    cov_s = centre @ full[:k, :k] @ centre.T
    cov = np.zeros((k + 1, k + 1))
    cov[:k, :k] = cov_s
    cov[k, k] = full[k, k]
    cov[:k, k] = cov[k, :k] = centre @ full[:k, k]
    return s, float(theta[-1]), cov, dispersion


def bradley_terry(matrix: Any, *, full: bool = False) -> pd.DataFrame | tuple[pd.DataFrame, dict[str, Any]]:
    """Bradley-Terry strengths (logit scale, centred on 0) with 95% intervals.

    Model: logit P(attacker scores) = s_attacker - s_defender + h, draws as half a
    win; maximum likelihood (``scipy.optimize.minimize``, trust-exact with the
    exact Hessian). Standard errors come from the binomial Fisher information:
    they measure the Monte Carlo noise of the cells (quadrupling the trials halves
    them). They say nothing about how well one strength per unit describes the
    roster: that misfit (e.g. rock-paper-scissors rosters) is measured separately
    by :func:`bt_misfit` and reported beside the strengths.

    Parameters
    ----------
    matrix : MatchupMatrix or DataFrame
    full : bool
        Also return ``{"attacker_advantage", "attacker_advantage_se", "dispersion", "cov", "misfit"}``.

    Returns
    -------
    DataFrame
        ``unit, strength, se, lo, hi, elo`` (Elo = 1500 + 400/ln 10 x strength).
    """
    full = check_flag(full, "full")
    frame = long_frame(matrix)
    units = _units(matrix, frame)
    k = len(units)
    if k == 0:
        empty = pd.DataFrame(columns=["unit", "strength", "se", "lo", "hi", "elo"])
        return (empty, {"attacker_advantage": np.nan, "attacker_advantage_se": np.nan, "dispersion": np.nan,
                        "cov": np.zeros((0, 0)), "misfit": bt_misfit(frame, [], np.zeros(0), 0.0)}) if full else empty
    s, h, cov, disp = _fit_bt(*_bt_cells(frame, units), k)
    se = np.sqrt(np.clip(np.diag(cov)[:k], 0, None))
    out = pd.DataFrame({"unit": units, "strength": s, "se": se, "lo": s - Z * se, "hi": s + Z * se,
                        "elo": 1500 + ELO_PER_LOGIT * s})
    if full:
        return out, {"attacker_advantage": h, "attacker_advantage_se": float(math.sqrt(max(cov[k, k], 0))),
                     "dispersion": disp, "cov": cov[:k, :k], "misfit": bt_misfit(frame, units, s, h)}
    return out


#: The size (RMS beyond the noise, percentage points) at which the strength model's misfit is worth a warning.
MISFIT_PP = 2.0


def bt_misfit(frame: pd.DataFrame, units: list[str], strengths: np.ndarray, advantage: float,
              worst: int = 5) -> dict[str, Any]:
    """How far the Bradley-Terry model is from the cells, next to the Monte Carlo noise.

    Residual per cell = observed score - model score (percentage points). The
    model misfits *beyond noise* when the Pearson chi-square of the residuals
    against each cell's Monte Carlo variance is significant at 1% and the misfit
    beyond the noise is at least :data:`MISFIT_PP` percentage points RMS; then the
    strengths are a summary that some matchups contradict (see the worst cells).

    Returns
    -------
    dict
        ``rms_pp`` (residual RMS), ``noise_rms_pp`` (RMS Monte Carlo standard
        error of the cells), ``excess_pp`` (RMS misfit beyond the noise, 0 when
        none), ``chi2``, ``df``, ``p_value``, ``exceeds_noise`` (bool),
        ``worst`` (DataFrame ``attacker, defender, observed, model, residual_pp,
        noise_pp``), ``warning`` (a sentence, empty when the model fits).
    """
    idx = {u: i for i, u in enumerate(units)}
    f = frame[frame["attacker"].isin(idx) & frame["defender"].isin(idx)]
    a = f["attacker"].map(idx).to_numpy(int)
    d = f["defender"].map(idx).to_numpy(int)
    n = sample_sizes(f)  # exact cells: inf, no noise
    exact = is_exact(f)
    pa, pdr = f["p_attacker"].to_numpy(float), f["p_draw"].to_numpy(float)
    obs = pa + pdr / 2
    model = special.expit(np.asarray(strengths)[a] - np.asarray(strengths)[d] + advantage)
    var = np.maximum(pa + pdr / 4 - obs ** 2, 0.0) / np.where(n > 0, n, np.nan)
    # a cell whose observed variance is 0 (every fight the same) still has the model's binomial noise floor
    var = np.where(var > 0, var, model * (1 - model) / np.where(n > 0, n, np.nan))
    res = obs - model
    ok = np.isfinite(res) & np.isfinite(var) & (var > 0) & ~exact
    # an exact cell has no noise: its whole residual is misfit (the chi-square test reads the Monte Carlo cells)
    var = np.where(exact, 0.0, var)
    ok_all = np.isfinite(res) & np.isfinite(var)
    any_exact = bool((exact & ok_all).any())
    cells = int(ok.sum())
    k = len(units)
    dof = max(cells - k, 1)
    chi2 = float((res[ok] ** 2 / var[ok]).sum())
    p_value = float(stats.chi2.sf(chi2, dof)) if cells > k else 1.0
    used = ok | (exact & ok_all)
    m = int(used.sum())
    rms = float(np.sqrt(np.mean(res[used] ** 2))) if m else float("nan")
    noise = float(np.sqrt(np.mean(var[used]))) if m else float("nan")
    excess = float(np.sqrt(max(np.mean(res[used] ** 2 - var[used]), 0.0))) if m else float("nan")
    if any_exact and cells <= k:  # no Monte Carlo cells to test: any misfit of exact cells is real
        p_value = 0.0 if excess > 0 else 1.0
    order = np.argsort(-np.abs(np.where(used, res, 0.0)), kind="stable")[:worst]
    worst_frame = pd.DataFrame({"attacker": f["attacker"].to_numpy()[order], "defender": f["defender"].to_numpy()[order],
                                "observed": obs[order], "model": model[order], "residual_pp": 100 * res[order],
                                "noise_pp": 100 * np.sqrt(var[order])})
    # a misfit a designer would act on: beyond the noise AND larger than MISFIT_PP (a 0.4 pp misfit that is
    # merely significant at a million fights is not worth a warning)
    exceeds = bool(p_value < 0.01) and 100 * excess >= MISFIT_PP
    warning = ""
    if exceeds:
        warning = (f"The strength model misfits beyond Monte Carlo noise: its cells are off by {100 * rms:.1f} pp "
                   f"RMS against {100 * noise:.2f} pp of noise (chi-square {chi2:.0f} on {dof} df). Strengths and "
                   "their intervals summarise the roster; the worst cells show matchups they do not describe.")
    return {"rms_pp": 100 * rms, "noise_rms_pp": 100 * noise, "excess_pp": 100 * excess, "chi2": chi2, "df": dof,
            "p_value": p_value, "exceeds_noise": exceeds, "worst": worst_frame, "warning": warning}
