"""``warband`` vectorised kernel of mixed sides (army lists): many fights at once, every warrior its own profile.

The layout of the 1 v 1 and group kernel of :mod:`.kernel` (state arrays of shape
(fights, warriors), Python loops over rounds, strike-order positions and warriors,
never over fights), with each warrior's profile an index into its side's profiles
(``prof``, one row per fight: a random line-up differs fight by fight). A batch is
resolved by :func:`.kernel._batch` for each pair of profiles (striker, target) present
at that strike-order position, with that pair's blows (:class:`.mixed.MixedPlan`).

It plays both re-engaging rules (``own_turn_charge``: at the start of its own side's
turn, after Recovery, a standing warrior with no enemy in contact charges the enemy not
out of action with the fewest opponents in contact, lowest index on ties, placed in index
order, and counts as charging; ``every_round``: :func:`.kernel._rejoin`) and both
small-group switches (``all_alone``, ``rout``) as the reference does. The compiled loop
(:mod:`._mixed_loop`) plays the same fights faster where it can; this kernel plays the
rest and is tested against the reference and that loop.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...outcomes import ATTACKER, DEFENDER, DRAW, Outcomes
from ...ruleset import END, Rounds
from .kernel import _batch, _rejoin
from .mixed import MixedPlan
from .tables import KNOCKED_DOWN, OUT_OF_ACTION, STANDING, STUNNED

__all__ = ["simulate_mixed"]


class _State:
    """Working arrays of the fights still going (compacted every round), with each warrior's profile."""

    def __init__(self, mp: MixedPlan, n: int, rng: np.random.Generator) -> None:
        na, nd = mp.counts
        self.na, self.nd, self.nw = na, nd, na + nd
        self.groups = True
        self.ids = np.arange(n)
        prof = np.empty((n, self.nw), np.int64)
        prof[:, :na], prof[:, na:] = mp.prof[0], mp.prof[1]
        for k, (lo, hi) in enumerate(((0, na), (na, self.nw))):
            if mp.shuffled(k):   # a random line-up: each row a uniform permutation of the side's profiles
                order = np.argsort(rng.random((n, hi - lo)), axis=1)
                prof[:, lo:hi] = np.take_along_axis(prof[:, lo:hi], order, axis=1)
        self.prof = prof
        W = [np.array([s.w for s in mp.infos[k]], np.int64) for k in (0, 1)]
        self.full_w = np.concatenate([W[0][prof[:, :na]], W[1][prof[:, na:]]], axis=1)
        self.wounds = self.full_w.astype(np.int8)
        self.status = np.zeros((n, self.nw), np.int8)
        self.hits_taken = np.zeros((n, self.nw), bool)
        self.put_by: NDArray[np.int8] | None = None
        c = np.zeros((na, nd), bool)
        if na >= nd:
            c[np.arange(na), np.arange(na) % nd] = True
        else:
            c[np.arange(nd) % na, np.arange(nd)] = True
        self.contacts = np.broadcast_to(c, (n, na, nd)).copy()

    def keep(self, rows: NDArray[np.bool_]) -> None:
        for name in ("ids", "wounds", "status", "contacts", "prof", "full_w"):
            setattr(self, name, getattr(self, name)[rows])


def simulate_mixed(mp: MixedPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """``n`` fights of the mixed plan ``mp`` (see the module docstring)."""
    limit = max_rounds if rounds == END else int(rounds)
    st = _State(mp, n, rng)
    na, nd, nw = st.na, st.nd, st.nw
    fin_status = np.empty((n, nw), np.int8)
    fin_wounds = np.empty((n, nw), np.int8)
    fin_full = np.empty((n, nw), np.int64)
    fin_rounds = np.empty(n, np.int64)
    fin_done = np.empty(n, bool)
    fin_rout = np.zeros(n, np.int8)

    def finish(f, r, done) -> None:
        ids = st.ids[f]
        fin_status[ids], fin_wounds[ids], fin_full[ids] = st.status[f], st.wounds[f], st.full_w[f]
        fin_rounds[ids], fin_done[ids] = r, done

    r = 0
    while st.ids.size and r < limit:
        r += 1
        if mp.rout and r >= 2:
            routed = _rout(mp, st, r, rng)
            f = np.flatnonzero(routed)
            if f.size:
                finish(f, r, True)
                fin_rout[st.ids[f]] = DEFENDER if r % 2 == 1 else ATTACKER
                st.keep(~routed)
                if not st.ids.size:
                    break
        _play_round(mp, st, r, rng)
        ooa = st.status == OUT_OF_ACTION
        done = ooa[:, :na].all(1) | ooa[:, na:].all(1)
        over = np.ones(st.ids.size, bool) if r == limit else done
        f = np.flatnonzero(over)
        if f.size:
            finish(f, r, done[f])
            st.keep(~over)
    return _outcomes(na, nd, fin_status, fin_wounds, fin_full, fin_rounds, fin_done, rounds, fin_rout)


def _outcomes(na: int, nd: int, status, wounds, full, fin_rounds, fin_done, rounds: Rounds, fin_rout) -> Outcomes:
    """As :func:`.kernel.final_outcomes`, with each warrior's own Wounds."""
    ooa = status == OUT_OF_ACTION
    oa, od = ooa[:, :na].sum(1), ooa[:, na:].sum(1)
    dmg = full - wounds
    da, dd = dmg[:, :na].sum(1), dmg[:, na:].sum(1)
    capped = ~fin_done & (rounds == END)
    w = np.where(od == nd, ATTACKER, np.where(oa == na, DEFENDER, np.where(
        oa < od, ATTACKER, np.where(oa > od, DEFENDER, np.where(
            da < dd, ATTACKER, np.where(da > dd, DEFENDER, DRAW)))))).astype(np.int8)
    w[capped] = DRAW
    w = np.where(fin_rout > 0, fin_rout, w).astype(np.int8)
    cats = []
    for sl in (slice(0, na), slice(na, na + nd)):
        cats.append(np.where(ooa[:, sl].all(1), 0, np.where((status[:, sl] == STANDING).any(1), 2, 1)).astype(np.int8))
    return Outcomes(w, da.astype(np.int64), dd.astype(np.int64), cats[0], cats[1], np.asarray(fin_rounds, np.int64),
                    capped, {"out_of_action_attacker": oa.astype(np.int64), "out_of_action_defender": od.astype(np.int64)})


def _charge(st: _State, active: int, charged: NDArray[np.bool_], was_charged: NDArray[np.bool_]) -> None:
    """Re-engaging by a charge at the start of the ``active`` side's turn (see the module docstring)."""
    na, nd = st.na, st.nd
    live = st.status != OUT_OF_ACTION
    la, ld = live[:, :na], live[:, na:]
    c = st.contacts
    mine = range(na) if active == 0 else range(nd)
    for i in mine:
        if active == 0:
            free = (st.status[:, i] == STANDING) & ~(c[:, i, :] & ld).any(1)
        else:
            free = (st.status[:, na + i] == STANDING) & ~(c[:, :, i] & la).any(1)
        rows = np.flatnonzero(free)
        if rows.size == 0:
            continue
        if active == 0:
            load = (c[rows] & la[rows, :, None]).sum(1) + np.where(ld[rows], 0, 1000)    # per defender
            best = np.argmin(load, 1)
            ok = ld[rows, best]
            rows, best = rows[ok], best[ok]
            c[rows, i, best] = True
            charged[rows, i], was_charged[rows, na + best] = True, True
        else:
            load = (c[rows] & ld[rows, None, :]).sum(2) + np.where(la[rows], 0, 1000)    # per attacker
            best = np.argmin(load, 1)
            ok = la[rows, best]
            rows, best = rows[ok], best[ok]
            c[rows, best, i] = True
            charged[rows, na + i], was_charged[rows, best] = True, True


def _play_round(mp: MixedPlan, st: _State, r: int, rng: np.random.Generator) -> None:
    na, nd, nw, m = st.na, st.nd, st.nw, st.ids.size
    status = st.status
    own_turn = mp.reengage == "own_turn_charge"
    if not own_turn:
        _rejoin(st)
    active = 0 if r % 2 == 1 else 1
    act = slice(0, na) if active == 0 else slice(na, nw)
    sa = status[:, act]
    stood = np.zeros((m, nw), bool)
    stood[:, act] = sa == KNOCKED_DOWN
    status[:, act] = np.where(sa == KNOCKED_DOWN, STANDING, np.where(sa == STUNNED, KNOCKED_DOWN, sa))
    charged = np.zeros((m, nw), bool)
    was_charged = np.zeros((m, nw), bool)
    if own_turn and r > 1:
        _charge(st, active, charged, was_charged)
    st.put_by = np.full((m, nw), -1, np.int8)
    st.hits_taken = np.zeros((m, nw), bool)
    first = r == 1
    # strike classes: per profile (round 1 or later), then stood up (last), charged (first unless last)
    base = np.empty((m, nw), np.int64)
    refl = np.empty((m, nw), bool)
    ini = np.empty((m, nw), np.float64)
    for k, sl in ((0, slice(0, na)), (1, slice(na, nw))):
        infos = mp.infos[k]
        base[:, sl] = np.array([s.class_round1 if first else s.class_later for s in infos])[st.prof[:, sl]]
        refl[:, sl] = np.array([s.lightning_reflexes for s in infos])[st.prof[:, sl]]
        ini[:, sl] = np.array([s.i for s in infos], np.float64)[st.prof[:, sl]]
    cls = np.where(stood, 2, np.where((base == 1) & (charged | (was_charged & refl)), 0, base))
    key = cls * 64.0 + (20.0 - ini) + rng.random((m, nw))
    # strikers: standing warriors touching an enemy not out of action
    live = status != OUT_OF_ACTION
    touch = np.zeros((m, nw), bool)
    touch[:, :na] = (st.contacts & live[:, None, na:]).any(2)
    touch[:, na:] = (st.contacts & live[:, :na, None]).any(1)
    key[(status != STANDING) | ~touch] = 1e9
    order = np.argsort(key, axis=1)
    ar = np.arange(m)
    n_strikers = int((key < 1e9).sum(1).max()) if m else 0
    for p in range(n_strikers):
        s = order[:, p]
        ok = (st.status[ar, s] == STANDING) & (key[ar, s] < 1e9)
        for side in (0, 1):
            rows = np.flatnonzero(ok & ((s < na) if side == 0 else (s >= na)))
            if rows.size == 0:
                continue
            got = _targets(st, rows, s[rows], side)
            if got is None:
                continue
            rows, striker, target = got
            ps, pt = st.prof[rows, striker], st.prof[rows, target]
            pair = (ps * len(mp.profiles[1]) + pt) if side == 0 else (pt * len(mp.profiles[1]) + ps)
            for q in np.unique(pair):
                sel = np.flatnonzero(pair == q)
                i, j = divmod(int(q), len(mp.profiles[1]))
                _batch(mp.pairs[i][j], st, rows[sel], striker[sel], target[sel], side, first, rng)
    if mp.all_alone:
        _all_alone(mp, st, active, first, rng)


def _targets(st: _State, rows, striker, side):
    """Standing enemies first (lowest index); else stunned, else knocked-down ones not put down by this striker."""
    na = st.na
    if side == 0:
        contact = st.contacts[rows, striker, :]
        es, pb, off = st.status[rows, na:], st.put_by[rows, na:], na
    else:
        contact = st.contacts[rows, :, striker - na]
        es, pb, off = st.status[rows, :na], st.put_by[rows, :na], 0
    prio = np.array([3, 1, 2, 0], np.int8)[es]
    prio[(pb == striker[:, None]) & (es != STANDING)] = 0
    prio *= contact
    best = prio.argmax(1)
    has = prio[np.arange(rows.size), best] > 0
    if not has.any():
        return None
    return rows[has], striker[has], best[has] + off


def _rout(mp: MixedPlan, st: _State, r: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Rout test of the active side at the start of round ``r`` (2D6 above the side's highest Ld routs)."""
    side = 0 if r % 2 == 1 else 1
    cols = slice(0, st.na) if side == 0 else slice(st.na, st.nw)
    count = st.na if side == 0 else st.nd
    out = np.zeros(st.ids.size, bool)
    rows = np.flatnonzero(4 * (st.status[:, cols] == OUT_OF_ACTION).sum(1) >= count)
    if rows.size:
        out[rows] = rng.integers(1, 7, size=(rows.size, 2)).sum(1) > int(mp.ld[side].max())
    return out


def _all_alone(mp: MixedPlan, st: _State, side: int, first: bool, rng: np.random.Generator) -> None:
    """All Alone for the active ``side``'s only standing warrior touching two or more standing enemies: 2D6 against
    its Ld; on a fail each such enemy lands one automatic hit (its own profile's first attack column) and it flees."""
    na, nw = st.na, st.nw
    own = slice(0, na) if side == 0 else slice(na, nw)
    foe_lo, n_foe = (na, st.nd) if side == 0 else (0, na)
    up = st.status[:, own] == STANDING
    rows = np.flatnonzero(up.sum(1) == 1)
    if rows.size == 0:
        return
    tester = up[rows].argmax(1)
    contact = st.contacts[rows, tester, :] if side == 0 else st.contacts[rows, :, tester]
    foes = contact & (st.status[rows, foe_lo:foe_lo + n_foe] == STANDING)
    t = np.flatnonzero(foes.sum(1) >= 2)
    if t.size == 0:
        return
    rows, tester, foes = rows[t], tester[t], foes[t]
    col = tester + (0 if side == 0 else na)
    lds = np.array([p.ld or 0 for p in mp.profiles[side]], np.int64)   # (a switch on: every unit has ld)
    fail = rng.integers(1, 7, size=(rows.size, 2)).sum(1) > lds[st.prof[rows, col]]
    rows, col, foes = rows[fail], col[fail], foes[fail]
    if rows.size == 0:
        return
    u = rng.random((rows.size, n_foe))
    wounds = np.zeros(rows.size, np.int64)
    pt = st.prof[rows, col]
    for j in range(n_foe):
        pf = st.prof[rows, foe_lo + j]
        hit = np.zeros(rows.size, np.int64)
        for a in np.unique(pf):
            for b in np.unique(pt):
                sel = (pf == a) & (pt == b)
                i_a, i_d = (int(b), int(a)) if side == 0 else (int(a), int(b))
                cdf = mp.auto_hit[1 - side][i_a][i_d][1 if first else 0]
                hit[sel] = (u[sel, j] >= cdf[0]).astype(np.int64) + (u[sel, j] >= cdf[1])
        wounds += np.where(foes[:, j], hit, 0)
    st.wounds[rows, col] = np.maximum(st.wounds[rows, col] - wounds, 0)
    st.status[rows, col] = OUT_OF_ACTION
