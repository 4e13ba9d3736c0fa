"""``warband`` kernel fast path: the exact outcome of a one-attack batch, precomputed per target state.

A striker with a single attack (the common plain warrior) has no critical
coupling between attacks and no choice of which hit to parry, so its whole batch
against one target is a small categorical distribution that depends only on the
target's wounds, status and whether it may still parry. :func:`single_table`
computes it from the per-die probabilities (to hit, parry, to wound, critical
table, save, Step Aside, injury dice, helmet, Jump Up); the kernel then draws one
uniform per batch instead of rolling every die. Tested against the scalar
reference in distribution and against the hand-derived Markov chains.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...kernels.portable import int_power
from .tables import (
    EXPOSED_SPOT, KNOCKED_DOWN, MASTER_STRIKE, OUT_OF_ACTION, STANDING, STUNNED, critical_result, injury_result,
)

__all__ = ["SingleTable", "single_table", "batch_distribution", "auto_hit_cdf", "alias_table"]


@dataclass(frozen=True)
class SingleTable:
    """Outcomes of one batch by input row.

    Rows: ``w0 + (W + 1) * may_parry`` for a standing target with ``w0`` wounds
    left, and ``kd_row = 2 * (W + 1)`` for a knocked-down target. Each row lists
    up to K outcomes (cumulative probability, new wounds, new status, hits scored).
    """

    K: int
    prob: NDArray[np.float64]      # (rows * K,) alias-method acceptance probability of slot j in row r
    alias: NDArray[np.intp]        # (rows * K,) flat index of the alternative outcome
    new_w: NDArray[np.int8]        # (rows * K,) outcome fields by flat index r * K + j
    new_status: NDArray[np.int8]
    hit: NDArray[np.bool_]         # the striker scored a hit (the target's parry chance is gone)
    kd_row: int

    def sample(self, row: NDArray[np.intp], x: NDArray[np.float64]) -> NDArray[np.intp]:
        """Flat outcome indices for rows ``row`` from uniforms ``x`` in [0, 1) (Walker's alias method:
        the integer part of ``K x`` picks a slot, its fractional part accepts it or its alias)."""
        x = x * self.K
        j = x.astype(np.intp)
        flat = row * self.K + j
        return np.where(x - j < self.prob[flat], flat, self.alias[flat])


def _injury(k: int, mod: int, concussion: bool) -> dict[int, float]:
    """Highest of k injury rolls d6 + mod."""
    per = np.zeros(4)
    for d in range(1, 7):
        per[injury_result(d + mod, concussion)] += 1 / 6
    # P(max <= s) for s = KD, ST, OOA (results are ordered KD < ST < OOA)
    cdf = np.cumsum(per)
    out = {}
    prev = 0.0
    for s in (KNOCKED_DOWN, STUNNED, OUT_OF_ACTION):
        c = int_power(float(cdf[s]), k)  # not **: the C library's pow differs by machine
        out[s] = c - prev
        prev = c
    return out


def batch_distribution(b, t_w: int, parry_reroll: bool, step_aside: bool, helmet: bool,
                       jump_up: bool) -> list[dict[tuple[int, int, bool], float]]:
    """Exact outcome distribution of a one-attack batch ``b`` (a ``Blows`` with n == 1), by input row.

    Rows as in :class:`SingleTable` (``w0``, ``w0 + W + 1`` if the target may still parry, and
    ``2 (W + 1)`` for a knocked-down target); each maps (new wounds, new status, hits scored)
    to its probability.
    """
    need_hit, need_w, save = b.need_hit, int(b.need_wound[0]), int(b.save[0])
    parryable, concussion, crit_ok = bool(b.parryable[0]), bool(b.concussion[0]), bool(b.crit_ok[0])
    p_save = max(0, 7 - save) / 6 if save <= 6 else 0.0
    p_step = 2 / 6 if step_aside else 0.0

    def wound_outcomes():
        """(probability, wounds, injury modifier) of one hit that lands."""
        res = []
        for d in range(1, 7):
            if d < need_w:
                continue
            if d == 6 and crit_ok:
                for c in range(1, 7):
                    kind = critical_result(c + b.crit_mod)
                    ps = 0.0 if kind in (EXPOSED_SPOT, MASTER_STRIKE) else p_save
                    res.append((1 / 36 * (1 - ps) * (1 - p_step), 2, b.injury_mod + (2 if kind == MASTER_STRIKE else 0)))
            else:
                res.append((1 / 6 * (1 - p_save) * (1 - p_step), 1, b.injury_mod))
        return res

    rows: list[dict[tuple[int, int, bool], float]] = []
    for may_parry in (False, True):
        for w0 in range(t_w + 1):
            out: dict[tuple[int, int, bool], float] = {}

            def add(key, p):
                if p > 0:
                    out[key] = out.get(key, 0.0) + p

            p_land = 0.0
            for v in range(need_hit, 7):
                p_fail = 1.0
                if may_parry and parryable and v < 6:
                    p_fail = (v / 6) * (v / 6) if parry_reroll else v / 6  # both parry dice at most v
                p_land += p_fail / 6
            p_hit_scored = (7 - need_hit) / 6 if need_hit <= 6 else 0.0
            add((w0, STANDING, False), 1 - p_hit_scored)
            p_unhurt = p_hit_scored
            for p, wounds, mod in wound_outcomes():
                p *= p_land
                p_unhurt -= p
                left = max(w0 - wounds, 0)
                k = wounds - max(w0, 1) + 1
                if k <= 0:
                    add((left, STANDING, True), p)
                    continue
                inj = _injury(k, mod, concussion)
                add((0, OUT_OF_ACTION, True), p * inj[OUT_OF_ACTION])
                stun = p * inj[STUNNED]
                kd = p * inj[KNOCKED_DOWN]
                if helmet:
                    add((0, KNOCKED_DOWN, True), stun / 2)     # helmet save: not ignored by Jump Up
                    stun /= 2
                add((0, STUNNED, True), stun)
                add((0, STANDING if jump_up else KNOCKED_DOWN, True), kd)
            add((w0, STANDING, True), p_unhurt)
            rows.append(out)
    # knocked-down target: auto-hit, any unsaved wound is out of action
    p_ooa = sum(p for p, _, _ in wound_outcomes())
    rows.append({(0, OUT_OF_ACTION, False): p_ooa, (0, KNOCKED_DOWN, False): 1 - p_ooa})
    return rows


def single_table(b, t_w: int, parry_reroll: bool, step_aside: bool, helmet: bool, jump_up: bool) -> SingleTable:
    """Exact outcome distribution of a one-attack batch ``b`` (a ``Blows`` with n == 1), as alias tables."""
    rows = batch_distribution(b, t_w, parry_reroll, step_aside, helmet, jump_up)
    K = max(len(r) for r in rows)
    n = len(rows) * K
    prob, alias = np.ones(n), np.arange(n)
    nw, ns, hit = np.zeros(n, np.int8), np.zeros(n, np.int8), np.zeros(n, bool)
    for i, r in enumerate(rows):
        items = [(k, p) for k, p in r.items() if p > 0]
        total = sum(p for _, p in items)
        assert abs(total - 1) < 1e-9, (i, r)
        for j, ((w, st, h), _) in enumerate(items):
            nw[i * K + j], ns[i * K + j], hit[i * K + j] = w, st, h
        p, a = alias_table([p / total for _, p in items] + [0.0] * (K - len(items)))
        prob[i * K:(i + 1) * K] = p
        alias[i * K:(i + 1) * K] = i * K + a
    return SingleTable(K, prob, alias, nw, ns, hit, 2 * (t_w + 1))


def auto_hit_cdf(b, step_aside: bool) -> NDArray[np.float64]:
    """Unsaved wounds of one automatic hit with the first attack column of ``b`` (All Alone).

    To wound, a critical on a natural 6 if less than 6 is needed (vital part: saved by the
    armour save; exposed spot and master strike: no save; both 2 wounds), the armour save,
    Step Aside. Returns ``[P(0 wounds), P(at most 1 wound)]`` for inverse-CDF sampling.
    """
    need_w, save = int(b.need_wound[0]), int(b.save[0])
    p_save = max(0, 7 - save) / 6 if save <= 6 else 0.0
    p_step = 2 / 6 if step_aside else 0.0
    p1 = p2 = 0.0
    for d in range(need_w, 7):
        if d == 6 and bool(b.crit_ok[0]):
            for c in range(1, 7):
                kind = critical_result(c + b.crit_mod)
                ps = 0.0 if kind in (EXPOSED_SPOT, MASTER_STRIKE) else p_save
                p2 += 1 / 36 * (1 - ps) * (1 - p_step)
        else:
            p1 += 1 / 6 * (1 - p_save) * (1 - p_step)
    p0 = 1 - p1 - p2
    return np.array([p0, p0 + p1])


def alias_table(p: list[float]) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Vose's alias table for probabilities ``p``: slot j keeps j with prob[j], else alias[j]."""
    K = len(p)
    scaled = [x * K for x in p]
    prob, alias = np.ones(K), np.arange(K)
    small = [j for j, x in enumerate(scaled) if x < 1.0]
    large = [j for j, x in enumerate(scaled) if x >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        prob[s], alias[s] = scaled[s], g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    for j in small + large:       # numerical leftovers are certain
        prob[j] = 1.0
    return prob, alias
