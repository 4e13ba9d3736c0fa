"""``grimdark`` fast path: a whole round as one draw from its exact transition distribution.

When every model of both squads is engaged (the default), the strikers of a
step depend only on the current wounds lost ``(La, Ld)``, so a fight is a Markov
chain on ``(La, Ld)``. A step's transition row from ``(La, Ld)`` is the product
of two independent distributions (what the attacker's pools do to the defender,
and the reverse), each a fold of binomials of unsaved wounds through the same
application rule as the binomial kernel (``min(L + u, W)`` or the instant-death
wound map). A round is the product of its step matrices. The kernel then moves each
trial one round with one uniform through Walker's alias table of its row, which
is exact and costs a few array operations per trial and round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...kernels.alias import alias_sample, alias_tables
from ...kernels.portable import binomial_pmf, matmul

__all__ = ["MAX_STATES", "ChainTables", "chain_tables", "round_matrix", "sample_rows"]

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
    """Binomial(n, p) probabilities of 0..n (Pascal's recurrence: the same bits on every machine)."""
    return binomial_pmf(n, p)


def _received(plan, step, k: int, l_self: int, l_enemy: int) -> NDArray[np.float64]:
    """Distribution of side ``k``'s wounds lost after the step's pools against it."""
    side, enemy = plan.sides[k], plan.sides[1 - k]
    W = side.wounds
    dist = np.zeros(W + 1)
    dist[l_self] = 1.0
    for pool in step:
        if pool.side != 1 - k:
            continue
        n = int(pool.attacks[l_enemy])
        pmf = _binom_pmf(n, float(pool.p[side.front[l_self]]))
        u = np.minimum(np.arange(n + 1), W)
        new = np.zeros(W + 1)
        for l in np.flatnonzero(dist):
            np.add.at(new, pool.apply(np.full(n + 1, l), u, W), dist[l] * pmf)
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
        R = matmul(R, M)  # in a fixed order: BLAS sums differently per CPU
    return R


def chain_tables(plan) -> ChainTables | None:
    """The fast path's tables, or None when it does not apply (engagement limits, too many states)."""
    sa, sd = plan.sides
    if not (sa.all_engaged and sd.all_engaged):
        return None
    na, nd = sa.wounds + 1, sd.wounds + 1
    if na * nd > MAX_STATES:
        return None
    pf, af = alias_tables(round_matrix(plan, True))
    pl, al = alias_tables(round_matrix(plan, False))
    return ChainTables(na * nd, nd, pf, af, pl, al)


def sample_rows(tables: ChainTables, first: bool, state: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
    """Next state of every trial from the round's transition rows."""
    prob, alias = (tables.prob_first, tables.alias_first) if first else (tables.prob_later, tables.alias_later)
    return alias_sample(prob, alias, tables.n_states, state, rng)
