"""warband group fights to the end against an exact Markov chain written here from the spec.

The chain follows the rules text and the spec's group decisions, not the
ruleset's code: plain W1 axemen (WS3 S3 T3 I3, axe, no armour) fight in
player turns; the active side recovers (knocked down -> standing and strikes
last, stunned -> knocked down), then (``own_turn_charge``, the default) each
of its standing warriors with no enemy left in contact charges the enemy not
out of action with the fewest opponents (ties: lowest index) and strikes first
that turn. Then every standing warrior touching an enemy strikes once, in
class order (strike first, normal, strike last) and, as all have Initiative 3,
in a uniformly random order within a class (roll-offs); a striker hits the
first standing enemy it touches, else a stunned one, else a knocked-down one.
One blow's effect on its target is the hand-derived ``batch`` of the 1 v 1
chains in ``test_warband_exact``. ``every_round`` (the old rule) is the same
chain with re-engaging at the start of every round, before Recovery, for every
warrior not out of action, without a charge bonus.

The joint distribution over (warrior states, contacts) is propagated round by
round in floats; each phase is an exact dynamic programme over the strike order.
"""

from __future__ import annotations

from fractions import Fraction as F
from functools import lru_cache

import numpy as np
import pytest

import sim
from sim.dice import RandomDice
from sim.errors import Where
from sim.outcomes import Outcomes
from sim.rulesets.warband import RULESET as WB
from tests.helpers import assert_distribution, assert_mean, assert_proportion
from tests.statistical.test_warband_exact import KD, OOA, ST, UP, Side, W, batch

pytestmark = pytest.mark.statistical

AXE = Side(F(3, 6), 4, 0, 1, 3)        # WS3 v WS3: 4+; S3 v T3: 4+; no save; W1
MAX_ROUNDS = 50


def axemen(count: int):
    return WB.parse_unit(dict(name="axeman", count=count, ws=3, s=3, t=3, i=3, w=1, a=1, weapons=["axe"]),
                         Where("test", "axeman"))


@lru_cache(maxsize=None)
def _blow(state):
    """Target state distribution after one axe blow (floats)."""
    return tuple((k, float(v)) for k, v in batch(AXE, AXE, state).items())


def _live(s) -> bool:
    return s[0] != OOA


class Chain:
    """Exact chain of an ``na`` v ``nd`` fight of plain axemen."""

    def __init__(self, na: int, nd: int, reengage: str) -> None:
        self.na, self.nd, self.reengage = na, nd, reengage
        self.ids = [(0, i) for i in range(na)] + [(1, j) for j in range(nd)]

    # --------------------------------------------------------------- contacts
    def touching(self, contacts, w):
        side, i = w
        return [(1 - side, e) for (a, d) in contacts for e in ((d,) if side == 0 and a == i else
                                                             (a,) if side == 1 and d == i else ())]

    def join(self, states, contacts, movers, side):
        """Each warrior of ``movers`` (index order) with no live enemy in contact joins the live enemy
        with the fewest live opponents in contact (lowest index on ties)."""
        contacts = set(contacts)
        joined = []
        for w in movers:
            if any(_live(states[e]) for e in self.touching(contacts, w)):
                continue
            foes = [e for e in self.ids if e[0] != side and _live(states[e])]
            if not foes:
                continue
            load = {e: sum(1 for m in self.touching(contacts, e) if _live(states[m])) for e in foes}
            target = min(foes, key=lambda e: (load[e], e[1]))
            contacts.add((w[1], target[1]) if side == 0 else (target[1], w[1]))
            joined.append(w)
        return frozenset(contacts), joined

    # ----------------------------------------------------------------- phase
    def phase(self, states: dict, contacts, r: int):
        """Distribution of (states, contacts) after round ``r``'s Recovery, re-engaging and blows."""
        act = 0 if r % 2 == 1 else 1
        states = dict(states)
        if self.reengage == "every_round":
            for side in (0, 1):
                movers = [w for w in self.ids if w[0] == side and _live(states[w])]
                contacts, _ = self.join(states, contacts, movers, side)
        stood = set()
        for w in self.ids:
            if w[0] == act and states[w][0] == KD:
                states[w], _ = (UP, 0), stood.add(w)
            elif w[0] == act and states[w][0] == ST:
                states[w] = (KD, 0)
        charged = []
        if self.reengage == "own_turn_charge" and r > 1:
            movers = [w for w in self.ids if w[0] == act and states[w][0] == UP]
            contacts, charged = self.join(states, contacts, movers, act)
        strikers = [w for w in self.ids if states[w][0] == UP
                    and any(_live(states[e]) for e in self.touching(contacts, w))]

        def klass(w):
            if w in stood:
                return 2
            if (r == 1 and w[0] == 0) or w in charged:
                return 0
            return 1

        classes = {w: klass(w) for w in strikers}
        keyed = tuple(sorted(states.items()))
        out: dict = {}
        for st, p in self._blows(keyed, contacts, frozenset(strikers), tuple(sorted(classes.items()))).items():
            out[(st, contacts)] = out.get((st, contacts), 0.0) + p
        return out

    @lru_cache(maxsize=None)
    def _blows(self, states, contacts, remaining, classes):
        """Distribution of the states after the remaining strikers strike (uniform order within a class)."""
        if not remaining:
            return {states: 1.0}
        cls = dict(classes)
        low = min(cls[w] for w in remaining)
        first = [w for w in remaining if cls[w] == low]
        out: dict = {}
        for w in first:
            rest = remaining - {w}
            for st, p in self._strike(states, contacts, w).items():
                for st2, q in self._blows(st, contacts, rest, classes).items():
                    out[st2] = out.get(st2, 0.0) + p * q / len(first)
        return out

    def _strike(self, states, contacts, w):
        s = dict(states)
        if s[w][0] != UP:
            return {states: 1.0}
        enemies = sorted(self.touching(contacts, w), key=lambda e: e[1])
        for wanted in (UP, ST, KD):
            target = next((e for e in enemies if s[e][0] == wanted), None)
            if target is not None:
                break
        else:
            return {states: 1.0}
        out = {}
        for new, p in _blow(s[target]):
            s2 = dict(s)
            s2[target] = new
            key = tuple(sorted(s2.items()))
            out[key] = out.get(key, 0.0) + p
        return out

    # ------------------------------------------------------------------ fight
    def solve(self):
        """P(attacker wins), P(defender wins), P(capped), rounds distribution, E[damage to the defenders],
        distribution of the defenders out of action."""
        if self.na >= self.nd:
            contacts = frozenset((i, i % self.nd) for i in range(self.na))
        else:
            contacts = frozenset((j % self.na, j) for j in range(self.nd))
        dist = {(tuple(sorted((w, (UP, 1)) for w in self.ids)), contacts): 1.0}
        p_a = p_d = dmg = 0.0
        rounds = np.zeros(MAX_ROUNDS + 1)
        ooa_d = np.zeros(self.nd + 1)
        for r in range(1, MAX_ROUNDS + 1):
            new: dict = {}
            for (states, cont), p in dist.items():
                for key, q in self.phase(dict(states), cont, r).items():
                    new[key] = new.get(key, 0.0) + p * q
            dist = {}
            for (states, cont), p in new.items():
                s = dict(states)
                out_a = all(s[w][0] == OOA for w in self.ids if w[0] == 0)
                out_d = all(s[w][0] == OOA for w in self.ids if w[0] == 1)
                if out_a or out_d:
                    p_a += p * out_d
                    p_d += p * out_a
                    rounds[r] += p
                    dmg += p * sum(1 - s[w][1] for w in self.ids if w[0] == 1)
                    ooa_d[sum(s[w][0] == OOA for w in self.ids if w[0] == 1)] += p
                else:
                    dist[(states, cont)] = dist.get((states, cont), 0.0) + p
        capped = sum(dist.values())
        rounds[MAX_ROUNDS] += capped
        for (states, _), p in dist.items():
            s = dict(states)
            dmg += p * sum(1 - s[w][1] for w in self.ids if w[0] == 1)
            ooa_d[sum(s[w][0] == OOA for w in self.ids if w[0] == 1)] += p
        return p_a, p_d, capped, rounds, dmg, ooa_d


@lru_cache(maxsize=None)
def solved(na: int, nd: int, reengage: str):
    """The chain's answer (cached: several tests read the same chain)."""
    return Chain(na, nd, reengage).solve()


def _check(na: int, nd: int, reengage: str, n_kernel: int, n_ref: int, seed: int, *, path: str = "compiled") -> None:
    """Kernel and reference against the chain. ``path``: the compiled kernel ("compiled"), or the
    vectorised kernel with its pairs and stars as fused tables ("fused"), centre first ("hubs"),
    or striker by striker ("strikers")."""
    from dataclasses import replace

    p_a, p_d, capped, rounds, dmg, ooa_d = solved(na, nd, reengage)
    assert abs(p_a + p_d + capped - 1) < 1e-9 and abs(rounds.sum() - 1) < 1e-9
    plan = sim.build_matchup(WB, axemen(na), axemen(nd), options={"reengage": reengage}, budget="none")[1]
    if path == "compiled":
        assert plan.kernel.loop is not None, "the compiled kernel does not play this matchup"
    else:
        plan = WB.with_engine(plan, "numpy")
        assert plan.kernel.loop is None
    if path not in ("compiled", "fused") and plan.kernel.groups is not None:
        g = plan.kernel.groups
        plan = replace(plan, kernel=replace(plan.kernel, groups=replace(g, pair=None, star=None, hubs=path == "hubs")))
    k = WB.simulate(plan, n_kernel, np.random.default_rng(seed), "end", MAX_ROUNDS).expand()
    what = f"{na} v {nd} {reengage}"
    assert_proportion(int((k.winner == 1).sum()), n_kernel, p_a, what=f"{what}: kernel attacker wins")
    assert_distribution(np.bincount(k.rounds, minlength=MAX_ROUNDS + 1), rounds, what=f"{what}: kernel rounds")
    assert_distribution(np.bincount(k.extras["out_of_action_defender"], minlength=nd + 1), ooa_d,
                        what=f"{what}: kernel defenders out of action")
    assert_mean(float(k.damage_to_defender.mean()), dmg, nd / 2, n_kernel, what=f"{what}: kernel damage")
    if not n_ref:
        return
    dice = RandomDice(np.random.default_rng(seed + 1))
    ref = Outcomes.stack([WB.resolve_one(plan, dice, "end", MAX_ROUNDS) for _ in range(n_ref)])
    assert_proportion(int((ref.winner == 1).sum()), n_ref, p_a, what=f"{what}: reference attacker wins")
    assert_distribution(np.bincount(ref.rounds, minlength=MAX_ROUNDS + 1), rounds, what=f"{what}: reference rounds")


# 3 against 2 is the largest chain and a quarter of this file's time: it runs in the slow step (.ci/run)
@pytest.mark.parametrize("na, nd", [(2, 1), (2, 2), pytest.param(3, 2, marks=pytest.mark.slow)])
def test_group_fight_to_the_end_matches_the_chain(na, nd):
    """Issue 14 (2 v 1, 3 v 2) and issue 16 (2 v 2, 3 v 2): the default re-engaging rule."""
    _check(na, nd, "own_turn_charge", 200_000, 6_000, 100 + 10 * na + nd)  # the reference's Python loop: 6,000


# 3 v 2 (a star and a pair from the first round) costs its chain, 6 s, on top: in the slow step with the rest of
# 3 v 2; 2 v 2 plays its pairs, then the star of the two left against one, on every path in the default run
@pytest.mark.parametrize("na, nd", [(2, 2), pytest.param(3, 2, marks=pytest.mark.slow)])
@pytest.mark.parametrize("path", ["fused", "hubs", "strikers"])
def test_group_kernel_paths_match_the_chain(path, na, nd):
    """The same chains on the vectorised kernel: pairs and stars as fused tables, played centre
    first, or striker by striker."""
    _check(na, nd, "own_turn_charge", 150_000, 0, 400 + len(path) + (0 if (na, nd) == (3, 2) else 10 * na + nd),
           path=path)


@pytest.mark.parametrize("na, nd", [(2, 2), pytest.param(3, 2, marks=pytest.mark.slow)])
def test_old_every_round_rule_matches_its_chain(na, nd):
    _check(na, nd, "every_round", 100_000, 3_000, 200 + 10 * na + nd)


@pytest.mark.slow  # the rule switched off by default, on the vectorised kernel (the compiled one is checked above)
def test_old_every_round_rule_matches_its_chain_on_the_vectorised_kernel():
    _check(3, 2, "every_round", 100_000, 0, 232, path="fused")


def test_the_two_rules_differ_where_warriors_re_engage():
    """2 v 2: the chains of the two rules give different attacker win chances (the switch matters),
    and 2 v 1 (nobody ever free) gives the same under both."""
    new, old = solved(2, 2, "own_turn_charge"), solved(2, 2, "every_round")
    assert abs(new[0] - old[0]) > 1e-3
    assert abs(solved(2, 1, "own_turn_charge")[0] - solved(2, 1, "every_round")[0]) < 1e-12


def test_the_chains_of_the_two_rules_are_told_apart():
    """The checks above can fail: the default kernel's fight lengths are far from the old rule's chain."""
    old = solved(2, 2, "every_round")
    plan = sim.build_matchup(WB, axemen(2), axemen(2), budget="none")[1]
    k = WB.simulate(plan, 100_000, np.random.default_rng(7), "end", MAX_ROUNDS).expand()
    with pytest.raises(AssertionError):
        assert_distribution(np.bincount(k.rounds, minlength=MAX_ROUNDS + 1), old[3], what="wrong rule")


# ------------------------------------------------------------------ kernel against the reference
def _same(plan, rounds, n_kernel, n_ref, seed, what):
    from tests.helpers import assert_same_distribution

    k = WB.simulate(plan, n_kernel, np.random.default_rng(seed), rounds, MAX_ROUNDS).expand()
    dice = RandomDice(np.random.default_rng(seed + 1))
    r = Outcomes.stack([WB.resolve_one(plan, dice, rounds, MAX_ROUNDS) for _ in range(n_ref)])
    for f in ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender", "rounds"):
        assert_same_distribution(np.bincount(getattr(k, f)), np.bincount(getattr(r, f)), what=f"{what}: {f}")
    for e in ("out_of_action_attacker", "out_of_action_defender"):
        assert_same_distribution(np.bincount(k.extras[e]), np.bincount(r.extras[e]), what=f"{what}: {e}")


GROUP_GRID = [
    # (attacker, defender, counts, options, rounds): pairs, stars and longer chains; parries, several
    # attacks, criticals, helmets, strike-last weapons, Lightning Reflexes against re-engaging chargers
    ("Mercenary Warrior", "Youngblood", (4, 3), {}, "end"),
    ("Swordsman", "Orc Boy", (3, 3), {}, "end"),
    ("Elf Blademaster", "Champion", (3, 4), {}, "end"),
    ("Champion", "Zealot", (4, 4), {}, "end"),
    ("Skaven Verminkin", "Dwarf Clansman", (4, 2), {}, "end"),
    ("Mercenary Captain", "Spearman", (2, 5), {}, 6),
    ("Ogre Brute", "Pit Fighter", (2, 3), {}, "end"),
    ("Youngblood", "Mercenary Warrior", (6, 5), {}, "end"),
    ("Youngblood", "Orc Boy", (5, 3), {"all_alone": True, "rout": True}, "end"),
    ("Mercenary Warrior", "Zealot", (3, 3), {"reengage": "every_round"}, "end"),
    ("Elf Blademaster", "Swordsman", (2, 3), {"reengage": "every_round"}, 5),
    (W(ws=4, a=5, weapons=["dagger", "dagger"]), "Swordsman", (2, 3), {}, "end"),   # six attacks: dice, not tables
]


@pytest.mark.parametrize("att, dfn, counts, options, rounds", GROUP_GRID)
def test_group_kernel_matches_reference_in_distribution(att, dfn, counts, options, rounds):
    over = {"attacker": {"count": counts[0]}, "defender": {"count": counts[1]}}
    plan = sim.build_matchup(WB, att, dfn, overrides=over, options=options, budget="none")[1]
    _same(plan, rounds, 60_000, 4_000, 300 + counts[0] * 10 + counts[1], f"{att} x{counts[0]} v {dfn} x{counts[1]}")


@pytest.mark.parametrize("att, dfn, counts", [
    ("Mercenary Warrior", "Youngblood", (6, 4)),
    ("Swordsman", "Elf Blademaster", (3, 5)),        # parries, Step Aside, Lightning Reflexes
    ("Zealot", "Dwarf Clansman", (5, 3)),            # Jump Up, helmets, heavy weapon in round 1
    ("Ogre Brute", "Skaven Verminkin", (2, 6)),      # several attacks and wounds (tabulated batches)
    (W(ws=4, a=5, weapons=["dagger", "dagger"]), "Youngblood", (2, 3)),   # six attacks: the dice path
])
def test_fused_pairs_stars_and_hubs_match_the_striker_path(att, dfn, counts):
    """The one-draw pair and star phases and the centre-first stars against the same fights played
    striker by striker (every contact through the general path)."""
    from dataclasses import replace

    from tests.helpers import assert_same_distribution

    over = {"attacker": {"count": counts[0]}, "defender": {"count": counts[1]}}
    plan = WB.with_engine(sim.build_matchup(WB, att, dfn, overrides=over, budget="none")[1], "numpy")
    kp = plan.kernel
    plain = replace(plan, kernel=replace(kp, groups=replace(kp.groups, pair=None, star=None, hubs=False)))
    a = WB.simulate(plan, 150_000, np.random.default_rng(41), "end", MAX_ROUNDS)
    b = WB.simulate(plain, 150_000, np.random.default_rng(42), "end", MAX_ROUNDS)
    for f in ("winner", "damage_to_attacker", "damage_to_defender", "rounds"):
        assert_same_distribution(np.bincount(getattr(a, f)), np.bincount(getattr(b, f)), what=f)
    for e in ("out_of_action_attacker", "out_of_action_defender"):
        assert_same_distribution(np.bincount(a.extras[e]), np.bincount(b.extras[e]), what=e)
