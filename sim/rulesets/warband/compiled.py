"""``warband`` compiled kernel: whole fights, one after another, in a loop compiled by Numba.

The vectorised kernels (:mod:`.kernel`, :mod:`.groups`) spend most of a group
fight's time on whole-array passes and bookkeeping, not on dice: a 10 v 10
fight costs some 2,000 bare d6 draws although it needs a few hundred. This
kernel plays the same rules warrior by warrior in compiled code (:mod:`._loop`),
with the same exact outcome tables: every striker's whole batch on its target
(to hit, parry, to wound, critical, saves, Step Aside, injuries, helmet, Jump
Up) is one 32-bit uniform through the alias tables of :mod:`.strikes`; the
whole phase of an isolated pair (:func:`.strikes.pair_rows`) or of a two-leaf
star (:func:`.stars.star_distribution`) is one uniform too; and roll-offs among
equal Initiatives are a Fisher-Yates shuffle of the rest, one uniform a step
(``j = u * (x + 1) >> 32``: each order's probability exact to within
``(x + 1) * 2**-32``, the alias tables' own precision). The uniforms come in
blocks from the fight's stream (:func:`sim.kernels.uniforms.uniform32`), so a run is
determined by its seed and ``n``: not the reference's die for die, but the same
distribution (tested against the reference, the exact chains and the vectorised
kernels).

It plays every fight of the default switches (no ``all_alone``, no ``rout``)
whose batches are tabulated (at most :data:`.batches.MAX_TABLE_ATTACKS`
attacks), under either re-engaging rule, one against one as well as groups.
Other fights, and every fight when Numba cannot be imported, go to the
vectorised kernels, which stay tested against the reference too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from ...kernels.alias import AliasBits
from ...kernels.uniforms import play_buffered
from ...limits import BytesCache
from ...outcomes import Outcomes
from ...ruleset import END, Rounds
from .fused import _same_blows
from .pieces import pair_block, star, strike, strike_key
from .stars import _LOOKUP

__all__ = ["LoopTables", "PhaseTables", "available", "loop_tables", "phase_key", "phase_tables", "simulate_loop"]

#: Star pattern (0..12) by the signs of the strike-order key comparisons, as :func:`.stars.pattern` reads them
_PATTERN = _LOOKUP.astype(np.int64)


@dataclass(frozen=True)
class PhaseTables:
    """The exact phase tables the loop reads (:class:`sim.kernels.alias.AliasBits`), for one pair of profiles.

    ``strike``: a batch of side ``k`` in round kind ``r`` (1: round 1) on a target with code ``c``
    is row ``strike_offset[2 r + k] + c + (W_t + 1) * (may parry or knocked down)``, value
    ``2 * new code + hit`` (:func:`.strikes.strike_table`'s rows). ``pair``: an isolated pair's
    phase in round kind ``r`` is row ``pair_offset[r] + (code_a * (W_d + 3) + code_d) * 3 + mode``
    (:func:`.strikes.pair_rows`), value ``16 * new code a + new code d``. ``star``: a star centred
    on side ``k`` (one warrior touching two enemies that touch only it) is row
    ``star_offset[2 r + k] + ((code_c * n_l + code_1) * n_l + code_2) * 13 + pattern``, value
    ``(new code_c * 16 + new code_1) * 16 + new code_2`` (:func:`.stars.star_distribution`).
    """

    strike: AliasBits
    strike_offset: NDArray[np.int64]
    pair: AliasBits
    pair_offset: NDArray[np.int64]
    star: AliasBits
    star_offset: NDArray[np.int64]


@dataclass(frozen=True)
class LoopTables:
    """The per-side constants of a matchup and its :class:`PhaseTables`."""

    na: int
    nd: int
    W: NDArray[np.int64]
    I: NDArray[np.int64]
    cls1: NDArray[np.int64]
    clsl: NDArray[np.int64]
    reflexes: NDArray[np.bool_]
    own_turn: bool
    phases: PhaseTables


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether Numba imports here (else the vectorised kernels play every fight)."""
    try:
        from . import _loop  # noqa: F401
    except ImportError:
        return False
    return True


def _stack(blocks: list[tuple[NDArray[np.float64], NDArray[np.int64]]], dtype) -> tuple[AliasBits, NDArray[np.int64]]:
    """One alias table of consecutive row blocks ``(P, V)`` (probabilities and values, padded to one
    width); also the first row of each block."""
    K = max(P.shape[1] for P, _ in blocks)
    offset = np.cumsum([0] + [P.shape[0] for P, _ in blocks[:-1]])
    # each block copied into one zero-padded pair of arrays (what padding and concatenating each gives,
    # without the copies: a fifth of a plan's tables' time, now that their pieces are cached)
    P = np.zeros((offset[-1] + blocks[-1][0].shape[0], K))
    V = np.zeros(P.shape, np.result_type(*(v for _, v in blocks)))
    for (p, v), o in zip(blocks, offset):
        P[o:o + p.shape[0], :p.shape[1]] = p
        V[o:o + v.shape[0], :v.shape[1]] = v
    # Vose's pairing compiled (this kernel loads Numba anyway): the same tables, a few times faster
    return AliasBits.build(P / P.sum(1, keepdims=True), V, dtype=dtype, compiled=True), offset.astype(np.int64)


def phase_key(kp) -> tuple:
    """What a :class:`.plan.KernelPlan`'s phase tables depend on: its four batches' keys
    (:func:`.pieces.strike_key`), by round kind and striker side, and whether round 1 strikes
    as later rounds. Not the counts, names, points, Leadership or Initiative of the profiles."""
    keys = tuple(tuple(strike_key(kp.blows[k][r], kp.sides[1 - k]) for k in (0, 1)) for r in (0, 1))
    # equal keys are equal blows (:func:`.fused._same_blows`, a few times slower) on the same target
    return keys, keys[0] == keys[1]


def phase_tables(kp) -> PhaseTables | None:
    """The phase tables of a :class:`.plan.KernelPlan`'s blows, or None if a batch rolls dice.

    Their pieces (batch rows, stars, pairs) come from the caches of :mod:`.pieces`, shared with
    every other pair of profiles that has them; only the stacking into alias tables is per plan."""
    strikes = [[strike(kp.blows[k][r], kp.sides[1 - k]) for k in (0, 1)] for r in (0, 1)]
    if any(t.block is None for by_kind in strikes for t in by_kind):
        return None
    strike_, strike_offset = _stack([t.block for by_kind in strikes for t in by_kind], np.int64)
    pair, pair_offset = _stack([pair_block(*by_kind) for by_kind in strikes], np.int64)
    # round 1 strikes as later rounds unless a heavy weapon's first-round Strength differs: one star table
    same = all(_same_blows(*kp.blows[k]) for k in (0, 1))
    stars = [star(strikes[r][k], strikes[r][1 - k]) for r in ((0,) if same else (0, 1)) for k in (0, 1)]
    star_, star_offset = _stack(stars, np.int32)
    if same:
        star_offset = np.tile(star_offset, 2)
    return PhaseTables(strike_, strike_offset, pair, pair_offset, star_, star_offset)


#: Uniforms a buffer holds at least (with four fights' bound), and how much more than the mean use so far a
#: refill draws. Neither changes a result: the buffers read the stream in order, the unused rest carried over.
BUFFER = 1 << 17
HEADROOM = 1.25

#: Phase tables by what they depend on (:func:`phase_key`): equal-points copies of one pair of profiles,
#: profiles that differ only in Initiative (or count, name, points, Leadership), a report's phases and
#: repeated runs build them once per process. Bounded by bytes (0.1 to 4 MiB a pair: a 30-unit roster's
#: take 270 MiB, a 100-unit one's 1.7 GiB), oldest dropped; a miss is cheap (2 to 3 ms: its pieces come from
#: the caches of :mod:`.pieces`), so the bound stays modest, and a worker within its 512 MiB (docs/scale.md).
_CACHE = BytesCache(128 << 20)


def loop_tables(kp) -> LoopTables | None:
    """The tables of a :class:`.plan.KernelPlan`, or None if this kernel does not play it (a switch
    on, a batch that rolls dice)."""
    if kp.all_alone or kp.rout:
        return None
    phases = _CACHE.get(phase_key(kp), lambda: phase_tables(kp))
    if phases is None:
        return None
    a, d = kp.sides
    return LoopTables(
        a.count, d.count, np.array([a.w, d.w], np.int64), np.array([a.i, d.i], np.int64),
        np.array([a.class_round1, d.class_round1], np.int64), np.array([a.class_later, d.class_later], np.int64),
        np.array([a.lightning_reflexes, d.lightning_reflexes], np.bool_), kp.reengage == "own_turn_charge",
        phases)


def simulate_loop(lt: LoopTables, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """``n`` fights of the tables ``lt`` (see the module docstring)."""
    from ._loop import play

    limit = max_rounds if rounds == END else int(rounds)
    nw = lt.na + lt.nd
    per_fight = 2 * nw * limit                     # a key and a batch per warrior and round, at most
    winner, cat_a, cat_d = (np.empty(n, np.int8) for _ in range(3))
    dmg_a, dmg_d, rounds_out, ooa_a, ooa_d = (np.empty(n, np.int64) for _ in range(5))
    capped = np.empty(n, np.bool_)
    ph = lt.phases

    def step(done, u):
        return play(done, n, u, per_fight, lt.na, lt.nd, lt.W, lt.I, lt.cls1, lt.clsl, lt.reflexes, lt.own_turn,
                    limit, rounds == END, ph.strike.bits, ph.strike.threshold, ph.strike.pick, ph.strike_offset,
                    ph.pair.bits, ph.pair.threshold, ph.pair.pick, ph.pair_offset,
                    ph.star.bits, ph.star.threshold, ph.star.pick, ph.star_offset, _PATTERN, winner, dmg_a, dmg_d,
                    cat_a, cat_d, rounds_out, capped, ooa_a, ooa_d)

    play_buffered(step, rng, n, per_fight, buffer=BUFFER, headroom=HEADROOM)
    return Outcomes(winner, dmg_a, dmg_d, cat_a, cat_d, rounds_out, capped,
                    {"out_of_action_attacker": ooa_a, "out_of_action_defender": ooa_d})
