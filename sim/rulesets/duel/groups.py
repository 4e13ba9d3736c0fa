"""``duel`` fast kernel for small groups: the fight as a Markov chain over models standing.

A side's state is the tuple of its standing models' wounds in listed order (plus
how many of its models were misted, for the extras). A model's yards left are a
function of its wounds: it backs one yard per wound lost to the combat's hits
until its space is used up, and only then are yards blocked, so
``yards left = max(0, space - wounds lost)`` at all times. The exact one-phase
transition of every reachable state is built from the same ingredients as the
one-model chain (order statistics of d6 maxima, binomial failed checks), applied
combat by combat: pairing in listed order, left-overs in combat 0, the winner's
assignment (``fewest_wounds`` deterministic given the number of fails; ``spread``
enumerated hit by hit), and the blocked-yard hits of each surviving loser.

Built only while small (see ``MAX_STATES``); larger groups use the general kernel.
"""

from __future__ import annotations

from ...kernels.portable import binomial_pmf
from .chain import Chain, ChainRows, duel_probabilities, pack_chain
from .plan import DuelPlan

__all__ = ["build_group_chain", "group_chain_rows"]

MAX_STATES = 2_000
MAX_ENTRIES = 200_000
#: Budget of elementary steps (distribution entries combined) before giving up, so that
#: preparing a large matchup costs a fraction of a second before the general kernel takes it.
MAX_WORK = 40_000
#: Largest number of models in one combat for which ``spread`` is enumerated hit by hit.
MAX_SPREAD_MEMBERS = 6

Side = tuple[int, ...]


class _TooBig(Exception):
    pass


def _binom(n: int, p: float) -> list[float]:
    return binomial_pmf(n, p).tolist()  # not comb * p ** k ...: the C library's pow differs by machine


def _add(d: dict, key, p: float) -> None:
    d[key] = d.get(key, 0.0) + p


class _Builder:
    def __init__(self, plan: DuelPlan):
        self.plan = plan
        self.cache: dict = {}
        self.work = 0

    def spend(self, steps: int) -> None:
        self.work += steps
        if self.work > MAX_WORK:
            raise _TooBig

    def yards(self, side: int, w: int) -> int | None:
        """Yards a model of ``side`` with ``w`` wounds left can still back (None: unlimited)."""
        s = self.plan.sides[side]
        if s.prone:
            return 0
        if s.space is None:
            return None
        return max(0, s.space - (s.wounds - w))

    def hits_on(self, hitter: int, hits: int, members: Side) -> dict[tuple[Side, int], float]:
        """{(members' wounds after the hits and backing away, models misted): prob}."""
        key = ("hits", hitter, hits, members)
        if key in self.cache:
            return self.cache[key]
        plan = self.plan
        loser = 1 - hitter
        r = len(members)
        fewest = plan.assignment == "fewest_wounds"
        order = sorted(range(r), key=(lambda i: (members[i], i)) if fewest else (lambda i: i))
        out: dict[tuple[Side, int], float] = {}
        if plan.instant[hitter]:
            dead = set(order[:min(hits, r)])
            _add(out, (tuple(0 if i in dead else w for i, w in enumerate(members)), len(dead)), 1.0)
            self.cache[key] = out
            return out
        p = plan.p_fail[hitter]
        dmg = plan.sides[hitter].hit_damage
        after: dict[tuple[Side, Side], float] = {}  # (wounds, took) -> prob
        if fewest or r == 1:
            for fails, pf in enumerate(_binom(hits, p)):
                w = list(members)
                took = [0] * r
                for i in order:
                    if fails == 0:
                        break
                    need = -(-w[i] // dmg)
                    if fails >= need:
                        took[i] += w[i]
                        w[i], fails = 0, fails - need
                    else:
                        took[i] += fails * dmg
                        w[i] -= fails * dmg
                        fails = 0
                _add(after, (tuple(w), tuple(took)), pf)
        else:
            if r > MAX_SPREAD_MEMBERS:
                raise _TooBig
            # one hit at a time to the standing model with the fewest hits so far (listed order)
            states = {(members, (0,) * r, (0,) * r): 1.0}
            for _ in range(hits):
                self.spend(len(states))
                nxt: dict = {}
                for (w, got, took), q in states.items():
                    standing = [i for i in range(r) if w[i] > 0]
                    if not standing:
                        _add(nxt, (w, got, took), q)
                        continue
                    t = min(standing, key=lambda i: (got[i], i))
                    got2 = got[:t] + (got[t] + 1,) + got[t + 1:]
                    _add(nxt, (w, got2, took), q * (1 - p))
                    loss = min(dmg, w[t])
                    w2 = w[:t] + (w[t] - loss,) + w[t + 1:]
                    took2 = took[:t] + (took[t] + loss,) + took[t + 1:]
                    _add(nxt, (w2, got2, took2), q * p)
                states = nxt
            for (w, _, took), q in states.items():
                _add(after, (w, took), q)
        for (w, took), q in after.items():
            # backing away: every surviving damaged model, independently
            dist = {w: q}
            for i in range(r):
                if w[i] == 0 or took[i] == 0:
                    continue
                room = self.yards(loser, members[i])
                blocked = 0 if room is None else max(0, took[i] - room)
                if blocked == 0:
                    continue
                nxt = {}
                self.spend(len(dist) * (blocked + 1))
                for ww, qq in dist.items():
                    for f2, pf2 in enumerate(_binom(blocked, p)):
                        left = ww[i] - min(f2 * dmg, ww[i])
                        _add(nxt, ww[:i] + (left,) + ww[i + 1:], qq * pf2)
                dist = nxt
            for ww, qq in dist.items():
                _add(out, (ww, 0), qq)
        self.cache[key] = out
        return out

    def combat(self, a: Side, d: Side) -> dict[tuple[Side, Side, int, int], float]:
        """{(A members after, D members after, A misted, D misted): prob} for one combat."""
        key = ("combat", a, d)
        if key in self.cache:
            return self.cache[key]
        s0, s1 = self.plan.sides
        n0 = 0 if s0.prone else sum(a) + s0.extra_die * len(a)
        n1 = 0 if s1.prone else sum(d) + s1.extra_die * len(d)
        win0, win1, both = duel_probabilities(n0, n1, s0.ws, s1.ws)
        h0 = sum(a) + s0.extra_hit * len(a)
        h1 = sum(d) + s1.extra_hit * len(d)
        out: dict = {}
        if win0 > 0:
            for (dd, md), q in self.hits_on(0, h0, d).items():
                _add(out, (a, dd, 0, md), win0 * q)
        if win1 > 0:
            for (aa, ma), q in self.hits_on(1, h1, a).items():
                _add(out, (aa, d, ma, 0), win1 * q)
        if both > 0:
            for (aa, ma), qa in self.hits_on(1, h1, a).items():
                for (dd, md), qd in self.hits_on(0, h0, d).items():
                    _add(out, (aa, dd, ma, md), both * qa * qd)
        self.cache[key] = out
        return out

    def phase(self, a: Side, d: Side) -> dict[tuple[Side, Side, int, int], float]:
        """One combat phase: pair in listed order, left-overs in combat 0, combats independent."""
        k = min(len(a), len(d))
        groups_a = [[0] + list(range(k, len(a)))] + [[i] for i in range(1, k)]
        groups_d = [[0] + list(range(k, len(d)))] + [[i] for i in range(1, k)]
        dist = {(a, d, 0, 0): 1.0}
        for ga, gd in zip(groups_a, groups_d):
            res = self.combat(tuple(a[i] for i in ga), tuple(d[i] for i in gd))
            self.spend(len(dist) * len(res))
            nxt: dict = {}
            for (wa, wd, ma, md), q in dist.items():
                for (ra, rd, xa, xd), qq in res.items():
                    wa2, wd2 = list(wa), list(wd)
                    for i, v in zip(ga, ra):
                        wa2[i] = v
                    for i, v in zip(gd, rd):
                        wd2[i] = v
                    _add(nxt, (tuple(wa2), tuple(wd2), ma + xa, md + xd), q * qq)
            dist = nxt
            if len(dist) > MAX_ENTRIES:
                raise _TooBig
        out: dict = {}
        for (wa, wd, ma, md), q in dist.items():
            # the fallen leave; the standing keep their listed order
            _add(out, (tuple(v for v in wa if v > 0), tuple(v for v in wd if v > 0), ma, md), q)
        return out


def build_group_chain(plan: DuelPlan) -> Chain | None:
    """The alias-table chain of a small-group matchup, or None if it would be too large."""
    built = group_chain_rows(plan)
    return None if built is None else pack_chain(built[0], **built[1])


def group_chain_rows(plan: DuelPlan) -> ChainRows | None:
    """The one-phase transition rows of every reachable state of a small-group matchup (None: too large).

    State 0 is the start; the per-state arrays are ``terminal``, ``wounds``,
    ``misted`` and ``alive`` (as :class:`.chain.Chain` holds them).
    """
    b = _Builder(plan)
    start = (tuple([plan.sides[0].wounds] * plan.sides[0].count),
             tuple([plan.sides[1].wounds] * plan.sides[1].count), 0, 0)
    index = {start: 0}
    states = [start]
    rows: list[list[tuple[int, float]]] = []
    entries = 0
    pos = 0
    try:
        while pos < len(states):
            st = states[pos]
            pos += 1
            if not st[0] or not st[1]:
                rows.append([(index[st], 1.0)])
                continue
            row = []
            for (wa, wd, ma, md), p in b.phase(st[0], st[1]).items():
                if p <= 0.0:
                    continue
                key = (wa, wd, st[2] + ma, st[3] + md)  # misted so far plus this phase's
                if key not in index:
                    index[key] = len(states)
                    states.append(key)
                row.append((index[key], p))
            rows.append(row)
            entries += len(row)
            if len(states) > MAX_STATES or entries > MAX_ENTRIES:
                return None
    except _TooBig:
        return None
    return rows, dict(
        terminal=[not a or not d for a, d, _, _ in states],
        wounds=[[sum(a) for a, _, _, _ in states], [sum(d) for _, d, _, _ in states]],
        misted=[[ma for _, _, ma, _ in states], [md for _, _, _, md in states]],
        alive=[[len(a) for a, _, _, _ in states], [len(d) for _, d, _, _ in states]],
    )
