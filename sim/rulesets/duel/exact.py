"""``duel`` exact answers: the kernel's Markov chain propagated instead of sampled.

One model a side (:func:`.chain.chain_rows`) and small groups
(:func:`.groups.group_chain_rows`) are chains whose one-phase transition rows the
plan builds and the kernel samples through alias tables. Here the same rows become
a sparse matrix and the distribution is propagated phase by phase, to the end
(capped at ``max_rounds``: what is still going there is a capped draw, as in the
kernel) or for ``rounds`` phases; final states are read by the kernel's own
:func:`.plan.make_outcomes`. Matchups without a chain (groups beyond the
chain's size limits, ``spread`` with ganging too large to enumerate) have no
exact answer: Monte Carlo plays them.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ...errors import MatchupError
from ...exact import ROUND_OVERHEAD, ExactOutcome, from_rows, propagate
from ...ruleset import END, Rounds
from .chain import chain_rows
from .groups import group_chain_rows
from .plan import EXTRA_NAMES, DuelPlan, make_outcomes

__all__ = ["exact", "exact_work", "obstacle"]

#: Work units per transition entry: rebuilding the rows in Python (once) and a sparse product per phase.
BUILD_WORK_PER_ENTRY = 3_000
STEP_WORK_PER_ENTRY = 3


def obstacle(plan: DuelPlan) -> str | None:
    """Why this matchup has no exact chain, or None."""
    if plan.chain is not None:
        return None
    a, d = plan.sides
    what = "the chain" if a.count == 1 and d.count == 1 else "the group chain"
    return (f"duel {a.count} v {d.count}: {what} of this matchup is beyond its size limits "
            "(Monte Carlo plays it)")


def exact_work(plan: DuelPlan, rounds: Rounds, max_rounds: int) -> int | None:
    """Rebuilding the chain's rows, then one sparse product per phase (None: no chain)."""
    if obstacle(plan) is not None:
        return None
    limit = max_rounds if rounds == END else int(rounds)
    entries = int(plan.chain.row_len.sum())
    return 30 * ROUND_OVERHEAD + BUILD_WORK_PER_ENTRY * entries + limit * (STEP_WORK_PER_ENTRY * entries
                                                                          + ROUND_OVERHEAD)


#: Chains by what their rows depend on, kept for a process's repeated cells (rebuilding is most of the work).
_CHAINS: OrderedDict[tuple, tuple] = OrderedDict()
_CHAINS_KEPT = 64


def _chain(plan: DuelPlan) -> tuple[Any, dict[str, list]]:
    """The chain's one-phase transition as a sparse matrix of to-state rows (a phase is one product), and its
    per-state arrays; the rows are the kernel's (:func:`.chain.chain_rows`, :func:`.groups.group_chain_rows`)."""
    from scipy import sparse  # here, not at the top: loading the rulesets stays fast

    key = (plan.sides, plan.instant, plan.p_fail, plan.assignment)
    if key in _CHAINS:
        _CHAINS.move_to_end(key)
        return _CHAINS[key]
    one_each = plan.sides[0].count == 1 and plan.sides[1].count == 1
    rows, per_state = chain_rows(plan) if one_each else group_chain_rows(plan)
    n = len(rows)
    src = np.repeat(np.arange(n), [len(r) for r in rows])
    dst = np.array([t for r in rows for t, _ in r], np.int64)
    prob = np.array([p for r in rows for _, p in r], np.float64)
    _CHAINS[key] = (sparse.csr_matrix((prob, (dst, src)), shape=(n, n)), per_state)
    if len(_CHAINS) > _CHAINS_KEPT:
        _CHAINS.popitem(last=False)
    return _CHAINS[key]


def exact(plan: DuelPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
    """The exact outcome distribution of a matchup with a chain (see :func:`obstacle`)."""
    why = obstacle(plan)
    if why is not None:
        raise MatchupError(why)
    step_matrix, per_state = _chain(plan)
    n = step_matrix.shape[0]
    limit = max_rounds if rounds == END else int(rounds)
    start = np.zeros(n)
    start[0] = 1.0
    run = propagate(lambda p, r: step_matrix @ p, start, np.asarray(per_state["terminal"], bool), limit)
    s = run.state
    wounds = [np.asarray(w, np.int64)[s] for w in per_state["wounds"]]
    misted = [np.asarray(m, np.int64)[s] for m in per_state["misted"]]
    if "alive" in per_state:
        alive = [np.asarray(a, np.int64)[s] for a in per_state["alive"]]
    else:  # one model a side: standing while it has wounds
        alive = [(w > 0).astype(np.int64) for w in wounds]
    out = make_outcomes(plan, (wounds[0], wounds[1]), (alive[0], alive[1]), (misted[0], misted[1]), run.rounds,
                        rounds, limit, weights=run.prob)
    return from_rows(out, run.prob, n_categories=2, extra_names=EXTRA_NAMES)
