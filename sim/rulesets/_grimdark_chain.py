"""``grimdark`` fast path: a whole round as one draw from its exact transition distribution.

When every model of both squads is engaged (the default), the strikers of a
step depend only on the current wounds lost ``(La, Ld)``, so a fight is a Markov
chain on ``(La, Ld)``. A step's transition row from ``(La, Ld)`` is the product
of two independent distributions (what the attacker's pools do to the defender,
and the reverse), each a fold of binomials of unsaved wounds through the same
application rule as the binomial kernel (``min(L + u, W)`` or the instant-death
table). A round is the product of its step matrices. The kernel then moves each
trial one round with one uniform through Walker's alias table of its row, which
is exact and costs a few array operations per trial and round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_STATES", "ChainTables", "chain_tables", "round_matrix", "sample_rows", "alias_sample", "count_tables"]

#: Largest (Wa + 1) * (Wd + 1) handled by the chain (building costs O(states^2)).
MAX_STATES = 700


@dataclass(frozen=True)
class ChainTables:
    """Alias tables of the round transition matrices (flattened, row-major)."""

    n_states: int
    nd: int
    prob_first: NDArray[np.float64]
    alias_first: NDArray[np.int64]
    prob_later: NDArray[np.float64]
    alias_later: NDArray[np.int64]


def _binom_pmf(n: int, p: float) -> NDArray[np.float64]:
    """Binomial(n, p) probabilities of 0..n (log space: n may be large)."""
    if p <= 0.0 or n == 0:
        out = np.zeros(n + 1)
        out[0] = 1.0
        return out
    if p >= 1.0:
        out = np.zeros(n + 1)
        out[n] = 1.0
        return out
    u = np.arange(n + 1)
    lg = np.array([math.lgamma(k + 1) for k in range(n + 1)])
    logp = lg[n] - lg - lg[::-1] + u * math.log(p) + (n - u) * math.log1p(-p)
    return np.exp(logp)


def _received(plan, step, k: int, l_self: int, l_enemy: int) -> NDArray[np.float64]:
    """Distribution of side ``k``'s wounds lost after the step's pools against it."""
    side, enemy = plan.sides[k], plan.sides[1 - k]
    W = side.wounds
    dist = np.zeros(W + 1)
    dist[l_self] = 1.0
    for pool in step:
        if pool.side != 1 - k:
            continue
        n = int(enemy.alive[pool.group][l_enemy]) * pool.per_model
        pmf = _binom_pmf(n, float(pool.p[side.front[l_self]]))
        u = np.minimum(np.arange(n + 1), W)
        new = np.zeros(W + 1)
        for l in np.flatnonzero(dist):
            to = np.minimum(l + u, W) if pool.apply is None else pool.apply[l, u]
            np.add.at(new, to, dist[l] * pmf)
        dist = new
    return dist


def round_matrix(plan, first: bool) -> NDArray[np.float64]:
    """Transition matrix of one round over states ``La * (Wd + 1) + Ld``."""
    na, nd = plan.sides[0].wounds + 1, plan.sides[1].wounds + 1
    S = na * nd
    R = np.eye(S)
    for step in (plan.steps_first if first else plan.steps_later):
        M = np.zeros((S, S))
        for la in range(na):
            for ld in range(nd):
                if la == na - 1 or ld == nd - 1:
                    M[la * nd + ld, la * nd + ld] = 1.0  # over: the kernel stops such trials anyway
                    continue
                da = _received(plan, step, 0, la, ld)
                dd = _received(plan, step, 1, ld, la)
                M[la * nd + ld] = np.outer(da, dd).ravel()
        R = R @ M
    return R


def _alias(P: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Walker/Vose alias tables of every row of ``P`` at once (rows renormalised).

    Vose's pairing of one "small" column (q < 1) with one "large" column per row
    and iteration, vectorised across rows: each iteration settles one small
    column in every row that still has one, so at most K iterations.
    """
    S, K = P.shape
    q = P * (K / P.sum(axis=1, keepdims=True))
    prob = np.ones((S, K))
    alias = np.tile(np.arange(K), (S, 1))
    rows = np.arange(S)
    is_small = q < 1.0
    # per-row stacks of small and large columns (small ones first in a stable order)
    order = np.argsort(~is_small, axis=1, kind="stable")
    n_small = is_small.sum(axis=1)
    small = np.where(np.arange(K) < n_small[:, None], order, 0)
    large = np.zeros((S, K), np.int64)
    n_large = K - n_small
    for r in range(S):  # the large columns of each row, in a stack of their own
        large[r, :n_large[r]] = order[r, n_small[r]:]
    while True:
        act = rows[(n_small > 0) & (n_large > 0)]
        if not act.size:
            break
        n_small[act] -= 1
        n_large[act] -= 1
        sm = small[act, n_small[act]]
        lg = large[act, n_large[act]]
        prob[act, sm] = q[act, sm]
        alias[act, sm] = lg
        q[act, lg] -= 1.0 - q[act, sm]
        now_small = q[act, lg] < 1.0
        a1, l1 = act[now_small], lg[now_small]
        small[a1, n_small[a1]] = l1
        n_small[a1] += 1
        a2, l2 = act[~now_small], lg[~now_small]
        large[a2, n_large[a2]] = l2
        n_large[a2] += 1
    # columns left on either stack hold (up to rounding) exactly 1: certain
    return prob.ravel(), alias.ravel()


def chain_tables(plan) -> ChainTables | None:
    """The fast path's tables, or None when it does not apply (engagement limits, too many states)."""
    sa, sd = plan.sides
    if not (sa.all_engaged and sd.all_engaged):
        return None
    na, nd = sa.wounds + 1, sd.wounds + 1
    if na * nd > MAX_STATES:
        return None
    pf, af = _alias(round_matrix(plan, True))
    pl, al = _alias(round_matrix(plan, False))
    return ChainTables(na * nd, nd, pf, af, pl, al)


def alias_sample(prob: NDArray[np.float64], alias: NDArray[np.int64], width: int, rows: NDArray[np.int64],
                 rng: np.random.Generator) -> NDArray[np.int64]:
    """One draw per entry of ``rows`` from the alias tables (flattened, ``width`` columns a row).

    One uniform each, split into a column (integer part) and an acceptance level
    (fractional part).
    """
    x = rng.random(len(rows)) * width
    j = x.astype(np.int64)  # < width: u <= 1 - 2**-53 and width * u never rounds up to width
    k = rows * width + j
    return np.where(x - j < prob[k], j, alias[k])


def sample_rows(tables: ChainTables, first: bool, state: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
    """Next state of every trial from the round's transition rows."""
    prob, alias = (tables.prob_first, tables.alias_first) if first else (tables.prob_later, tables.alias_later)
    return alias_sample(prob, alias, tables.n_states, state, rng)


def count_tables(n_models: int, per_model: int, p: NDArray[np.float64],
                 wounds: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Alias tables of unsaved wounds, capped at ``wounds``, for row ``models * len(p) + target``.

    Row ``(m, g)``: Binomial(m * per_model, p[g]) with the mass above ``wounds``
    lumped onto ``wounds`` (more is never applied: the squad is gone).
    """
    P = np.zeros(((n_models + 1) * len(p), wounds + 1))
    for m in range(n_models + 1):
        for g, pg in enumerate(p):
            pmf = _binom_pmf(m * per_model, float(pg))
            row = P[m * len(p) + g]
            k = min(len(pmf), wounds + 1)
            row[:k] = pmf[:k]
            row[wounds] += pmf[wounds + 1:].sum()
    return _alias(P)
