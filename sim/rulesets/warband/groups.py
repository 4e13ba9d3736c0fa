"""``warband`` group kernel: both sides with two or more warriors, re-engaging by a charge in one's own turn.

This is the kernel of ``reengage = "own_turn_charge"`` when re-engaging can
happen at all (a lone warrior touches every enemy from round 1, so 1 v n fights
stay on the 1 v 1 kernel of :mod:`.kernel`, which plays them identically).

Layout: warriors are rows (attackers, then defenders, then one spare row that
absorbs writes with nothing to write) and fights are columns: ``code`` (the
state code of :mod:`.strikes`), ``contacts`` (bitmask of the enemies in base
contact, by their index in their side; int32, symmetric, and cleared of
warriors out of action) and ``degree`` (the number of such contacts). So
anything "over the warriors of a fight" is an elementwise operation over
contiguous fights, the rest works on lists of (warrior, fight) entries, and no
Python loop runs per fight.

Contacts form a forest: the round-robin pairing is a set of stars, and a
re-engaging warrior has no live contact when it charges. Within one phase the
contacts do not change, so fights split into components that do not interact,
and only the order of the strikers *within* a component matters (a roll-off
among ties is a uniform random order, and its restriction to any subset is
uniform too). So a phase is played as:

* **isolated pairs** (two warriors touching only each other) and **stars** (a
  centre whose enemies in contact touch only it), found with one bitmask test
  per side (:func:`_fuse`): when both sides' batches are tabulated (up to
  :data:`.batches.MAX_TABLE_ATTACKS` attacks), a pair's or a two-leaf star's
  whole phase is one draw (:class:`.strikes.PairTable`,
  :class:`.stars.StarTable`); bigger stars, and every pair and star of
  profiles with bigger batches, are played centre first
  (:func:`.phases.hub_phase`): the leaves before the centre in strike order,
  the centre on its target, the other leaves, blow by blow but with no choice
  to make;
* **everything else** (trees with two or more warriors touching several
  enemies): in waves, the k-th wave taking every fight's k-th such striker in
  strike order (class, Initiative, then a uniform roll-off key), each choosing
  its target from bitmasks (standing enemies first, lowest index; else
  stunned, then knocked-down ones) and striking through
  :class:`.strikes.StrikeTable`.

Sparse steps run in slices of :data:`.phases.CHUNK` entries (their temporaries
then come from the heap instead of fresh memory maps), and ended fights are
dropped once a quarter of the columns have ended.

The dice are not the reference's die for die: the kernel agrees with it in
distribution (tested), and with exact Markov chains.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...outcomes import ATTACKER, DEFENDER, DRAW, Outcomes
from ...ruleset import END, Rounds
from .phases import _bits, _chunks, _low, hub_phase, pair_rows, pairs, stars

__all__ = ["simulate_groups"]


class _Fights:
    """Working arrays of the fights still going (rows: warriors and a spare row, columns: fights)."""

    def __init__(self, kp, n: int) -> None:
        a, d = kp.sides
        self.na, self.nd = na, nd = a.count, d.count
        self.nw = nw = na + nd
        self.W = (a.w, d.w)
        self.rows = (slice(0, na), slice(na, nw))
        self.offset = (0, na)                      # first row of each side
        self.w_row = np.array([a.w] * na + [d.w] * nd + [0], np.int16)
        self.w_col = self.w_row[:nw, None].astype(np.int8)
        self.i_row = np.array([a.i] * na + [d.i] * nd + [0], np.int16)
        self.code = np.empty((nw + 1, n), np.int8)
        self.code[:na], self.code[na:nw], self.code[nw] = a.w, d.w, 0
        self.contacts = np.zeros((nw + 1, n), np.int32)
        self.degree = np.zeros((nw + 1, n), np.int8)
        self.scratch = np.empty((nw, n), np.int32)        # a work array (its columns are not kept)
        if na >= nd:
            pairs = [(i, i % nd) for i in range(na)]
        else:
            pairs = [(j % na, j) for j in range(nd)]
        for i, j in pairs:
            self.contacts[i] |= np.int32(1 << j)
            self.contacts[na + j] |= np.int32(1 << i)
            self.degree[i] += 1
            self.degree[na + j] += 1
        self.fled = np.zeros((2, n), np.int16) if kp.all_alone else None   # wounds left of fled warriors
        self.ids = np.arange(n)
        #: target choice (:func:`_choose`): every enemy's index, and 64 x its rank by code (standing 0,
        #: stunned 1, knocked down 2) at ``code + 16 * side``
        self.j_foe = np.arange(max(na, nd))[:, None]
        self.target_rank = np.full(32, 192, np.int16)
        for k, W in enumerate(self.W):
            self.target_rank[16 * k:16 * k + W + 1] = 0
            self.target_rank[16 * k + W + 1], self.target_rank[16 * k + W + 2] = 128, 64
        #: pair-table rows by state bytes, by round kind (see :func:`.phases.pair_rows`)
        self.pair_rows = None if kp.groups.pair is None else (pair_rows(kp, 0), pair_rows(kp, 1))

    @property
    def m(self) -> int:
        return self.ids.size

    def live(self, k: int) -> NDArray[np.bool_]:
        """Fights where side ``k`` has a warrior not out of action."""
        return (self.code[self.rows[k]] < self.W[k] + 3).any(0)

    def keep(self, rows: NDArray[np.bool_]) -> None:
        # np.take keeps rows C-contiguous (x[:, cols] would not), so reshape(-1) stays a view
        cols = np.flatnonzero(rows)
        self.code, self.contacts, self.degree = (np.take(x, cols, 1) for x in (self.code, self.contacts, self.degree))
        if self.fled is not None:
            self.fled = np.take(self.fled, cols, 1)
        self.ids = self.ids[cols]
        self.scratch = self.scratch[:, :cols.size]

    def remove(self, t: NDArray[np.intp], f: NDArray[np.intp]) -> None:
        """Warriors ``t`` (rows) of fights ``f`` (one per fight) went out of action: drop their contacts."""
        m = self.m
        cont, deg = self.contacts.reshape(-1), self.degree.reshape(-1)
        it = t * m + f
        rem = cont[it]
        cont[it], deg[it] = 0, 0
        enemy = t < self.na                                 # its contacts are on the other side
        bit = ~np.left_shift(1, t - self.na * ~enemy).astype(np.int32)
        base = self.na * enemy * m + f                      # flat index of the first enemy of its fight
        nz = np.flatnonzero(rem)
        while nz.size:
            rn = rem[nz]
            iu = base[nz] + _low(rn) * m
            cont[iu] &= bit[nz]
            deg[iu] -= 1
            rem[nz] = rn & (rn - 1)
            nz = nz[rem[nz] != 0]


def simulate_groups(kp, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """``n`` group fights of the prepared plan ``kp`` (a :class:`.plan.KernelPlan` with ``groups`` tables)."""
    limit = max_rounds if rounds == END else int(rounds)
    st = _Fights(kp, n)
    fin_code = np.empty((st.nw, n), np.int8)
    fin_fled = np.zeros((2, n), np.int16)
    fin_rounds, fin_done = np.empty(n, np.int64), np.empty(n, bool)
    fin_rout = np.zeros(n, np.int8) if kp.rout else None

    def record(rows, done) -> None:
        f = st.ids[rows]
        fin_code[:, f] = st.code[:st.nw, rows]
        if st.fled is not None:
            fin_fled[:, f] = st.fled[:, rows]
        fin_rounds[f], fin_done[f] = r, done

    # Fights that ended stay in the arrays (recorded, and inert: nobody touches a live enemy)
    # until a quarter of the columns are such, then they are dropped together.
    recorded = np.zeros(n, bool)
    left, r = n, 0
    while left and r < limit:
        r += 1
        if kp.rout and r >= 2:
            routed = _rout(kp, st, r, rng) & ~recorded
            if routed.any():
                record(routed, True)
                fin_rout[st.ids[routed]] = DEFENDER if r % 2 == 1 else ATTACKER
                left -= int(routed.sum())
                st.keep(~(routed | recorded))
                recorded = np.zeros(st.m, bool)
                if not left:
                    break
        _play_round(kp, st, r, rng)
        done = ~st.live(0) | ~st.live(1)
        finish = ~recorded if r == limit else done & ~recorded
        if finish.any():
            record(finish, done[finish])
            recorded |= finish
            left -= int(finish.sum())
            if 4 * (st.m - left) >= st.m:
                st.keep(~recorded)
                recorded = np.zeros(st.m, bool)
    return _outcomes(kp, fin_code, fin_fled, fin_rounds, fin_done, fin_rout, rounds)


def _outcomes(kp, fin_code, fin_fled, fin_rounds, fin_done, fin_rout, rounds) -> Outcomes:
    ooa, dmg, cat = [], [], []
    na = kp.sides[0].count
    for k, info in enumerate(kp.sides):
        c = fin_code[:na] if k == 0 else fin_code[na:]
        W = info.w
        out = c == W + 3
        left = np.where(c <= W, c, 0).sum(0, dtype=np.int64) + fin_fled[k]
        ooa.append(out.sum(0, dtype=np.int64))
        dmg.append(W * info.count - left)
        cat.append(np.where(out.all(0), 0, np.where((c <= W).any(0), 2, 1)).astype(np.int8))
    oa, od = ooa
    da, dd = dmg
    nd = kp.sides[1].count
    capped = ~fin_done & (rounds == END)
    w = np.where(od == nd, ATTACKER, np.where(oa == na, DEFENDER, np.where(
        oa < od, ATTACKER, np.where(oa > od, DEFENDER, np.where(
            da < dd, ATTACKER, np.where(da > dd, DEFENDER, DRAW)))))).astype(np.int8)
    w[capped] = DRAW
    if fin_rout is not None:
        w = np.where(fin_rout > 0, fin_rout, w).astype(np.int8)
    return Outcomes(w, da, dd, cat[0], cat[1], fin_rounds, capped,
                    {"out_of_action_attacker": oa, "out_of_action_defender": od})


# ------------------------------------------------------------------------- a round
def _play_round(kp, st: _Fights, r: int, rng: np.random.Generator) -> None:
    act = 0 if r % 2 == 1 else 1
    first = r == 1
    A, W = st.rows[act], st.W[act]
    # 1. Recovery of the active side: stunned -> knocked down, knocked down -> standing (0 wounds left).
    c = st.code[A]
    stood = c == W + 1
    c -= (c == W + 2).view(np.int8)
    if stood.any():
        c *= ~stood
    else:
        stood = None
    # 2. Re-engaging: the active side's free standing warriors charge.
    charge = _charge(kp, st, act) if not first else None
    # 3. Strike classes, the strikers (standing, touching an enemy), isolated pairs, the rest.
    cls = _classes(kp, st, act, first, stood, charge)
    nw = st.nw
    striker = (st.code[:nw] <= st.w_col) & (st.degree[:nw] > 0)
    fused = _fuse(kp, st, cls, first, rng)
    if fused is not None:
        striker &= ~fused
    _complex(kp, st, striker, cls, first, rng)
    if kp.all_alone:
        _all_alone(kp, st, act, first, rng)


def _charge(kp, st: _Fights, act: int):
    """Standing warriors of the active side with no enemy in contact charge (spec "Re-engaging").

    In index order, each charges the enemy not out of action with the fewest opponents in contact
    (lowest index on ties), counting those placed before it. Returns (charged, was_charged) masks
    of the active and the other side's warriors, or None if nobody charges.

    The fights with a charger are played in waves (the t-th charger of every such fight at once),
    on one key matrix of their enemies (contacts, then index; out of action last) gathered once.
    """
    A, F = st.rows[act], st.rows[1 - act]
    free = (st.code[A] <= st.W[act]) & (st.degree[A] == 0)
    if not free.any():
        return None
    free &= st.live(1 - act)
    cols = np.flatnonzero(free.any(0))
    if not cols.size:
        return None
    m, n_me, n_foe = st.m, A.stop - A.start, F.stop - F.start
    key = np.take(st.degree[F], cols, 1).astype(np.int32) * 64 + np.arange(n_foe, dtype=np.int32)[:, None]
    key += (np.take(st.code[F], cols, 1) == st.W[1 - act] + 3) * np.int32(1 << 20)
    e = np.flatnonzero(np.take(free, cols, 1).T)          # chargers grouped by fight, index ascending
    c, k = e // n_me, e % n_me
    start = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    rank = np.arange(e.size) - np.repeat(start, np.diff(np.r_[start, e.size]))
    was = np.zeros((n_foe, m), bool)
    cont, deg = st.contacts.reshape(-1), st.degree.reshape(-1)
    for t in range(int(rank.max()) + 1):
        w = np.flatnonzero(rank == t) if t else start
        cw, kw = c[w], k[w]
        j = np.take(key, cw, 1).min(0) & 63
        key[j, cw] += 64
        f = cols[cw]
        me = (A.start + kw) * m + f
        cont[me] |= np.left_shift(1, j)
        deg[me] = 1
        foe = (F.start + j) * m + f
        cont[foe] |= np.left_shift(1, kw).astype(np.int32)
        deg[foe] += 1
        was.reshape(-1)[j * m + f] = True
    return free, was


def _classes(kp, st: _Fights, act: int, first: bool, stood, charge) -> NDArray[np.int8]:
    """Strike class of every warrior: 0 strike first, 1 normal, 2 strike last.

    Strike last (a stood-up warrior; a double-handed weapon without Strongman) beats strike first
    (round 1's charge, spear or Lightning Reflexes; a re-engaging charge; Lightning Reflexes against it).
    """
    cls = np.empty((st.nw + 1, st.m), np.int8)
    cls[st.nw] = 1
    for k, info in enumerate(kp.sides):
        cls[st.rows[k]] = info.class_round1 if first else info.class_later
    if first:
        return cls
    A, F = st.rows[act], st.rows[1 - act]
    if charge is not None:
        if kp.sides[act].class_later == 1:
            cls[A] -= charge[0].view(np.int8)
        if kp.sides[1 - act].class_later == 1 and kp.sides[1 - act].lightning_reflexes:
            cls[F] -= charge[1].view(np.int8)
    if stood is not None:
        np.maximum(cls[A], 2 * stood.view(np.int8), out=cls[A])
    return cls


def _fuse(kp, st: _Fights, cls, first: bool, rng: np.random.Generator) -> NDArray[np.bool_] | None:
    """Play the isolated pairs and the stars (a centre whose enemies in contact touch only it); return
    their warriors (the general path skips them).

    A warrior all of whose contacts have one contact is a centre (of a pair if it has one contact
    itself); with the per-fight bitmask of each side's one-contact warriors no index is needed.
    """
    g = kp.groups
    if g.pair is None and not g.hubs:
        return None
    nw, m = st.nw, st.m
    deg = st.degree[:nw]
    one = deg == 1
    if np.less_equal(deg, 1).all():                  # only pairs (every fight, as in round 1): no centres
        pair = fused = one
        centre = np.zeros((nw, m), bool)
    else:
        single = (_bits(one[st.rows[0]]), _bits(one[st.rows[1]]))
        centre = np.empty((nw, m), bool)               # every contact has one contact (and so do I: a pair)
        for k, rows in enumerate(st.rows):
            np.bitwise_and(st.contacts[rows], ~single[1 - k], out=st.scratch[rows])
            np.equal(st.scratch[rows], 0, out=centre[rows])
        pair = one & centre
        centre &= deg >= 2 if g.hubs else deg == 2
        if g.star is None and not g.hubs:
            centre[:] = False
        fused = pair | centre
        for k, rows in enumerate(st.rows):             # the leaves of the centres
            leaf_rows = st.rows[1 - k]
            np.bitwise_and(st.contacts[leaf_rows], _bits(centre[rows]), out=st.scratch[leaf_rows])
            fused[leaf_rows] |= (st.scratch[leaf_rows] != 0) & one[leaf_rows]
    rk = 1 if first else 0
    flat = (st.code.reshape(-1), st.contacts.reshape(-1), st.degree.reshape(-1), cls.reshape(-1))
    pair_e = np.flatnonzero(pair[st.rows[0]])
    if g.pair is not None and pair_e.size:
        state = st.code * np.int8(3) + cls                # state bytes: code and class in one
        for c in _chunks(pair_e):
            pairs(kp, st, c, (*flat[:3], state.reshape(-1)), rk, rng)
    elif pair_e.size:
        for c in _chunks(pair_e):                       # a pair is a star with one leaf
            hub_phase(kp, st, 0, c, *flat, rk, rng)
    for k, rows in enumerate(st.rows):
        e = np.flatnonzero(centre[rows]) + rows.start * m
        if not e.size:
            continue
        if g.star is not None:
            two = deg.reshape(-1)[e] == 2
            for c in _chunks(e[two]):
                stars(kp, st, k, c, flat, rk, rng)
            e = e[~two]
        if e.size:
            for c in _chunks(e):
                hub_phase(kp, st, k, c, *flat, rk, rng)
    return fused


def _complex(kp, st: _Fights, cx, cls, first: bool, rng: np.random.Generator) -> None:
    """Every other striker, in waves of one striker per fight, in strike order within the fight.

    The order key: class, then Initiative, then a uniform 48-bit roll-off, then the warrior's row
    (ties of 48 random bits aside, the order among ties is a uniform permutation).
    """
    fc = np.flatnonzero(cx.any(0))
    if not fc.size:
        return
    nw = st.nw
    flat = np.flatnonzero(np.take(cx, fc, 1).T)           # entries grouped by fight, rows ascending
    f, w = fc[flat // nw], flat % nw
    n = f.size
    key = (((np.take(cls.reshape(-1), w * st.m + f).astype(np.int64) * 32 + (31 - np.take(st.i_row, w))) << 54)
           | (rng.integers(0, 1 << 48, size=n, dtype=np.int64) << 6) | w)
    rank = np.zeros(n, np.int16)                           # place in its fight's order
    same, s = np.flatnonzero(f[1:] == f[:-1]), 1
    while same.size:
        later = key[same] < key[same + s]
        rank[same + s] += later
        rank[same] += ~later
        s += 1
        same = same[same + s < n]
        same = same[f[same + s] == f[same]]
    order = np.argsort(rank, kind="stable")
    hit = np.zeros(st.m, np.int64)                         # targets that took hits this phase (parry gone)
    start = 0
    for size in np.bincount(rank):
        wave = order[start:start + size]
        start += size
        for c in _chunks(wave):
            _wave(kp, st, w[c], f[c], hit, first, rng)


def _wave(kp, st: _Fights, w, f, hit, first: bool, rng: np.random.Generator) -> None:
    """Strikers ``w`` of fights ``f`` (one per fight) choose their target and strike."""
    na, nw, m = st.na, st.nw, st.m
    code = st.code.reshape(-1)
    iw = w * m + f
    cm, dg = st.contacts.reshape(-1)[iw], st.degree.reshape(-1)[iw]
    ok = (code[iw] <= np.take(st.w_row, w)) & (dg > 0)    # still standing, and an enemy still in contact
    side = w >= na
    t = _low(cm)
    many = np.flatnonzero(ok & (dg > 1))
    if many.size:
        t[many] = _choose(st, w[many], f[many], cm[many])
    t = (t + na * ~side) * ok + nw * ~ok                   # the spare row when there is nothing to strike
    it = t * m + f
    old = code[it] * ok                                   # the spare row's code is whatever was last written
    Wt = np.take(st.w_row, t)
    h = np.take(hit, f)
    may = ((h >> t) & 1) == 0
    joint, rk = kp.groups.joint[1 if first else 0], 1 if first else 0
    if joint is not None and min(joint.offset) >= 0:
        new, scored = _joint(joint, old, Wt, may, side, rng)
    else:
        new, scored = np.empty_like(old), np.zeros(old.size, bool)
        for k in (0, 1):
            e = np.flatnonzero(side == bool(k))
            if e.size and joint is not None and joint.offset[k] >= 0:
                new[e], scored[e] = _joint(joint, old[e], Wt[e], may[e], side[e], rng)
            elif e.size:
                new[e], scored[e] = kp.groups.strike[k][rk].strike(old[e], may[e], rng)
    code[it] = new
    hit[f] = h | (scored.astype(np.int64) << t)
    dead = np.flatnonzero(ok & (new == Wt + 3))
    if dead.size:
        st.remove(t[dead], f[dead])


def _joint(joint, old, Wt, may, side, rng: np.random.Generator):
    """One-attack batches on targets with codes ``old`` through the joint table (see :class:`.strikes.CodeTable`)."""
    row = joint.offset[1] * side + old + (Wt + 1) * (may | (old > Wt))
    if joint.offset[0]:
        row += joint.offset[0] * ~side
    pick = joint.table.sample(row, rng)
    return np.take(joint.new_code, pick), np.take(joint.hit, pick)


def _choose(st: _Fights, w, f, cm) -> NDArray[np.intp]:
    """Target (index in its side) of strikers ``w`` touching several enemies: standing enemies first,
    then stunned, then knocked down; lowest index first.

    Both sides' strikers at once: each one's enemies are gathered from its foes' first row (rows
    past the foe side's count, or past the arrays, read the spare row: they are not in contact).
    """
    nw, m = st.nw, st.m
    foe_side = (w < st.na).view(np.int8)                     # a striker's enemies are on the other side
    rows = np.minimum(np.where(foe_side, st.na, 0) + st.j_foe, nw)
    ec = np.take(st.code.reshape(-1), rows * m + f)        # (enemies, strikers)
    # 64 x (standing 0, stunned 1, down 2); "clip": the spare row may hold any byte (never in contact)
    rank = np.take(st.target_rank, ec + foe_side * np.int8(16), mode="clip")
    rank += ((cm >> st.j_foe) & 1 == 0) * np.int16(256) + st.j_foe.astype(np.int16)
    return (rank.min(0) & 63).astype(np.intp)


# ------------------------------------------------------------------ optional small-group rules
def _rout(kp, st: _Fights, r: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Rout test of the active side at the start of round ``r``: which fights rout.

    Tested where 4 x (warriors out of action) >= the side's count; 2D6 above its Ld routs.
    """
    k = 0 if r % 2 == 1 else 1
    rows = st.rows[k]
    out = np.zeros(st.m, bool)
    test = np.flatnonzero(4 * (st.code[rows] == st.W[k] + 3).sum(0) >= rows.stop - rows.start)
    if test.size:
        out[test] = rng.integers(1, 7, size=(test.size, 2)).sum(1) > kp.ld[k]
    return out


def _all_alone(kp, st: _Fights, act: int, first: bool, rng: np.random.Generator) -> None:
    """All Alone at the end of the phase for the active side (as the 1 v 1 kernel's ``_all_alone``)."""
    A, F = st.rows[act], st.rows[1 - act]
    up = _bits(st.code[A] <= st.W[act])
    rows = np.flatnonzero(np.bitwise_count(up) == 1)
    if not rows.size:
        return
    t = _low(up[rows]) + A.start
    nfoes = np.bitwise_count(st.contacts[t, rows] & _bits(st.code[F] <= st.W[1 - act])[rows])
    sel = np.flatnonzero(nfoes >= 2)
    if not sel.size:
        return
    rows, t, nfoes = rows[sel], t[sel], nfoes[sel]
    fail = rng.integers(1, 7, size=(rows.size, 2)).sum(1) > kp.ld[act]
    rows, t, nfoes = rows[fail], t[fail], nfoes[fail]
    if not rows.size:
        return
    cdf = kp.auto_hit[1 - act][1 if first else 0]
    u = rng.random((rows.size, int(nfoes.max())))
    wounds = (u >= cdf[0]).astype(np.int16) + (u >= cdf[1])
    wounds[np.arange(u.shape[1]) >= nfoes[:, None]] = 0
    st.fled[act, rows] += np.maximum(st.code[t, rows] - wounds.sum(1), 0).astype(np.int16)
    st.code[t, rows] = st.W[act] + 3
    st.remove(t, rows)
