"""``duel`` group kernel: every combat of a phase drawn whole from its exact outcome table.

State: one ``int16`` key per model in a (trials, attacker models + defender
models) array. A key holds the model's wounds left and its MISTED / DEAD flags
(the part a combat changes), its listed position and its side:

    side << 12 | dead << 11 | position << 6 | misted << 5 | wounds

Sorting each row therefore keeps each side's standing models first, in listed
order (the pairing order), after its fallen ones: one ``sort`` per phase compacts
both sides. Column ``k`` of each side is then the ``k``-th standing model, and a
phase is:

- combats 1 .. pairs - 1 (and combat 0 when nobody gangs up): one model against
  one. Their outcome depends only on the two models' wounds, so one 32-bit
  uniform per combat draws it from the ``pair`` alias table (the whole grid at
  once; a column past a trial's pairs holds a fallen model and its row leaves it
  unchanged). The table holds both models' key changes, added in place;
- combat 0 of trials where one side has left-over models (ganging up): the duel
  roll by dice counts (one uniform), the single model's fate by hits received
  (one uniform), the ganged side's failed checks (one uniform), assigned to the
  weakest models first (a sort of the members), and the surviving damaged model's
  blocked-yard hits (one uniform).

At most ``CHUNK`` fights are in flight: finished fights leave the working set
every phase and fresh ones join it in batches, so the arrays stay in cache and a
block's long tail costs no phases of its own. Memory per block is therefore
bounded whatever its size: the results (a few ``int64`` per trial) plus about
10 MB of working arrays for 20 against 20; the tables are O(wounds^2 x models)
(under 15 MB at 20 models of 20 wounds a side).

Hot-path arithmetic avoids ``np.where`` and row reductions on 2-D arrays (masks,
products and float32 matrix products, exact for these small integers).

Used for the default ``fewest_wounds`` assignment; ``spread`` in a ganged combat
(hit by hit, deaths redirecting hits) runs in :mod:`._duel_kernel`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..outcomes import Outcomes
from ..ruleset import END, Rounds
from ._duel_plan import DuelPlan, make_outcomes
from ._duel_tables import DEAD, IDX_SHIFT, MISTED, SIDE, WOUNDS, DuelTables

__all__ = ["simulate_fast"]

_KEEP = ~np.int16(WOUNDS | MISTED | DEAD)   # position and side bits
_NOT_WOUNDS = ~np.int16(WOUNDS)
_NONE = np.int16(4095)                      # sort key of a model that takes no hit (after every member)


class _Layout:
    """Per-column constants of a state array of ``nA`` attacker then ``nB`` defender columns."""

    def __init__(self, nA: int, nB: int):
        self.n = (nA, nB)
        self.N = nA + nB
        self.pos = np.concatenate([np.arange(nA), np.arange(nB)]).astype(np.int16)
        self.col = np.arange(self.N, dtype=np.int16)
        self.by_side = np.zeros((self.N, 2), np.float32)  # column sums per side by matrix product
        self.by_side[:nA, 0] = 1
        self.by_side[nA:, 1] = 1

    def per_side(self, values: NDArray) -> NDArray[np.int64]:
        """Row sums of ``values`` (trials x columns) for each side, as (trials, 2) integers.

        A float32 matrix product: exact for these small integers, and several times
        faster than an integer sum along rows.
        """
        with np.errstate(all="ignore"):  # some BLAS builds flag spurious invalid values
            return (values.astype(np.float32, copy=False) @ self.by_side).astype(np.int64)


#: Fights in flight: small enough for the working arrays to stay in cache (several times faster
#: than streaming a whole block through memory), large enough to amortise NumPy's per-call cost.
CHUNK = 8192
#: Fresh fights join the working set when fewer than this share of ``CHUNK`` are still going,
#: so the long tail of a batch rides along with the next one instead of costing phases alone.
REFILL = 0.25


def simulate_fast(plan: DuelPlan, tables: DuelTables, n: int, rng: np.random.Generator, rounds: Rounds,
                  max_rounds: int) -> Outcomes:
    """``n`` fights of a group matchup (any counts) with ``fewest_wounds`` assignment.

    At most ``CHUNK`` fights are in flight; finished ones leave the working set every
    phase and fresh ones join it in batches (a phase does not depend on its number:
    each fight counts its own). The result depends only on ``n`` and the stream.
    """
    limit = max_rounds if rounds == END else int(rounds)
    nA, nB = plan.sides[0].count, plan.sides[1].count
    WB = plan.sides[1].wounds
    identity = (plan.sides[0].wounds + 1) * (WB + 1)  # offset of the pair table's "unchanged" rows
    start = np.concatenate([(np.arange(nA) << IDX_SHIFT) + plan.sides[0].wounds,
                            SIDE + (np.arange(nB) << IDX_SHIFT) + WB]).astype(np.int16)
    lay = _Layout(nA, nB)
    remaining = np.zeros((n, 2), np.int64)
    alive = np.zeros((n, 2), np.int64)
    misted = np.zeros((n, 2), np.int64)
    n_rounds = np.zeros(n, np.int64)
    key = np.empty((0, nA + nB), np.int16)
    idx = np.empty(0, np.int64)
    fought = np.empty(0, np.int64)
    cA = cB = np.empty(0, np.int64)
    started = 0
    while started < n or idx.size:
        if started < n and idx.size < REFILL * CHUNK:
            fresh = min(CHUNK - idx.size, n - started)
            key = np.concatenate([key, np.tile(start, (fresh, 1))])
            idx = np.concatenate([idx, np.arange(started, started + fresh)])
            fought = np.concatenate([fought, np.zeros(fresh, np.int64)])
            cA = np.concatenate([cA, np.full(fresh, nA, np.int64)])
            cB = np.concatenate([cB, np.full(fresh, nB, np.int64)])
            started += fresh
        pairs = np.minimum(cA, cB)
        gang = cA != cB
        w = key & WOUNDS
        _pair_combats(tables, key, w, pairs, gang, nA, WB, identity, rng)
        g = np.flatnonzero(gang)
        if g.size == len(key):
            _ganged(plan, tables, lay, key, w, cA, cB, pairs, None, rng)
        elif 2 * g.size > len(key):
            _ganged(plan, tables, lay, key, w, cA, cB, pairs, gang, rng)
        elif g.size:
            sub = key[g]
            _ganged(plan, tables, lay, sub, w[g], cA[g], cB[g], pairs[g], None, rng)
            key[g] = sub
        key.sort(axis=1)
        down = lay.per_side(key & DEAD) // DEAD
        cA, cB = nA - down[:, 0], nB - down[:, 1]
        fought += 1
        over = (cA == 0) | (cB == 0) | (fought == limit)
        if over.any():
            done, k_over = idx[over], key[over]
            remaining[done] = lay.per_side(k_over & WOUNDS)
            misted[done] = lay.per_side(k_over & MISTED) // MISTED
            alive[done, 0], alive[done, 1] = cA[over], cB[over]
            n_rounds[done] = fought[over]
            keep = ~over
            idx, key, cA, cB, fought = idx[keep], key[keep], cA[keep], cB[keep], fought[keep]
    return make_outcomes(plan, (remaining[:, 0], remaining[:, 1]), (alive[:, 0], alive[:, 1]),
                         (misted[:, 0], misted[:, 1]), n_rounds, rounds, limit)


def _pair_combats(tables: DuelTables, key: NDArray[np.int16], w: NDArray[np.int16], pairs: NDArray,
                  gang: NDArray[np.bool_], nA: int, WB: int, identity: int, rng: np.random.Generator) -> None:
    """Every one-against-one combat (column k of each side, k < pairs), one 32-bit uniform each, in place.

    Combat 0 of ganged trials is left unchanged (the table's identity rows). The grid
    is cut in two: the columns most trials need, for all of them, and the rest only
    for the trials with that many pairs (fresh fights), so the work follows the pairs.
    One look-up gives both models' key changes (two ``int16`` in one ``int32``), added
    to the two sides' columns through ``int16`` views of the result.
    """
    K = int(pairs.max())
    if K == 0:
        return
    table = tables.pair
    # columns 0 .. cut - 1 for every trial, the rest only for the trials with more pairs (a gather and
    # scatter, about twice the cost a cell): the cut of least cost from the pairs' histogram
    n_more = len(pairs) - np.cumsum(np.bincount(pairs, minlength=K + 1))  # trials with more than c pairs
    c = np.arange(1, K + 1)
    cut = int(c[np.argmin(len(pairs) * c + 2 * n_more[1:] * (K - c))])
    for lo, hi, rows in ((0, cut, None), (cut, K, np.flatnonzero(pairs > cut) if K > cut else None)):
        if lo >= hi or (rows is not None and rows.size == 0):
            continue
        if rows is None:
            code = w[:, lo:hi] * np.int16(WB + 1)
            code += w[:, nA + lo:nA + hi]
        else:
            code = w[rows, lo:hi] * np.int16(WB + 1)
            code += w[rows, nA + lo:nA + hi]
        if lo == 0:
            code[:, 0] += gang * np.int16(identity)
        change = np.take(table.pick, table.slot(code, rng)).view(np.int16)  # (rows, 2 * columns): A, B, A, B, ...
        if rows is None:
            key[:, lo:hi] += change[:, 0::2]
            key[:, nA + lo:nA + hi] += change[:, 1::2]
        else:
            key[rows, lo:hi] += change[:, 0::2]
            key[rows, nA + lo:nA + hi] += change[:, 1::2]


def _ganged(plan: DuelPlan, tables: DuelTables, lay: _Layout, key: NDArray[np.int16], w: NDArray[np.int16],
            cA: NDArray, cB: NDArray, pairs: NDArray, gang: NDArray[np.bool_] | None,
            rng: np.random.Generator) -> None:
    """Combat 0 of the trials ``gang`` (None: all) where one side (y) has left-over models: they all
    join it against the other side's (x) first model. ``key`` is updated in place; ``w``: wounds at
    the start of the phase. (Masks and products rather than ``np.where``: several times faster.)"""
    nA, nB = lay.n
    s0, s1 = plan.sides
    m = len(key)
    # the members' wounds: each side's first model, and the standing models past the pairs (only the
    # larger side has any; a fallen model has no wounds, so no mask for it; no ``gang`` mask: rows
    # without ganging are never drawn from below). Both sides stand, so pairs >= 1: column 0 is not past.
    past = lay.pos >= pairs.astype(np.int16)[:, None]
    wsum = lay.per_side(np.multiply(w, past, dtype=np.float32))
    wsum[:, 0] += w[:, 0]
    wsum[:, 1] += w[:, nA]
    extra = np.abs(cA - cB)                                 # left-over models of the larger side
    size = (1 + extra * (cA > cB), 1 + extra * (cB > cA))   # members per side
    # the duel roll: one d6 per wound (+1 per model with an extra die), keep the highest
    dA = np.zeros(m, np.int64) if s0.prone else wsum[:, 0] + s0.extra_die * size[0]
    dB = np.zeros(m, np.int64) if s1.prone else wsum[:, 1] + s1.extra_die * size[1]
    u = rng.random(m)
    a_wins = u < tables.roll[0, dA, dB]
    b_wins = ~a_wins & (u < tables.roll[1, dA, dB])
    hits = (wsum[:, 0] + s0.extra_hit * size[0], wsum[:, 1] + s1.extra_hit * size[1])  # counted at the start
    y_is_b = cB > cA
    lost = (~a_wins, ~b_wins)
    if gang is not None:
        lost = (lost[0] & gang, lost[1] & gang)
    for x in (0, 1):
        y = 1 - x
        x_col = 0 if x == 0 else nA
        lo, hi = (nA, nA + nB) if y == 1 else (0, nA)
        x_side = ~y_is_b if x == 1 else y_is_b
        # the single model lost: the ganged side's hits land on it
        r = np.flatnonzero(x_side & lost[x])
        if r.size:
            part = tables.hit_one[y].sample(hits[y][r] * (plan.sides[x].wounds + 1) + w[r, x_col], rng)
            key[r, x_col] = (key[r, x_col] & _NOT_WOUNDS) | part
        # the ganged side lost: the single model's hits, weakest member first
        r = np.flatnonzero(x_side & lost[y])
        if r.size:
            block = key[r, lo:hi]
            _assign(plan, tables, x, block, pairs[r], hits[x][r], size[y][r], rng)
            key[r, lo:hi] = block


def _assign(plan: DuelPlan, tables: DuelTables, hitter: int, key: NDArray[np.int16], pairs: NDArray,
            hits: NDArray, n_members: NDArray, rng: np.random.Generator) -> None:
    """``hits`` from one model of side ``hitter`` on the ganged side's members in combat 0: its first
    model and those past the ``pairs``. ``key``: that side's columns, updated in place.

    Each failed check goes to the member with the fewest wounds left (ties: listed
    order), so only the number of fails is random: the members are sorted by
    (wounds, column) and the weakest die while the fails last; every member with a
    smaller sort key than the first survivor dies. At most one member survives
    damaged; it backs away (the ``partial`` table).
    """
    m, c = key.shape
    rows = np.arange(m)
    loser = 1 - hitter
    w = key & WOUNDS
    col = np.arange(c, dtype=np.int16)
    member = col >= pairs[:, None].astype(np.int16)
    member &= w > 0
    member[:, 0] = True
    sort_key = ((w << 6) | col) - _NONE
    sort_key *= member
    sort_key += _NONE
    top = plan.sides[hitter].wounds + plan.sides[hitter].extra_hit  # most hits, hence most models slain
    order = np.sort(sort_key, axis=1)[:, :top + 1]
    width = order.shape[1]
    if plan.instant[hitter]:
        slain = np.minimum(hits, n_members)   # each hit slays (and mists) the weakest
        first = np.where(slain < width, order[rows, np.minimum(slain, width - 1)], _NONE)
        key += (sort_key < first[:, None]) * ((DEAD | MISTED) - w)
        return
    fails = tables.fails[hitter].sample(hits, rng)
    dmg = plan.sides[hitter].hit_damage
    # the weakest die while the fails last: each needs ceil(wounds / damage) of them, and the needs only
    # grow along the sorted order, so the slain are those whose running total of needs fits the fails
    need = order >> 6
    if dmg > 1:
        need = -(-need // dmg)
    need += (order == _NONE) * np.int16(64)  # no such member: more fails than any model deals
    total = np.cumsum(need, axis=1, dtype=np.int64)
    fit = total <= fails[:, None]
    slain = fit.sum(axis=1)
    used = (total * fit).max(axis=1)
    first = np.where(slain < width, order[rows, np.minimum(slain, width - 1)], _NONE)
    key += (sort_key < first[:, None]) * (DEAD - w)
    left = fails - used
    r = np.flatnonzero((first != _NONE) & (left > 0))
    if r.size:
        col = (first[r] & 63).astype(np.intp)
        part = tables.partial[loser].sample((first[r] >> 6).astype(np.intp) * (plan.sides[loser].wounds + 1)
                                            + left[r], rng)
        key[r, col] = (key[r, col] & _NOT_WOUNDS) | part
