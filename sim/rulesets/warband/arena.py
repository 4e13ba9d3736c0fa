"""``warband`` mixed sides: every pair of profiles' phase tables, end to end in a few growable arrays per process.

The compiled loop of mixed sides (:mod:`._mixed_loop`) reads each pair of profiles'
alias tables (:class:`.compiled.PhaseTables`: strike, isolated pair, two-leaf star) from
arrays holding many pairs one after another, each pair's table from its first slot with
its own ``bits``. Building those arrays for every matchup would copy megabytes (the star
tables) for a cell of a few thousand fights, and shipping them to worker processes would
pickle them; so the pairs built in a process live in one :class:`Arena`, whose arrays
grow by doubling (a pair is copied in once), and a matchup only gathers the pairs' first
slots, ``bits`` and row offsets (:func:`gather`). A matchup's loop tables pickle as the
profiles they were built from and are gathered again, from the receiving process's own
arena, when unpickled.

An arena past :data:`ARENA_BYTES` starts afresh (tables gathered before keep the arrays
they read).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .compiled import PhaseTables

__all__ = ["Arena", "Gathered", "ARENA", "ARENA_BYTES"]

#: Size past which the arena starts afresh (a roster of 16 units makes 256 pairs, about 100 MiB).
ARENA_BYTES = 256 << 20


class _Grow:
    """One table kind's thresholds and picks, growable; each pair's first slot, bits and row offsets."""

    def __init__(self, pick_dtype) -> None:
        self.thr = np.zeros(1 << 16, np.uint32)
        self.pick = np.zeros(2 << 16, pick_dtype)
        self.used = 0
        self.base: list[int] = []
        self.bits: list[int] = []
        self.off: list[NDArray[np.int64]] = []

    def add(self, table, offsets: NDArray[np.int64]) -> None:
        n = table.threshold.size
        if self.used + n > self.thr.size:
            size = max(2 * self.thr.size, self.used + n)
            thr = np.zeros(size, np.uint32)
            pick = np.zeros(2 * size, self.pick.dtype)
            thr[:self.used], pick[:2 * self.used] = self.thr[:self.used], self.pick[:2 * self.used]
            self.thr, self.pick = thr, pick       # (tables gathered before keep reading the old arrays)
        self.thr[self.used:self.used + n] = table.threshold
        self.pick[2 * self.used:2 * (self.used + n)] = table.pick
        self.base.append(self.used)
        self.bits.append(int(table.bits))
        self.off.append(np.asarray(offsets, np.int64))
        self.used += n

    @property
    def nbytes(self) -> int:
        return int(self.thr.nbytes + self.pick.nbytes)


@dataclass(frozen=True)
class Gathered:
    """A matchup's view of one table kind: the arena's arrays and, per pair ``q`` of the matchup, its first
    slot, bits, and row offsets (``off[k * q + i]``: ``k`` offsets a pair)."""

    thr: NDArray[np.uint32]
    pick: NDArray[np.integer]
    base: NDArray[np.int64]
    bits: NDArray[np.int64]
    off: NDArray[np.int64]

    def args(self) -> tuple:
        return self.thr, self.pick, self.base, self.bits, self.off


class Arena:
    """The phase tables of every pair of profiles built in this process (see the module docstring)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.generation = getattr(self, "generation", -1) + 1
        self.index: dict[object, int | None] = {}
        self.kinds = {"strike": _Grow(np.int64), "pair": _Grow(np.int64), "star": _Grow(np.int32)}

    @property
    def nbytes(self) -> int:
        return sum(g.nbytes for g in self.kinds.values())

    def pair(self, key: object, build) -> int | None:
        """The arena index of the pair ``key`` (``build()`` its :class:`PhaseTables`, or None if it has none)."""
        if key in self.index:
            return self.index[key]
        if self.nbytes > ARENA_BYTES:
            self._reset()
        ph: PhaseTables | None = build()
        if ph is None:
            self.index[key] = None
            return None
        for kind, table, offsets in (("strike", ph.strike, ph.strike_offset), ("pair", ph.pair, ph.pair_offset),
                                     ("star", ph.star, ph.star_offset)):
            self.kinds[kind].add(table, offsets)
        i = len(self.kinds["strike"].base) - 1
        self.index[key] = i
        return i

    def gather(self, ids: list[int]) -> tuple[Gathered, Gathered, Gathered]:
        """The strike, pair and star views of the pairs ``ids`` (arena indices, in the matchup's pair order)."""
        out = []
        for kind in ("strike", "pair", "star"):
            g = self.kinds[kind]
            out.append(Gathered(g.thr, g.pick, np.array([g.base[i] for i in ids], np.int64),
                                np.array([g.bits[i] for i in ids], np.int64),
                                np.concatenate([g.off[i] for i in ids]).astype(np.int64)))
        return out[0], out[1], out[2]


#: This process's arena.
ARENA = Arena()
