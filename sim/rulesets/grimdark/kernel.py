"""``grimdark`` general kernel: strike step by strike step, one draw per pool and trial.

A side's state is its wounds lost ``L`` per trial (see :mod:`.plan`).
In each step every pool of identical attacks draws its unsaved wounds with one
uniform from the alias rows of ``min(Binomial(attacks, p[target]), W)`` (or one
``rng.binomial`` when the pool is too large for a table), then the wounds are
applied in the spec's order. Fights that are over leave the working set (in
batches), so late rounds cost only the fights still going.

Memory per block is a handful of ``int64`` arrays of the block's length (the
state, one draw per pool of the step) whatever the squads' sizes; the plan's
tables are bounded separately (``MAX_COUNT_ENTRIES`` per pool, O(wounds) for the
rest).
"""

from __future__ import annotations

import numpy as np

from ...outcomes import ATTACKER, DEFENDER, DRAW, Outcomes
from ...ruleset import END, Rounds
from .plan import GrimdarkPlan, Pool, SidePlan
from .reference import SURVIVED, WIPED_OUT

__all__ = ["simulate_pools", "outcomes_of"]


def simulate_pools(plan: GrimdarkPlan, n: int, rng: np.random.Generator, limit: int):
    """``n`` fights of at most ``limit`` rounds: ``(L attacker, L defender, rounds fought)`` per trial."""
    sa, sd = plan.sides
    W = (sa.wounds, sd.wounds)
    La = np.zeros(n, np.int64)
    Ld = np.zeros(n, np.int64)
    n_rounds = np.zeros(n, np.int64)
    idx = np.arange(n)
    la, ld = La.copy(), Ld.copy()
    # A fight that is over is stationary (a wiped-out side makes no attacks and the other
    # cannot lose more than all), so it may stay in the working set for a while: the set is
    # compacted once a quarter of it is over. ``fought`` counts the rounds each trial ended
    # still going: it fought ``fought + 1`` rounds.
    fought = np.zeros(n, np.int64)
    for r in range(1, limit + 1):
        steps = plan.steps_first if r == 1 else plan.steps_later
        start = (la, ld)
        state = [la, ld]
        for step in steps:
            now = (state[0], state[1])
            received: list[list[tuple[np.ndarray, Pool]]] = [[], []]
            for pool in step:
                k = pool.side
                received[1 - k].append((_draw(plan, pool, now, start[k], rng), pool))
            for k in (0, 1):
                if received[k]:
                    state[k] = _apply(received[k], state[k], W[k])
        la, ld = state
        if r == limit:
            break
        going = (la < W[0]) & (ld < W[1])
        n_going = int(np.count_nonzero(going))
        if n_going == 0:
            break
        fought += going
        if 4 * (len(la) - n_going) > len(la):
            over = ~going
            ended = idx[over]
            La[ended], Ld[ended], n_rounds[ended] = la[over], ld[over], fought[over]
            idx, la, ld, fought = idx[going], la[going], ld[going], fought[going]
    La[idx], Ld[idx], n_rounds[idx] = la, ld, fought
    return La, Ld, n_rounds + 1


def _draw(plan: GrimdarkPlan, pool: Pool, now: tuple[np.ndarray, np.ndarray], start_own: np.ndarray,
          rng: np.random.Generator) -> np.ndarray:
    """Unsaved wounds of ``pool`` (capped at the enemy's wounds), one draw per trial."""
    k = pool.side
    own, enemy = plan.sides[k], plan.sides[1 - k]
    attacks = pool.attacks[now[k]] if own.all_engaged else _attacks(own, pool, now[k], start_own)
    T = len(pool.p_class)
    cls = pool.classes[enemy.front[now[1 - k]]] if T > 1 else 0
    if pool.counts is not None:
        return pool.counts.sample(attacks * T + cls if T > 1 else attacks, rng)
    p = pool.p_class[cls] if T > 1 else float(pool.p_class[0])
    return np.minimum(rng.binomial(attacks, p), enemy.wounds)


def _apply(received: list[tuple[np.ndarray, Pool]], L: np.ndarray, wounds: int) -> np.ndarray:
    """Apply one step's unsaved wounds in order; wounds of one map are summed first (they commute)."""
    first = received[0][1].wound_map
    if all(pool.wound_map is first for _, pool in received):
        total = received[0][0]
        for u, _ in received[1:]:
            total = total + u
        return received[0][1].apply(L, total, wounds)
    for u, pool in received:
        L = pool.apply(L, u, wounds)
    return L


def _attacks(side: SidePlan, pool: Pool, L: np.ndarray, L0: np.ndarray) -> np.ndarray:
    """Attacks of ``pool`` at ``L`` (wounds lost now) when only some models are engaged (fixed at ``L0``).

    The engaged models are the first ``engaged`` alive at the start of the round,
    in listed order; a group's models in that range attack with the group's
    weapon, the next ``supporting`` once (within 2"), the rest not at all (out of combat).
    """
    d = side.dead[L]
    M = side.models
    cut = np.minimum(side.dead[L0] + side.engaged, M)
    C = pool.cum_attacks
    if pool.engaged:
        return C[np.maximum(cut, d)] - C[d]
    behind = np.minimum(cut + side.supporting, M)
    return C[np.maximum(behind, d)] - C[np.maximum(cut, d)]


def outcomes_of(plan: GrimdarkPlan, La: np.ndarray, Ld: np.ndarray, n_rounds: np.ndarray, rounds: Rounds,
                weights: np.ndarray | None = None) -> Outcomes:
    """Outcomes of fights ending with wounds lost ``La``, ``Ld`` after ``n_rounds`` rounds.

    A squad that wipes out the other and has models left wins; both standing after
    N rounds, more wounds inflicted wins; both wiped out, equal or a capped fight
    to the end, a draw.
    """
    sa, sd = plan.sides
    a_alive, d_alive = La < sa.wounds, Ld < sd.wounds
    both = a_alive & d_alive
    capped = both if rounds == END else np.zeros(len(La), bool)
    by_wounds = np.where(Ld > La, ATTACKER, np.where(La > Ld, DEFENDER, DRAW))
    winner = np.where(a_alive & ~d_alive, ATTACKER, np.where(d_alive & ~a_alive, DEFENDER, DRAW))
    winner = np.where(both & ~capped, by_wounds, winner).astype(np.int8)
    cat_a = np.where(a_alive, SURVIVED, WIPED_OUT).astype(np.int8)
    cat_d = np.where(d_alive, SURVIVED, WIPED_OUT).astype(np.int8)
    extras = {"models_lost_attacker": sa.dead[La], "models_lost_defender": sd.dead[Ld]}
    return Outcomes(winner, La, Ld, cat_a, cat_d, n_rounds, capped, extras, weights=weights)
