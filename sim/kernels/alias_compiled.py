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
