"""``duel`` mixed sides (army lists): every model its own profile, and the vectorised kernel that plays them.

A side of the matchup is a :class:`sim.lists.MixedSide` (its units' groups in listed
order) or one profile with ``count`` models. :class:`MixedDuelPlan` lines the models up
(:attr:`MixedDuelPlan.models`, one :class:`.plan.SideSpec` each, models of one profile
sharing it) and tabulates, for every pair of profiles (hitter, target), whether a hit is
instant death (Strength at least Toughness) and the chance it fails the Toughness check.

The rules are the one-profile rules, model by model (``docs/rules/duel.md``): each phase
the living models pair off in line-up order (k-th with k-th, left-overs join combat 0;
``pairing = "random"``: a side of several profiles lines its living models up in a random
order each phase); a combat's duel roll counts every member's dice, ties go to the side
whose best member has the higher WS; each winning member hits as often as its wounds at
the start of the roll (+1 "+1A") with its own weapon, member after member in line-up order,
each hit on the loser the winner picks (``fewest_wounds`` or ``spread``, ties by listed
order); a loser's blocked yards are hits with the weapon of the winning side's first model
in the combat.

:func:`simulate_mixed` plays every combat of every fight of a phase at once: the combats
are rows (fight, combat) with member masks, hits go one hit index at a time over all rows
(a Python loop over hits, never over fights). :func:`simulate_mixed_loop` plays the same fights model by
model in a loop compiled by Numba (:mod:`._mixed_loop`), by default where Numba imports. Both are tested
against the reference (:func:`.reference.resolve_fight`) and each other, and, on sides of one profile,
against the one-profile kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...dice import max_of_d6
from ...outcomes import Outcomes
from ...ruleset import END, Matchup, Rounds
from .plan import SideSpec, check_pass_probability, make_outcomes

__all__ = ["PAIRINGS", "MixedDuelPlan", "build_mixed_plan", "simulate_mixed", "simulate_mixed_loop"]

#: Values of the ``pairing`` option: the default first.
PAIRINGS = ("listed", "random")

_BIG = 1 << 20
#: "Unlimited" space (as the general kernel): more yards than a model can ever be pushed.
_BIG_SPACE = 1_000_000


@dataclass(frozen=True)
class MixedDuelPlan:
    """A prepared fight between sides of several profiles (see the module docstring).

    Attributes
    ----------
    models : (tuple, tuple)
        Each side's models in line-up order, as their profile's :class:`.plan.SideSpec`.
    profiles : (tuple, tuple)
        Each side's distinct profiles; ``prof[k][m]`` is model ``m``'s index among them.
    instant, p_fail : (ndarray, ndarray)
        ``[h][i, j]``: a hit of side ``h``'s profile ``i`` on the other side's profile ``j`` is
        instant death; or fails the Toughness check with that chance.
    """

    matchup: Matchup
    models: tuple[tuple[SideSpec, ...], tuple[SideSpec, ...]]
    profiles: tuple[tuple[SideSpec, ...], tuple[SideSpec, ...]]
    prof: tuple[NDArray[np.int64], NDArray[np.int64]]
    instant: tuple[NDArray[np.bool_], NDArray[np.bool_]]
    p_fail: tuple[NDArray[np.float64], NDArray[np.float64]]
    initiative: int
    assignment: str
    toughness_die: str
    pairing: str = "listed"
    #: ``"auto"``: the compiled loop (:mod:`._mixed_loop`) where Numba imports; ``"numpy"``: :func:`simulate_mixed`.
    engine: str = "auto"

    @property
    def start_wounds(self) -> tuple[int, int]:
        return tuple(sum(m.wounds for m in self.models[k]) for k in (0, 1))  # type: ignore[return-value]

    @property
    def counts(self) -> tuple[int, int]:
        return len(self.models[0]), len(self.models[1])

    def shuffled(self, k: int) -> bool:
        """Whether side ``k`` lines up in a random order each phase."""
        return self.pairing == "random" and len(self.profiles[k]) > 1


def build_mixed_plan(matchup: Matchup, side_specs: tuple[list[SideSpec], list[SideSpec]], initiative: int,
                     assignment: str, toughness_die: str, pairing: str) -> MixedDuelPlan:
    """The plan of a fight whose sides are ``side_specs`` (each model's profile, in line-up order)."""
    profiles: list[tuple[SideSpec, ...]] = []
    prof = []
    models = []
    for specs in side_specs:
        distinct: list[SideSpec] = []
        for s in specs:
            if s not in distinct:
                distinct.append(s)
        profiles.append(tuple(distinct))
        prof.append(np.array([distinct.index(s) for s in specs], np.int64))
        models.append(tuple(distinct[i] for i in prof[-1]))       # models of one profile share one object
    instant, p_fail = [], []
    for h in (0, 1):
        hit, tgt = profiles[h], profiles[1 - h]
        t_eff = np.array([[t.toughness - s.hit_strength for t in tgt] for s in hit], np.int64)
        instant.append(t_eff <= 0)
        p_fail.append(np.array([[0.0 if e <= 0 else float(1 - check_pass_probability(int(e), toughness_die))
                                 for e in row] for row in t_eff]).reshape(t_eff.shape))
    return MixedDuelPlan(matchup, (models[0], models[1]), (profiles[0], profiles[1]), (prof[0], prof[1]),
                         (instant[0], instant[1]), (p_fail[0], p_fail[1]), initiative, assignment, toughness_die,
                         pairing)


class _Side:
    """One side's models over the fights still going: wounds, space, profile and listed index (rows: fights),
    kept with the standing models first (in line-up order, or this phase's random order)."""

    def __init__(self, plan: MixedDuelPlan, k: int, n: int) -> None:
        specs = plan.profiles[k]
        c = plan.counts[k]
        self.k = k
        self.w = np.tile(np.array([m.wounds for m in plan.models[k]], np.int64), (n, 1))
        space = specs[0].space
        sp = 0 if specs[0].prone else (_BIG_SPACE if space is None else space)
        self.sp = np.full((n, c), sp, np.int64)
        self.p = np.tile(plan.prof[k], (n, 1))
        self.idx = np.tile(np.arange(c), (n, 1))
        self.misted = np.zeros(n, np.int64)
        self.prone = bool(specs[0].prone)
        self.wounds_of = np.array([s.wounds for s in specs], np.int64)
        self.extra_die = np.array([s.extra_die for s in specs], np.int64)
        self.extra_hit = np.array([s.extra_hit for s in specs], np.int64)
        self.ws = np.array([s.ws for s in specs], np.int64)
        self.damage = np.array([s.hit_damage for s in specs], np.int64)

    def take(self, rows: NDArray[np.intp]) -> None:
        self.w, self.sp, self.p, self.idx, self.misted = (x[rows] for x in (self.w, self.sp, self.p, self.idx,
                                                                              self.misted))

    def order(self, key: NDArray[np.int64]) -> None:
        """Reorder every row's columns by ``key`` (ascending)."""
        o = np.argsort(key, axis=1, kind="stable")
        self.w, self.sp, self.p, self.idx = (np.take_along_axis(x, o, axis=1) for x in (self.w, self.sp, self.p,
                                                                                        self.idx))

    def compact(self) -> None:
        """Standing models first, in listed order."""
        self.order((self.w == 0) * _BIG + self.idx)


def simulate_mixed(plan: MixedDuelPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """``n`` fights of the mixed plan (see the module docstring)."""
    limit = max_rounds if rounds == END else int(rounds)
    sides = [_Side(plan, 0, n), _Side(plan, 1, n)]
    remaining = [np.zeros(n, np.int64), np.zeros(n, np.int64)]
    alive = [np.zeros(n, np.int64), np.zeros(n, np.int64)]
    misted = [np.zeros(n, np.int64), np.zeros(n, np.int64)]
    n_rounds = np.full(n, limit, np.int64)
    act = np.arange(n)
    for r in range(1, limit + 1):
        _phase(plan, sides, rng)
        for s in sides:
            s.compact()
        over = (sides[0].w[:, 0] == 0) | (sides[1].w[:, 0] == 0)
        if r == limit:
            over[:] = True
        done = act[over]
        for k, s in enumerate(sides):
            remaining[k][done] = s.w[over].sum(1)
            alive[k][done] = (s.w[over] > 0).sum(1)
            misted[k][done] = s.misted[over]
        n_rounds[done] = r
        keep = np.flatnonzero(~over)
        act = act[keep]
        if act.size == 0:
            break
        for s in sides:
            s.take(keep)
    return make_outcomes(plan, (remaining[0], remaining[1]), (alive[0], alive[1]), (misted[0], misted[1]), n_rounds,
                         rounds, limit)


def _phase(plan: MixedDuelPlan, sides: list[_Side], rng: np.random.Generator) -> None:
    """One combat phase of every fight: pair off, then every combat at once."""
    m = sides[0].w.shape[0]
    for k, s in enumerate(sides):
        if plan.shuffled(k):     # this phase's line-up: the standing models in a random order
            s.order((s.w == 0) * 2.0 + rng.random(s.w.shape))
    standing = [(s.w > 0).sum(1) for s in sides]
    pairs = np.minimum(standing[0], standing[1])
    K = int(pairs.max(initial=0))
    # combat rows (fight f, combat k): member masks per side
    f_idx, k_idx = np.nonzero(pairs[:, None] > np.arange(K))
    if f_idx.size == 0:
        return
    memb = []
    for k, s in enumerate(sides):
        cols = np.arange(s.w.shape[1])
        own = cols[None, :] == k_idx[:, None]
        extra = (k_idx[:, None] == 0) & (cols[None, :] >= pairs[f_idx, None]) & (s.w[f_idx] > 0)
        memb.append(own | extra)
    _combats(plan, sides, f_idx, memb, rng)


def _combats(plan: MixedDuelPlan, sides: list[_Side], f: NDArray[np.intp], memb: list[NDArray[np.bool_]],
             rng: np.random.Generator) -> None:
    """Resolve combats ``(f, members)``: duel roll, hits, backing away; the sides' arrays updated in place."""
    R = f.size
    W = [s.w[f] for s in sides]                    # working copies (rows: combats), written back at the end
    SP = [s.sp[f] for s in sides]
    P = [s.p[f] for s in sides]
    IDX = [s.idx[f] for s in sides]
    w0 = [np.where(memb[k], W[k], 0) for k in (0, 1)]
    result = []
    for k, s in enumerate(sides):
        if s.prone:
            result.append(np.ones(R, np.int8))
        else:
            dice = (w0[k] + s.extra_die[P[k]] * memb[k]).sum(1)
            result.append(max_of_d6(rng, dice))
    ws = [np.where(memb[k], sides[k].ws[P[k]], -1).max(1) for k in (0, 1)]
    tie = result[0] == result[1]
    ws_tie = tie & (ws[0] == ws[1])
    loses = [(result[0] < result[1]) | (tie & (ws[0] < ws[1])) | ws_tie,
             (result[1] < result[0]) | (tie & (ws[1] < ws[0])) | ws_tie]
    took = [np.zeros_like(W[0]), np.zeros_like(W[1])]
    mist = [np.zeros(R, np.int64), np.zeros(R, np.int64)]
    for j in (0, 1):
        rows = np.flatnonzero(loses[j])
        if rows.size:
            _hits(plan, sides, 1 - j, rows, w0[1 - j][rows], memb[1 - j][rows], P[1 - j][rows], memb[j][rows],
                  P[j][rows], IDX[j][rows], W[j], took[j], mist[j], rng)
    for j in (0, 1):
        rows = np.flatnonzero(loses[j])
        if rows.size:
            _back_away(plan, 1 - j, rows, memb[1 - j][rows], P[1 - j][rows], P[j][rows], W[j], SP[j], took[j],
                       mist[j], rng)
    for k, s in enumerate(sides):
        # each model is in one combat of its fight: write its columns back where it is a member
        rr, cc = np.nonzero(memb[k])
        s.w[f[rr], cc] = W[k][rr, cc]
        s.sp[f[rr], cc] = SP[k][rr, cc]
        np.add.at(s.misted, f, mist[k])


def _hits(plan: MixedDuelPlan, sides: list[_Side], h: int, rows, w0h, memb_h, P_h, memb_t, P_t, idx_t, W_t, took_t,
          mist_t, rng: np.random.Generator) -> None:
    """The hits of side ``h``'s members on the losing members, member after member in line-up order, each hit on
    the target the winner picks; ``W_t``, ``took_t`` and ``mist_t`` (all combats' rows) updated at ``rows``."""
    per = np.where(memb_h, w0h + sides[h].extra_hit[P_h], 0)     # hits of each hitting member
    cum = np.cumsum(per, axis=1)
    total = cum[:, -1]
    received = np.zeros(memb_t.shape, np.int64)
    spread = plan.assignment == "spread"
    dmg = sides[h].damage
    inst, pf = plan.instant[h], plan.p_fail[h]
    live = np.flatnonzero(total > 0)
    t = 0
    while live.size:
        r = rows[live]
        hitter = (cum[live] <= t).sum(1)                            # the member whose hits cover hit number t
        hp = P_h[live, hitter]
        w = W_t[r]
        target_ok = memb_t[live] & (w > 0)
        has = target_ok.any(1)
        key = (received[live] if spread else w) * 64 + idx_t[live]
        tcol = np.where(target_ok, key, _BIG * 64).argmin(1)
        sel = np.flatnonzero(has)
        if sel.size:
            rs, ls, tc = r[sel], live[sel], tcol[sel]
            tp = P_t[ls, tc]
            received[ls, tc] += 1
            killed = inst[hp[sel], tp]
            W_t[rs[killed], tc[killed]] = 0
            mist_t[rs[killed]] += 1
            go = np.flatnonzero(~killed)
            if go.size:
                fail = rng.random(go.size) < pf[hp[sel][go], tp[go]]
                fr, fc = rs[go][fail], tc[go][fail]
                loss = np.minimum(dmg[hp[sel][go][fail]], W_t[fr, fc])
                W_t[fr, fc] -= loss
                took_t[fr, fc] += loss
        t += 1
        live = live[has & (total[live] > t)]


def _back_away(plan: MixedDuelPlan, h: int, rows, memb_h, P_h, P_t, W_t, SP_t, took_t, mist_t,
               rng: np.random.Generator) -> None:
    """Surviving losers back away a yard per wound lost; each blocked yard is a hit with the weapon of the winning
    side's first member in the combat."""
    sub_w, sub_took, sub_sp = W_t[rows], took_t[rows], SP_t[rows]
    moving = (sub_took > 0) & (sub_w > 0)
    if not moving.any():
        return
    backed = np.where(moving, np.minimum(sub_took, sub_sp), 0)
    blocked = np.where(moving, sub_took - backed, 0)
    SP_t[rows] = sub_sp - backed
    if not blocked.any():
        return
    lead = P_h[np.arange(rows.size), memb_h.argmax(1)]             # the winning side's first member
    rr, cc = np.nonzero(blocked)
    lp, tp = lead[rr], P_t[rr, cc]
    killed = plan.instant[h][lp, tp]
    W_t[rows[rr[killed]], cc[killed]] = 0
    np.add.at(mist_t, rows[rr[killed]], 1)
    go = np.flatnonzero(~killed)
    if go.size:
        fails = rng.binomial(blocked[rr[go], cc[go]], plan.p_fail[h][lp[go], tp[go]])
        w = W_t[rows[rr[go]], cc[go]]
        W_t[rows[rr[go]], cc[go]] = w - np.minimum(fails * _damage(plan, h)[lp[go]], w)


def _damage(plan: MixedDuelPlan, h: int) -> NDArray[np.int64]:
    return np.array([s.hit_damage for s in plan.profiles[h]], np.int64)



#: Uniforms a compiled loop's buffer holds at least, and the refill's margin over the mean use (as :mod:`.compiled`).
_BUFFER = 1 << 17
_HEADROOM = 1.25


def _fail_thresholds(plan: MixedDuelPlan, profiles: list[SideSpec]) -> NDArray[np.int64]:
    """``[p, q]``: a hit of profile ``p`` on profile ``q`` fails its check when a 32-bit uniform is below this
    (``floor(P(fail) * 2 ** 32)``, from the exact fraction); 0 for instant death (no check)."""
    k = len(profiles)
    out = np.zeros((k, k), np.int64)
    for i, s in enumerate(profiles):
        for j, t in enumerate(profiles):
            need = t.toughness - s.hit_strength
            if need > 0:
                fail = 1 - check_pass_probability(need, plan.toughness_die)
                out[i, j] = (fail.numerator << 32) // fail.denominator
    return out


def _dice_thresholds(most: int) -> NDArray[np.int64]:
    """``[n, k - 1] = floor((k / 6) ** n * 2 ** 32)`` for ``n`` dice, ``k = 1..5`` (exact integers)."""
    out = np.zeros((most + 1, 5), np.int64)
    for n in range(most + 1):
        for k in range(1, 6):
            out[n, k - 1] = (k ** n << 32) // 6 ** n
    return out


def simulate_mixed_loop(plan: MixedDuelPlan, n: int, rng: np.random.Generator, rounds: Rounds,
                        max_rounds: int) -> Outcomes:
    """``n`` fights of the mixed plan on the compiled loop (:mod:`._mixed_loop`)."""
    from ...kernels.uniforms import play_buffered
    from ._mixed_loop import play_mixed

    limit = max_rounds if rounds == END else int(rounds)
    profiles = list(plan.profiles[0]) + list(plan.profiles[1])
    na, nd = plan.counts
    prof = np.concatenate([plan.prof[0], plan.prof[1] + len(plan.profiles[0])]).astype(np.int64)
    col = {name: np.array([getattr(s, name) for s in profiles], np.int64)
           for name in ("wounds", "extra_die", "extra_hit", "ws", "hit_damage", "hit_strength", "toughness")}
    models = na + nd
    total = int(sum(col["wounds"][prof]) + sum(col["extra_die"][prof]))
    dice = _dice_thresholds(max(total, 1))
    space = np.array([-1 if s[0].space is None else int(s[0].space) for s in plan.profiles], np.int64)
    prone = np.array([bool(s[0].prone) for s in plan.profiles], np.bool_)
    shuffle = np.array([plan.shuffled(0), plan.shuffled(1)], np.bool_)
    # a phase reads at most a shuffle, two rolls a combat, a check a hit and one a blocked yard
    per_phase = 3 * models + int(sum(col["wounds"][prof]) + sum(col["extra_hit"][prof])) + total
    per_fight = limit * per_phase
    remaining, alive, misted = (np.empty((2, n), np.int64) for _ in range(3))
    rounds_out = np.empty(n, np.int64)
    fail = _fail_thresholds(plan, profiles)

    def step(done, u):
        return play_mixed(done, n, u, per_fight, na, nd, prof, shuffle, prone, space, col["wounds"],
                          col["extra_die"], col["extra_hit"], col["ws"], col["hit_damage"], col["hit_strength"],
                          col["toughness"], fail, dice, plan.assignment == "spread", limit, rounds == END,
                          np.array(plan.start_wounds, np.int64), remaining, alive, misted, rounds_out)

    play_buffered(step, rng, n, per_fight, buffer=_BUFFER, headroom=_HEADROOM)
    return make_outcomes(plan, (remaining[0], remaining[1]), (alive[0], alive[1]), (misted[0], misted[1]),
                         rounds_out, rounds, limit)
