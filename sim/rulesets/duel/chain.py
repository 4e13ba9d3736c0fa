"""``duel`` fast kernel for one model a side: the fight as a small Markov chain.

With one model a side, a combat phase depends only on each model's remaining
wounds, the yards it can still back up, and whether it is down (and misted). The
exact one-phase transition distribution of every reachable state is built once
per matchup from the same ingredients the general kernel samples:

- the duel roll from the order statistics of d6 maxima, ``P(max of n <= k) = (k/6)**n``;
- the failed Toughness checks from ``Binomial(hits, p_fail)`` (and again for the
  hits of blocked yards).

The kernel then moves every fight one phase per uniform draw with Walker's alias
method (two table look-ups, no search), so a fight costs a few array operations
per phase whatever its wounds.

Space is kept as ``min(yards left, wounds left)``: a model with at least as many
yards as wounds can never be blocked again (it backs at most its wounds in total),
so the clamp is exact and keeps the state space small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...kernels.portable import binomial_pmf, max_of_d6_pmf
from ...outcomes import Outcomes
from ...ruleset import END, Rounds
from .plan import DuelPlan, make_outcomes

__all__ = ["Chain", "ChainRows", "build_chain", "chain_rows", "simulate_chain", "duel_probabilities", "loser_distribution"]

#: Largest chain built; bigger matchups use the general kernel.
MAX_STATES = 6_000
MAX_ENTRIES = 600_000

# A side's status: (wounds left, yards left clamped to wounds, misted). Down: (0, 0, misted).
Status = tuple[int, int, bool]


@dataclass(frozen=True)
class Chain:
    """Alias tables of the one-phase transition of every reachable state.

    Attributes
    ----------
    start : int
    terminal : ndarray of bool
        Per state: a side is down.
    row_start, row_len : ndarray
        Each state's slice of the flat alias arrays.
    alias_prob : ndarray of float64
    next_main, next_alias : ndarray of int32
        Next state on the kept / the aliased branch.
    wounds, misted : ndarray, shape (2, states)
        Decoded per side: wounds left in total, models misted.
    alive : ndarray, shape (2, states), optional
        Models standing per side (None: one model a side, standing iff wounds > 0).
    """

    start: int
    terminal: NDArray[np.bool_]
    row_start: NDArray[np.int64]
    row_len: NDArray[np.float64]
    alias_prob: NDArray[np.float64]
    next_main: NDArray[np.int32]
    next_alias: NDArray[np.int32]
    wounds: NDArray[np.int64]
    misted: NDArray[np.int64]
    alive: NDArray[np.int64] | None = None


def _max_pmf(n_dice: int) -> list[float]:
    """P(highest of n d6 = k) for k = 1..6; a prone side (no dice) counts as a 1."""
    return max_of_d6_pmf(n_dice)  # exact integers, one division: ``(k/6) ** n`` (C pow) differs by machine


def duel_probabilities(n0: int, n1: int, ws0: int, ws1: int) -> tuple[float, float, float]:
    """(P attacker wins, P defender wins, P both lose) of one duel roll with n0, n1 dice (0 = prone)."""
    p0, p1 = _max_pmf(n0), _max_pmf(n1)
    gt = sum(p0[a] * p1[b] for a in range(6) for b in range(6) if a > b)
    lt = sum(p0[a] * p1[b] for a in range(6) for b in range(6) if a < b)
    eq = 1.0 - gt - lt
    if ws0 > ws1:
        return gt + eq, lt, 0.0
    if ws0 < ws1:
        return gt, lt + eq, 0.0
    return gt, lt, eq


def _binom(n: int, p: float) -> list[float]:
    return binomial_pmf(n, p).tolist()  # not comb * p ** k ...: the C library's pow differs by machine


def loser_distribution(plan: DuelPlan, hitter: int, hits: int, status: Status) -> dict[Status, float]:
    """Distribution of a losing model's status after ``hits`` hits and backing away."""
    loser = 1 - hitter
    w, s, _ = status
    if plan.instant[hitter]:
        return {(0, 0, True): 1.0}  # hits >= 1 always: the model is slain and misted
    p = plan.p_fail[hitter]
    dmg = plan.sides[hitter].hit_damage
    prone = plan.sides[loser].prone
    out: dict[Status, float] = {}
    for fails, pf in enumerate(_binom(hits, p)):
        lost = min(fails * dmg, w)
        if lost == w:
            key: Status = (0, 0, False)
            out[key] = out.get(key, 0.0) + pf
            continue
        if lost == 0:
            out[status] = out.get(status, 0.0) + pf
            continue
        room = 0 if prone else s
        backed = min(lost, room)
        blocked = lost - backed
        for fails2, pf2 in enumerate(_binom(blocked, p)):
            left = w - lost - min(fails2 * dmg, w - lost)
            key = (0, 0, False) if left == 0 else (left, min(s - backed, left), False)
            out[key] = out.get(key, 0.0) + pf * pf2
    return out


def _side_start(plan: DuelPlan, i: int) -> Status:
    s = plan.sides[i]
    space = 0 if s.prone else (s.wounds if s.space is None else min(s.space, s.wounds))
    return (s.wounds, space, False)


def _alias(probs: list[float]) -> tuple[list[float], list[int]]:
    """Walker/Vose alias table: ``(keep probability, alias index)`` per cell."""
    k = len(probs)
    total = sum(probs)
    scaled = [p * k / total for p in probs]
    keep = [1.0] * k
    alias = list(range(k))
    small = [i for i, v in enumerate(scaled) if v < 1.0]
    large = [i for i, v in enumerate(scaled) if v >= 1.0]
    while small and large:
        lo, hi = small.pop(), large.pop()
        keep[lo] = scaled[lo]
        alias[lo] = hi
        scaled[hi] = scaled[hi] + scaled[lo] - 1.0
        (small if scaled[hi] < 1.0 else large).append(hi)
    return keep, alias


#: A chain before packing: transition rows ``[(next state, p), ...]`` per state, and per-state arrays.
ChainRows = tuple[list[list[tuple[int, float]]], dict[str, list]]


def build_chain(plan: DuelPlan) -> Chain | None:
    """The alias-table chain of a one-model-a-side matchup, or None if too large."""
    built = chain_rows(plan)
    return None if built is None else pack_chain(built[0], **built[1])


def chain_rows(plan: DuelPlan) -> ChainRows | None:
    """The one-phase transition rows of every reachable state of a one-model-a-side matchup (None: too large).

    State 0 is the start; the per-state arrays are ``terminal``, ``wounds`` and
    ``misted`` (as :class:`Chain` holds them). The kernel samples the rows through
    alias tables (:func:`build_chain`); exact answers propagate them.
    """
    if plan.sides[0].count != 1 or plan.sides[1].count != 1:
        return None
    start = (_side_start(plan, 0), _side_start(plan, 1))
    index = {start: 0}
    states = [start]
    rows: list[list[tuple[int, float]]] = []
    entries = 0
    pos = 0
    while pos < len(states):
        a, d = states[pos]
        pos += 1
        if a[0] == 0 or d[0] == 0:
            rows.append([(index[(a, d)], 1.0)])
            continue
        s0, s1 = plan.sides
        n0 = 0 if s0.prone else a[0] + s0.extra_die
        n1 = 0 if s1.prone else d[0] + s1.extra_die
        win0, win1, both = duel_probabilities(n0, n1, s0.ws, s1.ws)
        nxt: dict[tuple[Status, Status], float] = {}
        if win0 > 0:
            for st, p in loser_distribution(plan, 0, a[0] + s0.extra_hit, d).items():
                nxt[(a, st)] = nxt.get((a, st), 0.0) + win0 * p
        if win1 > 0:
            for st, p in loser_distribution(plan, 1, d[0] + s1.extra_hit, a).items():
                nxt[(st, d)] = nxt.get((st, d), 0.0) + win1 * p
        if both > 0:
            # a double loss is simultaneous: both sides' hits come from the wounds at the start
            da = loser_distribution(plan, 1, d[0] + s1.extra_hit, a)
            dd = loser_distribution(plan, 0, a[0] + s0.extra_hit, d)
            for sa, pa in da.items():
                for sd, pd in dd.items():
                    nxt[(sa, sd)] = nxt.get((sa, sd), 0.0) + both * pa * pd
        row = []
        for key, p in nxt.items():
            if p <= 0.0:
                continue
            if key not in index:
                index[key] = len(states)
                states.append(key)
            row.append((index[key], p))
        rows.append(row)
        entries += len(row)
        if len(states) > MAX_STATES or entries > MAX_ENTRIES:
            return None
    return rows, dict(
        terminal=[a[0] == 0 or d[0] == 0 for a, d in states],
        wounds=[[a[0] for a, _ in states], [d[0] for _, d in states]],
        misted=[[int(a[2]) for a, _ in states], [int(d[2]) for _, d in states]],
    )


def pack_chain(rows: list[list[tuple[int, float]]], **per_state: list) -> Chain:
    """A :class:`Chain` from its transition rows ``[(next_state, p), ...]``: one alias table per row.

    ``per_state`` gives the state arrays (``terminal``, ``wounds``, ``misted`` and,
    for groups, ``alive``), indexed like ``rows``.
    """
    row_start, row_len, keep_all, main_all, alias_all = [], [], [], [], []
    for row in rows:
        keep, alias = _alias([p for _, p in row])
        row_start.append(len(keep_all))
        row_len.append(len(row))
        keep_all += keep
        main_all += [t for t, _ in row]
        alias_all += [row[j][0] for j in alias]
    arrays = {k: np.array(v, bool if k == "terminal" else np.int64) for k, v in per_state.items()}
    return Chain(
        start=0,
        row_start=np.array(row_start, np.int64),
        row_len=np.array(row_len, np.float64),
        alias_prob=np.array(keep_all, np.float64),
        next_main=np.array(main_all, np.int32),
        next_alias=np.array(alias_all, np.int32),
        **arrays,
    )


def simulate_chain(plan: DuelPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """``n`` fights of a chain matchup: one uniform per fight and phase, outcomes returned weighted.

    Fights are exchangeable, so only the states of the fights still going are kept;
    each finished fight is recorded by its final state and the phase it ended in.
    """
    ch: Chain = plan.chain
    limit = max_rounds if rounds == END else int(rounds)
    stride = limit + 1
    st = np.full(n, ch.start, np.int32)
    codes = []
    for r in range(1, limit + 1):
        u = rng.random(st.size) * ch.row_len[st]
        # floor(u * K) <= K - 1 for u < 1 in IEEE round-to-nearest, so no guard is needed
        j = u.astype(np.int64)
        k = ch.row_start[st] + j
        nxt = np.where(u - j < ch.alias_prob[k], ch.next_main[k], ch.next_alias[k])
        over = ch.terminal[nxt]
        codes.append(nxt[over].astype(np.int64) * stride + r)
        st = nxt[~over]
        if st.size == 0:
            break
    codes.append(st.astype(np.int64) * stride + limit)  # still going after the last phase
    counts = np.bincount(np.concatenate(codes))
    nz = np.flatnonzero(counts)
    s, rr = nz // stride, nz % stride
    remaining = (ch.wounds[0][s], ch.wounds[1][s])
    if ch.alive is not None:
        alive = (ch.alive[0][s], ch.alive[1][s])
    else:
        alive = ((remaining[0] > 0).astype(np.int64), (remaining[1] > 0).astype(np.int64))
    return make_outcomes(plan, remaining, alive, (ch.misted[0][s], ch.misted[1][s]), rr, rounds, limit,
                         weights=counts[nz].astype(np.int64))
