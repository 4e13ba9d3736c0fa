"""``warband`` group kernel: one striker's batch on a target given as a state code, and fused pair tables.

The group kernel (:mod:`.groups`) keeps each warrior's state as one small code
per side with ``W`` the side's Wounds:

========== ===============================================
code       state
========== ===============================================
0 .. W     standing with that many wounds left
W + 1      knocked down (0 wounds left)
W + 2      stunned (0 wounds left)
W + 3      out of action
========== ===============================================

:class:`StrikeTable` resolves a batch of blows on many targets at once: a
stunned target goes out of action, and a striker draws one uniform through
the exact outcome table of its batch (:func:`.single.batch_distribution` for
one attack, :func:`.batches.several_batch_distribution` for up to
:data:`.batches.MAX_TABLE_ATTACKS`); a bigger batch rolls its dice as the
1 v 1 kernel does. Either way the result is the target's new code and whether
a to-hit die succeeded (which spends the target's parry for the phase).

:class:`PairTable` goes one step further for two warriors that touch only each
other (their batches tabulated): the whole phase of the pair (who strikes
first, the first batch, the second batch if its striker is still standing) is
one draw from the exact joint distribution, composed here from the two batch
distributions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...kernels.alias import AliasBits
from ...kernels.portable import matmul
from .batches import MAX_TABLE_ATTACKS, several_batch_distribution
from .single import batch_distribution
from .tables import (
    EXPOSED_SPOT,
    KNOCKED_DOWN,
    MASTER_STRIKE,
    OUT_OF_ACTION,
    STANDING,
    STUNNED,
    critical_result,
    injury_result,
)

__all__ = ["StrikeTable", "CodeTable", "PairTable", "VolleyTable", "batch_rows", "coded_row", "strike_table",
           "code_table", "coded_rows", "pair_table", "pair_rows", "volley_table", "A_FIRST", "D_FIRST", "TIE"]

#: Order modes of a pair: the attacking side's warrior strikes first, the defending side's, or a roll-off.
A_FIRST, D_FIRST, TIE = 0, 1, 2

#: Critical table by modified roll 0..7; injury table by total 0..9 and concussion (as the 1 v 1 kernel).
_CRIT = np.array([0] + [critical_result(r) for r in range(1, 8)], np.int8)
_INJURY = np.array([[injury_result(max(t, 1), c) for t in range(10)] for c in (False, True)], np.int8)


def _code(w: int, status: int, W: int) -> int:
    """State code of (wounds left, status) for a side with ``W`` wounds."""
    return w if status == STANDING else W + status


@dataclass(frozen=True)
class Alias:
    """Alias tables of many small distributions laid out densely, ``K`` outcome columns a row.

    An outcome is named by its flat index ``row * K + column``, which the owner's outcome
    arrays (new codes, hits) are indexed by. A draw is one 32-bit uniform through
    :class:`sim.kernels.alias.AliasBits` (a power-of-two number of slots a row, integer arithmetic
    only): each outcome's probability is exact to within (slots a row) x ``2**-32``.
    """

    K: int
    bits: AliasBits

    @classmethod
    def build(cls, P: NDArray[np.float64]) -> Alias:
        """From a dense ``P[row, column]`` (each row sums to 1)."""
        S, K = P.shape
        flat = np.arange(S * K, dtype=np.int32).reshape(S, K)
        return cls(K, AliasBits.build(P, flat, dtype=np.int32))

    def sample(self, row: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.int32]:
        """Flat outcome indices for integer rows ``row``, one 32-bit uniform each."""
        return self.bits.sample(row, rng)

    def masses(self, row: int) -> dict[int, float]:
        """The probability the table gives each flat outcome of ``row`` (from its own thresholds)."""
        return self.bits.masses(row)


def _alias(rows: list[dict[int, float]]) -> tuple[Alias, list[list[int]]]:
    """Alias tables of probability rows ``{outcome: p}``; also each row's outcomes by column."""
    K = max(len(r) for r in rows)
    P = np.zeros((len(rows), K))
    slots = []
    for i, r in enumerate(rows):
        items = [(k, p) for k, p in r.items() if p > 0]
        total = sum(p for _, p in items)
        assert abs(total - 1) < 1e-9, (i, r)
        P[i, :len(items)] = [p / total for _, p in items]
        slots.append([k for k, _ in items] + [items[0][0]] * (K - len(items)))
    return Alias.build(P), slots


@dataclass(frozen=True)
class StrikeTable:
    """One side's batch against the other side's warriors (in round 1 or in later rounds)."""

    W: int                          # the target's Wounds
    blows: object                   # the plan's Blows (dice path)
    target: object                  # the plan's SideInfo of the target side
    table: Alias | None = None      # tabulated batch: rows by target code (see :meth:`strike`)
    new_code: NDArray[np.int8] | None = None
    hit: NDArray[np.bool_] | None = None
    #: tabulated batch: {(new code, hit): p} for rows w0, W + 1 + w0 (may parry), knocked down, stunned
    rows: tuple | None = None

    def strike(self, code: NDArray[np.int8], may_parry: NDArray[np.bool_],
               rng: np.random.Generator) -> tuple[NDArray[np.int8], NDArray[np.bool_]]:
        """New codes of targets ``code`` (standing, knocked down or stunned) and whether a to-hit die succeeded."""
        W = self.W
        stunned = code == W + 2
        if stunned.any():
            new, hit = np.full(code.size, W + 3, np.int8), np.zeros(code.size, bool)
            rest = np.flatnonzero(~stunned)
            if rest.size:
                new[rest], hit[rest] = self.strike(code[rest], may_parry[rest], rng)
            return new, hit
        if self.table is not None:
            # rows: w0 (no parry left), W + 1 + w0 (may parry), 2 (W + 1) knocked down
            row = code.astype(np.intp) + (W + 1) * (may_parry | (code == W + 1))
            pick = self.table.sample(row, rng)
            return self.new_code[pick], self.hit[pick]
        return _dice(self.blows, self.target, W, code, may_parry, rng)


def coded_row(rows, W: int, code: int, may_parry: bool) -> dict:
    """The row ``{(new code, hit): p}`` of a tabulated batch's coded ``rows`` (:attr:`StrikeTable.rows`)
    for a target with ``code`` (``may_parry``: its parry is not spent; a target that is down has none)."""
    return rows[code + (W + 1) * may_parry] if code <= W else rows[2 * (W + 1) + (code - W - 1)]


def batch_rows(blows, target) -> list[dict] | None:
    """Exact outcome rows of ``blows`` on a target side (see :func:`.single.batch_distribution`), or
    None for a batch of more than :data:`.batches.MAX_TABLE_ATTACKS` attacks (it rolls dice)."""
    if blows.n > MAX_TABLE_ATTACKS:
        return None
    dist = batch_distribution if blows.n == 1 else several_batch_distribution
    return dist(blows, target.w, target.parry_reroll, target.step_aside, target.helmet, target.jump_up)


def coded_rows(blows, target) -> tuple[dict, ...] | None:
    """:func:`batch_rows` by state codes, ``{(new code, hit): p}`` per row (the rows of
    :attr:`StrikeTable.rows`, stunned last), or None for a batch that rolls dice."""
    W = target.w
    rows = batch_rows(blows, target)
    if rows is None:
        return None
    coded = [{(_code(w, s, W), h): p for (w, s, h), p in r.items()} for r in rows]
    return tuple(coded) + ({(W + 3, False): 1.0},)


def strike_table(blows, target, *, tables: bool = True) -> StrikeTable:
    """The strike table of ``blows`` on a target side: outcome tables when :func:`batch_rows` has them
    (``tables=False``: only the coded rows, for tables built from them elsewhere)."""
    W = target.w
    rows = coded_rows(blows, target)
    if rows is None or not tables:
        return StrikeTable(W, blows, target, rows=rows)
    table, slots = _alias(list(rows[:-1]))
    new_code = np.array([c for row in slots for c, _ in row], np.int8)
    hit = np.array([h for row in slots for _, h in row], bool)
    return StrikeTable(W, blows, target, table, new_code, hit, rows)


@dataclass(frozen=True)
class CodeTable:
    """The one-attack batches of both sides as one alias table, so one call serves both sides.

    Striker side ``k`` reads rows ``offset[k] + code + (W_t + 1) * (may parry or not standing)``
    for its target's ``code`` (``W_t``: the target side's Wounds): w0 without a parry left,
    ``W_t + 1 + w0`` with one, ``2 (W_t + 1)`` knocked down, ``2 (W_t + 1) + 1`` stunned.
    ``offset[k]`` is -1 if side ``k``'s batch is not tabulated (it rolls dice instead).
    """

    offset: tuple[int, int]
    table: Alias
    new_code: NDArray[np.int8]
    hit: NDArray[np.bool_]


def code_table(strikes: tuple[StrikeTable, StrikeTable]) -> CodeTable | None:
    """The joint table of ``strikes[k]`` (side ``k``'s batch) for the sides with tabulated batches (None if neither)."""
    rows: list[dict] = []
    offset = []
    for t in strikes:
        offset.append(len(rows) if t.rows is not None else -1)
        rows += list(t.rows or ())
    if not rows:
        return None
    table, slots = _alias(rows)
    new_code = np.array([c for row in slots for c, _ in row], np.int8)
    hit = np.array([h for row in slots for _, h in row], bool)
    return CodeTable((offset[0], offset[1]), table, new_code, hit)


def _dice(b, tinfo, W: int, code, may_parry, rng: np.random.Generator):
    """Several attacks: roll every die (the 1 v 1 kernel's batch, on codes)."""
    m, A = code.size, b.n
    kd = code == W + 1
    w0 = np.where(kd, 0, code).astype(np.int16)
    H = rng.integers(1, 7, size=(m, A), dtype=np.int8)
    hits = (H >= b.need_hit) | kd[:, None]
    if b.parryable.any():
        ph = np.where(hits & b.parryable, H, 0)
        best = ph.max(1)
        tri = may_parry & ~kd & (best > 0) & (best < 6)
        if tri.any():
            ok = rng.integers(1, 7, size=m, dtype=np.int8) > best
            if tinfo.parry_reroll:
                ok |= rng.integers(1, 7, size=m, dtype=np.int8) > best
            win = np.flatnonzero(tri & ok)
            hits[win, (ph[win] == best[win, None]).argmax(1)] = False
    scored = ~kd & (H >= b.need_hit).any(1)
    new = code.copy()
    Wd = rng.integers(1, 7, size=(m, A), dtype=np.int8)
    wounded = hits & (Wd >= b.need_wound)
    if not wounded.any():
        return new, scored
    cand = wounded & (Wd == 6) & b.crit_ok
    crow = np.flatnonzero(cand.any(1))
    crit = np.zeros((m, A), np.int8)
    if crow.size:
        crit[crow, cand[crow].argmax(1)] = _CRIT[rng.integers(1, 7, size=crow.size) + b.crit_mod]
    saved = (rng.integers(1, 7, size=(m, A), dtype=np.int8) >= b.save) & (crit != EXPOSED_SPOT) & (crit != MASTER_STRIKE)
    if tinfo.step_aside:
        saved |= rng.integers(1, 7, size=(m, A), dtype=np.int8) >= 5
    nwounds = (wounded & ~saved).astype(np.int8) * np.where(crit > 0, 2, 1).astype(np.int8)
    total = nwounds.sum(1)
    new[kd & (total > 0)] = W + 3                          # knocked down: any unsaved wound
    sh = np.flatnonzero(~kd & (total > 0))
    if sh.size == 0:
        return new, scored
    nwounds, crit, total, w = nwounds[sh], crit[sh], total[sh], w0[sh]
    new[sh] = np.maximum(w - total, 0)
    need = np.maximum(w, 1)                                # wound number k rolls an injury if k >= max(w0, 1)
    ir = np.flatnonzero(total >= need)
    if ir.size == 0:
        return new, scored
    nwounds, crit, need = nwounds[ir], crit[ir], need[ir]
    before = np.cumsum(nwounds, 1) - nwounds
    k = before[:, :, None] + np.array([1, 2])
    rolls = (np.array([0, 1]) < nwounds[:, :, None]) & (k >= need[:, None, None])
    mod = b.injury_mod + 2 * (crit == MASTER_STRIKE)
    tot = rng.integers(1, 7, size=rolls.shape, dtype=np.int8) + mod[:, :, None]
    res = _INJURY[b.concussion.astype(np.intp)[None, :, None], np.minimum(tot, 9)]
    worst = np.where(rolls, res, -1).max(axis=(1, 2))
    if tinfo.helmet:
        saved_stun = (worst == STUNNED) & (rng.integers(1, 7, size=worst.size) >= 4)
        worst = np.where(saved_stun, KNOCKED_DOWN, worst)
        jump = (worst == KNOCKED_DOWN) & ~saved_stun
    else:
        jump = worst == KNOCKED_DOWN
    if tinfo.jump_up:
        worst = np.where(jump, STANDING, worst)
    new[sh[ir]] = np.where(worst == STANDING, 0, W + worst)
    return new, scored


# ------------------------------------------------------------------------- pairs
@dataclass(frozen=True)
class PairTable:
    """The phase of an isolated pair (attacking side's warrior ``a``, defending side's ``d``), one draw.

    Row ``(code_a * (Wd + 3) + code_d) * 3 + mode`` for codes below out of action and an order
    mode (:data:`A_FIRST`, :data:`D_FIRST`, :data:`TIE`); outcome ``new_a``, ``new_d``, and
    ``broken`` (one of them is out of action: the pair's contact goes).
    """

    n_codes_d: int
    table: Alias
    new_a: NDArray[np.int8]
    new_d: NDArray[np.int8]
    n_codes_a: int = 0
    broken: NDArray[np.bool_] | None = None

    def row(self, code_a, code_d, mode) -> NDArray[np.intp]:
        return (code_a.astype(np.intp) * self.n_codes_d + code_d) * 3 + mode


def _transitions(t: StrikeTable) -> list[dict[int, float]]:
    """Target code -> {new code: p} for a fresh phase (the target may parry), from ``t``'s coded rows."""
    W = t.W
    out = []
    for c in range(W + 3):
        r = coded_row(t.rows, W, c, True)
        d: dict[int, float] = {}
        for (k, _), p in r.items():
            d[k] = d.get(k, 0.0) + p
        out.append(d)
    return out


def pair_rows(a_on_d: StrikeTable, d_on_a: StrikeTable) -> list[dict[tuple[int, int], float]]:
    """The exact phase distributions ``{(new code a, new code d): p}`` of an isolated pair, composed
    from the two batch distributions, in the row order of :class:`PairTable`."""
    Wa, Wd = d_on_a.W, a_on_d.W
    t_ad, t_da = _transitions(a_on_d), _transitions(d_on_a)

    def phase(ca: int, cd: int, a_first: bool) -> dict[tuple[int, int], float]:
        out: dict[tuple[int, int], float] = {}
        if a_first:
            first = t_ad[cd] if ca <= Wa else {cd: 1.0}
            for cd2, p in first.items():
                second = t_da[ca] if cd2 <= Wd else {ca: 1.0}
                for ca2, q in second.items():
                    out[ca2, cd2] = out.get((ca2, cd2), 0.0) + p * q
        else:
            first = t_da[ca] if cd <= Wd else {ca: 1.0}
            for ca2, p in first.items():
                second = t_ad[cd] if ca2 <= Wa else {cd: 1.0}
                for cd2, q in second.items():
                    out[ca2, cd2] = out.get((ca2, cd2), 0.0) + p * q
        return out

    rows = []
    for ca in range(Wa + 3):
        for cd in range(Wd + 3):
            af, df = phase(ca, cd, True), phase(ca, cd, False)
            tie = {k: 0.5 * af.get(k, 0.0) + 0.5 * df.get(k, 0.0) for k in set(af) | set(df)}
            rows += [af, df, tie]
    return rows


def pair_table(a_on_d: StrikeTable, d_on_a: StrikeTable) -> PairTable:
    """Alias tables of :func:`pair_rows`."""
    Wa, Wd = d_on_a.W, a_on_d.W
    table, slots = _alias(pair_rows(a_on_d, d_on_a))
    new_a = np.array([k[0] for row in slots for k in row], np.int8)
    new_d = np.array([k[1] for row in slots for k in row], np.int8)
    return PairTable(Wd + 3, table, new_a, new_d, Wa + 3, (new_a == Wa + 3) | (new_d == Wd + 3))


assert (KNOCKED_DOWN, STUNNED, OUT_OF_ACTION) == (1, 2, 3)   # codes W + status rely on these values


# ------------------------------------------------------------------------- volleys
@dataclass(frozen=True)
class VolleyTable:
    """``j`` tabulated batches in a row on one target (the leaves of a star striking its centre), one draw.

    Each batch depends only on the target's code and whether its parry is spent, so the
    target's (code, parry spent) after ``j`` batches is the ``j``-th power of one
    transition matrix (out of action absorbs). Rows ``(j * (W + 4) + code) * 2 + spent``
    for ``j`` up to :attr:`most`; outcomes ``new_code`` and ``spent``.
    """

    W: int
    most: int
    table: Alias
    new_code: NDArray[np.int8]
    spent: NDArray[np.bool_]

    def strike(self, j: NDArray[np.integer], code: NDArray[np.int8], spent: NDArray[np.bool_],
               rng: np.random.Generator) -> tuple[NDArray[np.int8], NDArray[np.bool_]]:
        """New (code, parry spent) of targets ``code`` after ``j`` batches each (0 <= j <= most)."""
        row = (j.astype(np.intp) * (self.W + 4) + code) * 2 + spent
        pick = self.table.sample(row, rng)
        return np.take(self.new_code, pick), np.take(self.spent, pick)


def volley_table(t: StrikeTable, most: int) -> VolleyTable | None:
    """The volley table of up to ``most`` batches of the tabulated ``t`` (None if ``t`` rolls dice)."""
    if t.rows is None:
        return None
    W = t.W
    n = 2 * (W + 4)
    step = np.zeros((n, n))
    for code in range(W + 4):
        for spent in (0, 1):
            if code == W + 3:                              # out of action: nothing more happens
                step[2 * code + spent, 2 * code + spent] = 1.0
                continue
            for (new, scored), p in coded_row(t.rows, W, code, not spent).items():
                step[2 * code + spent, 2 * new + (spent | scored)] += p
    power = np.eye(n)
    rows = []
    for _ in range(most + 1):
        rows += [{k: p for k, p in enumerate(r) if p > 1e-300} for r in power]
        power = matmul(power, step)  # in a fixed order: BLAS sums differently per CPU
    table, slots = _alias(rows)
    flat = np.array([k for row in slots for k in row])
    return VolleyTable(W, most, table, (flat // 2).astype(np.int8), (flat % 2).astype(bool))
