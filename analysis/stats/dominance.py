"""Dominance and rock-paper-scissors cycles on side-averaged payoffs, with Monte Carlo error.

A difference "counts" when it exceeds a multiple of its standard error (1.96,
Bonferroni-corrected where many pairs are compared; point estimates when no
``trials`` column gives errors).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .checks import check_number
from .equilibrium import complete_block
from .strength import Z, payoff_matrix, side_averaged

__all__ = ["dominated_units", "intransitive_triples", "bonferroni", "CYCLE_MARGIN"]


def bonferroni(m: int) -> float:
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
    z = check_number(z, "z", lo=0)
    z_better = check_number(z_better, "z_better", lo=0, optional=True)
    sa = side_averaged(matrix) if sa is None else sa
    pay = payoff_matrix(matrix, sa=sa)
    se = payoff_matrix(matrix, "payoff_se", sa=sa).fillna(0)
    block = complete_block(pay)
    names = list(block.index)
    k = len(names)
    zb = bonferroni(k * k * (k - 1)) if z_better is None else z_better
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


#: An edge of a cycle must be at least this far from an even fight in score (0.05 = 5 pp, a payoff of 0.10).
CYCLE_MARGIN = 0.05


def intransitive_triples(matrix: Any, z: float | None = None, *, sa: pd.DataFrame | None = None,
                         margin: float = CYCLE_MARGIN) -> pd.DataFrame:
    """Rock-paper-scissors cycles: a beats b, b beats c, c beats a (side-averaged).

    "Beats" means a side-averaged payoff above ``z`` standard errors (above 0
    when there are no errors) *and* a score at least ``margin`` above 50%
    (payoff ``2 * margin``): an edge a designer would notice. By default ``z`` is
    Bonferroni-corrected over the K (K-1) / 2 pairs, so noise between near-equal
    units does not make cycles.
    Each cycle is listed once, starting with the unit that comes first in the roster.
    """
    z = check_number(z, "z", lo=0, optional=True)
    margin = check_number(margin, "margin", lo=0, hi=0.5)
    sa = side_averaged(matrix) if sa is None else sa
    pay = payoff_matrix(matrix, sa=sa)
    se = payoff_matrix(matrix, "payoff_se", sa=sa).fillna(0)
    names = list(pay.index)
    z = bonferroni(len(names) * (len(names) - 1) // 2) if z is None else z
    a = pay.to_numpy(float)
    thr = z * se.to_numpy(float)
    beats = (np.nan_to_num(a, nan=0.0) > thr) & (np.nan_to_num(a, nan=0.0) >= 2 * margin - 1e-12)
    rows = []
    for i, j, k in itertools.combinations(range(len(names)), 3):
        for x, y, w in ((i, j, k), (i, k, j)):
            if beats[x, y] and beats[y, w] and beats[w, x]:
                rows.append({"unit_a": names[x], "unit_b": names[y], "unit_c": names[w],
                             "payoff_ab": a[x, y], "payoff_bc": a[y, w], "payoff_ca": a[w, x],
                             "weakest_link": min(a[x, y], a[y, w], a[w, x])})
    return pd.DataFrame(rows, columns=["unit_a", "unit_b", "unit_c", "payoff_ab", "payoff_bc", "payoff_ca",
                                       "weakest_link"])
