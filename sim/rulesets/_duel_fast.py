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
  one. Their outcome depends only on the two models' wounds, so one uniform per
  combat draws it from the ``pair`` alias table (the whole grid at once; a column
  past a trial's pairs holds a fallen model and its row leaves it unchanged);
- combat 0 of trials where one side has left-over models (ganging up): the duel
  roll by dice counts (one uniform), the single model's fate by hits received
  (one uniform), the ganged side's failed checks (one uniform), assigned to the
  weakest models first (a sort of the members), and the surviving damaged model's
  blocked-yard hits (one uniform).

Fights that are over leave the working set every phase, so late phases cost only
what is left. Memory per block is a few arrays of (trials x models) small
integers and one of (trials x pairs) uniforms: about 25 MB for 65,536 trials of
20 against 20; the tables are O(wounds^2 x models).

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
        """Row sums of ``values`` (trials x columns) for each side, as (trials, 2) integers."""
        return (values.astype(np.float32) @ self.by_side).astype(np.int64)


#: Fights resolved together: small enough for the working arrays to stay in cache (several
#: times faster than streaming a whole block through memory), large enough to amortise NumPy's
#: per-call overhead. Chunks run one after the other on the block's random stream.
CHUNK = 8192


def simulate_fast(plan: DuelPlan, tables: DuelTables, n: int, rng: np.random.Generator, rounds: Rounds,
                  max_rounds: int) -> Outcomes:
    """``n`` fights of a group matchup (any counts) with ``fewest_wounds`` assignment."""
    limit = max_rounds if rounds == END else int(rounds)
    parts = [_fights(plan, tables, min(CHUNK, n - lo), rng, limit) for lo in range(0, n, CHUNK)]
    remaining, alive, misted, n_rounds = (np.concatenate(x) for x in zip(*parts))
    return make_outcomes(plan, (remaining[:, 0], remaining[:, 1]), (alive[:, 0], alive[:, 1]),
                         (misted[:, 0], misted[:, 1]), n_rounds, rounds, limit)


def _fights(plan: DuelPlan, tables: DuelTables, n: int, rng: np.random.Generator, limit: int):
    """Fight ``n`` trials to the end (or ``limit`` phases): per trial and side, wounds left, models
    standing and models misted, and the phases fought.

    The state array is narrowed as the fight goes: columns past the most models any
    trial still has standing on a side hold only the fallen (their misted flags are
    counted first), so later phases cost what is left.
    """
    nA, nB = plan.sides[0].count, plan.sides[1].count
    WB = plan.sides[1].wounds
    identity = (plan.sides[0].wounds + 1) * (WB + 1)  # offset of the pair table's "unchanged" rows
    start = np.concatenate([(np.arange(nA) << IDX_SHIFT) + plan.sides[0].wounds,
                            SIDE + (np.arange(nB) << IDX_SHIFT) + WB]).astype(np.int16)
    lay = _Layout(nA, nB)
    key = np.tile(start, (n, 1))
    cA = np.full(n, nA, np.int64)
    cB = np.full(n, nB, np.int64)
    mist = np.zeros((n, 2), np.int64)  # misted models in columns dropped from the state
    idx = np.arange(n)
    remaining = np.zeros((n, 2), np.int64)
    alive = np.zeros((n, 2), np.int64)
    misted = np.zeros((n, 2), np.int64)
    n_rounds = np.zeros(n, np.int64)
    for r in range(1, limit + 1):
        nA, nB = lay.n
        pairs = np.minimum(cA, cB)
        K = int(pairs.max())
        gang = cA != cB
        w = key & WOUNDS
        # one model against one in columns 0..K-1; combat 0 of ganged trials is left unchanged here
        code = w[:, :K] * np.int16(WB + 1)
        code += w[:, nA:nA + K]
        code[:, 0] += gang * np.int16(identity)
        slot = tables.pair.slot(code, rng)
        for lo in (0, nA):
            view = key[:, lo:lo + K]
            view &= _NOT_WOUNDS
            view |= np.take(tables.pair_a if lo == 0 else tables.pair_b, slot)
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
        over = (cA == 0) | (cB == 0)
        if r == limit:
            over[:] = True
        if over.any():
            done, k_over = idx[over], key[over]
            remaining[done] = lay.per_side(k_over & WOUNDS)
            misted[done] = lay.per_side(k_over & MISTED) // MISTED + mist[over]
            alive[done, 0], alive[done, 1] = cA[over], cB[over]
            n_rounds[done] = r
            keep = ~over
            idx, key, cA, cB, mist = idx[keep], key[keep], cA[keep], cB[keep], mist[keep]
            if not idx.size:
                break
        top_a, top_b = int(cA.max()), int(cB.max())
        if 4 * (top_a + top_b) < 3 * (nA + nB):  # narrow: drop columns where every trial has only the fallen
            mist += lay.per_side(key & MISTED) // MISTED
            key = np.concatenate([key[:, :top_a], key[:, nA:nA + top_b]], axis=1)
            lay = _Layout(top_a, top_b)
            mist -= lay.per_side(key & MISTED) // MISTED
    return remaining, alive, misted, n_rounds


def _ganged(plan: DuelPlan, tables: DuelTables, lay: _Layout, key: NDArray[np.int16], w: NDArray[np.int16],
            cA: NDArray, cB: NDArray, pairs: NDArray, gang: NDArray[np.bool_] | None,
            rng: np.random.Generator) -> None:
    """Combat 0 of the trials ``gang`` (None: all) where one side (y) has left-over models: they all
    join it against the other side's (x) first model. ``key`` is updated in place; ``w``: wounds at
    the start of the phase. (Masks and products rather than ``np.where``: several times faster.)"""
    nA, nB = lay.n
    s0, s1 = plan.sides
    m = len(key)
    member = lay.pos >= pairs[:, None].astype(np.int16)  # left-overs: past the pairs, and standing
    member &= w > 0
    member |= lay.pos == 0
    if gang is not None:
        member &= gang[:, None]
    fm = member.astype(np.float32)
    size = (fm @ lay.by_side).astype(np.int64)              # members per side
    fm *= w
    wsum = (fm @ lay.by_side).astype(np.int64)              # their wounds
    # the duel roll: one d6 per wound (+1 per model with an extra die), keep the highest
    dA = np.zeros(m, np.int64) if s0.prone else wsum[:, 0] + s0.extra_die * size[:, 0]
    dB = np.zeros(m, np.int64) if s1.prone else wsum[:, 1] + s1.extra_die * size[:, 1]
    u = rng.random(m)
    a_wins = u < tables.roll[0, dA, dB]
    b_wins = ~a_wins & (u < tables.roll[1, dA, dB])
    hits = (wsum[:, 0] + s0.extra_hit * size[:, 0], wsum[:, 1] + s1.extra_hit * size[:, 1])  # counted at the start
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
            _assign(plan, tables, x, block, w[r, lo:hi], member[r, lo:hi], hits[x][r], size[r, y], rng)
            key[r, lo:hi] = block


def _assign(plan: DuelPlan, tables: DuelTables, hitter: int, key: NDArray[np.int16], w: NDArray[np.int16],
            member: NDArray[np.bool_], hits: NDArray, n_members: NDArray, rng: np.random.Generator) -> None:
    """``hits`` from one model of side ``hitter`` on the ``member`` models of ``key`` (one side's
    columns, updated in place).

    Each failed check goes to the member with the fewest wounds left (ties: listed
    order), so only the number of fails is random: the members are sorted by
    (wounds, column) and the weakest die while the fails last; every member with a
    smaller sort key than the first survivor dies. At most one member survives
    damaged; it backs away (the ``partial`` table).
    """
    m, c = key.shape
    rows = np.arange(m)
    loser = 1 - hitter
    sort_key = ((w << 6) | np.arange(c, dtype=np.int16)) - _NONE
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
    valid = order != _NONE
    need = (-(-(order >> 6) // dmg) * valid + 64 * ~valid).astype(np.float32)
    cum = need @ np.triu(np.ones((width, width), np.float32))   # fails to slay the weakest j + 1
    slain = ((cum <= fails[:, None]).astype(np.float32) @ np.ones(width, np.float32)).astype(np.int64)
    first = np.where(slain < width, order[rows, np.minimum(slain, width - 1)], _NONE)
    key += (sort_key < first[:, None]) * (DEAD - w)
    left = fails - np.where(slain > 0, cum[rows, np.maximum(slain - 1, 0)], 0).astype(np.int64)
    r = np.flatnonzero((first != _NONE) & (left > 0))
    if r.size:
        col = (first[r] & 63).astype(np.intp)
        part = tables.partial[loser].sample((first[r] >> 6).astype(np.intp) * (plan.sides[loser].wounds + 1)
                                            + left[r], rng)
        key[r, col] = (key[r, col] & _NOT_WOUNDS) | part
