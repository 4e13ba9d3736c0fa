"""``warband`` compiled kernel: the fight loop itself, compiled by Numba (see :mod:`.compiled`).

Importing this module imports Numba (about half a second) and, on the first
call in a process, loads the compiled loop from Numba's on-disk cache in the
user's cache folder (:mod:`sim.kernels.compile_cache`) (or
compiles it, some seconds, the first time on a machine). :mod:`.compiled`
imports it only when a fight is played.

One call plays fights ``start, start + 1, ...`` one after another, each from
the first round to its end, until ``n`` fights are done or the uniforms left in
``u`` might not cover one more fight (``per_fight``: an upper bound on the
uniforms one fight reads). It returns the number of fights done; the caller
refills ``u`` from the block's stream and calls again, so the result depends
only on the stream and ``n``.

Warriors are numbered attackers ``0 .. na - 1`` then defenders ``na ..``; a
warrior's ``contacts`` is a bitmask of the enemies it touches, by their index
in their side, cleared of warriors out of action, and the warriors not out of
action are a bitmask by warrior number (``alive``), cleared where a warrior
goes out of action, so no list is compacted. State codes are those of
:mod:`.strikes` (``0 .. W`` standing with that many wounds left, ``W + 1``
knocked down, ``W + 2`` stunned, ``W + 3`` out of action).

Helpers take scalars only: a Numba function that takes arrays pays for
reference counting at every call, which in this loop costs more than the work.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.extending import intrinsic

from ...kernels.compile_cache import njit_cached

__all__ = ["play"]

#: Masks that tell LLVM an index is not negative, so it drops NumPy's negative-index wrap (three
#: instructions an access): warrior numbers are below 64 (at most 40), table slots below 2**47.
_MASK = (1 << 47) - 1


@intrinsic
def _popcount(typingctx, x):
    """Number of set bits of the integer ``x`` (LLVM's ``ctpop``: one instruction where the CPU has it)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return x(x), codegen


@intrinsic
def _low(typingctx, x):
    """Index of the lowest set bit of the integer ``x`` (> 0) (LLVM's ``cttz``)."""
    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))
    return x(x), codegen


@njit_cached()
def _single(x):
    """Whether the mask ``x`` has exactly one bit set."""
    return x != 0 and (x & (x - 1)) == 0


@njit_cached()
def _key(flags, ph, base, reflexes, initiative):
    """Strike-order key (lower strikes first): 64 class - Initiative, from a warrior's ``flags``
    (8 ph + 1 stood up, 2 charged, 4 was charged, when set in phase ``ph``). Strike last (stood
    up this Recovery; a double-handed weapon: ``base`` 2) beats strike first (round 1's charge, a
    spear, Lightning Reflexes: ``base`` 0; a re-engaging charge, or Lightning Reflexes against one)."""
    c = base
    if flags >> 3 == ph:
        if flags & 1:
            c = 2
        elif base == 1 and (flags & 2 or (flags & 4 and reflexes)):
            c = 0
    return 64 * c - initiative


@njit_cached()
def _bucket(k, flags, ph, base_a, base_d, refl_a, refl_d, Ia, Id, rank_a, rank_d):
    """Strike-order bucket 2 class + Initiative rank of a warrior of side ``k`` (see :func:`_key`)."""
    if k == 0:
        return 2 * ((_key(flags, ph, base_a, refl_a, Ia) + 64) >> 6) + rank_a
    return 2 * ((_key(flags, ph, base_d, refl_d, Id) + 64) >> 6) + rank_d


@njit_cached(error_model="numpy")
def play(start, n, u, per_fight, na, nd, W, I, cls1, clsl, reflexes, own_turn, limit, capped_is_draw,
         s_bits, s_threshold, s_pick, s_offset, p_bits, p_threshold, p_pick, p_offset,
         t_bits, t_threshold, t_pick, t_offset, pattern,
         winner, dmg_a, dmg_d, cat_a, cat_d, rounds_out, capped_out, ooa_a_out, ooa_d_out):
    """Play fights ``start ..`` (see the module docstring); return the number of fights done and
    the number of uniforms read (the first ones of ``u``).

    ``W``, ``I``, ``cls1``, ``clsl``, ``reflexes``: per side, Wounds, Initiative, strike class in
    round 1 and later (0 first, 1 normal, 2 last), Lightning Reflexes. ``own_turn``: re-engage by
    a charge in one's own turn (else every round, no bonus). ``s_*``, ``p_*``, ``t_*``: the batch,
    isolated pair and two-leaf star tables (rows and values as :class:`.compiled.PhaseTables`
    says); ``pattern``: a star's order pattern by the signs of its key comparisons.

    Within a phase contacts do not change, so warriors split into components that do not
    interact, and only the strike order within a component matters. Each isolated pair and each
    two-leaf star plays its whole phase in one draw; the other strikers go in strike order (class,
    Initiative, then a uniform random order among equals: the roll-offs).
    """
    nw = na + nd
    code = np.empty(nw, np.int64)
    contacts = np.zeros(nw, np.int64)
    # per-phase marks as phase stamps (``x[g] == ph``: set in this phase), so nothing is reset
    # 8 ph + bits: 1 stood up in this Recovery, 2 charged this turn, 4 was charged this turn
    flags = np.full(nw, -1, np.int64)
    taken = np.full(nw, -1, np.int64)           # an enemy scored hits on it (parry spent)
    put_down = np.full(nw, -1, np.int64)        # 64 ph + the striker that put it down
    lists = np.empty((6, nw), np.int64)         # the other strikers by bucket
    free_list = np.empty(nw + 1, np.int64)      # the active side's free standing warriors
    count = np.zeros(6, np.int64)
    side_w = np.empty(nw, np.int64)
    for g in range(nw):
        side_w[g] = W[0] if g < na else W[1]
    # the round-robin pairing: the larger side's warriors spread over the smaller side's
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
    Wa0, Wd0 = W[0], W[1]
    all_a = (np.int64(1) << na) - 1                # the attackers' bits of a mask by warrior number
    all_d = ((np.int64(1) << nw) - 1) & ~all_a
    Ia, Id = I[0], I[1]
    refl_a, refl_d = reflexes[0], reflexes[1]
    # each side's Initiative rank: 0 strikes before 1 within a class (equal Initiative: one bucket)
    rank_a = 1 if Id > Ia else 0
    rank_d = 1 if Ia > Id else 0
    s_shift, p_shift, t_shift = 32 - s_bits, 32 - p_bits, 32 - t_bits
    ph = 0
    pos = 0
    size = u.shape[0]
    f = start
    while f < n and pos + per_fight <= size:
        for g in range(nw):
            code[g] = side_w[g]
            contacts[g] = start_contacts[g]
        # the warriors not out of action, by warrior number (a death clears its bit where it
        # happens: no lists to compact)
        alive = all_a | all_d
        r = 0
        while r < limit and alive & all_a != 0 and alive & all_d != 0:
            r += 1
            ph += 1
            act = 0 if r % 2 == 1 else 1
            first = r == 1
            kind = 1 if first else 0
            base_a = cls1[0] if first else clsl[0]     # strike classes before stand-ups and charges
            base_d = cls1[1] if first else clsl[1]
            if not own_turn:
                # every_round: before Recovery, every warrior not out of action with no enemy in
                # contact joins the one with the fewest opponents (attackers first), no bonus
                live = alive                              # (the enemies at the start of the round)
                for g in range(nw):
                    if contacts[g] == 0 and code[g] < side_w[g] + 3:
                        _join_into(g, na, code, contacts, side_w, live & (all_d if g < na else all_a))
            # Recovery of the active side: stunned -> knocked down, knocked down -> standing (none
            # in round 1: everyone starts standing and engaged)
            Wa = W[act]
            n_free = 0
            m = 0 if first else alive & (all_a if act == 0 else all_d)
            while m:
                g = _low(m) & 63
                m &= m - 1
                c = code[g]
                down = c == Wa + 1
                c = 0 if down else c - (c == Wa + 2)
                code[g] = c
                flags[g] = 8 * ph + 1 if down else flags[g]
                free_list[n_free] = g                  # (in index order)
                n_free += (contacts[g] == 0) & (c <= Wa)
            if own_turn and not first:
                # the free standing warriors charge, in index order, each into the enemy not out
                # of action with the fewest opponents in contact (lowest index on ties), counting
                # those placed before it; it counts as charging, the enemy as charged
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
                    # (a charger may have stood up in this Recovery)
                    flags[g] = 8 * ph + ((flags[g] & 7 if flags[g] >> 3 == ph else 0) | 2)
                    flags[best] = 8 * ph + ((flags[best] & 7 if flags[best] >> 3 == ph else 0) | 4)
            # a pair's order when neither warrior stood up, charged or was charged in this phase (the
            # common case: no strike-order keys to compute), its table's first row, its row stride
            ka0 = 64 * base_a - Ia
            kd0 = 64 * base_d - Id
            mode0 = 0 if ka0 < kd0 else 1 if ka0 > kd0 else 2
            p_row0 = p_offset[kind]
            n_d3 = (Wd0 + 3) * 3
            # one scan: isolated pairs (found from their attacker) and two-leaf stars (from their
            # centre) play their whole phase in one draw each; the other strikers (standing,
            # touching an enemy) go into buckets 2 class + the side's Initiative rank
            complex_seen = False
            several = 0                                 # buckets holding a striker with several enemies
            played = np.int64(0)                        # warriors played in a star this phase
            # a defender needs scanning only if an attacker was seen in a component that is not
            # a pair or a two-leaf star (its defenders strike as strikers of their own); warriors
            # put out of action during the scan have no contacts left, so they are passed over
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
                if (c == 0) | ((played >> g) & 1 != 0):   # (one branch: two would mispredict apart)
                    continue
                rest = c & (c - 1)
                k = 0 if g < na else 1
                base = na if k == 0 else 0
                if rest == 0:
                    e = (base + _low(c)) & 63
                    ce = contacts[e]
                    re = ce & (ce - 1)
                    if re != 0:
                        # a leaf: of a star if its centre's other contact touches only the centre
                        star = False
                        if re & (re - 1) == 0:
                            o2 = ce & ~(1 << (g - (0 if k == 0 else na)))
                            star = _single(contacts[(0 if k == 0 else na) + _low(o2)])
                        if not star:
                            complex_seen = True
                            if code[g] <= side_w[g]:
                                b = _bucket(k, flags[g], ph, base_a, base_d, refl_a, refl_d, Ia, Id, rank_a, rank_d)
                                lists[b, count[b]] = g
                                count[b] += 1
                            continue
                        # a defender-centred star, played from its first leaf (an attacker-centred
                        # one was played from its centre: attackers come first)
                        cen = e
                        k = 1 - k
                        base = na if k == 0 else 0
                        c = ce
                        rest = re
                    else:
                        if g >= na:
                            continue                       # a pair: its attacker plays it (so no
                        ca, cd = code[g], code[e]
                        # ``played`` marks: its defender comes back here and leaves by the line above)
                        if (ca > Wa0) & (cd > Wd0):         # (one branch, rarely taken: two would mispredict)
                            continue                       # neither is standing: nothing happens
                        fa, fd = flags[g], flags[e]
                        if (fa >> 3 == ph) | (fd >> 3 == ph):
                            ka = _key(fa, ph, base_a, refl_a, Ia)
                            kd = _key(fd, ph, base_d, refl_d, Id)
                            mode = 0 if ka < kd else 1 if ka > kd else 2
                        else:
                            mode = mode0
                        v = np.int64(u[pos])
                        pos += 1
                        slot = (((p_row0 + ca * n_d3 + cd * 3 + mode) << p_bits) | (v >> p_shift)) & _MASK
                        o = p_pick[2 * slot + (v >= p_threshold[slot])]
                        ca, cd = o >> 4, o & 15
                        code[g], code[e] = ca, cd
                        # a death frees both (without a branch: it would mispredict on the draw)
                        out_a = np.int64(ca == Wa0 + 3)
                        out_d = np.int64(cd == Wd0 + 3)
                        keep = (out_a | out_d) - 1
                        contacts[g] &= keep
                        contacts[e] &= keep
                        alive &= ~((out_a << g) | (out_d << e))
                        continue
                else:
                    e1, e2 = (base + _low(c)) & 63, (base + _low(rest)) & 63
                    if rest & (rest - 1) != 0 or not (_single(contacts[e1]) and _single(contacts[e2])):
                        complex_seen = True
                        if code[g] <= side_w[g]:           # three or more contacts, or not a star
                            b = _bucket(k, flags[g], ph, base_a, base_d, refl_a, refl_d, Ia, Id, rank_a, rank_d)
                            several |= 1 << b
                            lists[b, count[b]] = g
                            count[b] += 1
                        continue
                    cen = g
                # a two-leaf star: centre ``cen`` of side ``k``, its leaves in index order
                e1, e2 = (base + _low(c)) & 63, (base + _low(rest)) & 63
                played |= (np.int64(1) << cen) | (np.int64(1) << e1) | (np.int64(1) << e2)
                Wc, Wl = W[k], W[1 - k]
                cc, c1, c2 = code[cen], code[e1], code[e2]
                if (cc > Wc) & (c1 > Wl) & (c2 > Wl):
                    continue                           # nobody is standing: nothing happens
                if k == 0:
                    kc = _key(flags[cen], ph, base_a, refl_a, Ia)
                    k1 = _key(flags[e1], ph, base_d, refl_d, Id)
                    k2 = _key(flags[e2], ph, base_d, refl_d, Id)
                else:
                    kc = _key(flags[cen], ph, base_d, refl_d, Id)
                    k1 = _key(flags[e1], ph, base_a, refl_a, Ia)
                    k2 = _key(flags[e2], ph, base_a, refl_a, Ia)
                sg = ((kc > k1) - (kc < k1) + 1) * 9 + ((kc > k2) - (kc < k2) + 1) * 3 + (k1 > k2) - (k1 < k2) + 1
                n_l = Wl + 3
                row = t_offset[2 * kind + k] + ((cc * n_l + c1) * n_l + c2) * 13 + pattern[sg]
                v = np.int64(u[pos])
                pos += 1
                slot = ((row << t_bits) | (v >> t_shift)) & _MASK
                o = t_pick[2 * slot + (v >= t_threshold[slot])]
                cc, c1, c2 = o >> 8, (o >> 4) & 15, o & 15
                code[cen], code[e1], code[e2] = cc, c1, c2
                # who is out loses every contact, and the centre its contact with an out leaf; as
                # masks (all ones: still in), without a branch on the draw
                mc = -np.int64(cc != Wc + 3)
                m1 = -np.int64(c1 != Wl + 3)
                m2 = -np.int64(c2 != Wl + 3)
                contacts[cen] &= mc & ~((~m1 & 1) << (e1 - base)) & ~((~m2 & 1) << (e2 - base))
                contacts[e1] &= mc & m1
                contacts[e2] &= mc & m2
                # the out of action leave the mask (mc, m1, m2: 0 out, -1 in)
                alive &= ~(((mc + 1) << cen) | ((m1 + 1) << e1) | ((m2 + 1) << e2))
            if complex_seen:
                # the other strikers: each bucket shuffled (Fisher-Yates, j uniform in 0..x), in order
                for b in range(6):
                    size_b = count[b]
                    # a bucket of strikers with one enemy each needs no roll-off: two of them in one
                    # component strike the same enemy from the same side, alike whoever goes first (a
                    # batch's outcome depends on its target alone), and components do not interact
                    for x in range(size_b - 1 if (several >> b) & 1 else 0, 0, -1):
                        j = (np.int64(u[pos]) * (x + 1)) >> 32
                        pos += 1
                        lists[b, x], lists[b, j] = lists[b, j], lists[b, x]
                    for x in range(size_b):
                        s = lists[b, x] & 63
                        if code[s] > side_w[s]:
                            continue                        # knocked down or worse earlier this phase
                        k = 0 if s < na else 1
                        base = na if k == 0 else 0
                        Wt = W[1 - k]
                        cont = contacts[s]
                        # the target: a standing enemy (lowest index), else a stunned one, then a
                        # knocked-down one, but not one this striker put down in this phase
                        t = -1
                        c = cont
                        while c:
                            e = (base + _low(c)) & 63
                            if code[e] <= Wt:
                                t = e
                                break
                            c &= c - 1
                        if t < 0:
                            mine = 64 * ph + s
                            for want in (Wt + 2, Wt + 1):
                                c = cont
                                while c:
                                    e = (base + _low(c)) & 63
                                    if code[e] == want and put_down[e] != mine:
                                        t = e
                                        break
                                    c &= c - 1
                                if t >= 0:
                                    break
                        if t < 0:
                            continue
                        ct = code[t]
                        if ct == Wt + 2:
                            nc = Wt + 3                      # stunned: out of action, no dice
                        else:
                            up = ct <= Wt
                            row = s_offset[2 * kind + k] + ct + (Wt + 1) * ((up and taken[t] != ph) or ct == Wt + 1)
                            v = np.int64(u[pos])
                            pos += 1
                            slot = ((row << s_bits) | (v >> s_shift)) & _MASK
                            o = s_pick[2 * slot + (v >= s_threshold[slot])]
                            nc = o >> 1
                            if o & 1:
                                taken[t] = ph
                            if up and (nc == Wt + 1 or nc == Wt + 2):
                                put_down[t] = 64 * ph + s
                        code[t] = nc
                        if nc == Wt + 3:                     # out of action: its enemies lose the contact
                            alive &= ~(np.int64(1) << t)
                            bit, mine = (t - na, 0) if k == 0 else (t, na)
                            c = contacts[t]
                            while c:
                                contacts[mine + _low(c)] &= ~(1 << bit)
                                c &= c - 1
                            contacts[t] = 0
                for b in range(6):
                    count[b] = 0
        # the fight's outcome
        done = alive & all_a == 0 or alive & all_d == 0
        oa = na - _popcount(alive & all_a)
        od = nd - _popcount(alive & all_d)
        da, dd = 0, 0
        up_a, up_d = False, False
        for g in range(na):
            c = code[g]
            da += Wa0 - (c if c <= Wa0 else 0)
            up_a |= c <= Wa0
        for g in range(na, nw):
            c = code[g]
            dd += Wd0 - (c if c <= Wd0 else 0)
            up_d |= c <= Wd0
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
def _join_into(g, na, code, contacts, side_w, live):
    """Warrior ``g`` moves into contact with the enemy not out of action that has the fewest opponents
    in contact (lowest index on ties; ``live``: the bitmask of its enemies not out of action at the
    start of the round, by warrior number); returns that enemy, or -1 if there is none. (Rare: a
    call with arrays is fine here.)"""
    e_lo = na if g < na else 0
    out = side_w[e_lo] + 3
    best, best_n = -1, 1 << 30
    m = live
    while m:
        e = _low(m)
        m &= m - 1
        if code[e] != out:
            ne = _popcount(contacts[e])
            if ne < best_n:
                best, best_n = e, ne
    if best >= 0:
        contacts[g] |= 1 << (best - e_lo)
        contacts[best] |= 1 << (g if g < na else g - na)
    return best
