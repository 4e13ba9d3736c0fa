"""``duel`` general vectorised kernel: any number of models a side, pairing and ganging.

Arrays are (trials, models) per side, kept *compacted*: the models still standing
occupy the first columns, in listed order, so column k is the k-th standing model
and combat k (k >= 1) is simply column k against column k; combat 0 is column 0
plus every left-over standing model of the larger side.

Dice are never rolled one by one where the maths allows:

- duel roll: the highest of n d6 by inverse CDF (:func:`sim.dice.max_of_d6`);
- Toughness checks: the number of failed checks among H hits is Binomial(H, p_fail).
  With ``fewest_wounds`` every fail goes to the current weakest model, so the
  damage is a deterministic function of that count; instant death needs no die.
- ``spread`` over several models (only in a ganged combat): one Bernoulli per
  model per pass, because the deaths redirect later hits.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...dice import max_of_d6
from ...outcomes import Outcomes
from ...ruleset import END, Rounds
from .plan import DuelPlan, make_outcomes

__all__ = ["simulate_general"]

#: "Unlimited" space: more yards than any model can ever be pushed (damage <= 20 wounds).
_BIG_SPACE = 1_000_000
_SORT_BIG = 1 << 20


def simulate_general(plan: DuelPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """``n`` fights, one Python loop iteration per round (and per combat / model within it)."""
    limit = max_rounds if rounds == END else int(rounds)
    # final per-trial results; fights still going are carried in the compact active arrays
    remaining = [np.zeros(n, np.int64), np.zeros(n, np.int64)]
    alive = [np.zeros(n, np.int64), np.zeros(n, np.int64)]
    misted_out = [np.zeros(n, np.int64), np.zeros(n, np.int64)]
    n_rounds = np.full(n, limit, np.int64)
    w = [np.full((n, s.count), s.wounds, np.int32) for s in plan.sides]
    sp = [np.full((n, s.count), 0 if s.prone else (_BIG_SPACE if s.space is None else s.space), np.int32)
          for s in plan.sides]
    mi = [np.zeros(n, np.int32), np.zeros(n, np.int32)]
    act = np.arange(n)
    for r in range(1, limit + 1):
        _combat_phase(plan, rng, w, sp, mi)
        for i in (0, 1):
            if plan.sides[i].count > 1:
                w[i], sp[i] = _compact(w[i], sp[i])
        over = (w[0][:, 0] == 0) | (w[1][:, 0] == 0)
        if r == limit:
            over[:] = True
        done = act[over]
        for i in (0, 1):
            remaining[i][done] = w[i][over].sum(1)
            alive[i][done] = (w[i][over] > 0).sum(1)
            misted_out[i][done] = mi[i][over]
        n_rounds[done] = r
        keep = ~over
        act = act[keep]
        if act.size == 0:
            break
        w = [w[0][keep], w[1][keep]]
        sp = [sp[0][keep], sp[1][keep]]
        mi = [mi[0][keep], mi[1][keep]]
    return make_outcomes(plan, (remaining[0], remaining[1]), (alive[0], alive[1]), (misted_out[0], misted_out[1]),
                         n_rounds, rounds, limit)


def _compact(w: NDArray, sp: NDArray) -> tuple[NDArray, NDArray]:
    """Move the standing models to the first columns, keeping their listed order.

    Sorting the small keys ``fallen * 32 + column`` row by row and gathering through
    flat indices is the cheapest stable reordering NumPy offers here (counts <= 20).
    """
    m, c = w.shape
    key = ((w == 0) * 32 + np.arange(c)).astype(np.int16)
    key.sort(axis=1)
    idx = (key & 31) + (np.arange(m) * c)[:, None]
    return w.ravel()[idx], sp.ravel()[idx]


def _combat_phase(plan: DuelPlan, rng: np.random.Generator, W: list[NDArray], SP: list[NDArray],
                  misted: list[NDArray]) -> None:
    """One combat phase for every row, in place. Columns are compacted (standing models first)."""
    counts = [plan.sides[0].count, plan.sides[1].count]
    standing = [(W[0] > 0).sum(1), (W[1] > 0).sum(1)]
    pairs = np.minimum(standing[0], standing[1])
    start = [W[0].copy(), W[1].copy()]  # wounds at the start of the roll (pairing and hits)
    K = min(counts)
    if K > 1:
        # combats 1..pairs-1 are one model against one (column k against column k): all at once
        r_idx, k_idx = np.nonzero(pairs[:, None] > np.arange(1, K))
        if r_idx.size:
            cols = k_idx + 1
            w = [W[0][r_idx, cols], W[1][r_idx, cols]]
            sp = [SP[0][r_idx, cols], SP[1][r_idx, cols]]
            mist = _single_combats(plan, rng, w, sp)
            for i in (0, 1):
                W[i][r_idx, cols] = w[i]
                SP[i][r_idx, cols] = sp[i]
                misted[i] += np.bincount(r_idx, weights=mist[i], minlength=W[i].shape[0]).astype(misted[i].dtype)
    # combat 0: the first models plus every left-over standing model (ganging up)
    memb = []
    for i in (0, 1):
        cols = np.arange(counts[i])
        memb.append((cols == 0) | ((cols >= pairs[:, None]) & (start[i] > 0)))
    _resolve_combat(plan, rng, np.arange(W[0].shape[0]), memb, W, SP, misted, start)


def _single_combats(plan: DuelPlan, rng: np.random.Generator, w: list[NDArray], sp: list[NDArray]) -> list[NDArray]:
    """Many one-against-one combats (1-D arrays of wounds and space, updated in place); returns misted flags."""
    result = []
    for i, s in enumerate(plan.sides):
        result.append(np.ones(w[i].size, np.int8) if s.prone else max_of_d6(rng, w[i] + s.extra_die))
    loses = _losers(plan, result)
    hits = [w[0] + plan.sides[0].extra_hit, w[1] + plan.sides[1].extra_hit]  # wounds at the start of the roll
    mist = [np.zeros(w[0].size, np.int64), np.zeros(w[1].size, np.int64)]
    took = [np.zeros(w[0].size, w[0].dtype), np.zeros(w[1].size, w[1].dtype)]
    for j in (0, 1):
        hitter = 1 - j
        sel = np.flatnonzero(loses[j])
        if plan.instant[hitter]:
            mist[j][sel] = 1
            w[j][sel] = 0
            continue
        fails = rng.binomial(hits[hitter][sel], plan.p_fail[hitter])
        loss = np.minimum(fails * plan.sides[hitter].hit_damage, w[j][sel])
        w[j][sel] -= loss
        took[j][sel] = loss
    for j in (0, 1):
        hitter = 1 - j
        moving = (took[j] > 0) & (w[j] > 0)
        if not moving.any():
            continue
        backed = np.where(moving, np.minimum(took[j], sp[j]), 0)  # prone sides have no space
        blocked = np.where(moving, took[j] - backed, 0)
        sp[j] -= backed
        if blocked.any():
            fails = rng.binomial(blocked, plan.p_fail[hitter])
            w[j] -= np.minimum(fails * plan.sides[hitter].hit_damage, w[j])
    return mist


def _losers(plan: DuelPlan, result: list[NDArray]) -> list[NDArray]:
    """Per side: lost the duel roll (higher result wins, then higher WS, then both lose)."""
    s0, s1 = plan.sides
    tie = result[0] == result[1]
    if s0.ws > s1.ws:
        return [~tie & (result[0] < result[1]), (result[0] > result[1]) | tie]
    if s0.ws < s1.ws:
        return [(result[0] < result[1]) | tie, ~tie & (result[0] > result[1])]
    return [(result[0] < result[1]) | tie, (result[0] > result[1]) | tie]


def _resolve_combat(plan: DuelPlan, rng: np.random.Generator, rows: NDArray, memb: list[NDArray],
                    W: list[NDArray], SP: list[NDArray], misted: list[NDArray], start: list[NDArray]) -> None:
    w0 = [np.where(memb[i], start[i][rows], 0) for i in (0, 1)]
    result = []
    for i, s in enumerate(plan.sides):
        if s.prone:
            result.append(np.ones(rows.size, np.int8))
        else:
            dice = (w0[i] + s.extra_die * (w0[i] > 0)).sum(1)
            result.append(max_of_d6(rng, dice))
    loses = _losers(plan, result)
    hits = [(w0[i] + plan.sides[i].extra_hit * (w0[i] > 0)).sum(1) for i in (0, 1)]
    took = [None, None]
    for j in (0, 1):
        sel = np.flatnonzero(loses[j])
        if sel.size == 0:
            continue
        r = rows[sel]
        wj = W[j][r]
        tk, killed = _apply_hits(plan, rng, 1 - j, wj, memb[j][sel], hits[1 - j][sel])
        W[j][r] = wj
        misted[j][r] += killed
        took[j] = (sel, tk)
    for j in (0, 1):
        if took[j] is not None:
            sel, tk = took[j]
            _back_away(plan, rng, 1 - j, j, rows[sel], tk, W, SP)


def _apply_hits(plan: DuelPlan, rng: np.random.Generator, hitter: int, W: NDArray, memb: NDArray,
                H: NDArray) -> tuple[NDArray, NDArray]:
    """Hits ``H`` from side ``hitter`` on the member models of ``W`` (rows x models), in place.

    Returns the wounds each model lost to failed checks, and the models misted per row.
    """
    m, c = W.shape
    took = np.zeros_like(W)
    row = np.arange(m)[:, None]
    col = np.arange(c)[None, :]
    targets = memb & (W > 0)
    fewest = plan.assignment == "fewest_wounds"
    if plan.instant[hitter]:
        # Strength >= Toughness: each hit slays (and mists) one model, in the winner's order.
        key = np.where(targets, (W * 64 + col) if fewest else col, _SORT_BIG)
        rank = np.argsort(np.argsort(key, axis=1, kind="stable"), axis=1, kind="stable")
        killed = targets & (rank < H[:, None])
        W[killed] = 0
        return took, killed.sum(1)
    p = plan.p_fail[hitter]
    dmg = plan.sides[hitter].hit_damage
    n_targets = targets.sum(1)
    if fewest or n_targets.max(initial=0) <= 1:
        # every failed check goes to the current weakest model: only the number of fails matters
        fails = rng.binomial(H, p)
        if n_targets.max(initial=0) <= 1:
            order = np.argmax(targets, axis=1)[:, None]
        else:
            order = np.argsort(np.where(targets, W * 64 + col, _SORT_BIG), axis=1, kind="stable")
        for t in range(int(n_targets.max(initial=0))):
            cidx = order[:, t]
            w = W[row[:, 0], cidx]
            ok = targets[row[:, 0], cidx] & (fails > 0)
            need = -(-w // dmg)
            dies = ok & (fails >= need)
            loss = np.where(dies, w, np.where(ok, fails * dmg, 0))
            fails = np.where(dies, fails - need, np.where(ok, 0, fails))
            W[row[:, 0], cidx] = w - loss
            took[row[:, 0], cidx] += loss
        return took, np.zeros(m, np.int64)
    # spread: pass after pass, one hit to each standing target in listed order while hits remain
    left = H.astype(np.int64).copy()
    while True:
        standing = memb & (W > 0)
        give = standing & ((np.cumsum(standing, axis=1) - 1) < left[:, None])
        if not give.any():
            break
        fail = give & (rng.random((m, c)) < p)
        loss = np.where(fail, np.minimum(dmg, W), 0)
        W -= loss
        took += loss
        left -= give.sum(1)
    return took, np.zeros(m, np.int64)


def _back_away(plan: DuelPlan, rng: np.random.Generator, hitter: int, side: int, rows: NDArray, took: NDArray,
               W: list[NDArray], SP: list[NDArray]) -> None:
    """Surviving losers back away one yard per wound lost; each blocked yard is one more hit."""
    w = W[side][rows]
    sp = SP[side][rows]
    moving = (took > 0) & (w > 0)
    if not moving.any():
        return
    backed = np.where(moving, np.minimum(took, sp), 0)  # prone sides have sp = 0
    blocked = np.where(moving, took - backed, 0)
    SP[side][rows] = sp - backed
    if not blocked.any():
        return
    fails = rng.binomial(blocked, plan.p_fail[hitter])
    loss = np.minimum(fails * plan.sides[hitter].hit_damage, w)
    W[side][rows] = w - loss
