"""``warband`` group kernel: fused tables for a star, one warrior touching two enemies that touch only it.

In group fights most contacts that are not isolated pairs are such stars (a
re-engaging warrior joins a pair when no enemy is free). When both sides' batches are
tabulated, the whole phase of a star is one draw from the exact joint distribution
computed here, by a vectorised dynamic programme over every start state and
strike order (no sampling):

* the **center** ``c`` strikes the first standing leaf (by index), else the
  first stunned one, else the first knocked-down one (it cannot have put one
  down itself: it strikes once a phase);
* each **leaf** strikes the center if it is standing and the center is not out
  of action; the center may parry the first leaf that scores hits, the leaves
  are each struck at most once (always a fresh parry).

Rows are ``((code_c * n_l + code_1) * n_l + code_2) * 13 + pattern``, with
codes as in :mod:`.strikes` (``n_l`` = the leaves' W + 3) and ``pattern`` one of
the 13 weak orders of the three strike-order keys (from the signs of center v
leaf 1, center v leaf 2, leaf 1 v leaf 2): ties are rolled off, so a pattern
is a uniform mixture of the strike orders it allows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...kernels.alias import AliasBits
from .strikes import coded_row

__all__ = ["StarTable", "star_table", "star_distribution", "pattern", "N_PATTERNS"]

#: The six strike orders of (center 0, leaf 1, leaf 2).
_PERMS = np.array(list(itertools.permutations(range(3))), np.int8)


def _sign(x):
    return (x > 0).astype(np.int8) - (x < 0)


def _signs(kc, k1, k2):
    """Index 0..26 of the signs of the three key comparisons."""
    return (_sign(kc - k1) + 1) * 9 + (_sign(kc - k2) + 1) * 3 + _sign(k1 - k2) + 1


def _pattern_weights() -> tuple[NDArray[np.int8], NDArray[np.float64]]:
    """The 13 possible sign patterns (a lookup from the 27 sign combinations, -1 if impossible) and
    (13, 6): the probability of each strike order given each pattern."""
    lookup = np.full(27, -1, np.int8)
    rows = []
    for keys in itertools.product(range(3), repeat=3):
        s = int(_signs(np.array(keys[0]), np.array(keys[1]), np.array(keys[2])))
        if lookup[s] >= 0:
            continue
        ok = [all(keys[a] <= keys[b] for i, a in enumerate(perm) for b in perm[i + 1:]) for perm in _PERMS]
        lookup[s] = len(rows)
        rows.append(np.array(ok, float) / sum(ok))
    return lookup, np.array(rows)


_LOOKUP, _WEIGHTS = _pattern_weights()
N_PATTERNS = len(_WEIGHTS)


def pattern(kc, k1, k2):
    """Pattern index 0..12 of strike-order keys (lower strikes first)."""
    return np.take(_LOOKUP, _signs(kc, k1, k2))


@dataclass(frozen=True)
class StarTable:
    """Alias tables of a star's phase (see the module docstring), drawing the new codes packed
    as ``(center * 16 + leaf 1) * 16 + leaf 2`` (no outcome arrays to look up)."""

    n_c: int
    n_l: int
    table: AliasBits

    def row(self, cc, c1, c2, pat) -> NDArray[np.intp]:
        return ((cc.astype(np.intp) * self.n_l + c1) * self.n_l + c2) * N_PATTERNS + pat

    def sample(self, row: NDArray[np.intp], rng: np.random.Generator):
        """New codes (center, leaf 1, leaf 2) of the stars in ``row``, one 32-bit uniform each."""
        code = self.table.sample(row, rng)
        return code >> 8, (code >> 4) & 15, code & 15


def _transitions(rows, W: int):
    """Padded outcome arrays of a strike table's coded rows: [code, may parry] -> (new code, hit, p)."""
    width = max(len(r) for r in rows)
    code = np.zeros((W + 3, 2, width), np.int8)
    hit = np.zeros((W + 3, 2, width), bool)
    p = np.zeros((W + 3, 2, width))
    for c in range(W + 3):
        for may in (0, 1):
            for j, ((nc, h), q) in enumerate(coded_row(rows, W, c, bool(may)).items()):
                code[c, may, j], hit[c, may, j], p[c, may, j] = nc, h, q
    return code, hit, p


def star_table(center_on_leaf, leaf_on_center) -> StarTable:
    """The star tables for a center striking with ``center_on_leaf`` and leaves with ``leaf_on_center``
    (:class:`.strikes.StrikeTable` with outcome tables)."""
    P, C = star_distribution(center_on_leaf, leaf_on_center)
    n_c, n_l = leaf_on_center.W + 3, center_on_leaf.W + 3
    return StarTable(n_c, n_l, AliasBits.build(P, C, dtype=np.int16))     # C: the packed new codes


def star_distribution(center_on_leaf, leaf_on_center) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The exact phase distribution of a star: ``P[row, j]`` the probability of the packed new codes
    ``C[row, j]`` (rows and packing as :class:`StarTable`'s)."""
    Wl, Wc = center_on_leaf.W, leaf_on_center.W
    n_c, n_l = Wc + 3, Wl + 3
    t_cl = _transitions(center_on_leaf.rows, Wl)
    t_lc = _transitions(leaf_on_center.rows, Wc)
    # start states x strike orders; state fields: center, leaf 1, leaf 2, center's parry spent
    cc, c1, c2 = (a.ravel() for a in np.meshgrid(np.arange(n_c), np.arange(n_l), np.arange(n_l), indexing="ij"))
    n_states = cc.size
    start = np.repeat(np.arange(n_states), 6)
    perm = np.tile(np.arange(6), n_states)
    s = np.stack([cc[start], c1[start], c2[start], np.zeros(start.size, np.int64)]).astype(np.int64)
    p = np.ones(start.size)
    for step in range(3):
        who = _PERMS[perm, step]
        new_s, new_p, idx = [], [], []
        # the center strikes: first standing leaf, else first stunned, else first knocked down
        c_up = s[0] <= Wc
        rank = [np.where(s[i] <= Wl, 0, np.where(s[i] == Wl + 2, 1, np.where(s[i] == Wl + 1, 2, 3))) for i in (1, 2)]
        target = np.where(rank[0] <= rank[1], 1, 2)
        go = np.flatnonzero((who == 0) & c_up & (np.minimum(rank[0], rank[1]) < 3))
        for j in range(t_cl[0].shape[2]):
            tc = s[target[go], go]
            q = t_cl[2][tc, 1, j]
            s2 = s[:, go].copy()
            s2[target[go], np.arange(go.size)] = t_cl[0][tc, 1, j]
            new_s.append(s2), new_p.append(p[go] * q), idx.append(go)
        # a leaf strikes the center
        leaf = np.where(who == 1, 1, 2)
        gl = np.flatnonzero((who > 0) & (s[leaf, np.arange(leaf.size)] <= Wl) & (s[0] < Wc + 3))
        for j in range(t_lc[0].shape[2]):
            cc0, may = s[0, gl], 1 - s[3, gl]
            q = t_lc[2][cc0, may, j]
            s2 = s[:, gl].copy()
            s2[0] = t_lc[0][cc0, may, j]
            s2[3] |= t_lc[1][cc0, may, j]
            new_s.append(s2), new_p.append(p[gl] * q), idx.append(gl)
        still = np.setdiff1d(np.arange(p.size), np.concatenate([go, gl]))
        new_s.append(s[:, still]), new_p.append(p[still]), idx.append(still)
        s, p = np.concatenate(new_s, 1), np.concatenate(new_p)
        keep_rows = np.concatenate(idx)
        start, perm = start[keep_rows], perm[keep_rows]
        keep = p > 0
        s, p, start, perm = s[:, keep], p[keep], start[keep], perm[keep]
        key = ((start * 6 + perm) * 8192 + ((s[0] * 16 + s[1]) * 16 + s[2]) * 2 + s[3])
        uniq, inv = np.unique(key, return_inverse=True)
        p = np.bincount(inv, p)
        start, perm = uniq // (6 * 8192), (uniq // 8192) % 6
        code = uniq % 8192
        s = np.stack([code // 512, (code // 32) % 16, (code // 2) % 16, code % 2])
    # mix strike orders into key patterns and drop the parry flag
    w = _WEIGHTS[:, perm]                                          # (patterns, paths)
    pi, qi = np.nonzero(w)
    out_key = (start[qi] * N_PATTERNS + pi) * 4096 + (s[0, qi] * 16 + s[1, qi]) * 16 + s[2, qi]
    uniq, inv = np.unique(out_key, return_inverse=True)
    prob = np.bincount(inv, p[qi] * w[pi, qi])
    row, code = uniq // 4096, uniq % 4096
    n_rows = n_states * N_PATTERNS
    counts = np.bincount(row, minlength=n_rows)
    K = int(counts.max())
    slot = np.arange(row.size) - np.repeat(np.cumsum(counts) - counts, counts)
    P = np.zeros((n_rows, K))
    C = np.zeros((n_rows, K), np.int64)
    P[row, slot], C[row, slot] = prob, code
    P /= P.sum(1, keepdims=True)
    return P, C
