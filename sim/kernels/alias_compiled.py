"""Vose's alias construction row by row, compiled by Numba (used where Numba is already loaded).

:func:`.alias.alias_tables` settles one small column of every row per
iteration, in whole-array operations; for tables of thousands of rows and tens
of columns (the ``warband`` star tables) its per-iteration overhead is most of
the time a matchup's tables take. :func:`vose` runs the same pairing row by row:
the same stacks in the same order (small columns, then large ones, each in
column order; both popped from the end), the same arithmetic, so the same
tables to the bit (tested), in a small fraction of the time.
"""

from __future__ import annotations

import numpy as np

from .compile_cache import njit_cached

__all__ = ["vose"]


@njit_cached()
def vose(q):
    """``(prob, alias)`` of the scaled rows ``q`` (each row summing to its width), shape of ``q``;
    ``q`` is used as working space (its values change)."""
    S, K = q.shape
    prob = np.ones((S, K))
    alias = np.empty((S, K), np.int64)
    small = np.empty(K, np.int64)
    large = np.empty(K, np.int64)
    for r in range(S):
        n_small = 0
        n_large = 0
        for j in range(K):
            alias[r, j] = j
            if q[r, j] < 1.0:
                small[n_small] = j
                n_small += 1
        for j in range(K):
            if not q[r, j] < 1.0:        # (NaN too, as the vectorised pass reads it)
                large[n_large] = j
                n_large += 1
        while n_small > 0 and n_large > 0:
            n_small -= 1
            n_large -= 1
            sm = small[n_small]
            lg = large[n_large]
            prob[r, sm] = q[r, sm]
            alias[r, sm] = lg
            q[r, lg] -= 1.0 - q[r, sm]
            if q[r, lg] < 1.0:
                small[n_small] = lg
                n_small += 1
            else:
                large[n_large] = lg
                n_large += 1
    return prob, alias


@njit_cached()
def possible_rows(P, K):
    """Each row's positive columns in column order, then its other columns in column order, the first ``K``
    (zero columns past ``P``'s width, as :meth:`.alias.AliasBits.build` pads it): ``(Q, order)``, the
    probabilities in that order and their columns (``stable argsort(~(P > 0))[:, :K]``, row by row)."""
    S, n = P.shape
    Q = np.zeros((S, K))
    order = np.empty((S, K), np.int64)
    for r in range(S):
        j = 0
        for c in range(n):
            if P[r, c] > 0:
                if j < K:
                    Q[r, j] = P[r, c]
                    order[r, j] = c
                j += 1
        for c in range(max(n, K)):
            if not (c < n and P[r, c] > 0):
                if j < K:
                    order[r, j] = c
                    if c < n:
                        Q[r, j] = P[r, c]  # not positive: 0 (or NaN, read as a zero is)
                j += 1
    return Q, order


@njit_cached()
def bits_slots(Q, sums, order, V, bits, pick):
    """The rest of :meth:`.alias.AliasBits.build` on the ordered rows ``Q`` (``sums``: their row sums as
    NumPy adds them): Vose's pairing, the integer thresholds and the interleaved values written into
    ``pick`` (``2 * rows << bits``); returns the thresholds. Values of columns past ``V``'s width are
    column 0's (the padding)."""
    S, K = Q.shape
    q = np.empty((S, K))
    for r in range(S):
        f = K / sums[r]
        for j in range(K):
            q[r, j] = Q[r, j] * f
    prob, alias = vose(q)
    shift = 32 - bits
    one = np.int64(1) << shift
    threshold = np.empty(S * K, np.uint32)
    n = V.shape[1]
    for r in range(S):
        for j in range(K):
            keep = np.int64(np.rint(prob[r, j] * one))
            a = alias[r, j]
            if keep >= one:  # a certain slot is its own alias: no threshold overflow
                a = j
            if keep > one - 1:
                keep = one - 1
            c = order[r, j]
            ca = order[r, a]
            k = r * K + j
            pick[2 * k] = V[r, c] if c < n else V[r, 0]
            pick[2 * k + 1] = V[r, ca] if ca < n else V[r, 0]
            threshold[k] = np.uint32((np.int64(j) << shift) + keep)
    return threshold
