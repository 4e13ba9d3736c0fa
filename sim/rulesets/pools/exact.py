"""``pools`` exact answers: engagement by engagement over the distinct states of the fight.

Between engagements a fight is its state: both sides' wounds left, Shaken, and
who retreated (the others follow: damage is the wounds lost, flanking comes from
the retreat). In one engagement each side receives (Shaken by the check, unsaved
hits) from the other side's pool, independently given the state, with the
distribution the kernel samples from (:func:`.kernel.received_table`: binomial
hits thinned by binomial saves). So each round every state is expanded into the
product of the two sides' tables, settled by the kernel's own
:func:`.kernel._settle` (wounds, winner, retreat, a stationary loser destroyed),
and the rows still going are merged by state; fights that end, or reach the
round limit, are read by the kernel's :func:`.kernel._finish`. A fight to the end
still going at ``max_rounds`` is a capped draw, as in the kernel.

One engagement (the default) is always exact. Longer fights are exact while the
expansion stays small: the work grows with the states (wounds left of both
sides) times the two tables (twice each pool), so big blocks over many rounds
are left to Monte Carlo (:data:`MAX_ROWS`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...errors import MatchupError
from ...exact import ROUND_OVERHEAD, ExactOutcome, combine, from_rows
from ...ruleset import END, Rounds
from .kernel import _finish, _round_numbers, _settle, _State, p_hit, received_table
from .plan import PoolsPlan

__all__ = ["exact", "exact_work", "obstacle", "MAX_ROWS"]

#: Most (state, attacker cell, defender cell) rows one round may expand to (a bound), so memory stays bounded.
MAX_ROWS = 2_000_000
#: Work units per expanded row (settling it: a few dozen vectorised operations; measured ~120 ns).
WORK_PER_ROW = 120
EXTRAS = ("shaken_attacker", "shaken_defender", "bases_lost_attacker", "bases_lost_defender")


def _rows(plan: PoolsPlan) -> tuple[int, int, int, int]:
    """Rows of round 1; a bound on the rows of any later round; estimates of round 2's and of each later one's.

    Cells of a receiver's table: (Shaken by the check, unsaved hits), at most twice
    the hitter's largest pool plus 2, and after lumping (see :func:`_table_cells`)
    at most twice the larger side's wounds plus 4. States between rounds: wounds
    left of both sides, Shaken of each, who retreated (12 combinations); about
    half of them are reached.
    """
    wounds = [st.bases * st.wounds for st in plan.sides]
    cells = [2 * ((plan.sides[1 - s].attack + 1) * plan.sides[1 - s].bases + 1) for s in (0, 1)]
    lumped = [min(c, 2 * max(wounds) + 4) for c in cells]
    states = 12 * (wounds[0] + 1) * (wounds[1] + 1)
    first = cells[0] * cells[1]
    typical = lumped[0] * lumped[1]
    return first, states * typical, min(states // 2, first) * typical, states // 2 * typical


def obstacle(plan: PoolsPlan, rounds: Rounds, max_rounds: int) -> str | None:
    """Why this fight has no exact answer here, or None."""
    limit = max_rounds if rounds == END else int(rounds)
    first, later, _, _ = _rows(plan)
    worst = max(first, later if limit > 1 else 0)
    if worst > MAX_ROWS:
        a, d = plan.matchup.attacker, plan.matchup.defender
        return (f"pools {a.bases} v {d.bases} bases, rounds={rounds}: the exact state space could expand to "
                f"{worst:,} rows a round (at most {MAX_ROWS:,}); Monte Carlo plays it")
    return None


def exact_work(plan: PoolsPlan, rounds: Rounds, max_rounds: int) -> int | None:
    """The estimated rows expanded over all rounds (see :func:`_rows`) times their settling, plus overheads."""
    if obstacle(plan, rounds, max_rounds) is not None:
        return None
    limit = max_rounds if rounds == END else int(rounds)
    first, _, second, later = _rows(plan)
    rows = first + (second if limit > 1 else 0) + later * max(limit - 2, 0)
    return 50 * ROUND_OVERHEAD + WORK_PER_ROW * rows + limit * 30 * ROUND_OVERHEAD


def _table_cells(table: NDArray[np.float64], shaken: bool, most: int) -> tuple[NDArray, NDArray, NDArray]:
    """(Shaken by the check, unsaved hits, probability) of a received table's non-zero cells, lumped where
    the lumps cannot change the settlement.

    A receiver already Shaken stays so, whatever the check. Unsaved hits above
    ``most`` (the larger of the two sides' wounds left) all destroy the receiver and
    outnumber any hits the other side can take without being destroyed itself (and
    with both destroyed, who lost does not matter): they are one cell, ``most + 1``.
    """
    table = table.copy()
    if shaken:
        table = np.stack([np.zeros(table.shape[1]), table.sum(0)])
    if table.shape[1] > most + 2:
        table[:, most + 1] += table[:, most + 2:].sum(1)
        table = table[:, : most + 2]
    c, u = np.nonzero(table > 0)
    return c.astype(bool), u.astype(np.int64), table[c, u]


def exact(plan: PoolsPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
    """The exact outcome distribution of a pools fight (see :func:`obstacle`)."""
    why = obstacle(plan, rounds, max_rounds)
    if why is not None:
        raise MatchupError(why)
    sides, setup = plan.sides, plan.setup
    limit = max_rounds if rounds == END else int(rounds)
    fixed = rounds != END
    st = _State.start(sides, setup, 1)
    prob = np.ones(1)
    cache: dict[tuple[int, int, int], tuple] = {}
    ended: list[ExactOutcome] = []  # the fights that ended, collapsed round by round
    for r in range(1, limit + 1):
        att = 0 if r % 2 == 1 else 1
        if r > 1 and setup.rally:  # rally: the Shaken unit recovers at the start of its own turn as attacker
            st.shaken[att] = np.zeros(prob.size, bool)
        pools, thresholds = _round_numbers(sides, setup, r, st.wl, st.shaken, st.retreated)
        cells = []
        for s in (0, 1):  # side s receives the other side's pool
            o = 1 - s
            per_state = []
            most = np.maximum(st.wl[0], st.wl[1]).tolist()
            for pool, t, sh, k in zip(pools[o].tolist(), thresholds[o].tolist(), st.shaken[s].tolist(), most):
                key = (s, int(pool), int(t), bool(sh), int(k))
                if key not in cache:
                    table = received_table(int(pool), float(p_hit(np.array(t))), sides[s])
                    cache[key] = _table_cells(table, bool(sh), int(k))
                per_state.append(cache[key])
            cells.append(per_state)
        rows, unsaved, broke = _expand(st, prob, cells)
        new_prob = rows.pop("prob")
        nxt = _State(rows["idx"], rows["wl"], rows["damage"], rows["shaken"], rows["retreated"],
                     [np.zeros(new_prob.size, bool)] * 2, [np.zeros(new_prob.size, bool)] * 2)
        nxt.shaken = [nxt.shaken[s] | broke[s] for s in (0, 1)]  # new Shaken counts from the next roll on
        _settle(sides, nxt, unsaved)
        over = nxt.destroyed[0] | nxt.destroyed[1]
        finish = np.ones(new_prob.size, bool) if r == limit else over
        if finish.any():
            done = _pick(nxt, finish)
            out = _finish(sides, done, np.full(int(finish.sum()), r), limit, fixed)
            ended.append(from_rows(out, new_prob[finish], n_categories=3, extra_names=EXTRAS))
        if r == limit or finish.all():
            break
        st, prob = _merge(_pick(nxt, ~finish), new_prob[~finish], sides)
    return combine(ended)


def _expand(st: _State, prob: NDArray[np.float64], cells: list[list[tuple]]) -> tuple[dict, list, list]:
    """Every (state, attacker's cell, defender's cell) combination as one row: the state's arrays repeated,
    the cells' unsaved hits and Shaken, and the product of the three probabilities."""
    n_a = np.array([len(c[2]) for c in cells[0]])
    n_d = np.array([len(c[2]) for c in cells[1]])
    per = n_a * n_d
    state = np.repeat(np.arange(prob.size), per)
    j = np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)
    ja, jd = j // np.repeat(n_d, per), j % np.repeat(n_d, per)
    flat = []
    for s, n in ((0, n_a), (1, n_d)):
        c, u, q = (np.concatenate([x[k] for x in cells[s]]) for k in range(3))
        at = np.repeat(np.cumsum(n) - n, per) + (ja if s == 0 else jd)
        flat.append((c[at], u[at], q[at]))
    rows = {"idx": np.arange(state.size), "prob": prob[state] * flat[0][2] * flat[1][2]}
    for name in ("wl", "damage", "shaken", "retreated"):
        rows[name] = [getattr(st, name)[s][state] for s in (0, 1)]
    return rows, [flat[0][1], flat[1][1]], [flat[0][0], flat[1][0]]


def _pick(st: _State, mask: NDArray[np.bool_]) -> _State:
    """The rows ``mask`` of ``st``, every field."""
    fields = [[getattr(st, f)[s][mask] for s in (0, 1)] for f in ("wl", "damage", "shaken", "retreated",
                                                                  "destroyed", "lost")]
    return _State(np.arange(int(mask.sum())), *fields)


def _merge(st: _State, prob: NDArray[np.float64], sides) -> tuple[_State, NDArray[np.float64]]:
    """Rows with the same state (wounds left, Shaken, retreated) merged, their probabilities added."""
    full = [sides[s].bases * sides[s].wounds + 1 for s in (0, 1)]
    key = (((st.wl[0] * full[1] + st.wl[1]) * 2 + st.shaken[0]) * 2 + st.shaken[1]) * 4 \
        + st.retreated[0] * 2 + st.retreated[1]
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=prob, minlength=uniq.size)
    out = _pick(st, np.zeros(prob.size, bool))
    for f in ("wl", "damage", "shaken", "retreated", "destroyed", "lost"):
        setattr(out, f, [getattr(st, f)[s][first] for s in (0, 1)])
    out.idx = np.arange(uniq.size)
    return out, merged
