"""Walker/Vose alias tables for many small discrete distributions, and one-uniform sampling.

A kernel that knows the exact distribution of an outcome given a small state (a
row) draws it with one uniform: the integer part of ``K u`` picks one of the
row's K slots, the fractional part keeps the slot or takes its alias. This is
exact up to the 53 bits of the uniform, whatever the row, and costs a few array
operations per draw (two or three table look-ups, no search).

:class:`AliasBits` is the same with a power-of-two number of slots a row and a
32-bit uniform (from the generator's raw 64-bit output, two a draw): integer
arithmetic only, each outcome's probability exact to within (slots a row) x ``2**-32``
(:func:`.uniforms.uniform32`).

Used by the ``grimdark``, ``duel`` and ``warband`` group kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .uniforms import uniform32

__all__ = ["alias_tables", "alias_sample", "AliasRows", "AliasBits", "AliasPacked", "PACKED"]


def alias_tables(P: NDArray[np.float64], *, compiled: bool = False) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Walker/Vose alias tables of every row of ``P`` at once (rows renormalised).

    Vose's pairing of one "small" column (q < 1) with one "large" column per row
    and iteration, vectorised across rows: each iteration settles one small
    column in every row that still has one, so at most K iterations.
    ``compiled``: the same pairing row by row in Numba (:mod:`.alias_compiled`:
    the same tables to the bit, much faster for large tables; needs Numba).

    Returns
    -------
    prob, alias : ndarray, shape (rows * K,)
        Row-major: keep slot ``j`` of row ``r`` with probability ``prob[r * K + j]``,
        else take column ``alias[r * K + j]``.
    """
    S, K = P.shape
    q = P * (K / P.sum(axis=1, keepdims=True))
    if compiled:
        from .alias_compiled import vose

        prob, alias = vose(q)
        return prob.ravel(), alias.ravel()
    prob = np.ones((S, K))
    alias = np.tile(np.arange(K), (S, 1))
    rows = np.arange(S)
    is_small = q < 1.0
    # per-row stacks of small and large columns (small ones first in a stable order)
    order = np.argsort(~is_small, axis=1, kind="stable")
    n_small = is_small.sum(axis=1)
    small = np.where(np.arange(K) < n_small[:, None], order, 0)
    n_large = K - n_small
    # the large columns of each row, in a stack of their own (the tail of ``order``)
    shift = (np.arange(K)[None, :] + n_small[:, None]) % K
    large = np.where(np.arange(K) < n_large[:, None], np.take_along_axis(order, shift, axis=1), 0)
    while True:
        act = rows[(n_small > 0) & (n_large > 0)]
        if not act.size:
            break
        n_small[act] -= 1
        n_large[act] -= 1
        sm = small[act, n_small[act]]
        lg = large[act, n_large[act]]
        prob[act, sm] = q[act, sm]
        alias[act, sm] = lg
        q[act, lg] -= 1.0 - q[act, sm]
        now_small = q[act, lg] < 1.0
        a1, l1 = act[now_small], lg[now_small]
        small[a1, n_small[a1]] = l1
        n_small[a1] += 1
        a2, l2 = act[~now_small], lg[~now_small]
        large[a2, n_large[a2]] = l2
        n_large[a2] += 1
    # columns left on either stack hold (up to rounding) exactly 1: certain
    return prob.ravel(), alias.ravel()


def alias_sample(prob: NDArray[np.float64], alias: NDArray[np.int64], width: int, rows: NDArray[np.int64],
                 rng: np.random.Generator) -> NDArray[np.int64]:
    """One draw per entry of ``rows`` from the alias tables (flattened, ``width`` columns a row).

    One uniform each, split into a column (integer part) and an acceptance level
    (fractional part).
    """
    x = rng.random(len(rows)) * width
    j = x.astype(np.int64)  # < width: u <= 1 - 2**-53 and width * u never rounds up to width
    k = rows * width + j
    return np.where(x - j < prob[k], j, alias[k])


@dataclass(frozen=True)
class AliasRows:
    """Alias tables whose slots carry outcome *values* (only each row's possible outcomes are kept).

    Attributes
    ----------
    width : int
        Slots per row: the largest number of possible outcomes of any row.
    threshold : ndarray of float64, shape (rows * width,)
        Slot ``j`` of row ``r`` is kept when ``width * u < j + prob`` (else its alias).
    pick : ndarray, shape (2 * rows * width,)
        Interleaved: the value of each slot, then the value of its alias.
    """

    width: int
    threshold: NDArray[np.float64]
    pick: NDArray[np.integer]

    @classmethod
    def build(cls, P: NDArray[np.float64], values: NDArray[np.integer] | None = None,
              dtype: type = np.int64) -> "AliasRows":
        """From a dense matrix ``P[row, outcome]`` (rows sum to 1) and the value of each outcome column."""
        P = np.asarray(P, np.float64)
        S, n_out = P.shape
        values = np.arange(n_out) if values is None else np.asarray(values)
        possible = P > 0
        width = max(1, int(possible.sum(axis=1).max()))
        order = np.argsort(~possible, axis=1, kind="stable")[:, :width]  # each row's outcomes first
        Q = np.take_along_axis(P, order, axis=1)
        prob, alias = alias_tables(Q)
        vals = values[order]
        pick = np.empty((S * width, 2), dtype)
        pick[:, 0] = vals.ravel()
        pick[:, 1] = np.take_along_axis(vals, alias.reshape(S, width), axis=1).ravel()
        threshold = prob + np.tile(np.arange(width), S)
        return cls(width, threshold, pick.ravel())

    def slot(self, rows: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.intp]:
        """One draw per entry of ``rows`` (any shape), one uniform each: the index into ``pick``."""
        x = rng.random(np.shape(rows))
        x *= self.width
        k = np.asarray(rows, np.intp) * self.width
        k += x.astype(np.intp)
        alt = x >= np.take(self.threshold, k)
        k *= 2
        k += alt
        return k

    def sample(self, rows: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.integer]:
        """One outcome value per entry of ``rows`` (any shape), one uniform each."""
        return np.take(self.pick, self.slot(rows, rng))

    @property
    def nbytes(self) -> int:
        return self.threshold.nbytes + self.pick.nbytes


@dataclass(frozen=True)
class AliasBits:
    """Alias tables with a power-of-two number of slots per row, drawn with one 32-bit uniform.

    The top ``bits`` bits of the uniform pick the slot, the rest decide slot or
    alias against an integer threshold: no float arithmetic and no multiply. The
    threshold rounds each slot's keep probability to a multiple of ``2**-(32 - bits)``,
    so an outcome's probability is off by at most ``2**bits * 2**-32`` (under ``8e-9``
    at 32 slots): far below anything a simulation can resolve.

    Attributes
    ----------
    bits : int
        Slots per row: ``2**bits`` (at least 2).
    threshold : ndarray of uint32, shape (rows << bits,)
        Slot ``k`` of a draw ``u`` (``k = row << bits | u >> (32 - bits)``) is kept when
        ``u < threshold[k]``, else its alias.
    pick : ndarray, shape (2 * rows << bits,)
        Interleaved: the value of each slot, then the value of its alias.
    """

    bits: int
    threshold: NDArray[np.uint32]
    pick: NDArray[np.integer]

    @classmethod
    def build(cls, P: NDArray[np.float64], values: NDArray[np.integer] | None = None,
              dtype: type = np.int64, *, compiled: bool = False) -> "AliasBits":
        """From a dense matrix ``P[row, outcome]`` (rows sum to 1).

        ``values``: the value of each outcome column, shape ``(outcomes,)``, or of each
        cell, shape ``(rows, outcomes)`` (a value may depend on the row). ``compiled``: Vose's
        pairing in Numba (:func:`alias_tables`; the same table, for callers that load Numba anyway).
        """
        P = np.asarray(P, np.float64)
        S, n_out = P.shape
        values = np.arange(n_out) if values is None else np.asarray(values)
        values = np.broadcast_to(values, (S, n_out))
        possible = P > 0
        bits = max(1, (int(possible.sum(axis=1).max()) - 1).bit_length())
        K = 1 << bits
        if compiled:  # the same steps row by row in Numba (the same table to the bit, tested): a warband plan's
            # tables spent most of their time in the array passes around the pairing
            from .alias_compiled import bits_slots, possible_rows

            Q, order = possible_rows(P, K)
            pick = np.empty(2 * S * K, dtype)
            threshold = bits_slots(Q, Q.sum(axis=1), order, np.ascontiguousarray(values), bits, pick)
            return cls(bits, threshold, pick)
        if n_out < K:  # padding outcomes of probability 0 (only ever an alias's slot)
            P = np.concatenate([P, np.zeros((S, K - n_out))], axis=1)
            values = np.concatenate([values, np.repeat(values[:, :1], K - n_out, axis=1)], axis=1)
        order = np.argsort(~(P > 0), axis=1, kind="stable")[:, :K]  # each row's outcomes first
        prob, alias = alias_tables(np.take_along_axis(P, order, axis=1), compiled=compiled)
        alias = alias.reshape(S, K)
        shift = 32 - bits
        keep = np.rint(prob.reshape(S, K) * (1 << shift)).astype(np.int64)
        certain = keep >= 1 << shift
        alias = np.where(certain, np.arange(K), alias)  # a certain slot is its own alias: no threshold overflow
        keep = np.minimum(keep, (1 << shift) - 1)
        vals = np.take_along_axis(values, order, axis=1)
        pick = np.empty((S * K, 2), dtype)
        pick[:, 0] = vals.ravel()
        pick[:, 1] = np.take_along_axis(vals, alias, axis=1).ravel()
        threshold = ((np.arange(K, dtype=np.int64) << shift) + keep).astype(np.uint32).ravel()
        return cls(bits, threshold, pick.ravel())

    def slot(self, rows: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.intp]:
        """One draw per entry of ``rows`` (any shape and integer type), one 32-bit uniform each:
        the index into ``pick``."""
        u = uniform32(rng, np.shape(rows))
        k = np.left_shift(rows, self.bits, dtype=np.intp)
        k |= u >> np.uint32(32 - self.bits)
        alt = u >= np.take(self.threshold, k)
        k <<= 1
        k |= alt
        return k

    def sample(self, rows: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.integer]:
        """One outcome value per entry of ``rows`` (any shape), one 32-bit uniform each."""
        return np.take(self.pick, self.slot(rows, rng))

    def masses(self, row: int) -> dict[int, float]:
        """The probability this table gives each value in ``row`` (read from its own thresholds)."""
        shift = 32 - self.bits
        out: dict[int, float] = {}
        for slot in range(1 << self.bits):
            k = row << self.bits | slot
            keep = (int(self.threshold[k]) - (slot << shift)) / (1 << shift)
            for value, q in ((int(self.pick[2 * k]), keep), (int(self.pick[2 * k + 1]), 1.0 - keep)):
                if q > 0:
                    out[value] = out.get(value, 0.0) + q / (1 << self.bits)
        return out

    @property
    def nbytes(self) -> int:
        return self.threshold.nbytes + self.pick.nbytes


#: One slot of an :class:`AliasPacked` table: its threshold, its value and its alias's value less its
#: value (modulo ``2**16``: the select is then one multiply-add, no branch).
PACKED = np.dtype([("threshold", np.uint32), ("value", np.int16), ("delta", np.int16)])


@dataclass(frozen=True)
class AliasPacked:
    """An :class:`AliasBits` table whose values fit ``int16``, one 64-bit record a slot.

    A draw is then one gather (threshold and both values at once) and a select, instead
    of a gather of the threshold, index arithmetic and a gather of the value: the same
    outcome for the same uniform, so exactly the same distribution. The select is
    ``value + alt * delta`` (``delta``: the alias's value less the slot's, wrapping in
    ``int16``): about three times as fast as ``np.where`` on an unpredictable condition.

    Attributes
    ----------
    bits : int
        Slots per row: ``2**bits``.
    records : ndarray of uint64, shape (rows << bits,)
        The slots as :data:`PACKED` records, read as ``uint64`` (NumPy's fast gather).
    """

    bits: int
    records: NDArray[np.uint64]

    @classmethod
    def from_bits(cls, table: AliasBits) -> AliasPacked:
        pick = table.pick.reshape(-1, 2)
        if pick.min() < np.iinfo(np.int16).min or pick.max() > np.iinfo(np.int16).max:
            raise ValueError("AliasPacked holds int16 values only")
        rec = np.empty(len(table.threshold), PACKED)
        rec["threshold"] = table.threshold
        rec["value"] = pick[:, 0]
        rec["delta"] = (pick[:, 1].astype(np.int64) - pick[:, 0]).astype(np.int16)  # wraps: value + delta == alias
        return cls(table.bits, rec.view(np.uint64))

    def sample(self, rows: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.int16]:
        """One outcome value per entry of ``rows`` (any shape), one 32-bit uniform each (the same
        uniforms, slots and outcomes as :meth:`AliasBits.sample` of the table it was built from)."""
        u = uniform32(rng, np.shape(rows))
        k = np.asarray(rows).astype(np.intp)  # then shifted in place: a third faster than a casting shift
        k <<= self.bits
        k |= u >> np.uint32(32 - self.bits)
        rec = np.take(self.records, k)
        alt = u >= rec.view(np.uint32)[..., 0::2]     # the record's fields as strided views: no copies
        r16 = rec.view(np.int16)
        out = np.multiply(alt, r16[..., 3::4], dtype=np.int16)
        out += r16[..., 2::4]
        return out

    @property
    def nbytes(self) -> int:
        return self.records.nbytes
