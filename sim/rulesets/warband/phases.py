"""``warband`` group kernel: the phases of isolated pairs and of stars, a component at a time.

A star is a centre whose enemies in contact (its leaves) touch only it; a pair is
a star with one leaf. Each function plays one phase of many such components at
once, given by flat indices into the kernel's (warrior, fight) arrays, and
keeps the contacts clean when a warrior goes out of action.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .stars import pattern

__all__ = ["CHUNK", "pair_rows", "pairs", "stars", "hub_phase"]


_POW2 = (1 << np.arange(24)).astype(np.float32)  # exact integers (a float power could round)


def _bits(mask: NDArray[np.bool_]) -> NDArray[np.int32]:
    """Per-fight bitmask of a (warriors, fights) boolean array: bit i for row i.

    A float32 matrix product with the powers of two: exact (every partial sum is an integer
    below 2**24; a side has at most 20 warriors) and about twice as fast as a shift per row.
    """
    with np.errstate(all="ignore"):  # some BLAS builds flag spurious invalid values
        # exact in any summation order (sums of distinct powers of two below 2**24), so the same on every machine
        return (_POW2[:mask.shape[0]] @ mask.astype(np.float32)).astype(np.int32)


#: Entries per call of the sparse steps. Their temporaries then stay below glibc's mmap threshold
#: (128 KiB), so they are reused from the heap instead of being mapped and faulted in afresh on
#: every call, which made a 65,536-entry step about four times slower per entry (measured).
CHUNK = 16_384


def _chunks(e: NDArray[np.intp]):
    """``e`` in slices of at most :data:`CHUNK` entries (entries of distinct components: independent)."""
    for start in range(0, e.size, CHUNK):
        yield e[start:start + CHUNK]


def _low(x: NDArray[np.int32]) -> NDArray[np.intp]:
    """Index of the lowest set bit of each (non-zero) mask."""
    return np.bitwise_count((x & -x) - 1).astype(np.intp)


def pair_rows(kp, rk: int) -> NDArray[np.int32]:
    """Pair-table row of every (attacker's state byte, defender's state byte).

    A state byte is ``code * 3 + class`` (see :func:`pairs`); the row also folds in the order
    mode, which only depends on the two classes (Initiative is fixed per side).
    """
    pt = kp.groups.pair[rk]
    ia, id_ = kp.sides[0].i, kp.sides[1].i
    na_codes, nd_codes = pt.n_codes_a, pt.n_codes_d
    ca, cls_a, cd, cls_d = np.meshgrid(np.arange(na_codes), np.arange(3), np.arange(nd_codes), np.arange(3),
                                       indexing="ij")
    ka, kd = cls_a * 64 - ia, cls_d * 64 - id_
    mode = (ka > kd) + 2 * (ka == kd)                   # 0 a first, 1 d first, 2 roll-off
    return pt.row(ca, cd, mode).astype(np.int32).reshape(3 * na_codes, 3 * nd_codes)


def pairs(kp, st, e, flat, rk: int, rng: np.random.Generator) -> None:
    """Isolated pairs (both batches tabulated), by their attacking warriors ``e``: one draw each.

    ``flat[3]`` holds each warrior's state byte ``code * 3 + class``, so the table row is one
    lookup in ``st.pair_rows[rk]`` (:func:`pair_rows`) instead of arithmetic on four gathers.
    """
    if not e.size:
        return
    na, m = st.na, st.m
    code, cont, deg, sb = flat
    # the defender: a pair's only contact is one bit, whose index is the number of ones below it
    ed = (np.bitwise_count(cont[e] - 1).astype(np.intp) + na) * m + e % m
    lut = st.pair_rows[rk]
    row = np.take(lut.reshape(-1), sb[e].astype(np.intp) * lut.shape[1] + sb[ed])
    pt = kp.groups.pair[rk]
    pick = pt.table.sample(row, rng)
    code[e], code[ed] = np.take(pt.new_a, pick), np.take(pt.new_d, pick)
    broken = np.flatnonzero(np.take(pt.broken, pick))
    if broken.size:
        for x in (cont, deg):
            x[e[broken]] = 0
            x[ed[broken]] = 0


def stars(kp, st, k: int, e, flat, rk: int, rng: np.random.Generator) -> None:
    """Stars with two leaves centred on side ``k``'s warriors ``e`` (batches tabulated): one draw each
    from :class:`.stars.StarTable`."""
    if not e.size:
        return
    m = st.m
    code, cont, deg, c = flat
    f = e % m
    both = cont[e]
    base = st.offset[1 - k] * m + f
    e1 = base + _low(both) * m
    e2 = base + _low(both & (both - 1)) * m
    cc, c1, c2 = code[e], code[e1], code[e2]
    Ic, Il = kp.sides[k].i, kp.sides[1 - k].i
    kc = c[e] * np.int16(64) - Ic
    k1 = c[e1] * np.int16(64) - Il
    k2 = c[e2] * np.int16(64) - Il
    tb = kp.groups.star[k][rk]
    nc, n1, n2 = tb.sample(tb.row(cc, c1, c2, pattern(kc, k1, k2)), rng)
    code[e], code[e1], code[e2] = nc, n1, n2
    out_c, out_l = st.W[k] + 3, st.W[1 - k] + 3
    dead = np.flatnonzero(nc == out_c)
    if dead.size:                                     # the centre is out: both leaves are free
        for x in (cont, deg):
            x[e[dead]] = 0
            x[e1[dead]] = 0
            x[e2[dead]] = 0
    for el in (e1, e2):
        dead = np.flatnonzero((n1 if el is e1 else n2) == out_l)
        if dead.size:
            ec, ed = e[dead], el[dead]
            cont[ec] &= ~np.left_shift(1, (ed // m) - st.offset[1 - k]).astype(np.int32)
            deg[ec] = np.bitwise_count(cont[ec]).astype(np.int8)
            cont[ed], deg[ed] = 0, 0


def hub_phase(kp, st, k: int, e, code, cont, deg, c, rk: int, rng: np.random.Generator) -> None:
    """One phase of the stars centred on side ``k``'s warriors ``e`` (flat indices)."""
    m = st.m
    Wc, Wl = st.W[k], st.W[1 - k]
    n = e.size
    cc = code[e]
    kc = c[e].astype(np.int16) * 64 - kp.sides[k].i
    base = st.offset[1 - k] * m + e % m
    rem = cont[e]
    slots = int(deg[e].max())
    leaves = np.empty((slots, n), np.intp)               # flat index of each leaf, by index (lowest first)
    lcode = np.empty((slots, n), np.int8)
    valid = np.empty((slots, n), bool)
    for s in range(slots):
        valid[s] = rem != 0
        leaves[s] = base + _low(rem) * m * valid[s]
        lcode[s] = code[leaves[s]]
        rem &= rem - 1
    kl = c[leaves].astype(np.int16) * 64 - kp.sides[1 - k].i
    strikes = valid & (lcode <= Wl)
    # the centre's target: the first standing leaf, else the first stunned, else the first knocked down
    # (64 x rank by code, one gather instead of nested wheres; an empty slot adds 192: rank 3 or more)
    order = np.array([0] * (Wl + 1) + [128, 64, 128], np.int16)      # standing, knocked down, stunned, (out)
    t = (np.take(order, lcode) + valid * np.int16(-192) + np.arange(192, 192 + slots, dtype=np.int16)[:, None]).min(0)
    has_target = (t >> 6) < 3
    t &= 63
    cols = np.arange(n)
    # how many leaves strike before the centre
    tied = strikes & (kl == kc)
    n_tied = tied.sum(0)
    earlier = (strikes & (kl < kc)).sum(0) + (rng.random(n) * (n_tied + 1)).astype(np.intp)
    n_strike = strikes.sum(0)
    t_strikes = strikes[t, cols]
    t_key = kl[t, cols]
    t_before = t_strikes & ((t_key < kc) | ((t_key == kc) & (rng.random(n) * n_tied < earlier - (strikes & (kl < kc)).sum(0))))
    hit = np.zeros(n, bool)                               # the centre's parry is spent
    on_centre, on_leaf = kp.groups.strike[1 - k][rk], kp.groups.strike[k][rk]
    volley = kp.groups.volley[k][rk] if kp.groups.volley is not None else None

    def leaves_strike(count) -> None:
        nonlocal cc, hit
        if volley is not None and count.size and int(count.max()) <= volley.most:
            go = np.flatnonzero(count > 0)                 # every leaf's batch at once (one draw a star)
            if go.size:
                cc[go], hit[go] = volley.strike(count[go], cc[go], hit[go], rng)
            return
        for s in range(int(count.max()) if count.size else 0):
            go = np.flatnonzero((count > s) & (cc < Wc + 3))
            if not go.size:
                return
            new, scored = on_centre.strike(cc[go], ~hit[go], rng)
            cc[go] = new
            hit[go] |= scored

    leaves_strike(earlier)
    go = np.flatnonzero(has_target & (cc <= Wc))           # the centre strikes, if still standing
    if go.size:
        lt = leaves[t[go], go]
        old = code[lt]
        new, _ = on_leaf.strike(old, np.ones(go.size, bool), rng)
        code[lt] = new
        t_down = np.zeros(n, bool)
        t_down[go] = (old <= Wl) & (new > Wl)
    else:
        t_down = np.zeros(n, bool)
    leaves_strike(n_strike - earlier - (t_strikes & ~t_before & t_down))
    code[e] = cc
    # contacts: a centre out of action frees every leaf; a leaf out of action leaves its centre
    out = np.flatnonzero(cc == Wc + 3)
    if out.size:
        freed = leaves[:, out][valid[:, out]]
        cont[freed], deg[freed] = 0, 0
        cont[e[out]], deg[e[out]] = 0, 0
    lt = leaves[t, cols]
    gone = np.flatnonzero(has_target & (code[lt] == Wl + 3) & (cc < Wc + 3))
    if gone.size:
        ec, el = e[gone], lt[gone]
        cont[ec] &= ~np.left_shift(1, el // m - st.offset[1 - k]).astype(np.int32)
        deg[ec] -= 1
        cont[el], deg[el] = 0, 0
