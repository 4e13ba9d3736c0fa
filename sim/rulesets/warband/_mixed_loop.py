"""``warband`` compiled kernel of mixed sides (army lists): the loop of :mod:`._loop`, warrior by warrior profile.

The same fight as :func:`._loop.play` (read its docstring first): the same state codes,
contact bitmasks, strike-order buckets, one draw per isolated pair, two-leaf star or
striker's batch, and the same order of uniforms. What differs is that every warrior
carries its own profile (an index into its side's profiles), so every per-side
constant is a per-warrior one, and every table is the table of the *pair of profiles*
involved, read from tables concatenated pair by pair (:func:`.mixed.mixed_loop_tables`):
pair ``q = attacker profile * Pd + defender profile`` has its own alias table with its
own ``bits``, starting at slot ``base[q]``, so a pair's rows are read exactly as the
single-profile loop reads them. A two-leaf star is one draw when its two leaves share a
profile (its table is that pair's); otherwise its three warriors strike there and then,
one by one in strike order (ties rolled off by a uniform random order), the centre on
its first standing leaf (else stunned, else knocked down) and each standing leaf on the
centre: the star's own rules, without a table for every three profiles.

Strike-order buckets are (class, Initiative rank) with one rank per distinct Initiative
of the fight, highest first. The single-profile loop skips the roll-off within a
bucket of strikers that each touch one enemy (two such strikers of one side that
strike the same enemy strike alike whoever goes first); here that holds only while
the bucket holds one profile per side, so a bucket that receives two profiles of one
side is rolled off like a bucket with a striker touching several enemies.

With ``pairing = "random"`` each side with more than one profile has its warriors'
profiles shuffled at the start of each fight (Fisher-Yates, one uniform a step, as the
roll-offs): the round-robin pairing, the target choice and the re-engaging ties then
read a uniformly random line-up.

A side whose warriors all share one profile reads the uniforms exactly as the
single-profile loop does (tested: the same fights, bit for bit).
"""

from __future__ import annotations

import numpy as np

from ...kernels.compile_cache import njit_cached
from ._loop import _MASK, _low, _popcount, _single

__all__ = ["play_mixed"]

#: Masks table indices (pairs of profiles, and their rows' offsets) as not negative, as ``_MASK`` does slots:
#: at most 20 profiles a side make 400 pairs, 1,600 offsets.
_QMASK = (1 << 12) - 1


@njit_cached()
def _key(flags, ph, base, reflexes, initiative):
    """Strike-order key (lower strikes first), as :func:`._loop._key`."""
    c = base
    if flags >> 3 == ph:
        if flags & 1:
            c = 2
        elif base == 1 and (flags & 2 or (flags & 4 and reflexes)):
            c = 0
    return 64 * c - initiative


@njit_cached(inline="always")
def _draw(v, row, base, bits, thr, pick):
    """One draw of row ``row`` of the table starting at slot ``base`` with ``bits`` bits a row."""
    slot = base + ((((row << bits) | (v >> (32 - bits)))) & _MASK)
    return pick[2 * slot + (v >= thr[slot])]


@njit_cached(error_model="numpy")
def play_mixed(start, n, u, per_fight, na, nd, prof0, shuffle, Pd, PW, PI, PC1, PCL, PRF, own_turn, limit,
               capped_is_draw, irank, NI,
               s_thr, s_pick, s_base, s_bits, s_off, p_thr, p_pick, p_base, p_bits, p_off,
               t_thr, t_pick, t_base, t_bits, t_off, pattern,
               winner, dmg_a, dmg_d, cat_a, cat_d, rounds_out, capped_out, ooa_a_out, ooa_d_out):
    """Play fights ``start ..``; return the fights done and the uniforms read (see :func:`._loop.play`).

    ``prof0``: each warrior's profile index on its side, in listed order (attackers, then
    defenders); ``shuffle[k]``: side ``k``'s line-up is random. ``PW``, ``PI``, ``PC1``,
    ``PCL``, ``PRF``: per profile (the attacker's ``0 .. Pa - 1``, then the defender's),
    Wounds, Initiative, strike class in round 1 and later, Lightning Reflexes. ``irank``:
    Initiative value -> its rank in the fight (0 highest); ``NI`` ranks. Tables of pair ``q``:
    strike rows from ``s_off[4 q + 2 kind + striker side]``, pair rows from ``p_off[2 q + kind]``,
    star rows from ``t_off[4 q + 2 kind + centre side]``.
    """
    nw = na + nd
    Pa = PW.shape[0] - Pd
    code = np.empty(nw, np.int64)
    contacts = np.zeros(nw, np.int64)
    flags = np.full(nw, -1, np.int64)
    taken = np.full(nw, -1, np.int64)
    put_down = np.full(nw, -1, np.int64)
    nb = 3 * NI
    lists = np.empty((nb, nw), np.int64)
    first_p = np.full((nb, 2), -1, np.int64)     # the first profile of each side put in a bucket this phase
    free_list = np.empty(nw + 1, np.int64)
    count = np.zeros(nb, np.int64)
    lp = np.empty(nw, np.int64)                  # each warrior's profile on its side (this fight's line-up)
    Wg = np.empty(nw, np.int64)
    Ig = np.empty(nw, np.int64)
    C1 = np.empty(nw, np.int64)
    CL = np.empty(nw, np.int64)
    RF = np.empty(nw, np.bool_)
    BC = np.empty(nw, np.int64)                  # this round's strike class before stand-ups and charges
    KB = np.empty(nw, np.int64)                  # and the strike-order key it gives (64 class - Initiative)
    trio = np.empty(3, np.int64)                 # a star of two leaf profiles: its strikers in order
    tkey = np.empty(3, np.int64)
    start_contacts = np.zeros(nw, np.int64)
    if na >= nd:
        for i in range(na):
            j = i % nd
            start_contacts[i] |= 1 << j
            start_contacts[na + j] |= 1 << i
    else:
        for j in range(nd):
            i = j % na
            start_contacts[i] |= 1 << j
            start_contacts[na + j] |= 1 << i
    all_a = (np.int64(1) << na) - 1
    all_d = ((np.int64(1) << nw) - 1) & ~all_a
    ph = 0
    pos = 0
    size = u.shape[0]
    f = start
    while f < n and pos + per_fight <= size:
        for g in range(nw):
            lp[g] = prof0[g]
        # a random line-up: each shuffled side's profiles in a uniformly random order (Fisher-Yates)
        for k in range(2):
            if shuffle[k]:
                lo = 0 if k == 0 else na
                m_k = na if k == 0 else nd
                for x in range(m_k - 1, 0, -1):
                    j = (np.int64(u[pos]) * (x + 1)) >> 32
                    pos += 1
                    lp[lo + x], lp[lo + j] = lp[lo + j], lp[lo + x]
        for g in range(nw):
            gp = lp[g] if g < na else Pa + lp[g]
            Wg[g] = PW[gp]
            Ig[g] = PI[gp]
            C1[g] = PC1[gp]
            CL[g] = PCL[gp]
            RF[g] = PRF[gp]
            code[g] = Wg[g]
            contacts[g] = start_contacts[g]
        alive = all_a | all_d
        r = 0
        while r < limit and alive & all_a != 0 and alive & all_d != 0:
            r += 1
            ph += 1
            act = 0 if r % 2 == 1 else 1
            first = r == 1
            kind = 1 if first else 0
            if r <= 2:
                for g in range(nw):
                    BC[g] = C1[g] if first else CL[g]
                    KB[g] = 64 * BC[g] - Ig[g]
            if not own_turn:
                live = alive
                for g in range(nw):
                    if contacts[g] == 0 and code[g] < Wg[g] + 3:
                        _join_into(g, na, code, contacts, Wg, live & (all_d if g < na else all_a))
            n_free = 0
            m = 0 if first else alive & (all_a if act == 0 else all_d)
            while m:
                g = _low(m) & 63
                m &= m - 1
                c = code[g]
                Wx = Wg[g]
                down = c == Wx + 1
                c = 0 if down else c - (c == Wx + 2)
                code[g] = c
                flags[g] = 8 * ph + 1 if down else flags[g]
                free_list[n_free] = g
                n_free += (contacts[g] == 0) & (c <= Wx)
            if own_turn and not first:
                foe = na if act == 0 else 0
                enemies = alive & (all_d if act == 0 else all_a)
                for y in range(n_free):
                    g = free_list[y] & 63
                    best, best_n = -1, 1 << 30
                    m = enemies
                    while m:
                        e = _low(m) & 63
                        m &= m - 1
                        ne = _popcount(contacts[e])
                        best = e if ne < best_n else best
                        best_n = min(ne, best_n)
                    if best < 0:
                        continue
                    contacts[g] |= 1 << (best - foe)
                    contacts[best] |= 1 << (g - (0 if act == 0 else na))
                    flags[g] = 8 * ph + ((flags[g] & 7 if flags[g] >> 3 == ph else 0) | 2)
                    flags[best] = 8 * ph + ((flags[best] & 7 if flags[best] >> 3 == ph else 0) | 4)
            complex_seen = False
            several = np.int64(0)
            played = np.int64(0)
            scan_defenders = False
            m = alive & all_a
            while True:
                if m == 0:
                    if scan_defenders or not complex_seen:
                        break
                    scan_defenders = True
                    m = alive & all_d
                    continue
                g = _low(m) & 63
                m &= m - 1
                c = contacts[g]
                if (c == 0) | ((played >> g) & 1 != 0):
                    continue
                rest = c & (c - 1)
                k = 0 if g < na else 1
                base = na if k == 0 else 0
                own = 0 if k == 0 else na
                if rest == 0:
                    e = (base + _low(c)) & 63
                    ce = contacts[e]
                    re = ce & (ce - 1)
                    if re != 0:
                        # a leaf: of a star if its centre's other contact touches only the centre
                        star = False
                        if re & (re - 1) == 0:
                            o2 = (own + _low(ce & ~(1 << (g - own)))) & 63
                            star = _single(contacts[o2])
                        if not star:
                            complex_seen = True
                            if code[g] <= Wg[g]:
                                kg = KB[g] if flags[g] >> 3 != ph else _key(flags[g], ph, BC[g], RF[g], Ig[g])
                                b = ((kg + 64) >> 6) * NI + irank[Ig[g]]
                                lists[b, count[b]] = g
                                count[b] += 1
                                fp = first_p[b, k]
                                several |= np.int64(fp >= 0 and fp != lp[g]) << b
                                first_p[b, k] = lp[g] if fp < 0 else fp
                            continue
                        cen = e
                        k = 1 - k
                        base = na if k == 0 else 0
                        c = ce
                        rest = re
                    else:
                        if g >= na:
                            continue
                        ca, cd = code[g], code[e]
                        Wa, Wd = Wg[g], Wg[e]
                        if (ca > Wa) & (cd > Wd):
                            continue
                        ka = KB[g] if flags[g] >> 3 != ph else _key(flags[g], ph, BC[g], RF[g], Ig[g])
                        kd = KB[e] if flags[e] >> 3 != ph else _key(flags[e], ph, BC[e], RF[e], Ig[e])
                        mode = 0 if ka < kd else 1 if ka > kd else 2
                        q = (lp[g] * Pd + lp[e]) & _QMASK
                        v = np.int64(u[pos])
                        pos += 1
                        o = _draw(v, p_off[(2 * q + kind) & _QMASK] + ca * (Wd + 3) * 3 + cd * 3 + mode, p_base[q], p_bits[q],
                                  p_thr, p_pick)
                        ca, cd = o >> 4, o & 15
                        code[g], code[e] = ca, cd
                        out_a = np.int64(ca == Wa + 3)
                        out_d = np.int64(cd == Wd + 3)
                        keep = (out_a | out_d) - 1
                        contacts[g] &= keep
                        contacts[e] &= keep
                        alive &= ~((out_a << g) | (out_d << e))
                        continue
                else:
                    e1, e2 = (base + _low(c)) & 63, (base + _low(rest)) & 63
                    if rest & (rest - 1) != 0 or not (_single(contacts[e1]) and _single(contacts[e2])):
                        complex_seen = True
                        if code[g] <= Wg[g]:
                            kg = KB[g] if flags[g] >> 3 != ph else _key(flags[g], ph, BC[g], RF[g], Ig[g])
                            b = ((kg + 64) >> 6) * NI + irank[Ig[g]]
                            several |= np.int64(1) << b
                            lists[b, count[b]] = g
                            count[b] += 1
                            fp = first_p[b, k]
                            first_p[b, k] = lp[g] if fp < 0 else fp
                        continue
                    cen = g
                e1, e2 = (base + _low(c)) & 63, (base + _low(rest)) & 63
                played |= (np.int64(1) << cen) | (np.int64(1) << e1) | (np.int64(1) << e2)
                Wc, Wl = Wg[cen], Wg[e1]
                cc, c1, c2 = code[cen], code[e1], code[e2]
                if (cc > Wc) & (c1 > Wl) & (c2 > Wg[e2]):
                    continue
                kc = KB[cen] if flags[cen] >> 3 != ph else _key(flags[cen], ph, BC[cen], RF[cen], Ig[cen])
                k1 = KB[e1] if flags[e1] >> 3 != ph else _key(flags[e1], ph, BC[e1], RF[e1], Ig[e1])
                k2 = KB[e2] if flags[e2] >> 3 != ph else _key(flags[e2], ph, BC[e2], RF[e2], Ig[e2])
                if lp[e1] != lp[e2]:
                    # leaves of two profiles: no star table; the three strike one by one in strike order
                    # (ties in a random order), the centre on its first standing leaf (else stunned, else
                    # knocked down), each standing leaf on the centre
                    trio[0], trio[1], trio[2] = cen, e1, e2
                    tkey[0], tkey[1], tkey[2] = kc, k1, k2
                    for x in (1, 2):                       # insertion sort by key (stable)
                        y = x
                        while y > 0 and tkey[y - 1] > tkey[y]:
                            tkey[y - 1], tkey[y] = tkey[y], tkey[y - 1]
                            trio[y - 1], trio[y] = trio[y], trio[y - 1]
                            y -= 1
                    x0 = 0
                    while x0 < 3:                          # each run of equal keys in a random order
                        x1 = x0
                        while x1 + 1 < 3 and tkey[x1 + 1] == tkey[x0]:
                            x1 += 1
                        for x in range(x1, x0, -1):
                            j = x0 + ((np.int64(u[pos]) * (x - x0 + 1)) >> 32)
                            pos += 1
                            trio[x], trio[j] = trio[j], trio[x]
                        x0 = x1 + 1
                    for x in range(3):
                        s = trio[x]
                        if code[s] > Wg[s]:
                            continue
                        if s == cen:
                            t = -1
                            for want in (0, 2, 1):
                                for e in (e1, e2):
                                    if t < 0 and ((code[e] <= Wg[e]) if want == 0 else (code[e] == Wg[e] + want)):
                                        t = e
                                if t >= 0:
                                    break
                            if t < 0:
                                continue
                        else:
                            if code[cen] == Wc + 3:
                                continue
                            t = cen
                        ks = 0 if s < na else 1
                        Wt = Wg[t]
                        ct = code[t]
                        if ct == Wt + 2:
                            nc = Wt + 3
                        else:
                            up = ct <= Wt
                            q = (lp[s] * Pd + lp[t] if ks == 0 else lp[t] * Pd + lp[s]) & _QMASK
                            row = s_off[(4 * q + 2 * kind + ks) & _QMASK] + ct + (Wt + 1) * ((up and taken[t] != ph) or ct == Wt + 1)
                            v = np.int64(u[pos])
                            pos += 1
                            o = _draw(v, row, s_base[q], s_bits[q], s_thr, s_pick)
                            nc = o >> 1
                            if o & 1:
                                taken[t] = ph
                            if up and (nc == Wt + 1 or nc == Wt + 2):
                                put_down[t] = 64 * ph + s
                        code[t] = nc
                    mc = -np.int64(code[cen] != Wc + 3)
                    m1 = -np.int64(code[e1] != Wl + 3)
                    m2 = -np.int64(code[e2] != Wg[e2] + 3)
                    contacts[cen] &= mc & ~((~m1 & 1) << (e1 - base)) & ~((~m2 & 1) << (e2 - base))
                    contacts[e1] &= mc & m1
                    contacts[e2] &= mc & m2
                    alive &= ~(((mc + 1) << cen) | ((m1 + 1) << e1) | ((m2 + 1) << e2))
                    continue
                sg = ((kc > k1) - (kc < k1) + 1) * 9 + ((kc > k2) - (kc < k2) + 1) * 3 + (k1 > k2) - (k1 < k2) + 1
                n_l = Wl + 3
                q = (lp[cen] * Pd + lp[e1] if k == 0 else lp[e1] * Pd + lp[cen]) & _QMASK
                v = np.int64(u[pos])
                pos += 1
                o = _draw(v, t_off[(4 * q + 2 * kind + k) & _QMASK] + ((cc * n_l + c1) * n_l + c2) * 13 + pattern[sg],
                          t_base[q], t_bits[q], t_thr, t_pick)
                cc, c1, c2 = o >> 8, (o >> 4) & 15, o & 15
                code[cen], code[e1], code[e2] = cc, c1, c2
                mc = -np.int64(cc != Wc + 3)
                m1 = -np.int64(c1 != Wl + 3)
                m2 = -np.int64(c2 != Wl + 3)
                contacts[cen] &= mc & ~((~m1 & 1) << (e1 - base)) & ~((~m2 & 1) << (e2 - base))
                contacts[e1] &= mc & m1
                contacts[e2] &= mc & m2
                alive &= ~(((mc + 1) << cen) | ((m1 + 1) << e1) | ((m2 + 1) << e2))
            if complex_seen:
                for b in range(nb):
                    size_b = count[b]
                    for x in range(size_b - 1 if (several >> b) & 1 else 0, 0, -1):
                        j = (np.int64(u[pos]) * (x + 1)) >> 32
                        pos += 1
                        lists[b, x], lists[b, j] = lists[b, j], lists[b, x]
                    for x in range(size_b):
                        s = lists[b, x] & 63
                        if code[s] > Wg[s]:
                            continue
                        k = 0 if s < na else 1
                        base = na if k == 0 else 0
                        cont = contacts[s]
                        t = -1
                        c = cont
                        while c:
                            e = (base + _low(c)) & 63
                            if code[e] <= Wg[e]:
                                t = e
                                break
                            c &= c - 1
                        if t < 0:
                            mine = 64 * ph + s
                            for want in (2, 1):
                                c = cont
                                while c:
                                    e = (base + _low(c)) & 63
                                    if code[e] == Wg[e] + want and put_down[e] != mine:
                                        t = e
                                        break
                                    c &= c - 1
                                if t >= 0:
                                    break
                        if t < 0:
                            continue
                        Wt = Wg[t]
                        ct = code[t]
                        if ct == Wt + 2:
                            nc = Wt + 3
                        else:
                            up = ct <= Wt
                            q = (lp[s] * Pd + lp[t] if k == 0 else lp[t] * Pd + lp[s]) & _QMASK
                            row = s_off[(4 * q + 2 * kind + k) & _QMASK] + ct + (Wt + 1) * ((up and taken[t] != ph) or ct == Wt + 1)
                            v = np.int64(u[pos])
                            pos += 1
                            o = _draw(v, row, s_base[q], s_bits[q], s_thr, s_pick)
                            nc = o >> 1
                            if o & 1:
                                taken[t] = ph
                            if up and (nc == Wt + 1 or nc == Wt + 2):
                                put_down[t] = 64 * ph + s
                        code[t] = nc
                        if nc == Wt + 3:
                            alive &= ~(np.int64(1) << t)
                            bit, mine = (t - na, 0) if k == 0 else (t, na)
                            c = contacts[t]
                            while c:
                                contacts[mine + _low(c)] &= ~(1 << bit)
                                c &= c - 1
                            contacts[t] = 0
                for b in range(nb):
                    count[b] = 0
                    first_p[b, 0] = -1
                    first_p[b, 1] = -1
        done = alive & all_a == 0 or alive & all_d == 0
        oa = na - _popcount(alive & all_a)
        od = nd - _popcount(alive & all_d)
        da, dd = 0, 0
        up_a, up_d = False, False
        for g in range(na):
            c = code[g]
            da += Wg[g] - (c if c <= Wg[g] else 0)
            up_a |= c <= Wg[g]
        for g in range(na, nw):
            c = code[g]
            dd += Wg[g] - (c if c <= Wg[g] else 0)
            up_d |= c <= Wg[g]
        capped = capped_is_draw and not done
        if capped:
            w = 0
        elif od == nd:
            w = 1
        elif oa == na:
            w = 2
        elif oa != od:
            w = 1 if oa < od else 2
        elif da != dd:
            w = 1 if da < dd else 2
        else:
            w = 0
        winner[f] = w
        dmg_a[f], dmg_d[f] = da, dd
        cat_a[f] = 0 if oa == na else 2 if up_a else 1
        cat_d[f] = 0 if od == nd else 2 if up_d else 1
        rounds_out[f] = r
        capped_out[f] = capped
        ooa_a_out[f], ooa_d_out[f] = oa, od
        f += 1
    return f, pos


@njit_cached()
def _join_into(g, na, code, contacts, Wg, live):
    """``every_round``: warrior ``g`` joins the enemy not out of action with the fewest opponents in contact
    (lowest index on ties), as :func:`._loop._join_into`."""
    e_lo = na if g < na else 0
    best, best_n = -1, 1 << 30
    m = live
    while m:
        e = _low(m)
        m &= m - 1
        if code[e] != Wg[e] + 3:
            ne = _popcount(contacts[e])
            if ne < best_n:
                best, best_n = e, ne
    if best >= 0:
        contacts[g] |= 1 << (best - e_lo)
        contacts[best] |= 1 << (g if g < na else g - na)
    return best
