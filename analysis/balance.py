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
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from .io import atomic_write_text

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

#: Two-sided 95% normal quantile: the significance threshold for differences.
Z: float = float(stats.norm.ppf(0.975))
#: Elo points per logit (Elo's 400 points per factor 10 in odds).
ELO_PER_LOGIT: float = 400.0 / math.log(10.0)

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


# ----------------------------------------------------------------- inputs
def long_frame(matrix: Any) -> pd.DataFrame:
    """The matrix's long frame with the cells that were fought (``p_attacker`` not NaN)."""
    frame = matrix.long if hasattr(matrix, "long") else matrix
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"expected a MatchupMatrix or its long DataFrame, got {type(matrix).__name__}")
    missing = {"attacker", "defender", "p_attacker", "p_defender", "p_draw"} - set(frame.columns)
    if missing:
        raise ValueError(f"matrix frame lacks columns {sorted(missing)}")
    out = frame[frame["p_attacker"].notna()].copy()
    if "trials" in out:
        out = out[out["trials"].fillna(0) > 0]
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
    frame = matrix.long if hasattr(matrix, "long") else matrix
    units = _units(matrix, long_frame(matrix))
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
    n = frame["trials"].to_numpy(float) if "trials" in frame else np.zeros(len(frame))
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
    sa = side_averaged(matrix) if sa is None else sa
    units = _units(matrix, long_frame(matrix))
    return sa.pivot(index="unit", columns="opponent", values=value).reindex(index=units, columns=units)


# ----------------------------------------------------------------- rankings
def mean_win_rate(matrix: Any, sa: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean side-averaged win, draw, loss and score against the other units, with 95% intervals.

    Mirror matches are excluded. The standard error is that of a mean of
    independent cell estimates; intervals are normal, clipped to [0, 1].
    """
    sa = side_averaged(matrix) if sa is None else sa
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
        rows.append({"unit": u, "opponents": m, "win_rate": win, "win_rate_se": se,
                     "win_rate_lo": max(0.0, win - Z * se), "win_rate_hi": min(1.0, win + Z * se),
                     "draw_rate": float(s["p_draw"].mean()), "loss_rate": float(s["p_loss"].mean()),
                     "score": float(s["score"].mean()), "payoff": float(s["payoff"].mean())})
    return pd.DataFrame(rows)


def _bt_cells(frame: pd.DataFrame, units: list[str]) -> tuple[np.ndarray, ...]:
    idx = {u: i for i, u in enumerate(units)}
    a = frame["attacker"].map(idx).to_numpy(int)
    d = frame["defender"].map(idx).to_numpy(int)
    n = frame["trials"].to_numpy(float) if "trials" in frame else np.full(len(frame), 1e6)
    score = frame["p_attacker"].to_numpy(float) + frame["p_draw"].to_numpy(float) / 2
    return a, d, n, score


def _fit_bt(a: np.ndarray, d: np.ndarray, n: np.ndarray, score: np.ndarray, k: int
            ) -> tuple[np.ndarray, float, np.ndarray, float]:
    """Maximum-likelihood strengths (centred), attacker advantage, covariance, dispersion."""
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
    df = len(a) - k
    pearson = float((((succ - tot * p) ** 2) / (tot * p * (1 - p))).sum())
    dispersion = pearson / df if df > 0 else 1.0
    cov_t = cov_t * max(1.0, dispersion)  # quasi-likelihood: widen when the model misfits
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
    exact Hessian). Standard errors come from the Fisher information, widened by
    the Pearson dispersion when the model fits worse than binomial noise (e.g.
    rock-paper-scissors rosters that no single strength order can describe).

    Parameters
    ----------
    matrix : MatchupMatrix or DataFrame
    full : bool
        Also return ``{"attacker_advantage", "attacker_advantage_se", "dispersion", "cov"}``.

    Returns
    -------
    DataFrame
        ``unit, strength, se, lo, hi, elo`` (Elo = 1500 + 400/ln 10 x strength).
    """
    frame = long_frame(matrix)
    units = _units(matrix, frame)
    k = len(units)
    if k == 0:
        empty = pd.DataFrame(columns=["unit", "strength", "se", "lo", "hi", "elo"])
        return (empty, {"attacker_advantage": np.nan, "attacker_advantage_se": np.nan, "dispersion": np.nan,
                        "cov": np.zeros((0, 0))}) if full else empty
    s, h, cov, disp = _fit_bt(*_bt_cells(frame, units), k)
    se = np.sqrt(np.clip(np.diag(cov)[:k], 0, None))
    out = pd.DataFrame({"unit": units, "strength": s, "se": se, "lo": s - Z * se, "hi": s + Z * se,
                        "elo": 1500 + ELO_PER_LOGIT * s})
    if full:
        return out, {"attacker_advantage": h, "attacker_advantage_se": float(math.sqrt(max(cov[k, k], 0))),
                     "dispersion": disp, "cov": cov[:k, :k]}
    return out


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
    payoff is not significantly worse than i's (difference > -z s.e.) and it is
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
            if (diff > -z * err).all() and (diff > zb * err).any():
                by.append(uj)
                strict.append(bool((diff > zb * err).all()))
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


# ---------------------------------------------------------------- points
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
        fair = np.array([math.exp((s[i] - a_i) / b_i) if b_i > 0 else np.nan for i, (b_i, a_i) in enumerate(lines)])
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
        interval and Elo, Nash weight and support share, rank by strength.
    side_averaged, payoff, bradley_terry, nash, dominated, cycles, fair_points, efficiency : DataFrame
    attacker_advantage : dict
        Logit advantage of attacking, its s.e. and the BT dispersion.
    model : str
        The statistical conventions and the fair-points model, stated in words.
    notes : list of str
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

    def tables(self) -> dict[str, pd.DataFrame]:
        """CSV name -> frame for every table."""
        return {"rankings": self.rankings, "side_averaged": self.side_averaged,
                "payoff": self.payoff.rename_axis("unit").reset_index(), "nash": self.nash,
                "dominated": self.dominated, "cycles": self.cycles, "fair_points": self.fair_points,
                "points_efficiency": self.efficiency}

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
            body = frame.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-") if len(frame) else "(none)"
            return [title, body, ""]

        rk = self.rankings[["rank", "unit", "win_rate", "win_rate_lo", "win_rate_hi", "score", "strength",
                            "strength_lo", "strength_hi", "nash_weight"]]
        adv = self.attacker_advantage
        lines = [f"{self.ruleset}: balance of {len(self.units)} units", ""]
        lines += show("Rankings (side-averaged, mirror matches excluded; strength: Bradley-Terry logit)", rk)
        lines += [f"Attacker advantage (logit): {adv['attacker_advantage']:.4f} (s.e. {adv['attacker_advantage_se']:.4f})", ""]
        lines += show("Nash equilibrium mix (payoff = side-averaged P(win) - P(loss))", self.nash)
        lines += show("Dominated units", self.dominated)
        lines += show("Intransitive triples (a beats b beats c beats a)", self.cycles)
        lines += show("Fair points", self.fair_points)
        lines += [self.model_text()]
        return "\n".join(lines)


def to_csv(frame: pd.DataFrame) -> str:
    """Deterministic CSV text: fixed float format, no index, ``\\n`` line ends."""
    from .estimates import CSV_FLOAT_FORMAT

    return frame.to_csv(index=False, float_format=CSV_FLOAT_FORMAT, lineterminator="\n")


def balance_summary(matrix: Any, *, seed: int = 0) -> BalanceSummary:
    """Compute every balance metric for ``matrix`` (a MatchupMatrix or its long frame)."""
    frame = long_frame(matrix)
    units = _units(matrix, frame)
    if isinstance(matrix, pd.DataFrame):
        ruleset = str(matrix.attrs.get("ruleset", ""))
    else:
        ruleset = getattr(matrix.ruleset, "id", None) or str(matrix.ruleset)
    sa = side_averaged(matrix)
    pay = payoff_matrix(matrix, sa=sa)
    pay_se = payoff_matrix(matrix, "payoff_se", sa=sa)
    rates = mean_win_rate(matrix, sa=sa)
    bt, info = bradley_terry(matrix, full=True)
    weights = nash_equilibrium(pay)
    share = _nash_support_share(pay, pay_se, seed=seed)
    nash = pd.DataFrame({"unit": units, "weight": weights.reindex(units).to_numpy(),
                         "support_share": share.reindex(units).to_numpy()})
    fair = fair_points(matrix, seed=seed, bt=(bt, info))
    eff = points_efficiency(matrix, fair, rates)
    rk = rates.merge(bt.rename(columns={"lo": "strength_lo", "hi": "strength_hi", "se": "strength_se"}), on="unit")
    rk["nash_weight"] = rk["unit"].map(dict(zip(nash["unit"], nash["weight"])))
    rk = rk.sort_values("strength", ascending=False, kind="mergesort").reset_index(drop=True)
    rk.insert(0, "rank", np.arange(1, len(rk) + 1))
    notes = [f"Nash value {abs(weights.attrs.get('value', float('nan'))):.2e} (0 for a symmetric game); "
             "support_share: share of 100 payoff tables redrawn within Monte Carlo error whose equilibrium "
             "gives the unit weight.",
             f"Bradley-Terry dispersion {info['dispersion']:.3g} (Pearson chi-square / df; errors widened by "
             "its square root when above 1).",
             f"Fair points: {fair.attrs.get('note', '')}."]
    left_out = [u for u in units if u not in _complete_block(pay).index]
    if left_out:
        notes.append("Left out of the equilibrium and dominance (some of their matchups were not fought): "
                     + ", ".join(left_out) + ".")
    model = ("Conventions: score = win + draw/2; side-averaged = the mean of the unit's attacker and "
             "defender cells against an opponent; payoff = side-averaged P(win) - P(loss); mirror matches "
             "excluded from mean rates; dominance needs no opponent where the dominator is worse by 1.96 s.e. and one "
             "where it is better by a Bonferroni-corrected margin; cycle edges are Bonferroni-corrected over pairs.\n"
             + FAIR_POINTS_MODEL)
    adv = {k: float(info[k]) for k in ("attacker_advantage", "attacker_advantage_se", "dispersion")}
    return BalanceSummary(ruleset, units, rk, sa, pay, bt, nash, dominated_units(matrix, sa=sa), intransitive_triples(matrix, sa=sa),
                          fair, eff, adv, model, notes)
