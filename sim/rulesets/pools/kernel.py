"""Vectorised kernel of the ``pools`` ruleset (see :mod:`sim.rulesets.pools`).

Only counts matter to the rules (hits received, how many stay unsaved), so no
die is rolled one by one. Three exact samplers share one settlement step:

* **multinomial** (one engagement, the default ``rounds = 1``): from the fixed
  start, each side's result is the pair (Shaken by the check, unsaved hits
  received), and the two sides are independent. Their joint distribution is
  computed exactly (:func:`single_engagement_table`: binomial hits, thinned by
  binomial saves); the numbers of the ``n`` trials that end in each cell are one
  multinomial draw, a few hundred binomials per block whatever ``n``. Each
  distinct cell is settled once and returned with its count as weight.
* **table** (fights over several rounds): round 1 is that multinomial draw;
  the fights it does not end are expanded to one row each, and every later
  round draws, per receiving side, one uniform through an inverse-CDF table of
  (Shaken by the check, unsaved hits) for its incoming pool and hit threshold
  (:class:`ReceivedTables`, guide-table search). From round 2 the table row is
  looked up directly from the state (:func:`later_rows`).
* **binomial** (the general fallback, e.g. pools too large to tabulate): per
  round and side, hits ~ Binomial(pool, p_hit), unsaved ~ Binomial(hits,
  p_fail_save).

The tables are computed in floating point by Pascal's recurrence and sums in a
fixed order (:mod:`sim.kernels.portable`, the same bits on every machine);
every sampler is exact in distribution up to that rounding (relative errors
under ~1e-12 even for pools of thousands of dice).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...kernels.portable import binomial_pmf, binomial_rows, matmul
from ...outcomes import ATTACKER, DEFENDER, DRAW, Outcomes

__all__ = ["SideStats", "RoundSetup", "SingleTable", "ReceivedTables", "single_engagement_table", "build_tables",
           "run_multinomial", "run_rounds", "pool_size", "p_hit", "DESTROYED", "RETREATED", "HELD"]

DESTROYED, RETREATED, HELD = 0, 1, 2
#: Largest joint table (cells) the multinomial path builds; bigger pools use the per-trial samplers.
MAX_CELLS = 1 << 16


@dataclass(frozen=True)
class SideStats:
    """One side's fixed numbers (index 0 = original attacker, 1 = original defender)."""

    attack: int
    bases: int
    wounds: int
    p_fail_save: float  # probability that one save die fails (1.0 without a save)
    courage: int
    move: float
    vehicle: bool


@dataclass(frozen=True)
class RoundSetup:
    """Situation of the first engagement (from the matchup's states and options)."""

    charge: bool
    shaken: tuple[bool, bool]
    flanked: tuple[bool, bool]
    dash: tuple[bool, bool]
    cover: tuple[bool, bool]
    dash_shift: int
    cover_shift: int
    flank_shift: int
    target_dash_shift: int
    rally: bool


@dataclass(frozen=True)
class SingleTable:
    """Exact joint distribution of one engagement from the starting state.

    ``probs[k]`` is the probability of cell ``k``: side ``s`` ends the check
    Shaken ``shaken[s][k]`` and receives ``unsaved[s][k]`` unsaved hits.
    Cells are sorted by decreasing probability (the multinomial draw stops
    early once every trial is placed).
    """

    probs: NDArray[np.float64]
    shaken: tuple[NDArray[np.bool_], NDArray[np.bool_]]
    unsaved: tuple[NDArray[np.int64], NDArray[np.int64]]


# ------------------------------------------------------------------ rules
def pool_size(attack: int, bases: NDArray, per_base: NDArray) -> NDArray:
    """Attack pool: stat x bases plus per-base modifiers; reductions stop at one die per base.

    ``final = raw + mods``; only when the modifiers are negative,
    ``final = max(final, min(raw, bases))`` (a stat-0 unit is not raised to one die).
    """
    raw = attack * bases
    final = raw + per_base * bases
    return np.where(per_base < 0, np.maximum(final, np.minimum(raw, bases)), final)


def p_hit(threshold: NDArray) -> NDArray:
    """P(one d6 >= threshold) after clamping the threshold to 2+..6+."""
    return (7 - np.clip(threshold, 2, 6)) / 6.0


def _round_numbers(sides: tuple[SideStats, SideStats], setup: RoundSetup, r: int, wl, shaken, retreated):
    """Pools and clamped hit thresholds of round ``r`` for arrays of trials.

    Round 1 is the situation the states describe; from round 2 the round's
    attacker (original attacker in odd rounds) charges out of the open, nobody
    holds a Dash token or is in cover, and the defender counts as flanked if
    it retreated in the previous round.
    """
    att = 0 if r % 2 == 1 else 1
    m = len(wl[0])
    pools, thresholds = [], []
    if r == 1:
        flanked = [np.full(m, setup.flanked[s]) for s in (0, 1)]
        dash, cover, charging = setup.dash, setup.cover, setup.charge
    else:
        flanked = [np.zeros(m, bool), np.zeros(m, bool)]
        flanked[1 - att] = retreated[1 - att]
        dash, cover, charging = (False, False), (False, False), True
    for s in (0, 1):
        st = sides[s]
        bases = (wl[s] + st.wounds - 1) // st.wounds
        per_base = (int(s == att and charging) - int(st.vehicle and s != att)
                    - shaken[s].astype(np.int64) - flanked[s].astype(np.int64))
        pools.append(pool_size(st.attack, bases, per_base))
        o = 1 - s
        threshold = (4 + setup.dash_shift * dash[s] + setup.target_dash_shift * dash[o]
                     + setup.cover_shift * cover[o] + setup.flank_shift * flanked[o].astype(np.int64))
        thresholds.append(np.clip(threshold, 2, 6))
    return pools, thresholds


def received_matrix(max_pool: int, p: float, side: SideStats) -> NDArray[np.float64]:
    """``T[pool, c, u]`` for every incoming pool 0..max_pool: P(the check gives Shaken = c
    (hits >= courage) and u hits stay unsaved) for a side receiving ``pool`` dice hitting with ``p``.

    Binomials by Pascal's recurrence and products summed in a fixed order
    (:mod:`sim.kernels.portable`): the same bits on every machine, so the same draws.
    """
    hits = binomial_rows(max_pool, p)                        # [pool, h]
    kept = binomial_rows(max_pool, side.p_fail_save)         # [h, u]
    broke = np.arange(max_pool + 1) >= side.courage
    return np.stack([matmul(hits * ~broke, kept), matmul(hits * broke, kept)], axis=1)


def received_table(pool: int, p: float, side: SideStats) -> NDArray[np.float64]:
    """``T[c, u]`` of :func:`received_matrix` for one pool (the same numbers: its row ``pool``)."""
    hits = binomial_pmf(pool, p)[None, :]                    # [1, h]
    kept = binomial_rows(pool, side.p_fail_save)             # [h, u]
    broke = np.arange(pool + 1) >= side.courage
    return np.concatenate([matmul(hits * ~broke, kept), matmul(hits * broke, kept)], axis=0)


def single_engagement_table(sides: tuple[SideStats, SideStats], setup: RoundSetup) -> SingleTable | None:
    """The exact joint (Shaken, unsaved) distribution of round 1, or ``None`` if too large."""
    wl = [np.array([st.bases * st.wounds]) for st in sides]
    shaken = [np.array([setup.shaken[s]]) for s in (0, 1)]
    pools, thresholds = _round_numbers(sides, setup, 1, wl, shaken, [np.zeros(1, bool)] * 2)
    per_side = []
    for s in (0, 1):  # side s *receives* the hits of side o
        o = 1 - s
        table = received_table(int(pools[o][0]), float(p_hit(thresholds[o][0])), sides[s])
        if setup.shaken[s]:
            table = np.stack([np.zeros_like(table[0]), table.sum(0)])
        per_side.append(table)
    cells = per_side[0].size * per_side[1].size
    if cells > MAX_CELLS:
        return None
    p = np.multiply.outer(per_side[0], per_side[1]).ravel()  # index (sA, uA, sD, uD)
    idx = np.flatnonzero(p > 0)
    order = idx[np.argsort(-p[idx], kind="stable")]
    sa, ua, sd, ud = np.unravel_index(order, np.multiply.outer(per_side[0], per_side[1]).shape)
    probs_sorted = p[order] / p[order].sum()
    return SingleTable(probs_sorted, (sa.astype(bool), sd.astype(bool)),
                       (ua.astype(np.int64), ud.astype(np.int64)))


# ----------------------------------------------------- received samplers
#: Guide-table entries per row of a :class:`ReceivedTables`.
GUIDE = 64


@dataclass(frozen=True)
class ReceivedTables:
    """Inverse-CDF tables of (Shaken by the check, unsaved hits) for one receiving side.

    One row per (incoming pool, hit threshold), with the cumulative
    probabilities of its cells (check passed: u = 0..pool, then check failed:
    u = 0..pool) at ``cum[start[row]:]``; the last cell of a row holds 2.0 so a
    search never leaves its row. ``guide[row, g]`` is the first cell whose
    cumulative probability exceeds g / GUIDE: a uniform U starts there and
    steps forward while ``cum <= U`` (the guide-table method: exact, about one
    step per draw, no binary search).
    """

    cum: NDArray[np.float64]
    start: NDArray[np.int64]
    guide: NDArray[np.int64]          # shape (rows, GUIDE), absolute cell numbers
    max_pool: int
    thresholds: tuple[int, ...]
    #: Rounds 2+: the row for (round attacker, hitter's wounds left, hitter Shaken, hitter retreated,
    #: receiver retreated), flattened in that order (see :func:`later_rows`).
    later: NDArray[np.int64] | None = None

    def row_of(self, pool: NDArray, threshold: NDArray) -> NDArray[np.int64]:
        return np.searchsorted(np.asarray(self.thresholds), threshold) * (self.max_pool + 1) + pool

    def sample(self, pool: NDArray, threshold: NDArray, rng: np.random.Generator):
        """Per trial: (check failed, unsaved hits) for the incoming pools."""
        return self.sample_rows(self.row_of(pool, threshold), rng)

    def sample_rows(self, row: NDArray[np.int64], rng: np.random.Generator):
        """Per trial: (check failed, unsaved hits) for the given table rows."""
        pool = row % (self.max_pool + 1)
        u = rng.random(len(row))
        cell = self.guide[row, (u * GUIDE).astype(np.int64)]
        step = np.flatnonzero(self.cum[cell] <= u)
        while step.size:
            cell[step] += 1
            step = step[self.cum[cell[step]] <= u[step]]
        cell -= self.start[row]
        broke = cell > pool
        return broke, cell - (pool + 1) * broke


def received_tables(receiver: SideStats, max_pool: int, thresholds: tuple[int, ...]) -> ReceivedTables | None:
    """Tables for every incoming pool 0..max_pool and the given thresholds (``None`` if too large)."""
    total = len(thresholds) * (max_pool + 1) * (max_pool + 2)
    if total > MAX_TABLE:
        return None
    chunks, starts, guides, offset = [], [], [], 0
    marks = np.arange(GUIDE) / GUIDE
    for t in thresholds:
        tables = received_matrix(max_pool, float(p_hit(np.array(t))), receiver)
        for pool in range(max_pool + 1):
            cum = np.cumsum(tables[pool, :, : pool + 1].ravel())
            cum /= cum[-1]
            cum[-1] = 2.0
            chunks.append(cum)
            starts.append(offset)
            guides.append(offset + np.searchsorted(cum, marks, side="right"))
            offset += len(cum)
    return ReceivedTables(np.concatenate(chunks), np.array(starts, np.int64), np.array(guides, np.int64),
                          max_pool, tuple(thresholds))


#: Largest inverse-CDF table (cells per receiving side) the table sampler builds.
MAX_TABLE = 1 << 18


def possible_thresholds(setup: RoundSetup, hitter: int) -> tuple[int, ...]:
    """Clamped thresholds side ``hitter`` can need: its first-round one and the later ones (plain or flanking)."""
    o = 1 - hitter
    first = (4 + setup.dash_shift * setup.dash[hitter] + setup.target_dash_shift * setup.dash[o]
             + setup.cover_shift * setup.cover[o] + setup.flank_shift * setup.flanked[o])
    return tuple(sorted({min(max(t, 2), 6) for t in (first, 4, 4 + setup.flank_shift)}))


def build_tables(sides: tuple[SideStats, SideStats], setup: RoundSetup):
    """Per receiving side, its :class:`ReceivedTables` (or ``None`` when too large)."""
    out = []
    for s in (0, 1):
        o = 1 - s
        max_pool = (sides[o].attack + 1) * sides[o].bases
        tables = received_tables(sides[s], max_pool, possible_thresholds(setup, o))
        if tables is not None:
            tables = dataclasses.replace(tables, later=later_rows(sides, setup, s, tables))
        out.append(tables)
    return tuple(out)


def later_rows(sides: tuple[SideStats, SideStats], setup: RoundSetup, s: int, tables: ReceivedTables):
    """Table rows of receiver ``s`` in rounds 2+, for every state that matters to them.

    From round 2 the hitter's pool depends only on who attacks this round, its
    wounds left, its Shaken status and (as the round's defender) whether it
    retreated last round; the threshold only on whether the receiver, as the
    round's defender, retreated. Index: ``(((att * (W + 1) + wl) * 2 + shaken)
    * 2 + hitter_retreated) * 2 + receiver_retreated`` with ``W`` the hitter's
    starting wounds.
    """
    o = 1 - s
    hitter = sides[o]
    full = hitter.bases * hitter.wounds
    att, wl, shaken, ret_o, ret_s = np.meshgrid(np.arange(2), np.arange(full + 1), np.arange(2), np.arange(2),
                                                np.arange(2), indexing="ij")
    flanked_o = (att != o) & (ret_o == 1)
    flanked_s = (att != s) & (ret_s == 1)
    bases = (wl + hitter.wounds - 1) // hitter.wounds
    per_base = (att == o).astype(np.int64) - ((att != o) & hitter.vehicle) - shaken - flanked_o
    pool = pool_size(hitter.attack, bases, per_base)
    threshold = np.clip(4 + setup.flank_shift * flanked_s, 2, 6)
    return tables.row_of(pool, threshold).ravel().astype(np.int64)


# ------------------------------------------------------------ settlement
@dataclass
class _State:
    """Per-trial arrays of the trials still fighting, by original side (0 attacker, 1 defender)."""

    idx: NDArray[np.int64]             # trial numbers
    wl: list[NDArray[np.int64]]        # wounds left
    damage: list[NDArray[np.int64]]    # wounds received (capped at wounds left)
    shaken: list[NDArray[np.bool_]]
    retreated: list[NDArray[np.bool_]]  # retreated in the last engagement
    destroyed: list[NDArray[np.bool_]]
    lost: list[NDArray[np.bool_]]       # lost the last engagement

    @staticmethod
    def start(sides, setup: RoundSetup, n: int) -> "_State":
        return _State(
            np.arange(n),
            [np.full(n, st.bases * st.wounds, np.int64) for st in sides],
            [np.zeros(n, np.int64), np.zeros(n, np.int64)],
            [np.full(n, setup.shaken[s]) for s in (0, 1)],
            [np.zeros(n, bool), np.zeros(n, bool)],
            [np.zeros(n, bool), np.zeros(n, bool)],
            [np.zeros(n, bool), np.zeros(n, bool)],
        )

    #: What a trial still fighting carries into the next round, and what a finished trial reports.
    CARRIED = ("wl", "damage", "shaken", "retreated")
    REPORTED = ("wl", "damage", "shaken", "destroyed", "lost")

    def keep(self, mask: NDArray[np.bool_], last: bool) -> None:
        """Drop the finished trials (``mask`` false); after the ``last`` round keep what is reported."""
        self.idx = self.idx[mask]
        for f in (self.CARRIED + ("destroyed", "lost")) if last else self.CARRIED:
            arrs = getattr(self, f)
            setattr(self, f, [arrs[0][mask], arrs[1][mask]])

    def store(self, into: "_State", mask: NDArray[np.bool_] | None = None) -> None:
        """Copy the results of (the ``mask`` part of) these trials into the full-size ``into``."""
        pick = None if mask is None else np.flatnonzero(mask)  # few finish per round: gather by index
        where = self.idx if pick is None else self.idx[pick]
        for f in self.REPORTED:
            src, dst = getattr(self, f), getattr(into, f)
            for s in (0, 1):
                dst[s][where] = src[s] if pick is None else src[s][pick]


def _settle(sides, st: _State, unsaved) -> None:
    """Wounds, winner and loser, retreat or destruction for every trial of ``st`` (in place)."""
    loser = (unsaved[0] > unsaved[1], unsaved[1] > unsaved[0])
    for s in (0, 1):
        taken = np.minimum(unsaved[s], st.wl[s])
        st.damage[s] = st.damage[s] + taken
        st.wl[s] = st.wl[s] - taken
        killed = st.wl[s] == 0
        # a loser that survives its wounds retreats; a stationary one is destroyed instead
        if sides[s].move == 0:
            killed = killed | loser[s]
        st.destroyed[s] = killed
        st.retreated[s] = loser[s] & ~killed
        st.lost[s] = loser[s]


def _finish(sides, st: _State, rounds_fought, limit: int, fixed_rounds: bool, weights=None) -> Outcomes:
    da, dd = st.destroyed
    capped = (not fixed_rounds) & (np.asarray(rounds_fought) >= limit) & ~da & ~dd
    fewer_a = st.damage[0] < st.damage[1]
    fewer_d = st.damage[1] < st.damage[0]
    by_total = np.where(fewer_a, ATTACKER, np.where(fewer_d, DEFENDER, DRAW))
    winner = np.where(da & dd, DRAW, np.where(dd, ATTACKER, np.where(da, DEFENDER, by_total)))
    winner = np.where(capped, DRAW, winner).astype(np.int8)
    cats, extras = [], {}
    for s, name in ((0, "attacker"), (1, "defender")):
        cat = np.where(st.destroyed[s], DESTROYED, np.where(st.lost[s], RETREATED, HELD)).astype(np.int8)
        cats.append(cat)
        w = sides[s].wounds
        left = np.where(st.destroyed[s], 0, (st.wl[s] + w - 1) // w)
        extras[f"shaken_{name}"] = st.shaken[s].astype(np.int64)
        extras[f"bases_lost_{name}"] = (sides[s].bases - left).astype(np.int64)
    return Outcomes(winner, st.damage[0], st.damage[1], cats[0], cats[1], np.asarray(rounds_fought, np.int64),
                    capped, extras, weights=weights)


# ---------------------------------------------------------------- kernels
def run_multinomial(sides, setup: RoundSetup, table: SingleTable, n: int, rng: np.random.Generator,
                    fixed_rounds: bool, limit: int) -> Outcomes:
    """One engagement for ``n`` trials: one multinomial draw over the exact joint table."""
    counts = rng.multinomial(n, table.probs)
    k = np.flatnonzero(counts)
    m = len(k)
    st = _State.start(sides, setup, m)
    st.shaken = [table.shaken[0][k].copy(), table.shaken[1][k].copy()]
    _settle(sides, st, (table.unsaved[0][k], table.unsaved[1][k]))
    return _finish(sides, st, np.ones(m, np.int64), limit, fixed_rounds, weights=counts[k].astype(np.int64))


def _first_round_by_cells(sides, setup: RoundSetup, table: SingleTable, n: int, rng: np.random.Generator):
    """Round 1 of ``n`` fights as one multinomial draw over its exact table.

    Returns the settled distinct cells (a :class:`_State` over cells), their
    trial counts, and which cells end the fight.
    """
    counts = rng.multinomial(n, table.probs)
    k = np.flatnonzero(counts)
    cells = _State.start(sides, setup, len(k))
    cells.shaken = [table.shaken[0][k].copy(), table.shaken[1][k].copy()]
    _settle(sides, cells, (table.unsaved[0][k], table.unsaved[1][k]))
    return cells, counts[k].astype(np.int64), cells.destroyed[0] | cells.destroyed[1]


def run_rounds(sides, setup: RoundSetup, n: int, rng: np.random.Generator, fixed_rounds: bool, limit: int,
               tables=None, single: SingleTable | None = None) -> Outcomes:
    """Engagements until a unit is destroyed or ``limit`` rounds, for ``n`` trials.

    Each round, per receiving side, draws (Shaken by the check, unsaved hits):
    from ``tables`` (one uniform per side and trial) where given, otherwise as
    hits ~ Binomial(pool, p_hit) and unsaved ~ Binomial(hits, p_fail_save).

    With ``single`` (the exact table of round 1), round 1 is one multinomial
    draw: the fights it ends are returned as weighted cells, and only the
    others are expanded into one row per trial (``np.repeat`` of their cells;
    trials are exchangeable, so their order does not matter) for round 2 on.
    """
    r = 0
    early = None
    if single is not None and limit > 1:
        cells, counts, over = _first_round_by_cells(sides, setup, single, n, rng)
        early = _finish(sides, _subset(cells, over), np.ones(int(over.sum()), np.int64), limit, fixed_rounds,
                        weights=counts[over])
        going = np.repeat(np.flatnonzero(~over), counts[~over])
        n = len(going)
        st = _subset(cells, going)
        st.idx = np.arange(n)
        r = 1
    else:
        st = _State.start(sides, setup, n)
    out = _State.start(sides, setup, n)
    rounds_fought = np.full(n, r, np.int64)
    while st.idx.size and r < limit:
        r += 1
        att = 0 if r % 2 == 1 else 1
        if r > 1 and setup.rally:
            # rally: the Shaken unit recovers at the start of its own turn as attacker
            st.shaken[att] = np.zeros(st.idx.size, bool)
        fast = r > 1 and tables is not None and tables[0] is not None and tables[1] is not None
        if not fast:
            pools, thresholds = _round_numbers(sides, setup, r, st.wl, st.shaken, st.retreated)
        unsaved, broken = [None, None], [None, None]
        for s in (0, 1):  # side s receives the other side's pool
            o = 1 - s
            if fast:
                # rounds 2+: the table row straight from the state (see later_rows)
                key = ((((att * (sides[o].bases * sides[o].wounds + 1) + st.wl[o]) * 2 + st.shaken[o]) * 2
                        + st.retreated[o]) * 2 + st.retreated[s])
                broke, unsaved[s] = tables[s].sample_rows(tables[s].later[key], rng)
            elif tables is not None and tables[s] is not None:
                broke, unsaved[s] = tables[s].sample(pools[o], thresholds[o], rng)
            else:
                hits = rng.binomial(pools[o], p_hit(thresholds[o]))
                broke = hits >= sides[s].courage
                pf = sides[s].p_fail_save
                unsaved[s] = hits if pf >= 1.0 else rng.binomial(hits, pf)
            broken[s] = broke
        for s in (0, 1):  # new Shaken status counts from the next roll on, not for the pools just rolled
            st.shaken[s] = st.shaken[s] | broken[s]
        _settle(sides, st, unsaved)
        rounds_fought[st.idx] = r
        over = st.destroyed[0] | st.destroyed[1]
        if over.any():
            st.store(out, over)
            st.keep(~over, r == limit)
    if st.idx.size:  # fights that reached the last round
        st.store(out)
    rest = _finish(sides, out, rounds_fought, limit, fixed_rounds)
    return rest if early is None else _concat(early, rest)


def _subset(st: _State, pick: NDArray) -> _State:
    """The trials (or cells) ``pick`` (a mask or indices) of ``st``, every field."""
    sub = [(f, getattr(st, f)) for f in ("wl", "damage", "shaken", "retreated", "destroyed", "lost")]
    return _State(np.arange(len(st.idx))[pick], *[[a[0][pick], a[1][pick]] for _, a in sub])


def _concat(a: Outcomes, b: Outcomes) -> Outcomes:
    """Weighted rows of ``a`` followed by those of ``b`` (unweighted rows count once)."""
    wa = a.weights if a.weights is not None else np.ones(len(a), np.int64)
    wb = b.weights if b.weights is not None else np.ones(len(b), np.int64)
    cat = np.concatenate
    return Outcomes(cat([a.winner, b.winner]), cat([a.damage_to_attacker, b.damage_to_attacker]),
                    cat([a.damage_to_defender, b.damage_to_defender]),
                    cat([a.category_attacker, b.category_attacker]), cat([a.category_defender, b.category_defender]),
                    cat([a.rounds, b.rounds]), cat([a.capped, b.capped]),
                    {k: cat([a.extras[k], b.extras[k]]) for k in a.extras}, weights=cat([wa, wb]))
