"""``mecha`` vectorised kernel: every fight moved through the transition table, one joint roll a round.

The kernel draws one integer in 0..35 per fight and round (the joint roll of
both dice) and moves every fight still going through the 9 x 36 table of
:mod:`.plan`; one round from a single start state only counts the 36 rolls.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...outcomes import ATTACKER, DEFENDER, DRAW, Outcomes
from ...ruleset import END, Rounds
from .plan import _ABSORBING, MechaPlan

__all__ = ["simulate", "final_states", "outcomes_from_states"]


def simulate(plan: MechaPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """Outcomes of ``n`` fights of ``plan``, dice drawn from ``rng`` (:meth:`sim.ruleset.Ruleset.simulate`)."""
    limit = max_rounds if rounds == END else int(rounds)
    if limit == 1:
        # One round from a single start state: only the joint dice matter, so
        # count them (36 bins) and map the counts to final states.
        counts = np.bincount(rng.integers(0, 36, size=n, dtype=np.int8), minlength=36).astype(np.int64)
        by_state = np.bincount(plan.transition[plan.start], weights=counts, minlength=9).astype(np.int64)
        return outcomes_from_states(np.arange(9), np.ones(9, np.int64), by_state, rounds, limit)
    state, n_rounds = final_states(
        plan, n, lambda r, idx: rng.integers(0, 36, size=len(idx), dtype=np.int8), rounds, max_rounds)
    code = state.astype(np.int64) * (limit + 1) + n_rounds
    counts = np.bincount(code, minlength=9 * (limit + 1))
    nz = np.flatnonzero(counts)
    return outcomes_from_states(nz // (limit + 1), nz % (limit + 1), counts[nz].astype(np.int64), rounds, limit)


def final_states(plan: MechaPlan, n: int, roll, rounds: Rounds, max_rounds: int) -> tuple[NDArray, NDArray]:
    """Final state (3*sev_a + sev_d) and rounds fought of ``n`` fights.

    Dice come from ``roll(round, trial_indices)``, which returns one joint
    roll 6*(a-1) + (d-1) per listed fight: the kernel draws them, tests pass
    the same dice they give the reference.
    """
    limit = max_rounds if rounds == END else int(rounds)
    T = plan.transition
    all_idx = np.arange(n)
    state = T[plan.start][roll(1, all_idx)]
    n_rounds = np.ones(n, np.int64)
    alive = all_idx[~_ABSORBING[state]]
    r = 1
    while alive.size and r < limit:
        r += 1
        state[alive] = T[state[alive], roll(r, alive)]
        n_rounds[alive] = r
        alive = alive[~_ABSORBING[state[alive]]]
    return state, n_rounds


def outcomes_from_states(states: NDArray, n_rounds: NDArray, weights: NDArray, rounds: Rounds, limit: int) -> Outcomes:
    """Outcomes of fights ending in ``states`` after ``n_rounds`` rounds, each counted ``weights`` times."""
    states = np.asarray(states)
    sev_a, sev_d = states // 3, states % 3
    capped = (rounds == END) & (n_rounds >= limit) & ~_ABSORBING[states]
    winner = np.where(sev_a < sev_d, ATTACKER, np.where(sev_a > sev_d, DEFENDER, DRAW))
    winner = np.where(capped, DRAW, winner).astype(np.int8)
    return Outcomes(winner, sev_a, sev_d, sev_a.astype(np.int8), sev_d.astype(np.int8),
                    np.asarray(n_rounds, np.int64), capped, weights=weights)
