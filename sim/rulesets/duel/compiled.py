"""``duel`` compiled group kernel: whole fights, one after another, in a loop compiled by Numba.

The vectorised group kernel (:mod:`.fast`) draws every combat of a phase
from exact outcome tables, but spends most of a 20 v 20 fight's time on the
whole-array passes around the draws (the compaction, the radix sort of the
fights by pairs, the ganged combat's gathers). This kernel plays the same rules
model by model in compiled code (:mod:`._loop`) with the same tables
(:class:`.tables.DuelTables`), one 32-bit uniform a draw: not the
vectorised kernel's stream draw for draw, but the same distribution (tested
against it, and against the exact group chains).

The uniforms come in buffers from the fight's stream (:func:`sim.kernels.uniforms.uniform32`);
the unused rest of one buffer starts the next, so a run reads its stream in order
and is determined by its seed and ``n``, whatever the buffer sizes. Every fight the
vectorised group kernel plays is played here when Numba imports (else there).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...kernels.alias import AliasPacked
from ...kernels.uniforms import play_buffered
from ...outcomes import Outcomes
from ...ruleset import END, Rounds
from .plan import DuelPlan, make_outcomes
from .tables import DuelTables

__all__ = ["available", "simulate_loop", "BUFFER", "HEADROOM"]

#: Uniforms a buffer holds at least (with four fights' bound), and how much more than the mean use so far a
#: refill draws. Neither changes a result (the buffers read the stream in order).
BUFFER = 1 << 17
HEADROOM = 1.25

#: Rows a ganged side's members are told apart by in the loop's sort key (``key << 8 | row``).
MAX_MODELS = 256


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether Numba imports here (else the vectorised group kernel plays every fight)."""
    try:
        from . import _loop  # noqa: F401
    except ImportError:
        return False
    return True


def _both(tables: tuple[AliasPacked | None, AliasPacked | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both sides' records of one kind of table one after the other, where each starts and its bits a row
    (a side without one, such as the failed checks of instant death, has a two-slot placeholder the loop
    reads but never uses: the loop picks a side's table by index, without a branch)."""
    records = [np.zeros(2, np.uint64) if t is None else t.records for t in tables]
    bits = np.array([1 if t is None else t.bits for t in tables], np.int64)
    return np.concatenate(records), np.array([0, records[0].size], np.int64), bits


def _need_of(plan: DuelPlan) -> np.ndarray:
    """``need[32 s + w]``: the failed checks of side ``s``'s hits that slay a model with ``w`` wounds,
    ``ceil(w / damage)`` (one hit each under instant death)."""
    need = np.ones(64, np.int64)
    for s in (0, 1):
        if not plan.instant[s]:
            need[32 * s:32 * (s + 1)] = np.maximum(1, -(-np.arange(32) // plan.sides[s].hit_damage))
    return need


def simulate_loop(plan: DuelPlan, tables: DuelTables, n: int, rng: np.random.Generator, rounds: Rounds,
                  max_rounds: int) -> Outcomes:
    """``n`` fights of a group matchup with the ``fewest_wounds`` assignment (see the module docstring).

    Memory is the results (a few ``int64`` per fight) and one buffer of at most
    ``max(BUFFER, 4 * per_fight)`` uniforms, whatever ``n``.
    """
    from ._loop import play

    limit = max_rounds if rounds == END else int(rounds)
    s0, s1 = plan.sides
    if s0.count + s1.count > MAX_MODELS:   # (the unit schema allows 20 a side)
        raise ValueError(f"duel: the compiled group kernel plays at most {MAX_MODELS} models in all")
    # a draw per pair and at most four for a ganged combat 0, each phase
    per_fight = limit * (min(s0.count, s1.count) + 4)
    remaining, alive, misted = (np.empty((2, n), np.int64) for _ in range(3))
    n_rounds = np.empty(n, np.int64)
    roll = np.ascontiguousarray(tables.roll)
    side = lambda f: np.array([f(s0), f(s1)], np.int64)  # noqa: E731
    fixed = (side(lambda s: s.count), side(lambda s: s.wounds), limit, tables.pair.records, tables.pair.bits,
             *_both(tables.hit_one), *_both(tables.fails), *_both(tables.partial),
             roll[0].ravel(), roll[1].ravel(), roll.shape[2],
             side(lambda s: s.extra_die), side(lambda s: s.extra_hit), side(lambda s: int(s.prone)),
             np.array(plan.instant, np.int64), _need_of(plan),
             np.array([plan.instant[1], plan.instant[0]], np.bool_),  # misted only by the other side's hits
             remaining, alive, misted, n_rounds)
    play_buffered(lambda done, u: play(done, n, u, per_fight, *fixed), rng, n, per_fight, buffer=BUFFER,
                  headroom=HEADROOM)
    return make_outcomes(plan, (remaining[0], remaining[1]), (alive[0], alive[1]), (misted[0], misted[1]),
                         n_rounds, rounds, limit)
