"""``warband`` compiled kernel: the pieces of its phase tables, cached by the values they read.

A matrix builds the phase tables (:func:`.compiled.phase_tables`) of every pair
of profiles, and a report builds them again in each of its phases (matrices,
copy curves, advice). Most of that work is shared: a roster's profiles differ
in a field or two, and each piece depends on much less than two whole profiles:

* a batch's coded rows (:func:`.strikes.coded_rows`) on the striker's ``Blows``
  (every field but the derived one-attack table, which :func:`.strikes.batch_rows`
  does not read) and the five fields of the target side that it reads
  (:func:`strike_key`): a 30-unit roster's 3,600 batches have under 200 keys;
* a two-leaf star's distribution (:func:`.stars.star_distribution`) and an isolated
  pair's dense rows (:func:`.strikes.pair_rows`) on the two batches' keys.

So each piece is built once per process for its key and shared by every pair of
profiles, copy count and report phase that has it. The caches are per process
and bounded (entries for the coded rows, whose bulk is Python dicts; bytes for
the arrays); a cached array is read-only (the callers copy before writing) or handed out as a copy.
Rebuilding a piece gives the same floats in the same order, so a cache changes
no table, only the time to build it (tested against uncached builds).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
from numpy.typing import NDArray

from ...limits import BytesCache
from .stars import star_distribution
from .strikes import StrikeTable, coded_rows, pair_rows

__all__ = ["strike_key", "Strike", "strike", "star", "pair_block", "clear"]

Block = tuple[NDArray[np.float64], NDArray[np.int64]]

#: Coded rows (and their dense block) by batch key: a few KiB of dicts each, bounded by entries
#: (a 100-unit roster has under 500 keys).
_ROWS = BytesCache(64 << 20, entries=4096)
#: Star distributions by the two batches' keys, packed (:class:`Packed`): some 45 KiB each, so that a
#: 100-unit roster's 2,500 stars fit (a matrix has at most 100 units).
_STARS = BytesCache(128 << 20)
#: Isolated pairs' dense rows by the two batches' keys: a few KiB each (a 100-unit roster's, some 20 MiB).
_PAIRS = BytesCache(24 << 20, entries=16384)

#: ``Blows`` field names by class (all but ``single``), looked up once.
_FIELDS: dict[type, tuple[str, ...]] = {}


def _value(x):
    """A hashable, exact stand-in for a field's value (an array by its dtype, shape and bytes)."""
    return (x.dtype.str, x.shape, x.tobytes()) if isinstance(x, np.ndarray) else x


def strike_key(blows, target) -> tuple:
    """The values a batch's coded rows depend on: ``blows``'s fields (all but the one-attack table
    ``single``, derived from the others) and the target side's Wounds, parry re-roll, Step Aside,
    helmet and Jump Up (what :func:`.strikes.batch_rows` reads)."""
    names = _FIELDS.get(type(blows))
    if names is None:
        names = _FIELDS[type(blows)] = tuple(f.name for f in fields(blows) if f.name != "single")
    return (tuple(_value(getattr(blows, n)) for n in names),
            target.w, target.parry_reroll, target.step_aside, target.helmet, target.jump_up)


def _frozen(*arrays: NDArray) -> tuple[NDArray, ...]:
    """The arrays made read-only: they are shared by every table built from the cache."""
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _dense(rows: list[dict], value) -> Block:
    """``(P, V)`` of probability rows ``{outcome: p}``, outcomes stored as ``value(outcome)``."""
    K = max(len(r) for r in rows)
    P = np.zeros((len(rows), K))
    V = np.zeros((len(rows), K), np.int64)
    for i, r in enumerate(rows):
        items = [(k, p) for k, p in r.items() if p > 0]
        P[i, :len(items)] = [p for _, p in items]
        V[i, :len(items)] = [value(k) for k, _ in items]
    return P, V


class Packed:
    """A star's dense ``(P, C)`` stored row by row up to each row's last entry that is not zero (the rows are
    padded with zeros to the longest: a quarter of the entries are kept), as float64 probabilities and int16
    codes (below 4096): a sixth of the dense bytes, so that a 100-unit roster's stars (2,500, 110 MiB) fit.
    :meth:`dense` gives back the same arrays, bit for bit."""

    __slots__ = ("shape", "width", "p", "c")

    def __init__(self, P: NDArray[np.float64], C: NDArray[np.int64]) -> None:
        assert 0 <= C.min() and C.max() < 2**15 and P.shape[1] < 2**15
        # zero by the bits (a -0.0 is kept as such, not read as zero)
        used = (P.view(np.int64) != 0) | (C != 0)
        self.width = np.where(used, np.arange(1, P.shape[1] + 1), 0).max(1).astype(np.int16)
        keep = self._keep(P.shape)
        self.shape, self.p, self.c = P.shape, P[keep], C[keep].astype(np.int16)

    def _keep(self, shape: tuple[int, int]) -> NDArray[np.bool_]:
        return np.arange(shape[1]) < self.width[:, None]

    def dense(self) -> Block:
        P, C = np.zeros(self.shape), np.zeros(self.shape, np.int64)
        keep = self._keep(self.shape)
        P[keep], C[keep] = self.p, self.c
        return P, C


class Strike:
    """A batch's :class:`.strikes.StrikeTable` without alias tables (its coded rows only), its key,
    and the dense block of its rows (``None`` with the rows when the batch rolls dice)."""

    __slots__ = ("key", "table", "block")

    def __init__(self, key: tuple, table: StrikeTable, block: Block | None) -> None:
        self.key, self.table, self.block = key, table, block


def strike(blows, target) -> Strike:
    """The batch of ``blows`` on the side ``target`` (see :class:`Strike`), its rows built once per key."""
    key = strike_key(blows, target)

    def build():
        rows = coded_rows(blows, target)
        block = None if rows is None else _frozen(*_dense(list(rows), lambda o: 2 * o[0] + o[1]))
        return rows, block

    rows, block = _ROWS.get(key, build)
    return Strike(key, StrikeTable(target.w, blows, target, rows=rows), block)


def star(center_on_leaf: Strike, leaf_on_center: Strike) -> Block:
    """:func:`.stars.star_distribution` of the two batches (fresh arrays), built once per pair of keys."""
    return _STARS.get((center_on_leaf.key, leaf_on_center.key),
                      lambda: Packed(*star_distribution(center_on_leaf.table, leaf_on_center.table))).dense()


def pair_block(a_on_d: Strike, d_on_a: Strike) -> Block:
    """The dense block of :func:`.strikes.pair_rows` (values ``16 * new code a + new code d``), built once per
    pair of keys."""
    return _PAIRS.get((a_on_d.key, d_on_a.key),
                      lambda: _frozen(*_dense(pair_rows(a_on_d.table, d_on_a.table), lambda o: 16 * o[0] + o[1])))


def clear() -> None:
    """Empty every cache of this module (tests build tables afresh with it)."""
    for cache in (_ROWS, _STARS, _PAIRS):
        cache.clear()
