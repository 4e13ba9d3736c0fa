"""``mecha`` exact answers: the 9-state chain of :mod:`.plan` propagated round by round.

The plan's table gives, for every state ``3 * sev_a + sev_d`` and joint roll
(36 equally likely), the next state; so one round is the 9 x 9 matrix
``P[s, t] = #{rolls: s -> t} / 36``. Every switch and state is in that table
(evading, immobilised, the chart, ``second_m_destroys``), so every mecha fight
has an exact answer: the distribution is propagated for ``rounds`` rounds (or to
the end, capped at ``max_rounds``: what is still going there is a capped draw,
as in the kernel), the mass of each destroyed state recorded in the round it
arrives, and the final states read by the kernel's own :func:`.kernel.outcomes_from_states`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...exact import ROUND_OVERHEAD, ExactOutcome, from_rows, propagate
from ...kernels.portable import matmul
from ...ruleset import END, Rounds
from .kernel import outcomes_from_states
from .plan import _ABSORBING, MechaPlan

__all__ = ["round_matrix", "exact", "exact_work"]


def round_matrix(plan: MechaPlan) -> NDArray[np.float64]:
    """``P[s, t]``: probability that one round takes state ``s`` to ``t`` (36 joint rolls, each 1/36)."""
    P = np.zeros((9, 9))
    for s in range(9):
        np.add.at(P[s], plan.transition[s].astype(np.int64), 1 / 36)
    return P


def exact_work(plan: MechaPlan, rounds: Rounds, max_rounds: int) -> int:
    """A 9 x 9 vector-matrix product per round, and the overhead of each round."""
    limit = max_rounds if rounds == END else int(rounds)
    return 5 * ROUND_OVERHEAD + limit * (81 + ROUND_OVERHEAD)


def exact(plan: MechaPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
    """The exact outcome distribution of a mecha fight (every mecha fight has one)."""
    limit = max_rounds if rounds == END else int(rounds)
    P = round_matrix(plan)
    start = np.zeros(9)
    start[plan.start] = 1.0
    run = propagate(lambda p, r: matmul(p[None, :], P)[0], start, _ABSORBING, limit)
    out = outcomes_from_states(run.state, run.rounds, run.prob, rounds, limit)
    return from_rows(out, run.prob, n_categories=3)
