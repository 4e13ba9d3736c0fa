"""``duel`` compiled group kernel: whole fights, one after another, in a loop compiled by Numba.

The vectorised group kernel (:mod:`._duel_fast`) draws every combat of a phase
from exact outcome tables, but spends most of a 20 v 20 fight's time on the
whole-array passes around the draws (the compaction, the radix sort of the
fights by pairs, the ganged combat's gathers). This kernel plays the same rules
model by model in compiled code (:mod:`._duel_loop`) with the same tables
(:class:`._duel_tables.DuelTables`), one 32-bit uniform a draw: not the
vectorised kernel's stream draw for draw, but the same distribution (tested
against it, and against the exact group chains).

The uniforms come in buffers from the fight's stream (:func:`._alias.uniform32`);
the unused rest of one buffer starts the next, so a run reads its stream in order
and is determined by its seed and ``n``, whatever the buffer sizes. Every fight the
vectorised group kernel plays is played here when Numba imports (else there).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..outcomes import Outcomes
from ..ruleset import END, Rounds
from ._alias import AliasPacked, uniform32
from ._duel_plan import DuelPlan, make_outcomes
from ._duel_tables import DuelTables

__all__ = ["available", "simulate_loop", "BUFFER", "HEADROOM"]

#: Uniforms a buffer holds at least (with four fights' bound), and how much more than the mean use so far a
#: refill draws. Neither changes a result (the buffers read the stream in order).
BUFFER = 1 << 17
HEADROOM = 1.25

_NO_TABLE = (np.zeros(2, np.uint64), 1)     # a table the loop never reads (its side cannot need it)


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether Numba imports here (else the vectorised group kernel plays every fight)."""
    try:
        from . import _duel_loop  # noqa: F401
    except ImportError:
        return False
    return True


def _records(table: AliasPacked | None) -> tuple[np.ndarray, int]:
    return _NO_TABLE if table is None else (table.records, table.bits)


def simulate_loop(plan: DuelPlan, tables: DuelTables, n: int, rng: np.random.Generator, rounds: Rounds,
                  max_rounds: int) -> Outcomes:
    """``n`` fights of a group matchup with the ``fewest_wounds`` assignment (see the module docstring)."""
    from ._duel_loop import play

    limit = max_rounds if rounds == END else int(rounds)
    s0, s1 = plan.sides
    nA, nB = s0.count, s1.count
    per_fight = limit * (min(nA, nB) + 4)          # a draw per pair and four for combat 0, each phase
    size = max(4 * per_fight, BUFFER)
    remaining, alive, misted = (np.empty((2, n), np.int64) for _ in range(3))
    n_rounds = np.empty(n, np.int64)
    identity = (s0.wounds + 1) * (s1.wounds + 1)
    hit_a, hit_b = (_records(t) for t in tables.hit_one)
    fails_a, fails_b = (_records(t) for t in tables.fails)
    part_a, part_b = (_records(t) for t in tables.partial)
    roll = np.ascontiguousarray(tables.roll)
    roll_a, roll_ab = roll[0].ravel(), roll[1].ravel()
    side = lambda f, dtype: np.array([f(s0), f(s1)], dtype)  # noqa: E731
    extra_die, extra_hit = side(lambda s: s.extra_die, np.int64), side(lambda s: s.extra_hit, np.int64)
    prone, damage = side(lambda s: s.prone, np.bool_), side(lambda s: s.hit_damage, np.int64)
    instant = np.array(plan.instant, np.bool_)
    can_mist = np.array([plan.instant[1], plan.instant[0]], np.bool_)
    done = used = 0
    left = np.empty(0, np.uint32)
    while done < n:
        want = per_fight * (n - done) if done == 0 else int(HEADROOM * used / done * (n - done)) + per_fight
        want = max(per_fight, min(size, want))
        fresh = max(0, want - left.size)          # even: uniform32 splits 64-bit draws, no half dropped
        u = np.concatenate([left, uniform32(rng, fresh + (fresh & 1))])
        done, pos = play(done, n, u, per_fight, nA, nB, s0.wounds, s1.wounds, limit,
                         tables.pair.records, tables.pair.bits, identity,
                         hit_a[0], hit_a[1], hit_b[0], hit_b[1], fails_a[0], fails_a[1], fails_b[0], fails_b[1],
                         part_a[0], part_a[1], part_b[0], part_b[1], roll_a, roll_ab, roll.shape[2],
                         extra_die, extra_hit, prone, instant, damage, can_mist,
                         remaining, alive, misted, n_rounds)
        used += pos
        left = u[pos:]
    return make_outcomes(plan, (remaining[0], remaining[1]), (alive[0], alive[1]), (misted[0], misted[1]),
                         n_rounds, rounds, limit)
