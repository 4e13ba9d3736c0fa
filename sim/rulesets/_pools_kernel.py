"""Vectorised kernel of the ``pools`` ruleset (see :mod:`sim.rulesets.pools`).

Two exact samplers share one settlement step:

* **binomial** (any number of rounds): per round and per side, hits ~
  Binomial(pool, p_hit) and unsaved hits ~ Binomial(hits, p_fail_save), arrays
  over the trials still fighting. Only the *counts* matter to the rules, so
  counting successes replaces rolling each die.
* **multinomial** (a single engagement, the default ``rounds = 1``): from a
  fixed start, each side's result is the pair (Shaken after the check, unsaved
  hits received), and the two sides are independent. Their joint distribution
  is computed exactly in :func:`single_engagement_table`; the numbers of ``n``
  trials that end in each cell are then one multinomial draw, a few hundred
  random numbers per block instead of two binomials per trial. The kernel
  settles each distinct cell once and returns it with its count as weight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..outcomes import ATTACKER, DEFENDER, DRAW, Outcomes

__all__ = ["SideStats", "RoundSetup", "SingleTable", "single_engagement_table", "run_multinomial",
           "run_binomial", "DESTROYED", "RETREATED", "HELD"]

DESTROYED, RETREATED, HELD = 0, 1, 2
#: Largest joint table (cells) the multinomial path builds; bigger pools use the binomial path.
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
    """Pools and hit probabilities of round ``r`` for arrays of trials.

    Round 1 is the situation the states describe; from round 2 the round's
    attacker (original attacker in odd rounds) charges out of the open, nobody
    holds a Dash token or is in cover, and the defender counts as flanked if
    it retreated in the previous round.
    """
    att = 0 if r % 2 == 1 else 1
    pools, probs = [], []
    if r == 1:
        flanked = [np.full(len(wl[0]), setup.flanked[s]) for s in (0, 1)]
        dash, cover, charging = setup.dash, setup.cover, setup.charge
    else:
        flanked = [np.zeros(len(wl[0]), bool), np.zeros(len(wl[0]), bool)]
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
        probs.append(p_hit(threshold))
    return pools, probs


def _binom_pmf(n: int, p: float) -> NDArray[np.float64]:
    """Binomial(n, p) pmf over 0..n (log space, so large pools do not overflow)."""
    k = np.arange(n + 1)
    if p <= 0.0 or p >= 1.0:
        out = np.zeros(n + 1)
        out[0 if p <= 0.0 else n] = 1.0
        return out
    logfact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])
    return np.exp(logfact[n] - logfact[k] - logfact[n - k] + k * np.log(p) + (n - k) * np.log1p(-p))


def single_engagement_table(sides: tuple[SideStats, SideStats], setup: RoundSetup) -> SingleTable | None:
    """The exact joint (Shaken, unsaved) distribution of round 1, or ``None`` if too large."""
    wl = [np.array([st.bases * st.wounds]) for st in sides]
    shaken = [np.array([setup.shaken[s]]) for s in (0, 1)]
    pools, probs = _round_numbers(sides, setup, 1, wl, shaken, [np.zeros(1, bool)] * 2)
    per_side = []
    for s in (0, 1):  # side s *receives* the hits of side o
        o = 1 - s
        n = int(pools[o][0])
        ph = _binom_pmf(n, float(probs[o][0]))
        # joint[h, u]: h hits received, u of them unsaved
        joint = np.zeros((n + 1, n + 1))
        for h in range(n + 1):
            joint[h, : h + 1] = ph[h] * _binom_pmf(h, sides[s].p_fail_save)
        hits = np.arange(n + 1)
        now_shaken = setup.shaken[s] | (hits >= sides[s].courage)
        table = np.stack([joint[~now_shaken].sum(0), joint[now_shaken].sum(0)])  # [shaken, u]
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


# ------------------------------------------------------------ settlement
@dataclass
class _State:
    """Per-trial arrays indexed by original side (0 attacker, 1 defender)."""

    wl: list[NDArray[np.int64]]        # wounds left
    damage: list[NDArray[np.int64]]    # wounds received (capped at wounds left)
    shaken: list[NDArray[np.bool_]]
    retreated: list[NDArray[np.bool_]]  # retreated in the last engagement
    destroyed: list[NDArray[np.bool_]]
    lost: list[NDArray[np.bool_]]       # lost the last engagement

    @staticmethod
    def start(sides, setup: RoundSetup, n: int) -> "_State":
        return _State(
            [np.full(n, st.bases * st.wounds, np.int64) for st in sides],
            [np.zeros(n, np.int64), np.zeros(n, np.int64)],
            [np.full(n, setup.shaken[s]) for s in (0, 1)],
            [np.zeros(n, bool), np.zeros(n, bool)],
            [np.zeros(n, bool), np.zeros(n, bool)],
            [np.zeros(n, bool), np.zeros(n, bool)],
        )


def _settle(sides, st: _State, idx, unsaved) -> None:
    """Wounds, winner and loser, retreat or destruction for trials ``idx`` (in place)."""
    loser_a = unsaved[0] > unsaved[1]
    loser_d = unsaved[1] > unsaved[0]
    for s, lost in ((0, loser_a), (1, loser_d)):
        wl = st.wl[s][idx]
        taken = np.minimum(unsaved[s], wl)
        st.damage[s][idx] += taken
        wl = wl - taken
        st.wl[s][idx] = wl
        killed = wl == 0
        # a loser that survives its wounds retreats; a stationary one is destroyed instead
        if sides[s].move == 0:
            killed = killed | lost
        st.destroyed[s][idx] = killed
        st.retreated[s][idx] = lost & ~killed
        st.lost[s][idx] = lost


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
    _settle(sides, st, np.arange(m), (table.unsaved[0][k], table.unsaved[1][k]))
    return _finish(sides, st, np.ones(m, np.int64), limit, fixed_rounds, weights=counts[k].astype(np.int64))


def run_binomial(sides, setup: RoundSetup, n: int, rng: np.random.Generator, fixed_rounds: bool,
                 limit: int) -> Outcomes:
    """Engagements until a unit is destroyed or ``limit`` rounds: binomial counts per side and round."""
    st = _State.start(sides, setup, n)
    rounds_fought = np.zeros(n, np.int64)
    alive = np.arange(n)
    r = 0
    while alive.size and r < limit:
        r += 1
        att = 0 if r % 2 == 1 else 1
        if r > 1 and setup.rally:
            # rally: the Shaken unit recovers at the start of its own turn as attacker
            st.shaken[att][alive] = False
        wl = [st.wl[0][alive], st.wl[1][alive]]
        shaken = [st.shaken[0][alive], st.shaken[1][alive]]
        retreated = [st.retreated[0][alive], st.retreated[1][alive]]
        pools, probs = _round_numbers(sides, setup, r, wl, shaken, retreated)
        hits = [rng.binomial(pools[s], probs[s]) for s in (0, 1)]  # hits scored by side s
        unsaved = []
        for s in (0, 1):  # side s receives the other side's hits
            received = hits[1 - s]
            st.shaken[s][alive] = shaken[s] | (received >= sides[s].courage)
            pf = sides[s].p_fail_save
            unsaved.append(received if pf >= 1.0 else rng.binomial(received, pf))
        _settle(sides, st, alive, unsaved)
        rounds_fought[alive] = r
        alive = alive[~(st.destroyed[0][alive] | st.destroyed[1][alive])]
    return _finish(sides, st, rounds_fought, limit, fixed_rounds)
