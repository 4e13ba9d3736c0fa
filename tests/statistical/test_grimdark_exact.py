"""grimdark: the kernel (both paths) against exact probabilities and against the scalar reference.

Exact values are derived here by hand: binomials of unsaved wounds for one
round, and small Markov chains over surviving models (numpy, scipy binomials)
for fights to the end. Probabilities per attack are products of chart lookups
written out as fractions in the tests, never taken from the code.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction as F

import numpy as np
import pytest
from scipy import stats

import sim
from sim.dice import RandomDice
from sim.errors import Where
from sim.outcomes import Outcomes
from sim.rulesets.grimdark import RULESET as rs
from tests.helpers import assert_distribution, assert_proportion, assert_same_distribution

pytestmark = pytest.mark.statistical

MAX_ROUNDS = 50


def group(count: int = 1, **kw) -> dict:
    base = {"count": count, "ws": 4, "s": 4, "t": 4, "i": 4, "w": 1, "a": 1}
    base.update(kw)
    return base


def squad(name: str, *groups: dict):
    return rs.parse_unit({"name": name, "models": list(groups)}, Where("test", name))


def kernel(att, dfn, n, seed, rounds, fast=True, states=None, options=None) -> Outcomes:
    _, plan = sim.build_matchup(rs, att, dfn, states=states, options=options, budget="none")
    if not fast:
        plan = dataclasses.replace(plan, fast=False, cache={})
    return rs.simulate(plan, n, np.random.default_rng(seed), rounds, MAX_ROUNDS).expand()


def pmf(n: int, p) -> np.ndarray:
    return stats.binom.pmf(np.arange(n + 1), n, float(p))


def check_joint(out: Outcomes, joint: np.ndarray, what: str) -> None:
    """Chi-square of the (damage to attacker, damage to defender) histogram against ``joint``."""
    rows, cols = joint.shape
    counts = np.bincount(out.damage_to_attacker * cols + out.damage_to_defender, minlength=rows * cols)
    assert_distribution(counts, joint.ravel(), what=what)


def check_winner(out: Outcomes, p_att: float, p_def: float, what: str) -> None:
    n = len(out)
    assert_proportion(int((out.winner == 1).sum()), n, p_att, what=f"{what}: attacker wins")
    assert_proportion(int((out.winner == 2).sum()), n, p_def, what=f"{what}: defender wins")


# ----------------------------------------------------------------- one round
@pytest.mark.parametrize("fast", [True, False])
def test_one_round_simultaneous_troopers(fast):
    # Troopers WS3 S3 T3 I3 Sv5+: hit 4+ (1/2), wound 4+ (1/2), save fails on 1-4 (2/3) -> 1/6 per attack.
    # Equal Initiative: one simultaneous step; the attacker has 2 attacks each (charge).
    p = F(1, 2) * F(1, 2) * F(2, 3)
    x, y = pmf(20, p), pmf(10, p)
    joint = np.zeros((11, 11))
    for i, px in enumerate(x):
        for j, py in enumerate(y):
            joint[min(j, 10), min(i, 10)] += px * py
    out = kernel("Troopers", "Troopers", 300_000, 11, 1, fast)
    check_joint(out, joint, "troopers one round")
    # winner: a wipe wins, else more wounds; both wiped is a draw
    dd, da = np.meshgrid(np.arange(11), np.arange(11))  # joint[da, dd]
    att_win = joint[((dd == 10) & (da < 10)) | ((dd < 10) & (da < 10) & (dd > da))].sum()
    def_win = joint[((da == 10) & (dd < 10)) | ((dd < 10) & (da < 10) & (da > dd))].sum()
    check_winner(out, att_win, def_win, "troopers one round")


@pytest.mark.parametrize("fast", [True, False])
def test_one_round_mixed_squad_with_fist_sergeant(fast):
    # Assault squad (4 x WS4 S4 T4 I4 A1 two weapons Sv3+, then a power-fist sergeant A2) charges Troopers.
    # I4: 12 attacks (A1 + 1 + 1), hit 3+ (WS4 vs 3), wound 3+ (S4 vs T3), save 5+ fails 4/6: (2/3)^3.
    # I3: surviving troopers, 1 attack each: hit 4+ (1/2), wound 5+ (S3 vs T4: 1/3), 3+ save fails 1/3.
    #     casualties: the four troopers first, the sergeant last.
    # Fist: a living sergeant, 3 attacks: hit 3+ (2/3), wound S8 vs T3 2+ (5/6), no armour save.
    p1, p2, p3 = F(2, 3) ** 3, F(1, 2) * F(1, 3) * F(1, 3), F(2, 3) * F(5, 6)
    joint = np.zeros((6, 11))
    for k1, pk1 in enumerate(pmf(12, p1)):
        dead1 = min(k1, 10)
        for u, pu in enumerate(pmf(10 - dead1, p2)):
            lost = min(u, 5)
            k2 = pmf(3, p3) if u < 5 else np.array([1.0])
            for k, pk in enumerate(k2):
                joint[lost, min(dead1 + k, 10)] += pk1 * pu * pk
    out = kernel("Assault squad", "Troopers", 300_000, 12, 1, fast)
    check_joint(out, joint, "assault one round")
    sarge_dead = joint[5].sum()
    assert_proportion(int((out.damage_to_attacker == 5).sum()), len(out), sarge_dead, what="sergeant dies")


@pytest.mark.parametrize("instant_death", [True, False])
def test_one_round_instant_death(instant_death):
    # A lone fist (WS4 S4 I4 A2 +1 charge, Sv3+) against 3 veterans (WS4 S4 T4 W2 A2 I4, no save).
    # I4: 6 attacks: hit 4+, wound 4+, 3+ save fails 1/3 -> 1/12 each; one unsaved kills the fist (W1).
    # Fist step, if alive: 3 attacks, hit 4+, wound S8 vs T4 2+: 5/12 each; S8 >= 2 x T4 kills a W2
    # veteran outright (2 wounds lost), otherwise 1 wound each.
    fist = squad("fist", group(1, a=2, save=3, weapon="power_fist"))
    vets = squad("vets", group(3, w=2, a=2))
    alive = (F(11, 12)) ** 6
    joint = np.zeros((2, 7))
    joint[1, 0] = 1 - alive
    for k, pk in enumerate(pmf(3, F(5, 12))):
        joint[0, 2 * k if instant_death else k] += float(alive) * pk
    out = kernel(fist, vets, 200_000, 13, 1, options={"instant_death": instant_death})
    check_joint(out, joint, f"instant death {instant_death}")
    slow = kernel(fist, vets, 100_000, 14, 1, fast=False, options={"instant_death": instant_death})
    check_joint(slow, joint, f"instant death {instant_death} (binomial path)")


# ------------------------------------------------------------- to the end
def absorb(step, start, is_over, max_rounds=MAX_ROUNDS):
    """Distribution of (final state, rounds) of a chain given ``step(state, round) -> {state: p}``.

    Only round 1 differs (charge bonus, cover), so two transition matrices over the
    reachable states are built from ``step`` and the chain is iterated with numpy.
    """
    states, todo = [start], [start]
    rows: dict[tuple[int, tuple], dict] = {}
    while todo:
        s = todo.pop()
        for kind in (1, 2):
            rows[kind, s] = {} if is_over(s) else step(s, kind)
            for t in rows[kind, s]:
                if t not in states:
                    states.append(t)
                    todo.append(t)
    index = {s: k for k, s in enumerate(states)}
    mats = {}
    for kind in (1, 2):
        M = np.zeros((len(states), len(states)))
        for s in states:
            for t, p in rows[kind, s].items():
                M[index[s], index[t]] += p
        mats[kind] = M
    over = np.array([is_over(s) for s in states])
    dist = np.zeros(len(states))
    dist[index[start]] = 1.0
    final: dict[tuple, float] = {}
    for r in range(1, max_rounds + 1):
        dist = dist @ mats[1 if r == 1 else 2]
        for k in np.flatnonzero(over & (dist > 0)):
            final[(states[k], r)] = dist[k]
        dist[over] = 0.0
    for k in np.flatnonzero(dist > 0):
        final[(states[k], "capped")] = dist[k]
    return final


def check_chain(out: Outcomes, final: dict, winner_of, lost_att, what: str) -> None:
    p_att = sum(p for (t, r), p in final.items() if r != "capped" and winner_of(t) == 1)
    p_def = sum(p for (t, r), p in final.items() if r != "capped" and winner_of(t) == 2)
    check_winner(out, p_att, p_def, what)
    rounds = np.zeros(MAX_ROUNDS + 1)
    lost = np.zeros(200)
    for (t, r), p in final.items():
        rounds[MAX_ROUNDS if r == "capped" else r] += p
        lost[lost_att(t)] += p
    assert_distribution(np.bincount(out.rounds, minlength=MAX_ROUNDS + 1), rounds, what=f"{what}: rounds")
    assert_distribution(np.bincount(out.extras["models_lost_attacker"], minlength=200), lost,
                        what=f"{what}: attacker models lost")


def troopers_step(s, r):
    """Troopers (1/6 an attack, charge in round 1) against Troopers: state = models standing (A, D)."""
    p = F(1, 6)
    a, d = s
    out = {}
    for x, px in enumerate(pmf(a * (2 if r == 1 else 1), p)):
        for y, py in enumerate(pmf(d, p)):
            t = (max(a - y, 0), max(d - x, 0))
            out[t] = out.get(t, 0.0) + px * py
    return out


@pytest.mark.parametrize("fast", [True, False])
def test_to_the_end_troopers_markov_chain(fast):
    final = absorb(troopers_step, (10, 10), lambda t: t[0] == 0 or t[1] == 0)
    out = kernel("Troopers", "Troopers", 200_000 if fast else 100_000, 21, "end", fast)
    check_chain(out, final, lambda t: 1 if t[0] > 0 else 2 if t[1] > 0 else 0, lambda t: 10 - t[0], "troopers end")


def mixed_squads():
    return (squad("att", group(2, two_weapons=True, save=4), group(1, a=2, t=5, save=3, weapon="power_fist")),
            squad("dfn", group(4, ws=3, s=3, t=3, i=3, save=5)))


def mixed_step(s, r):
    """The mixed squad of the test below: state = (troopers, sergeant, defenders) standing."""
    p1, p3 = F(8, 27), F(5, 9)
    n1, sg, d = s
    out = {}
    for k1, pk1 in enumerate(pmf(n1 * (3 if r == 1 else 2), p1)):
        d1 = max(d - k1, 0)
        for u, pu in enumerate(pmf(d1, F(1, 12) if n1 else F(1, 36))):
            n1b = max(n1 - u, 0)
            sgb = sg if u <= n1 else 0
            for k2, pk2 in enumerate(pmf(sgb * (3 if r == 1 else 2), p3)):
                t = (n1b, sgb, max(d1 - k2, 0))
                out[t] = out.get(t, 0.0) + pk1 * pu * pk2
    return out


@pytest.mark.parametrize("fast", [True, False])
def test_to_the_end_mixed_squad_markov_chain(fast):
    # 2 troopers (WS4 S4 T4 I4 A1, two weapons, Sv4+) and a power-fist sergeant (T5, Sv3+, A2, listed
    # last) charge 4 defenders (WS3 S3 T3 I3 A1, Sv5+).
    # I4 troopers: hit 3+, wound 3+, save fails 4/6 -> 8/27; attacks 2 + 1 charge each.
    # I3 defenders: hit 4+ (1/2), wound 5+ (S3 vs T4: 1/3), 4+ save fails 1/2 -> 1/12 while a trooper
    #   is left (wounds beyond the troopers spill onto the sergeant at that rate); against the sergeant
    #   alone: wound 6+ (S3 vs T5: 1/6), 3+ save fails 1/3 -> 1/36.
    # Fist: hit 3+, wound 2+ (S8 vs T3) -> 5/9; attacks 2 + 1 charge.
    att, dfn = mixed_squads()
    final = absorb(mixed_step, (2, 1, 4), lambda t: t[0] + t[1] == 0 or t[2] == 0)
    out = kernel(att, dfn, 200_000 if fast else 100_000, 22, "end", fast)
    check_chain(out, final, lambda t: 1 if t[0] + t[1] > 0 else 2 if t[2] > 0 else 0,
                lambda t: 3 - t[0] - t[1], "mixed end")
    # the sergeant outlives his troopers: P(only the sergeant left | attacker won)
    p_sarge_alone = sum(p for (t, r), p in final.items() if r != "capped" and t[0] == 0 and t[1] == 1)
    assert_proportion(int(((out.damage_to_attacker == 2) & (out.category_attacker == 1)).sum()), len(out),
                      p_sarge_alone, what="sergeant alone")


def monster_step(s, r):
    """Tactical squad against the Monster (test below): state = (troopers standing, monster's wounds left)."""
    p_t, p_m = F(2, 3) * F(1, 6) * F(1, 3), F(1, 2) * F(5, 6)
    t, m = s
    out = {}
    for k, pk in enumerate(pmf(t * (2 if r == 1 else 1), p_t)):
        m2 = max(m - k, 0)
        for y, py in enumerate(pmf(3 if m2 else 0, p_m)):
            key = (max(t - y, 0), m2)
            out[key] = out.get(key, 0.0) + pk * py
    return out


def test_to_the_end_monster_multi_wound_markov_chain():
    # Tactical squad (10 x WS4 S4 T4 I4 A1 Sv3+) charges the Monster (WS3 S9 T7 I1 W4 A3 Sv3+, monster).
    # I4: hit 3+ (2/3), wound 6+ (S4 vs T7), 3+ save fails 1/3 -> 1/27; wounds stay on the one model.
    # I1: 3 attacks, hit 4+ (1/2), wound 2+ (S9 vs T4: 5/6), no armour save (monster) -> 5/12.
    final = absorb(monster_step, (10, 4), lambda s: s[0] == 0 or s[1] == 0)
    for fast, n in ((True, 200_000), (False, 100_000)):
        out = kernel("Tactical squad", "Monster", n, 23, "end", fast)
        check_chain(out, final, lambda s: 1 if s[0] > 0 else 2 if s[1] > 0 else 0, lambda s: 10 - s[0],
                    f"monster end fast={fast}")
        dmg = np.zeros(5)
        for (s, r), p in final.items():
            dmg[4 - s[1]] += p
        assert_distribution(np.bincount(out.damage_to_defender, minlength=5), dmg, what="wounds on the monster")


@pytest.mark.parametrize("supporting", [0, 1, 3])
def test_one_round_frontage(supporting):
    # Troopers against Troopers, no charge, one model each in base contact and ``supporting`` more within 2":
    # every striker makes one attack (A1 in contact, exactly 1 within 2"); the others are out of combat.
    # p = 1/6 per attack (hit 4+, wound 4+, 5+ save fails 2/3); one simultaneous step at I3.
    p = F(1, 2) * F(1, 2) * F(2, 3)
    n = 1 + supporting
    x = pmf(n, p)
    joint = np.outer(x, x)  # [wounds on attacker, wounds on defender]
    states = {s: {"engaged": 1, "supporting": supporting} for s in ("attacker", "defender")}
    states["attacker"]["charging"] = False
    out = kernel("Troopers", "Troopers", 300_000, 31 + supporting, 1, states=states)
    check_joint(out, joint, f"frontage 1+{supporting}")
    da, dd = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    check_winner(out, joint[dd > da].sum(), joint[da > dd].sum(), f"frontage 1+{supporting}")


# ------------------------------------------------- kernel against reference
GRID = [
    # (attacker, defender, states, options, rounds)
    (squad("a", group(3, ws=3, s=3, t=3, i=3, save=5)), squad("d", group(3, ws=3, s=3, t=3, i=3, save=5)),
     {}, {}, "end"),
    (squad("a", group(2, two_weapons=True, frag_grenades=True, save=4), group(1, a=2, weapon="power_fist", save=4)),
     squad("d", group(4, ws=3, s=3, t=3, i=5, save=5)), {"defender": {"in_cover": True}}, {}, "end"),
    (squad("a", group(2, a=2, weapon="power_fist", save=3)), squad("d", group(2, w=2, a=2, i=3, save=4)),
     {}, {}, 2),
    (squad("a", group(3, a=2, two_weapons=True, i=5, save=4), group(1, weapon="power_fist", a=2, save=4)),
     squad("d", group(2, s=3, t=3, i=2, save=5), group(1, w=3, ws=6, i=6, a=3, invuln=4, save=3, weapon="power_weapon")),
     {"attacker": {"engaged": 2}, "defender": {"engaged": 1}}, {}, "end"),
    (squad("a", group(1, ws=3, s=9, t=7, i=1, w=4, a=3, save=3, monster=True, infantry=False)),
     squad("d", group(4, save=3, invuln=5, i=1)), {"attacker": {"charging": False}}, {}, "end"),
    (squad("a", group(2, s=5, weapon="power_fist", i=2)),
     squad("d", group(2, t=3, i=3, save=4), group(1, t=5, w=2, i=3, save=2)), {}, {"instant_death": True}, 3),
    # a mixed defender whose second group has another WS, T and save: later steps roll against it
    (squad("a", group(3, a=2, i=5, save=5)),
     squad("d", group(2, ws=3, t=3, i=3, save=6), group(1, ws=5, t=5, w=2, i=3, a=2, save=3)), {}, {}, "end"),
    # engagement limits with cover and grenades: the sergeant, not engaged, throws grenades and makes one
    # plain attack in the cover step; the defenders' fist strikes last only while engaged
    (squad("a", group(3, frag_grenades=True, i=2, save=4), group(1, a=2, weapon="power_fist", frag_grenades=True)),
     squad("d", group(3, ws=3, s=3, t=3, i=3, save=5), group(1, a=2, w=2, weapon="power_fist", save=4)),
     {"attacker": {"engaged": 2}, "defender": {"engaged": 2, "in_cover": True}}, {}, "end"),
    # a frontage (the balance settings' rule): 2 in base contact, the next 1 within 2", the rest out of combat;
    # a mixed squad whose fist sergeant only strikes once he has moved up into contact
    (squad("a", group(5, ws=3, s=3, t=3, i=3, save=5), group(1, a=2, weapon="power_fist", save=4)),
     squad("d", group(6, a=2, i=4, save=4)),
     {"attacker": {"engaged": 2, "supporting": 1}, "defender": {"engaged": 2, "supporting": 1}}, {}, "end"),
    # nobody within 2": only the models in base contact strike, and a side with supporting 0 keeps its reserve
    (squad("a", group(4, ws=4, s=4, t=4, i=4, save=4)), squad("d", group(7, ws=3, s=3, t=3, i=4, save=6)),
     {"attacker": {"engaged": 1, "supporting": 0}, "defender": {"engaged": 3, "supporting": 0}}, {}, 4),
]


@pytest.mark.parametrize("case", range(len(GRID)))
def test_kernel_matches_reference_in_distribution(case):
    att, dfn, states, options, rounds = GRID[case]
    _, plan = sim.build_matchup(rs, att, dfn, states=states, options=options, budget="none")
    dice = RandomDice(np.random.default_rng(100 + case))
    ref = Outcomes.stack([rs.resolve_one(plan, dice, rounds, MAX_ROUNDS) for _ in range(15_000)])
    for fast in (True, False):
        p = plan if fast else dataclasses.replace(plan, fast=False, cache={})
        ker = rs.simulate(p, 150_000, np.random.default_rng(200 + case), rounds, MAX_ROUNDS).expand()
        for name in ("winner", "damage_to_attacker", "damage_to_defender", "rounds", "category_attacker",
                     "category_defender"):
            assert_same_distribution(np.bincount(getattr(ker, name)), np.bincount(getattr(ref, name)),
                                     what=f"case {case} fast={fast} {name}")
        for name in ("models_lost_attacker", "models_lost_defender"):
            assert_same_distribution(np.bincount(ker.extras[name]), np.bincount(ref.extras[name]),
                                     what=f"case {case} fast={fast} {name}")
        assert ker.capped.sum() == 0 or rounds == "end"


# ------------------------------------------- many groups (equal-points copies)
def test_many_groups_to_the_end_markov_chain():
    # Issue 14: a squad's copies are its groups repeated, and the kernel merges them into pools.
    # Attackers: [A, B] x 4 in casualty order, one model each, I4, charging:
    #   A: WS3 S3 T3 W1 A1 Sv5+; B: WS4 S4 T3 W2 A1 Sv4+.
    # Defenders: [g1, g2] x 3, one model each, WS3 T3 I3 W1 Sv5+: g1 S4 A2, g2 S6 A1.
    # Attacks on the defenders (WS3, T3, Sv5+): A hit 4+, wound 4+, save fails 4/6 -> 1/6;
    #   B hit 3+, wound 3+ -> 2/3 * 2/3 * 2/3 = 8/27.
    # Attacks on the attackers' front model: g1 (S4) vs A: 1/2 * 2/3 (3+) * 2/3 = 2/9, vs B (WS4: 4+,
    #   Sv4+): 1/2 * 2/3 * 1/2 = 1/6; g2 (S6) vs A: 1/2 * 5/6 * 2/3 = 5/18, vs B: 1/2 * 5/6 * 1/2 = 5/24,
    #   and S6 >= 2 x T3 kills a B (W2) outright. In the defenders' step the groups' wounds land in
    #   listed order (g1, g2, g1, ...), each against the profile in front at the start of the step.
    copies_a, copies_d = 4, 3
    att_profiles = ["A", "B"] * copies_a
    att_w = {"A": 1, "B": 2}
    p_att = {"A": F(1, 6), "B": F(8, 27)}
    p_def = {("g1", "A"): F(2, 9), ("g1", "B"): F(1, 6), ("g2", "A"): F(5, 18), ("g2", "B"): F(5, 24)}
    def_groups = ["g1", "g2"] * copies_d
    def_attacks = {"g1": 2, "g2": 1}

    def take_wound(s, strength):
        k, j = s  # attacker models dead, wounds on the front one
        if k == len(att_profiles):
            return s
        prof = att_profiles[k]
        if prof == "B" and strength == 6:  # instant death: S >= 2T on a multi-wound model
            return (k + 1, 0)
        return (k + 1, 0) if j + 1 == att_w[prof] else (k, j + 1)

    def step(s, r):
        (k, j), d = s
        # I4: every living attacker model strikes the defenders
        dist = {0: 1.0}
        for prof in att_profiles[k:]:
            nxt = {}
            for u, pu in enumerate(pmf(2 if r == 1 else 1, p_att[prof])):
                for tot, pt in dist.items():
                    nxt[tot + u] = nxt.get(tot + u, 0.0) + pt * pu
            dist = nxt
        out = {}
        for u, pu in dist.items():
            d1 = max(d - u, 0)
            # I3: living defenders (the last d1 in casualty order) strike in listed order
            front = att_profiles[k] if k < len(att_profiles) else "A"
            states = {(k, j): 1.0}
            for g in def_groups[len(def_groups) - d1:]:
                nxt = {}
                for y, py in enumerate(pmf(def_attacks[g], p_def[(g, front)])):
                    for a, pa in states.items():
                        for _ in range(y):
                            a = take_wound(a, 4 if g == "g1" else 6)
                        nxt[a] = nxt.get(a, 0.0) + pa * py
                states = nxt
            for a, pa in states.items():
                out[(a, d1)] = out.get((a, d1), 0.0) + pu * pa
        return out

    final = absorb(step, ((0, 0), len(def_groups)), lambda s: s[0][0] == len(att_profiles) or s[1] == 0)
    a = dict(count=1, ws=3, s=3, t=3, i=4, w=1, a=1, save=5)
    b = dict(count=1, ws=4, s=4, t=3, i=4, w=2, a=1, save=4)
    g1 = dict(count=1, ws=3, s=4, t=3, i=3, w=1, a=2, save=5)
    g2 = dict(count=1, ws=3, s=6, t=3, i=3, w=1, a=1, save=5)
    att = squad("att", *([a, b] * copies_a))
    dfn = squad("dfn", *([g1, g2] * copies_d))
    _, plan = sim.build_matchup(rs, att, dfn, budget="none")
    # merged: the attackers strike as two pools (one per chance), the defenders' instant-death and plain
    # wounds keep their listed order (neighbours only)
    assert [len(p.groups) for p in plan.steps_later[0]] == [copies_a, copies_a]
    assert len(plan.steps_later[1]) == 2 * copies_d
    wounds_of = [0] + list(np.cumsum([att_w[p] for p in att_profiles]))
    for fast, n in ((True, 200_000), (False, 150_000)):
        out = kernel(att, dfn, n, 24, "end", fast)
        n_att = len(att_profiles)
        check_chain(out, final, lambda s: 1 if s[0][0] < n_att else 2 if s[1] > 0 else 0,
                    lambda s: s[0][0], f"many groups fast={fast}")
        dmg = np.zeros(wounds_of[-1] + 1)
        for (s, r), p in final.items():
            dmg[wounds_of[s[0][0]] + s[0][1]] += p
        assert_distribution(np.bincount(out.damage_to_attacker, minlength=len(dmg)), dmg,
                            what=f"many groups fast={fast}: wounds lost by the attacker")
