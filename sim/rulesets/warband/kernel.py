"""``warband`` vectorised kernel: many fights at once, state arrays of shape (trials, warriors).

Warriors 0..na-1 are the attackers, na..na+nd-1 the defenders. Python loops run
over rounds, strike-order positions, striker sides and (for groups) warriors;
every operation inside is on arrays of the fights still going (finished fights
are recorded and compacted away each round). Per-side blow tables (to-hit,
to-wound, saves, parryability per attack column) are precomputed in
:func:`.plan.build_plan`. Dice are drawn as whole (fights, attacks) arrays; the
scalar reference rolls the same dice one at a time, so the two agree in
distribution (tested), not die for die.

The optional small-group rules (``all_alone``, ``rout``) only ever apply to
groups (a lone warrior never tests either), draw no random numbers when off,
and are vectorised like the rest: :func:`_rout` before a round, :func:`_all_alone`
at the end of the active side's phase (one inverse-CDF draw per automatic hit
from :func:`.single.auto_hit_cdf`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...outcomes import ATTACKER, DEFENDER, DRAW, Outcomes
from ...ruleset import END, Rounds
from .plan import KernelPlan, SideInfo
from .single import SingleTable
from .tables import (
    EXPOSED_SPOT, KNOCKED_DOWN, MASTER_STRIKE, OUT_OF_ACTION, STANDING, STUNNED, critical_result, injury_result,
)

__all__ = ["simulate", "final_outcomes"]

#: Critical table by modified roll 0..7 (index = roll); injury table by total 0..9 and concussion.
_CRIT = np.array([0] + [critical_result(r) for r in range(1, 8)], np.int8)
_INJURY = np.array([[injury_result(max(t, 1), c) for t in range(0, 10)] for c in (False, True)], np.int8)


class _State:
    """Working arrays of the fights still going (compacted every round)."""

    def __init__(self, kp: KernelPlan, n: int) -> None:
        na, nd = kp.sides[0].count, kp.sides[1].count
        self.na, self.nd, self.nw = na, nd, na + nd
        self.ids = np.arange(n)
        self.wounds = np.empty((n, na + nd), np.int8)
        self.wounds[:, :na] = kp.sides[0].w
        self.wounds[:, na:] = kp.sides[1].w
        self.status = np.zeros((n, na + nd), np.int8)
        self.put_by: NDArray[np.int8] | None = None
        self.hits_taken = np.zeros((n, na + nd), bool)
        self.groups = na > 1 or nd > 1
        if self.groups:
            c = np.zeros((na, nd), bool)
            if na >= nd:
                c[np.arange(na), np.arange(na) % nd] = True
            else:
                c[np.arange(nd) % na, np.arange(nd)] = True
            self.contacts = np.broadcast_to(c, (n, na, nd)).copy()

    def keep(self, rows: NDArray[np.bool_]) -> None:
        """Drop finished fights (per-round arrays are rebuilt every round and need no compaction)."""
        for name in ("ids", "wounds", "status") + (("contacts",) if self.groups else ()):
            setattr(self, name, getattr(self, name)[rows])


def simulate(kp: KernelPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """``n`` fights; see the module docstring."""
    limit = max_rounds if rounds == END else int(rounds)
    st = _State(kp, n)
    na, nd, nw = st.na, st.nd, st.nw
    # Final state of each fight, filled in as fights finish (outcomes are computed once at the end).
    fin_status = np.empty((n, nw), np.int8)
    fin_wounds = np.empty((n, nw), np.int8)
    fin_rounds = np.empty(n, np.int64)
    fin_done = np.empty(n, bool)
    fin_rout = np.zeros(n, np.int8) if kp.rout else None     # winner of a routed fight, 0 if none
    r = 0
    while st.ids.size and r < limit:
        r += 1
        if fin_rout is not None and r >= 2 and st.groups:
            routed = _rout(kp, st, r, rng)
            f = np.flatnonzero(routed)
            if f.size:
                ids = st.ids[f]
                fin_status[ids], fin_wounds[ids], fin_rounds[ids], fin_done[ids] = st.status[f], st.wounds[f], r, True
                fin_rout[ids] = DEFENDER if r % 2 == 1 else ATTACKER
                st.keep(~routed)
                if not st.ids.size:
                    break
        _play_round(kp, st, r, rng)
        ooa = st.status == OUT_OF_ACTION
        if nw == 2:
            done = ooa[:, 0] | ooa[:, 1]
        else:
            done = ooa[:, :na].all(1) | ooa[:, na:].all(1)
        finish = np.ones(st.ids.size, bool) if r == limit else done
        f = np.flatnonzero(finish)
        if f.size:
            ids = st.ids[f]
            fin_status[ids] = st.status[f]
            fin_wounds[ids] = st.wounds[f]
            fin_rounds[ids] = r
            fin_done[ids] = done[f]
            if f.size < st.ids.size:
                st.keep(~finish)
            else:
                st.ids = st.ids[:0]
    return final_outcomes(kp, fin_status, fin_wounds, fin_rounds, fin_done, rounds, fin_rout)


def final_outcomes(kp: KernelPlan, fin_status: NDArray, fin_wounds: NDArray, fin_rounds: NDArray, fin_done: NDArray,
                   rounds: Rounds, fin_rout: NDArray | None = None, weights: NDArray | None = None) -> Outcomes:
    """Outcomes of fights ending with these warriors' statuses and wounds (shape (fights, warriors)).

    ``fin_done``: a side is all out of action (else the fight reached its round
    limit); ``fin_rout``: the winner of a routed fight, 0 if none.
    """
    na, nd = kp.sides[0].count, kp.sides[1].count
    nw = na + nd
    ooa = fin_status == OUT_OF_ACTION
    oa, od = ooa[:, :na].sum(1), ooa[:, na:].sum(1)
    full_w = np.array([kp.sides[0].w] * na + [kp.sides[1].w] * nd, np.int64)
    dmg = full_w - fin_wounds
    da, dd = dmg[:, :na].sum(1), dmg[:, na:].sum(1)
    capped = ~fin_done & (rounds == END)
    # all out of action; else fewer out of action; else fewer wounds lost; else a draw (capped: draw)
    w = np.where(od == nd, ATTACKER, np.where(oa == na, DEFENDER, np.where(
        oa < od, ATTACKER, np.where(oa > od, DEFENDER, np.where(
            da < dd, ATTACKER, np.where(da > dd, DEFENDER, DRAW)))))).astype(np.int8)
    w[capped] = DRAW
    if fin_rout is not None:
        w = np.where(fin_rout > 0, fin_rout, w).astype(np.int8)
    cats = []
    for sl in (slice(0, na), slice(na, nw)):
        s = fin_status[:, sl]
        cats.append(np.where(ooa[:, sl].all(1), 0, np.where((s == STANDING).any(1), 2, 1)).astype(np.int8))
    return Outcomes(w, da, dd, cats[0], cats[1], np.asarray(fin_rounds, np.int64), capped,
                    {"out_of_action_attacker": oa.astype(np.int64), "out_of_action_defender": od.astype(np.int64)},
                    weights=weights)

def _rejoin(st: _State) -> None:
    """Free warriors (every contact out of action) join the live enemy with the fewest live opponents.

    Only fights with a free warrior are touched; within them warriors are placed one at a
    time (attackers by index, then defenders), as the reference does.
    """
    na, nd = st.na, st.nd
    live = st.status != OUT_OF_ACTION
    la, ld = live[:, :na], live[:, na:]
    c = st.contacts
    free_a = la & ~(c & ld[:, None, :]).any(2)
    free_d = ld & ~(c & la[:, :, None]).any(1)
    rows = np.flatnonzero(free_a.any(1) | free_d.any(1))
    if rows.size == 0:
        return
    c, la, ld = c[rows], la[rows], ld[rows]
    for i in range(na):
        free = la[:, i] & ~(c[:, i, :] & ld).any(1)
        if free.any():
            sub = np.flatnonzero(free)
            load = (c[sub] & la[sub, :, None]).sum(1) + np.where(ld[sub], 0, 100)
            c[sub, i, np.argmin(load, 1)] = True
    for j in range(nd):
        free = ld[:, j] & ~(c[:, :, j] & la).any(1)
        if free.any():
            sub = np.flatnonzero(free)
            load = (c[sub] & ld[sub, None, :]).sum(2) + np.where(la[sub], 0, 100)
            c[sub, np.argmin(load, 1), j] = True
    st.contacts[rows] = c


def _play_round(kp: KernelPlan, st: _State, r: int, rng: np.random.Generator) -> None:
    na, nw, m = st.na, st.nw, st.ids.size
    status = st.status
    if st.groups:
        _rejoin(st)
    # Recovery of the active side: knocked down -> standing (strikes last), stunned -> knocked down.
    act = slice(0, na) if r % 2 == 1 else slice(na, nw)
    sa = status[:, act]
    stood_act = sa == KNOCKED_DOWN
    status[:, act] = np.where(stood_act, STANDING, np.where(sa == STUNNED, KNOCKED_DOWN, sa))
    st.put_by = np.full((m, nw), -1, np.int8) if st.groups else None
    st.hits_taken = np.zeros((m, nw), bool)
    first = r == 1
    # Strike order: class, then Initiative, then a random roll-off (uniform keys).
    cls = [kp.sides[0].class_round1 if first else kp.sides[0].class_later,
           kp.sides[1].class_round1 if first else kp.sides[1].class_later]
    if not st.groups:
        _order_pair(kp, st, stood_act[:, 0], cls, r, first, rng)
        return
    stood = np.zeros((m, nw), bool)
    stood[:, act] = stood_act
    ini = np.array([kp.sides[0].i] * na + [kp.sides[1].i] * st.nd, np.float64)
    key = np.where(stood, 2.0, np.array([cls[0]] * na + [cls[1]] * st.nd, np.float64)) * 64.0 + (20.0 - ini)
    key += rng.random((m, nw))
    # Strikers: standing warriors touching a live enemy. After _rejoin every live warrior of a
    # fight still going touches one, so standing is enough.
    key[status != STANDING] = 1e9
    order = np.argsort(key, axis=1)
    ar = np.arange(m)
    n_strikers = int((key < 1e9).sum(1).max()) if m else 0     # positions beyond hold no striker anywhere
    for p in range(n_strikers):
        s = order[:, p]
        ok = (st.status[ar, s] == STANDING) & (key[ar, s] < 1e9)
        for side in (0, 1):
            sel = ok & ((s < na) if side == 0 else (s >= na))
            rows = np.flatnonzero(sel)
            if rows.size == 0:
                continue
            striker = s[rows]
            target = _targets(st, rows, striker, side)
            if target is None:
                continue
            rows, striker, target = target
            _batch(kp, st, rows, striker, target, side, first, rng)
    if kp.all_alone:
        _all_alone(kp, st, 0 if r % 2 == 1 else 1, first, rng)


def _rout(kp: KernelPlan, st: _State, r: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Rout test of the active side at the start of round ``r``: which fights rout.

    Tested where 4 x (warriors out of action) >= the side's count; 2D6 above its Ld routs.
    """
    side = 0 if r % 2 == 1 else 1
    cols = slice(0, st.na) if side == 0 else slice(st.na, st.nw)
    count = kp.sides[side].count
    out = np.zeros(st.ids.size, bool)
    rows = np.flatnonzero(4 * (st.status[:, cols] == OUT_OF_ACTION).sum(1) >= count)
    if rows.size:
        out[rows] = rng.integers(1, 7, size=(rows.size, 2)).sum(1) > kp.ld[side]
    return out


def _all_alone(kp: KernelPlan, st: _State, side: int, first: bool, rng: np.random.Generator) -> None:
    """All Alone at the end of the phase for the active ``side``: its only standing warrior, touching
    two or more standing enemies, tests 2D6 against Ld; on a fail each such enemy lands one automatic
    hit (wounds only: it flees whatever the injury) and it leaves the fight as out of action."""
    na = st.na
    own = slice(0, na) if side == 0 else slice(na, st.nw)
    foe = slice(na, st.nw) if side == 0 else slice(0, na)
    up = st.status[:, own] == STANDING
    rows = np.flatnonzero(up.sum(1) == 1)
    if rows.size == 0:
        return
    tester = up[rows].argmax(1)
    contact = st.contacts[rows, tester, :] if side == 0 else st.contacts[rows, :, tester]
    nfoes = (contact & (st.status[rows, foe] == STANDING)).sum(1)
    t = np.flatnonzero(nfoes >= 2)
    if t.size == 0:
        return
    rows, tester, nfoes = rows[t], tester[t], nfoes[t]
    fail = rng.integers(1, 7, size=(rows.size, 2)).sum(1) > kp.ld[side]
    rows, tester, nfoes = rows[fail], tester[fail], nfoes[fail]
    if rows.size == 0:
        return
    cdf = kp.auto_hit[1 - side][1 if first else 0]
    u = rng.random((rows.size, int(nfoes.max())))
    wounds = (u >= cdf[0]).astype(np.int16) + (u >= cdf[1])
    wounds[np.arange(u.shape[1]) >= nfoes[:, None]] = 0
    col = tester + (0 if side == 0 else na)
    st.wounds[rows, col] = np.maximum(st.wounds[rows, col] - wounds.sum(1), 0)
    st.status[rows, col] = OUT_OF_ACTION


def _order_pair(kp: KernelPlan, st: _State, stood_act, cls, r: int, first: bool, rng: np.random.Generator) -> None:
    """One against one: who strikes first (a comparison instead of a sort), then both batches."""
    status = st.status
    active = 0 if r % 2 == 1 else 1
    # int64 keys: class * 64 must not wrap around
    ca = np.where(stood_act, 2, cls[active]).astype(np.int64) if stood_act.any() else np.full(
        stood_act.size, cls[active], np.int64)
    co = cls[1 - active]
    ka, ko = ca * 64 - kp.sides[active].i, co * 64 - kp.sides[1 - active].i
    tie = ka == ko
    active_first = ka < ko
    if tie.any():
        active_first = active_first | (tie & (rng.random(ka.size) < 0.5))
    standing = status == STANDING
    for p in range(2):
        for side in (0, 1):
            goes = active_first if (side == active) == (p == 0) else ~active_first
            rows = np.flatnonzero(goes & (status[:, side] == STANDING) if p else goes & standing[:, side])
            if rows.size:
                _batch(kp, st, rows, side, 1 - side, side, first, rng)


def _targets(st: _State, rows, striker, side):
    """Standing enemies first; else stunned, else knocked-down ones not put down by this striker."""
    na = st.na
    if not st.groups:
        return rows, striker, np.full(rows.size, na if side == 0 else 0)
    if side == 0:
        contact = st.contacts[rows, striker, :]
        es, pb, off = st.status[rows, na:], st.put_by[rows, na:], na
    else:
        contact = st.contacts[rows, :, striker - na]
        es, pb, off = st.status[rows, :na], st.put_by[rows, :na], 0
    # priority 3 standing, 2 stunned, 1 knocked down (0 if this striker put it down, out of action
    # or not in contact); argmax takes the lowest index among the best
    prio = np.array([3, 1, 2, 0], np.int8)[es]
    prio[(pb == striker[:, None]) & (es != STANDING)] = 0
    prio *= contact
    best = prio.argmax(1)
    has = prio[np.arange(rows.size), best] > 0
    return rows[has], striker[has], best[has] + off


def _batch(kp: KernelPlan, st: _State, rows, striker, target, side: int, first: bool, rng: np.random.Generator) -> None:
    """One striker's attacks on one target, for many fights at once."""
    b = kp.blows[side][1 if first else 0]
    tinfo = kp.sides[1 - side]
    ts = st.status[rows, target]
    scalar = np.ndim(target) == 0          # one against one: the same striker and target in every fight
    stunned = ts == STUNNED
    if stunned.any():
        st.status[rows[stunned], target if scalar else target[stunned]] = OUT_OF_ACTION
        keep = ~stunned
        rows, ts = rows[keep], ts[keep]
        if not scalar:
            striker, target = striker[keep], target[keep]
    m = rows.size
    if m == 0:
        return
    if b.single is not None:
        _single(b.single, tinfo, b.parryable[0], st, rows, striker, target, ts, rng)
        return
    if scalar:
        striker, target = np.full(m, striker), np.full(m, target)
    A = b.n
    kd = ts == KNOCKED_DOWN
    H = rng.integers(1, 7, size=(m, A), dtype=np.int8)
    hits = (H >= b.need_hit) | kd[:, None]
    if b.parryable.any():
        may = ~kd & ~st.hits_taken[rows, target]
        ph = np.where(hits & b.parryable, H, 0)
        best = ph.max(1)
        tri = may & (best > 0) & (best < 6)
        if tri.any():
            pd = rng.integers(1, 7, size=m, dtype=np.int8)
            ok = pd > best
            if tinfo.parry_reroll:
                ok |= rng.integers(1, 7, size=m, dtype=np.int8) > best
            win = np.flatnonzero(tri & ok)
            col = (ph[win] == best[win, None]).argmax(1)
            hits[win, col] = False
        anyhit = ~kd & (H >= b.need_hit).any(1)
        st.hits_taken[rows[anyhit], target[anyhit]] = True
    Wd = rng.integers(1, 7, size=(m, A), dtype=np.int8)
    wounded = hits & (Wd >= b.need_wound)
    if not wounded.any():
        return
    cand = wounded & (Wd == 6) & b.crit_ok
    crow = np.flatnonzero(cand.any(1))
    ccol = cand[crow].argmax(1)
    crit = np.zeros((m, A), np.int8)
    if crow.size:
        crit[crow, ccol] = _CRIT[rng.integers(1, 7, size=crow.size) + b.crit_mod]
    Sd = rng.integers(1, 7, size=(m, A), dtype=np.int8)
    saved = (Sd >= b.save) & (crit != EXPOSED_SPOT) & (crit != MASTER_STRIKE)
    if tinfo.step_aside:
        saved |= rng.integers(1, 7, size=(m, A), dtype=np.int8) >= 5
    unsaved = wounded & ~saved
    nwounds = unsaved.astype(np.int8) * np.where(crit > 0, 2, 1).astype(np.int8)
    total = nwounds.sum(1)
    hurt = total > 0
    # Knocked-down target: any unsaved wound puts it out of action.
    kdh = kd & hurt
    if kdh.any():
        st.status[rows[kdh], target[kdh]] = OUT_OF_ACTION
    sh = np.flatnonzero(~kd & hurt)
    if sh.size == 0:
        return
    rows, striker, target = rows[sh], striker[sh], target[sh]
    nwounds, crit, total = nwounds[sh], crit[sh], total[sh]
    w0 = st.wounds[rows, target].astype(np.int16)
    st.wounds[rows, target] = np.maximum(w0 - total, 0)
    # Injury rolls: wound number k (1-based, in attack order) rolls if k >= max(w0, 1); keep the highest.
    need = np.maximum(w0, 1)
    injured = total >= need
    if not injured.any():
        return
    ir = np.flatnonzero(injured)
    rows, striker, target = rows[ir], striker[ir], target[ir]
    nwounds, crit, need = nwounds[ir], crit[ir], need[ir]
    before = np.cumsum(nwounds, 1) - nwounds
    k = before[:, :, None] + np.array([1, 2])                   # wound numbers of each column's two slots
    exists = np.array([0, 1]) < nwounds[:, :, None]
    rolls_it = exists & (k >= need[:, None, None])
    mod = b.injury_mod + 2 * (crit == MASTER_STRIKE)
    tot = rng.integers(1, 7, size=rolls_it.shape, dtype=np.int8) + mod[:, :, None]
    res = _INJURY[b.concussion.astype(np.intp)[None, :, None], np.minimum(tot, 9)]
    worst = np.where(rolls_it, res, -1).max(axis=(1, 2))
    if tinfo.helmet:
        sv = (worst == STUNNED) & (rng.integers(1, 7, size=worst.size) >= 4)
        worst = np.where(sv, KNOCKED_DOWN, worst)
        jump = (worst == KNOCKED_DOWN) & ~sv
    else:
        jump = worst == KNOCKED_DOWN
    if tinfo.jump_up:
        worst = np.where(jump, STANDING, worst)
    st.status[rows, target] = worst
    if st.put_by is not None:
        down = (worst == KNOCKED_DOWN) | (worst == STUNNED)
        st.put_by[rows[down], target[down]] = striker[down]


def _single(tb: SingleTable, tinfo: SideInfo, parryable: bool, st: _State, rows, striker, target, ts,
            rng: np.random.Generator) -> None:
    """A one-attack batch: one uniform per fight through the precomputed outcome table."""
    kd = ts == KNOCKED_DOWN
    parry = parryable and tinfo.can_parry
    flat = rows * st.nw + target                       # 1-D indices are cheaper than (rows, target) pairs
    wounds, status = st.wounds.reshape(-1), st.status.reshape(-1)
    row = wounds[flat].astype(np.intp)
    if parry:
        row += (tinfo.w + 1) * ~st.hits_taken.reshape(-1)[flat]
    row[kd] = tb.kd_row
    pick = tb.sample(row, rng.random(rows.size))
    ns = tb.new_status[pick]
    wounds[flat] = tb.new_w[pick]
    status[flat] = ns
    if parry:
        h = tb.hit[pick]
        st.hits_taken.reshape(-1)[flat[h]] = True
    if st.put_by is not None:
        down = ~kd & ((ns == KNOCKED_DOWN) | (ns == STUNNED))
        st.put_by.reshape(-1)[flat[down]] = striker[down]
