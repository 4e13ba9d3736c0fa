"""Walker/Vose alias tables for many small discrete distributions, and one-uniform sampling.

A kernel that knows the exact distribution of an outcome given a small state (a
row) draws it with one uniform: the integer part of ``K u`` picks one of the
row's K slots, the fractional part keeps the slot or takes its alias. This is
exact up to the 53 bits of the uniform, whatever the row, and costs a few array
operations per draw (two or three table look-ups, no search).

Used by the ``grimdark`` and ``duel`` kernels (private to ``sim.rulesets``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["alias_tables", "alias_sample", "AliasRows"]


def alias_tables(P: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Walker/Vose alias tables of every row of ``P`` at once (rows renormalised).

    Vose's pairing of one "small" column (q < 1) with one "large" column per row
    and iteration, vectorised across rows: each iteration settles one small
    column in every row that still has one, so at most K iterations.

    Returns
    -------
    prob, alias : ndarray, shape (rows * K,)
        Row-major: keep slot ``j`` of row ``r`` with probability ``prob[r * K + j]``,
        else take column ``alias[r * K + j]``.
    """
    S, K = P.shape
    q = P * (K / P.sum(axis=1, keepdims=True))
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
