"""warband group fights against a second exact chain, written from the spec alone, with a round cap.

An independent check of issues 14 and 16, written from ``shared/rules/warband.md``
without reading the ruleset's code or ``test_warband_groups_exact`` (whose
chain uses one profile on both sides and the default cap of 50, where draws
almost never happen). This one differs where that one cannot see:

* unequal sides: W1 axemen (WS3 S3 T3 I3 A1, axe, no armour) attack W1
  clubmen (WS2, club: concussion), so to-hit, injuries and who is who differ
  by side (3+ v 4+ to hit; a club's injury roll of 2 stuns);
* a cap of 8 rounds, so a tenth of the fights are capped draws and the
  Recovery / re-engaging / strike-order cycle is tested at every round length;
* 2 v 3 as well as 2 v 1, 2 v 2 and 3 v 2: the defenders are the larger side
  and spread round-robin onto the attackers (D1-A1, D2-A2, D3-A1).

The chain, from the spec's procedure and its Re-engaging decision: a round is
one player turn (round 1 the attacker's charge). The active side recovers (a
knocked-down warrior stands and strikes last; a stunned one is knocked down).
Then each standing active warrior with no enemy left in contact, in index
order, charges the enemy not out of action with the fewest opponents in
contact (ties: the lowest index) and strikes first this turn. Every standing
warrior touching an enemy not out of action strikes once, by class (strike
first, normal, strike last) and, all having I3, in a uniformly random order
within a class (roll-offs, re-rolling ties). A striker hits the first standing
enemy it touches; with none standing, a stunned one (out of action), else a
knocked-down one (auto-hit; a wound, with no armour to save it, is out of
action). A blow on a standing W1 target: to hit, to wound (4+; a natural 6 is
a critical: 2 wounds, and 5-6 on the critical table adds +2 to the injury
rolls), one injury roll per wound at W = 0, the worst kept.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import product

import numpy as np
import pytest

import sim
from sim.dice import RandomDice
from sim.errors import Where
from sim.outcomes import Outcomes
from sim.rulesets.warband import RULESET as WB
from tests.helpers import assert_distribution, assert_mean, assert_proportion

pytestmark = pytest.mark.statistical

UP, KD, STUN, OUT = 0, 1, 2, 3
CAP = 8
AXEMAN = dict(ws=3, s=3, t=3, weapon="axe")
CLUBMAN = dict(ws=2, s=3, t=3, weapon="club")


# ------------------------------------------------------------------ one blow, from the charts
def _to_hit(ws: int, target_ws: int) -> int:
    return 3 if ws > target_ws else 5 if target_ws > 2 * ws else 4


def _to_wound(s: int, t: int) -> int | None:
    """The S-against-T chart: None where it cannot wound."""
    if t >= s + 4:
        return None
    return {2: 6, 3: 6, 1: 5, 0: 4, -1: 3}.get(t - s, 2)


def _injury(total: int, concussion: bool) -> int:
    total = min(total, 6)
    if total == 1 or (total == 2 and not concussion):
        return KD
    return STUN if total <= 4 else OUT


def _worst_injury(rolls: int, modifier: int, concussion: bool) -> dict[int, float]:
    out = {KD: 0.0, STUN: 0.0, OUT: 0.0}
    for dice in product(range(1, 7), repeat=rolls):
        out[max(_injury(d + modifier, concussion) for d in dice)] += 6.0 ** -rolls
    return out


def blow_on_standing(striker: dict, target: dict) -> dict[int, float]:
    """The standing W1 target's status after one blow (UP: unharmed). No armour, so no save."""
    p_hit = (7 - _to_hit(striker["ws"], target["ws"])) / 6
    need = _to_wound(striker["s"], target["t"])
    out = {UP: 1.0 - p_hit, KD: 0.0, STUN: 0.0, OUT: 0.0}
    if need is None:
        return {UP: 1.0, KD: 0.0, STUN: 0.0, OUT: 0.0}
    crit = 1 / 6 if need < 6 else 0.0           # the first natural 6, when less than 6 was needed
    plain = (7 - need) / 6 - crit
    out[UP] += p_hit * (1 - plain - crit)
    club = striker["weapon"] == "club"
    # a plain wound: one injury roll; a critical: 2 wounds, both at or past W = 0 (two rolls, keep the
    # worst); critical d6 1-4 (vital part, exposed spot: no save either way here), 5-6 master strike (+2)
    for share, rolls, modifier in ((plain, 1, 0), (crit * 4 / 6, 2, 0), (crit * 2 / 6, 2, 2)):
        for status, p in _worst_injury(rolls, modifier, club).items():
            out[status] += p_hit * share * p
    return out


def wound_on_knocked_down(striker: dict, target: dict) -> float:
    """Auto-hit; any wound (no save) puts a knocked-down warrior out of action."""
    need = _to_wound(striker["s"], target["t"])
    return 0.0 if need is None else (7 - need) / 6


# ------------------------------------------------------------------ the chain
class CappedChain:
    """``na`` attackers against ``nd`` defenders; a warrior is (side, index), a state a tuple of statuses
    (attackers, then defenders) with the contacts between warriors not out of action."""

    def __init__(self, att: dict, dfn: dict, na: int, nd: int) -> None:
        self.na, self.nd = na, nd
        self.sides = (att, dfn)
        self.on_up = {0: blow_on_standing(att, dfn), 1: blow_on_standing(dfn, att)}
        self.on_kd = {0: wound_on_knocked_down(att, dfn), 1: wound_on_knocked_down(dfn, att)}
        self.warriors = [(0, i) for i in range(na)] + [(1, j) for j in range(nd)]

    def slot(self, w) -> int:
        return w[1] if w[0] == 0 else self.na + w[1]

    def start(self):
        if self.na >= self.nd:
            pairs = {(i, i % self.nd) for i in range(self.na)}
        else:
            pairs = {(j % self.na, j) for j in range(self.nd)}
        return (UP,) * (self.na + self.nd), frozenset(pairs)

    def foes(self, status, contacts, w):
        """The enemies not out of action that ``w`` touches, lowest index first."""
        if w[0] == 0:
            found = [(1, j) for (i, j) in contacts if i == w[1]]
        else:
            found = [(0, i) for (i, j) in contacts if j == w[1]]
        return sorted(e for e in found if status[self.slot(e)] != OUT)

    def round(self, status, contacts, r: int) -> dict:
        active = 0 if r % 2 else 1
        st = list(status)
        stood = set()
        for w in self.warriors:                                        # Recovery
            if w[0] == active and st[self.slot(w)] == KD:
                st[self.slot(w)] = UP
                stood.add(w)
            elif w[0] == active and st[self.slot(w)] == STUN:
                st[self.slot(w)] = KD
        charging = {w for w in self.warriors if w[0] == 0} if r == 1 else set()
        contacts = set(contacts)
        for w in self.warriors:                                        # re-engaging, in index order
            if w[0] != active or st[self.slot(w)] != UP or self.foes(st, contacts, w):
                continue
            enemies = [e for e in self.warriors if e[0] != active and st[self.slot(e)] != OUT]
            if enemies:
                target = min(enemies, key=lambda e: (len(self.foes(st, contacts, e)), e[1]))
                contacts.add((w[1], target[1]) if active == 0 else (target[1], w[1]))
                charging.add(w)
        contacts = frozenset(contacts)
        strikers = [w for w in self.warriors if st[self.slot(w)] == UP and self.foes(st, contacts, w)]
        klass = tuple(2 if w in stood else 0 if w in charging else 1 for w in strikers)
        return {(s2, contacts): p for s2, p in self.phase(tuple(st), contacts, tuple(strikers), klass).items()}

    @lru_cache(maxsize=None)
    def phase(self, status, contacts, strikers, klass) -> dict:
        """Statuses after the strikers strike: the next is uniform among those left of the lowest class."""
        if not strikers:
            return {status: 1.0}
        low = min(klass)
        first = [k for k, c in enumerate(klass) if c == low]
        out: dict = {}
        for k in first:
            rest, rest_class = strikers[:k] + strikers[k + 1:], klass[:k] + klass[k + 1:]
            for s1, p in self.strike(status, contacts, strikers[k]).items():
                for s2, q in self.phase(s1, contacts, rest, rest_class).items():
                    out[s2] = out.get(s2, 0.0) + p * q / len(first)
        return out

    def strike(self, status, contacts, w) -> dict:
        if status[self.slot(w)] != UP:
            return {status: 1.0}
        foes = self.foes(status, contacts, w)
        if not foes:
            return {status: 1.0}
        by = {s: [e for e in foes if status[self.slot(e)] == s] for s in (UP, STUN, KD)}
        target = (by[UP] or by[STUN] or by[KD])[0]
        now = status[self.slot(target)]
        if now == UP:
            effects = self.on_up[w[0]]
        elif now == STUN:
            effects = {OUT: 1.0}
        else:
            effects = {OUT: self.on_kd[w[0]], KD: 1 - self.on_kd[w[0]]}
        out: dict = {}
        for new, p in effects.items():
            s = list(status)
            s[self.slot(target)] = new
            out[tuple(s)] = out.get(tuple(s), 0.0) + p
        return out

    def solve(self):
        """(P(attacker wins), P(defender wins), P(capped draw), rounds distribution 0..CAP)."""
        dist = {self.start(): 1.0}
        wins = [0.0, 0.0]
        rounds = np.zeros(CAP + 1)
        for r in range(1, CAP + 1):
            new: dict = {}
            for (status, contacts), p in dist.items():
                for (s2, c2), q in self.round(status, contacts, r).items():
                    out_a = all(s == OUT for s in s2[:self.na])
                    out_d = all(s == OUT for s in s2[self.na:])
                    if out_a or out_d:
                        wins[0 if out_d else 1] += p * q
                        rounds[r] += p * q
                        continue
                    live = frozenset((i, j) for (i, j) in c2 if s2[i] != OUT and s2[self.na + j] != OUT)
                    new[(s2, live)] = new.get((s2, live), 0.0) + p * q
            dist = new
        capped = sum(dist.values())
        rounds[CAP] += capped
        return wins[0], wins[1], capped, rounds


@lru_cache(maxsize=None)
def solved(na: int, nd: int):
    return CappedChain(AXEMAN, CLUBMAN, na, nd).solve()


def _plan(na: int, nd: int, reengage: str = "own_turn_charge"):
    def unit(name, d, n):
        return WB.parse_unit(dict(name=name, count=n, ws=d["ws"], s=d["s"], t=d["t"], i=3, w=1, a=1,
                                  weapons=[d["weapon"]]), Where("test", name))
    return sim.build_matchup(WB, unit("axeman", AXEMAN, na), unit("clubman", CLUBMAN, nd),
                             options={"reengage": reengage}, budget="none")[1]


def _against_chain(out: Outcomes, na: int, nd: int, what: str) -> None:
    p_a, p_d, capped, rounds = solved(na, nd)
    n = len(out.winner)
    assert_proportion(int((out.winner == 1).sum()), n, p_a, what=f"{what}: attacker wins")
    assert_proportion(int((out.winner == 2).sum()), n, p_d, what=f"{what}: defender wins")
    assert_proportion(int((out.winner == 0).sum()), n, capped, what=f"{what}: capped draws")
    assert int(out.capped.sum()) == int((out.winner == 0).sum()), f"{what}: every draw is a capped fight"
    k = np.arange(CAP + 1)
    mean = float((k * rounds).sum())
    sd = math.sqrt(float((k * k * rounds).sum()) - mean * mean)
    assert_mean(float(out.rounds.mean()), mean, sd, n, what=f"{what}: mean rounds")
    assert_distribution(np.bincount(out.rounds, minlength=CAP + 1), rounds, what=f"{what}: rounds")


def test_the_chain_is_a_distribution_and_the_cap_matters():
    for na, nd in ((2, 1), (2, 2), (3, 2), (2, 3)):
        p_a, p_d, capped, rounds = solved(na, nd)
        assert abs(p_a + p_d + capped - 1) < 1e-12 and abs(rounds.sum() - 1) < 1e-12
        assert 0.01 < capped < 0.2                                  # draws are a real share at 8 rounds


@pytest.mark.parametrize("na, nd", [(2, 1), (2, 2), (3, 2), (2, 3)])
def test_kernel_and_reference_match_the_capped_chain(na, nd):
    plan = _plan(na, nd)
    kernel = WB.simulate(plan, 200_000, np.random.default_rng(5100 + 10 * na + nd), "end", CAP).expand()
    _against_chain(kernel, na, nd, f"kernel {na} v {nd}")
    dice = RandomDice(np.random.default_rng(5200 + 10 * na + nd))
    reference = Outcomes.stack([WB.resolve_one(plan, dice, "end", CAP) for _ in range(6_000)])
    _against_chain(reference, na, nd, f"reference {na} v {nd}")


def test_the_old_rule_is_told_apart_from_the_chain():
    """The check can fail: under ``reengage = "every_round"`` 3 v 2 ends sooner (about 30 SE fewer draws)."""
    old = WB.simulate(_plan(3, 2, "every_round"), 200_000, np.random.default_rng(5300), "end", CAP).expand()
    with pytest.raises(AssertionError):
        _against_chain(old, 3, 2, "every_round")
