"""``duel`` exact outcome tables of one combat, for the group kernels (:mod:`.fast`, :mod:`.compiled`).

A model's whole state is its wounds left: the yards it can still back are
``max(0, space - wounds lost)`` (it backs one yard per wound lost to a combat's
hits until its space is used up, and only then are yards blocked; see
:mod:`.groups`). So the outcome of a combat depends on a few small
integers, and each is tabulated exactly once per matchup:

- ``pair``: one model against one, by ``(wounds A, wounds B)``: the duel roll
  (order statistics of d6 maxima, ties to the higher WS, then a double loss)
  and the loser's (or both losers') failed checks, ``Binomial(hits, p_fail)``,
  with the blocked-yard hits of a surviving loser;
- ``hit_one[h]``: a single model of side ``1 - h`` that lost to a ganged side
  ``h`` landing ``H`` hits on it, by ``(H, its wounds)``;
- ``fails[h]``: the failed checks of ``H`` hits from one model of side ``h``;
- ``partial[l]``: a model of side ``l`` with ``w`` wounds that took ``f`` failed
  checks but survives: its wounds after backing away (blocked-yard hits);
- ``roll_first``, ``roll_second``: the duel roll of a ganged combat by dice
  counts, cumulative (P attacker wins, P attacker or defender wins).

Outcomes are *parts* of a model's key in the kernel's state array: wounds in
bits 0-4, ``MISTED`` and ``DEAD`` flags; ``pair`` holds instead the change of
both models' keys (new part minus wounds), two ``int8`` read as one ``int16``.
Every table is an :class:`sim.kernels.alias.AliasBits` (one 32-bit uniform a draw; each
outcome's probability exact to within (slots a row) x ``2**-32``), packed as an
:class:`sim.kernels.alias.AliasPacked` (the same draws, one gather each).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...kernels.alias import AliasBits, AliasPacked
from ...kernels.portable import binomial_pmf, matmul, max_of_d6_pmf
from .plan import DuelPlan

__all__ = ["DuelTables", "build_tables", "WOUNDS", "MISTED", "DEAD", "MAX_ROLL_CELLS"]

WOUNDS = 31          # bits 0-4: wounds left
MISTED = 1 << 5      # slain by instant death
DEAD = 1 << 6        # down: a key at least DEAD is a fallen model (keys fit ``int8``)
#: Largest duel-roll table of a ganged combat (dice counts A x dice counts B).
MAX_ROLL_CELLS = 1 << 19


@dataclass(frozen=True)
class DuelTables:
    """The exact tables of :func:`build_tables` (see the module docstring)."""

    pair: AliasPacked             # values: the two models' key changes, two int8 read as one int16
    hit_one: tuple[AliasPacked | None, AliasPacked | None]
    fails: tuple[AliasPacked | None, AliasPacked | None]
    partial: tuple[AliasPacked, AliasPacked]
    roll: NDArray[np.float64]     # (2, dice A + 1, dice B + 1): P(A wins), P(A or B wins)

    @property
    def nbytes(self) -> int:
        tabs = [self.pair, *self.hit_one, *self.fails, *self.partial]
        return sum(t.nbytes for t in tabs if t is not None) + self.roll.nbytes


def _part(w: int, misted: bool = False) -> int:
    return w if w > 0 else DEAD | (MISTED if misted else 0)


def _pmf(n: NDArray, p: float, k: NDArray) -> NDArray:
    """P(Binomial(n, p) = k), element by element (:mod:`sim.kernels.portable`: the same bits on every machine)."""
    n, k = np.broadcast_arrays(np.asarray(n, np.int64), np.asarray(k, np.int64))
    out = np.zeros(n.shape)
    for m in np.unique(n).tolist():
        row = binomial_pmf(m, p)
        at = (n == m) & (k <= m)
        out[at] = row[k[at]]
    return out


class _Builder:
    def __init__(self, plan: DuelPlan):
        self.plan = plan

    def yards(self, side: int, w: int) -> int | None:
        s = self.plan.sides[side]
        if s.prone:
            return 0
        return None if s.space is None else max(0, s.space - (s.wounds - w))

    def post(self, hitter: int, w: int, f: int) -> NDArray[np.float64]:
        """Wounds (index 0..W) of a loser of side ``1 - hitter`` with ``w`` that failed ``f`` checks and survives
        them (``f * damage < w``), after backing away: each blocked yard is one more check."""
        loser = 1 - hitter
        W = self.plan.sides[loser].wounds
        dmg, p = self.plan.sides[hitter].hit_damage, self.plan.p_fail[hitter]
        out = np.zeros(W + 1)
        took = f * dmg
        left = w - took
        room = self.yards(loser, w)
        blocked = 0 if (took == 0 or room is None) else max(0, took - room)
        k = np.arange(blocked + 1)
        pk = _pmf(np.full(blocked + 1, blocked), p, k)
        np.add.at(out, left - np.minimum(k * dmg, left), pk)
        return out

    def hit_one(self, hitter: int, max_hits: int) -> AliasBits | None:
        """Rows ``H * (W + 1) + w``: a single loser of side ``1 - hitter`` with ``w`` wounds takes ``H`` hits.

        Columns: wounds left 0..W (0 = slain), then W + 1 = misted.
        """
        loser = 1 - hitter
        W = self.plan.sides[loser].wounds
        H = np.arange(max_hits + 1)
        P = np.zeros((max_hits + 1, W + 1, W + 2))
        P[:, 0, 0] = 1.0  # a fallen model stays down (rows never drawn)
        if self.plan.instant[hitter]:
            P[0, 1:, :W + 1] = np.eye(W + 1)[1:]
            P[1:, 1:, W + 1] = 1.0
        else:
            p, dmg = self.plan.p_fail[hitter], self.plan.sides[hitter].hit_damage
            for w in range(1, W + 1):
                need = -(-w // dmg)  # failed checks that slay it
                f = np.arange(need)
                pf = _pmf(H[:, None], p, f[None, :])  # (H, need): it survives with f fails
                post = np.array([self.post(hitter, w, int(k)) for k in f])
                P[:, w, :W + 1] = matmul(pf, post)
                P[:, w, 0] += np.clip(1.0 - pf.sum(1), 0.0, None)  # at least `need` fails
        values = np.array([_part(w) for w in range(W + 1)] + [_part(0, True)])
        return AliasBits.build(P.reshape(-1, W + 2), values, dtype=np.int32)

    def partial(self, loser: int) -> AliasBits:
        """Rows ``w * (W + 1) + f``: a model of side ``loser`` that took ``f`` fails and survives."""
        hitter = 1 - loser
        W = self.plan.sides[loser].wounds
        dmg = self.plan.sides[hitter].hit_damage
        P = np.zeros((W + 1, W + 1, W + 1))
        for w in range(W + 1):
            for f in range(W + 1):
                if 0 < w and f * dmg < w and not self.plan.instant[hitter]:
                    P[w, f] = self.post(hitter, w, f)
                else:
                    P[w, f, w] = 1.0  # not drawn
        values = np.array([_part(w) for w in range(W + 1)])
        return AliasBits.build(P.reshape(-1, W + 1), values, dtype=np.int32)

    def fails(self, hitter: int) -> AliasBits | None:
        """Rows ``H``: failed checks of ``H`` hits of side ``hitter`` (None: instant death, no check)."""
        if self.plan.instant[hitter]:
            return None
        s = self.plan.sides[hitter]
        top = s.wounds + s.extra_hit
        H = np.arange(top + 1)
        P = _pmf(H[:, None], self.plan.p_fail[hitter], H[None, :])
        return AliasBits.build(P, dtype=np.int64)

    def pair(self) -> AliasBits:
        """Rows ``wa * (WB + 1) + wb``: one model against one; values: the change of each model's key.

        A value is two ``int8`` (the attacker's key change, then the defender's) read as one
        ``int16``: one look-up gives both. A standing model's key changes by its new part minus
        its wounds; a row with a fallen model (wounds 0) changes nothing. Rows from
        ``(WA + 1) * (WB + 1)`` on repeat the states unchanged (for a column whose combat is
        resolved elsewhere).
        """
        s0, s1 = self.plan.sides
        WA, WB = s0.wounds, s1.wounds
        roll = self.roll_upto(WA + s0.extra_die, WB + s1.extra_die)
        n_rows = (WA + 1) * (WB + 1)
        P = np.zeros((2 * n_rows, (WA + 2) * (WB + 2)))
        for wa in range(WA + 1):
            for wb in range(WB + 1):
                P[n_rows + wa * (WB + 1) + wb, wa * (WB + 2) + wb] = 1.0
        for wa in range(WA + 1):
            for wb in range(WB + 1):
                row = P[wa * (WB + 1) + wb].reshape(WA + 2, WB + 2)
                if wa == 0 or wb == 0:
                    row[wa, wb] = 1.0
                    continue
                na = 0 if s0.prone else wa + s0.extra_die
                nb = 0 if s1.prone else wb + s1.extra_die
                c1, c2 = roll[:, na, nb]
                win_a, win_b, both = c1, c2 - c1, max(0.0, 1.0 - c2)
                da = self.loser_dense(1, wb + s1.extra_hit, wa)  # A hit by B
                db = self.loser_dense(0, wa + s0.extra_hit, wb)  # B hit by A
                row[wa, :] += win_a * db
                row[:, wb] += win_b * da
                row += both * np.outer(da, db)
        va = np.array([_part(w) for w in range(WA + 1)] + [_part(0, True)], np.int8)
        vb = np.array([_part(w) for w in range(WB + 1)] + [_part(0, True)], np.int8)
        wa, wb = np.divmod(np.arange(2 * n_rows) % n_rows, WB + 1)  # each row's wounds
        delta = np.zeros((2 * n_rows, WA + 2, WB + 2, 2), np.int8)
        delta[..., 0] = (va[None, :, None] - wa[:, None, None]) * (wa > 0)[:, None, None]
        delta[..., 1] = (vb[None, None, :] - wb[:, None, None]) * (wb > 0)[:, None, None]
        values = np.ascontiguousarray(delta).view(np.int16).reshape(2 * n_rows, -1)  # [A, B] in memory order
        return AliasBits.build(P, values, dtype=np.int16)

    def roll_upto(self, top0: int, top1: int) -> NDArray[np.float64]:
        """Cumulative duel roll ``[P(A wins), P(A or B wins)]`` by dice counts 0..top (0 = prone: counts as a 1).

        ``P(max of n <= k) = (k/6)**n``; a tie goes to the higher WS, else both lose.
        """
        s0, s1 = self.plan.sides
        pm = [np.array([max_of_d6_pmf(d) for d in range(top + 1)]) for top in (top0, top1)]
        higher = np.tril(np.ones((6, 6)), -1)
        gt = matmul(matmul(pm[0], higher), pm[1].T)
        lt = matmul(matmul(pm[0], higher.T), pm[1].T)
        eq = np.clip(1.0 - gt - lt, 0.0, None)
        if s0.ws > s1.ws:
            gt = gt + eq
        elif s0.ws < s1.ws:
            lt = lt + eq
        return np.stack([gt, gt + lt])

    def loser_dense(self, hitter: int, hits: int, w: int) -> NDArray[np.float64]:
        """Outcome vector (wounds 0..W, then misted) of a loser of side ``1 - hitter`` with ``w`` taking ``hits``."""
        loser = 1 - hitter
        W = self.plan.sides[loser].wounds
        out = np.zeros(W + 2)
        if self.plan.instant[hitter]:
            out[W + 1] = 1.0
            return out
        p, dmg = self.plan.p_fail[hitter], self.plan.sides[hitter].hit_damage
        need = -(-w // dmg)
        f = np.arange(need)
        pf = _pmf(np.full(need, hits), p, f)
        for k, q in zip(f, pf):
            out[:W + 1] += q * self.post(hitter, w, int(k))
        out[0] += max(0.0, 1.0 - pf.sum())
        return out


def _packed(t: AliasBits | None) -> AliasPacked | None:
    """``t`` packed one record a slot (every value of these tables fits ``int16``): one gather a draw."""
    return None if t is None else AliasPacked.from_bits(t)


def build_tables(plan: DuelPlan) -> DuelTables | None:
    """Every table of the group kernel for ``plan`` (None when the ganged duel roll would be too large)."""
    b = _Builder(plan)
    s0, s1 = plan.sides
    dice = [s.count * (s.wounds + s.extra_die) for s in (s0, s1)]
    if (dice[0] + 1) * (dice[1] + 1) > MAX_ROLL_CELLS:
        return None
    hits = [s.count * (s.wounds + s.extra_hit) for s in (s0, s1)]
    return DuelTables(
        pair=_packed(b.pair()),
        hit_one=(_packed(b.hit_one(0, hits[0])), _packed(b.hit_one(1, hits[1]))),
        fails=(_packed(b.fails(0)), _packed(b.fails(1))),
        partial=(_packed(b.partial(0)), _packed(b.partial(1))),
        roll=b.roll_upto(dice[0], dice[1]),
    )
