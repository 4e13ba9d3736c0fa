"""warband: Monte Carlo against exact values derived here from the rules, and kernel against reference.

The exact values are computed in this file from the rules text (to-hit and
to-wound charts, critical and injury tables written out by hand), never taken
from the ruleset's code: first-phase probabilities by enumeration with
``Fraction``, and 1 v 1 fights to the end by an absorbing Markov chain over
(wounds, status) states propagated round by round.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

import sim
from sim.dice import RandomDice
from sim.errors import Where
from sim.outcomes import Outcomes
from sim.rulesets.warband import RULESET as WB
from tests.helpers import assert_distribution, assert_mean, assert_proportion, assert_same_distribution

pytestmark = pytest.mark.statistical


def W(**kw):
    base = dict(name="w", ws=3, s=3, t=3, i=3, w=1, a=1, weapons=["axe"])
    base.update(kw)
    return WB.parse_unit(base, Where("test", base["name"]))


def kernel(att, dfn, n, rounds="end", seed=11, states=None, max_rounds=50):
    plan = sim.build_matchup(WB, att, dfn, states=states, budget="none")[1]
    return WB.simulate(plan, n, np.random.default_rng(seed), rounds, max_rounds).expand()


def reference(att, dfn, n, rounds="end", seed=12, states=None, max_rounds=50):
    plan = sim.build_matchup(WB, att, dfn, states=states, budget="none")[1]
    dice = RandomDice(np.random.default_rng(seed))
    return Outcomes.stack([WB.resolve_one(plan, dice, rounds, max_rounds) for _ in range(n)])


# ------------------------------------------------------------ hand-written rules for the oracles
SIXTH = F(1, 6)


def injury_max(k: int, mod: int, concussion: bool) -> dict[str, F]:
    """Kept (highest) result of k injury rolls of d6 + mod (table: 1-2 KD, 3-4 stunned, 5-6 OOA;
    concussion: 1 KD, 2-4 stunned)."""
    kd_top = 1 if concussion else 2
    p_kd = F(max(0, min(6, kd_top - mod)), 6)          # a roll showing KD
    p_not_ooa = F(max(0, min(6, 4 - mod)), 6)          # a roll below 5 after the modifier
    ooa = 1 - p_not_ooa ** k
    kd = p_kd ** k
    return {"KD": kd, "ST": 1 - ooa - kd, "OOA": ooa}


# ------------------------------------------------------------------------- first phase, exact
def first_batch_categories(n_att: int, p_hit: F, need_wound: int, save: int, w: int) -> dict[str, F]:
    """Defender's state after one charging batch of ``n_att`` axe attacks (no parry, no concussion).

    Each attack: hit with p_hit; to-wound die d: wounds if d >= need_wound; the first
    natural 6 (need < 6) is critical: d6 1-2 vital part (save, 2 wounds), 3-4 exposed
    (2 wounds, no save), 5-6 master strike (2 wounds, no save, +2 injury).
    """
    p_save = F(max(0, 7 - save), 6) if save <= 6 else F(0)
    out = {"UP": F(0), "KD": F(0), "ST": F(0), "OOA": F(0)}
    # enumerate per attack: hit?, wound die, and one critical die
    for hits in itertools.product([True, False], repeat=n_att):
        ph = np.prod([p_hit if h else 1 - p_hit for h in hits], dtype=object)
        n_hits = sum(hits)
        for wdice in itertools.product(range(1, 7), repeat=n_hits):
            for cdie in range(1, 7):
                for saves in itertools.product([True, False], repeat=n_hits):
                    p = ph * SIXTH ** n_hits * SIXTH
                    crit_done = False
                    wound_list = []   # injury modifier per wound
                    for d, sv in zip(wdice, saves):
                        if d < need_wound:
                            p *= 1 if sv else 0      # no save roll: count the pair once
                            continue
                        if d == 6 and need_wound < 6 and not crit_done:
                            crit_done = True
                            kind = "vital" if cdie <= 2 else "exposed" if cdie <= 4 else "master"
                            if kind == "vital":
                                p *= p_save if sv else 1 - p_save
                                if sv:
                                    continue
                            else:
                                p *= 1 if sv else 0
                            wound_list += [2 if kind == "master" else 0] * 2
                        else:
                            p *= p_save if sv else 1 - p_save
                            if not sv:
                                wound_list.append(0)
                    if p == 0:
                        continue
                    left = w
                    rolls = []
                    for mod in wound_list:
                        if left > 0:
                            left -= 1
                            if left > 0:
                                continue
                        rolls.append(mod)
                    if not rolls:
                        out["UP"] += p
                        continue
                    # highest of rolls with (possibly) different modifiers
                    p_le = {r: F(1) for r in ("KD", "NOT_OOA")}
                    for mod in rolls:
                        p_le["KD"] *= F(max(0, min(6, 2 - mod)), 6)
                        p_le["NOT_OOA"] *= F(max(0, min(6, 4 - mod)), 6)
                    out["KD"] += p * p_le["KD"]
                    out["ST"] += p * (p_le["NOT_OOA"] - p_le["KD"])
                    out["OOA"] += p * (1 - p_le["NOT_OOA"])
    assert sum(out.values()) == 1
    return out


@pytest.mark.parametrize("att, dfn, n_att, p_hit, need_wound, save, w", [
    # WS4 vs WS3 hits on 3+; S4 vs T3 wounds on 3+; light armour 6+ worsened by S4 and the axe: no save
    (W(ws=4, s=4, a=2), W(armour="light"), 2, F(4, 6), 3, 8, 1),
    # WS3 vs WS3 4+; S3 vs T4 5+; heavy armour + shield 4+, axe: 5+; two wounds
    (W(), W(t=4, w=2, armour="heavy", shield=True), 1, F(3, 6), 5, 5, 2),
    # WS2 vs WS5: 5+; S3 vs T3 4+; two one-handed axes: 2 attacks; W1
    (W(ws=2, weapons=["axe", "axe"]), W(ws=5, armour="light"), 2, F(2, 6), 4, 7, 1),
])
def test_first_phase_defender_state_exact(att, dfn, n_att, p_hit, need_wound, save, w):
    exact = first_batch_categories(n_att, p_hit, need_wound, save, w)
    n = 200_000
    out = kernel(att, dfn, n, rounds=1)
    # category after round 1: 0 out of action, 1 down (knocked down or stunned), 2 standing
    counts = np.bincount(out.category_defender, minlength=3)
    assert_distribution(counts, [float(exact["OOA"]), float(exact["KD"] + exact["ST"]), float(exact["UP"])],
                        what="defender after the charge")
    ref = reference(att, dfn, 20_000, rounds=1)
    assert_proportion(int((ref.category_defender == 0).sum()), 20_000, float(exact["OOA"]), what="reference OOA")


def test_parry_with_sword_and_buckler_exact():
    # WS3 vs WS3: hit on 4+; each hit die v < 6 is parried unless both parry dice are <= v
    p_unparried = sum(SIXTH * F(v, 6) ** 2 for v in (4, 5)) + SIXTH
    p_wounded = p_unparried * F(1, 2)                      # S3 vs T3: 4+
    out = kernel(W(), W(weapons=["sword"], buckler=True), 200_000, rounds=1)
    assert_proportion(int((out.category_defender == 2).sum()), 200_000, float(1 - p_wounded), what="parry")


# ------------------------------------------------------------------ the Markov chain, 1 v 1
UP, KD, ST, OOA = "UP", "KD", "ST", "OOA"


class Side:
    """Hand-derived numbers of a simple warrior (one attack, one weapon)."""

    def __init__(self, p_hit, need_wound, p_save, w, i, concussion=False, helmet=False):
        self.p_hit, self.need_wound, self.p_save = F(p_hit), need_wound, F(p_save)
        self.w, self.i, self.concussion, self.helmet = w, i, concussion, helmet


def batch(s: Side, t: Side, state):
    """Distribution of the target's state after one attack of ``s``; state = (status, wounds)."""
    status, w = state
    if status == ST:
        return {(OOA, 0): F(1)}
    p_wound_die = F(7 - s.need_wound, 6) if s.need_wound <= 6 else F(0)
    p_six = SIXTH if s.need_wound < 6 else F(0)              # a critical
    p_plain = p_wound_die - p_six                            # a wound that is not critical
    if status == KD:                                         # auto-hit; any unsaved wound: out of action
        p = p_plain * (1 - t.p_save) + p_six * (F(1, 3) * (1 - t.p_save) + F(2, 3))
        return {(OOA, 0): p, (KD, 0): 1 - p}
    out: dict = {}

    def add(k, p):
        out[k] = out.get(k, 0) + p

    # (probability, wounds, injury modifier) of the blow
    cases = [(1 - s.p_hit + s.p_hit * (1 - p_wound_die), 0, 0),
             (s.p_hit * p_plain * t.p_save, 0, 0),
             (s.p_hit * p_plain * (1 - t.p_save), 1, 0),
             (s.p_hit * p_six * F(1, 3) * t.p_save, 0, 0),
             (s.p_hit * p_six * F(1, 3) * (1 - t.p_save), 2, 0),
             (s.p_hit * p_six * F(1, 3), 2, 0),
             (s.p_hit * p_six * F(1, 3), 2, 2)]
    for p, d, mod in cases:
        if p == 0:
            continue
        if d == 0:
            add((UP, w), p)
            continue
        if w - d > 0:
            add((UP, w - d), p)
            continue
        k = d - max(w, 1) + 1
        res = injury_max(k, mod, s.concussion)
        add((OOA, 0), p * res["OOA"])
        add((KD, 0), p * res["KD"])
        if t.helmet:
            add((KD, 0), p * res["ST"] / 2)
            add((ST, 0), p * res["ST"] / 2)
        else:
            add((ST, 0), p * res["ST"])
    return out


def markov_fight(att: Side, dfn: Side, max_rounds: int = 50):
    """Round-by-round propagation of the exact joint distribution; returns
    (P(attacker wins), P(defender wins), P(capped), rounds distribution, E[damage to defender])."""
    # the per-batch numbers are exact fractions; the propagation runs in floats (error ~1e-15)
    # because fraction denominators grow without bound over 50 rounds
    tables: dict = {}
    dist = {((UP, att.w), (UP, dfn.w)): 1.0}
    p_a = p_d = 0.0
    rounds = [0.0] * (max_rounds + 1)
    dmg_d = 0.0
    for r in range(1, max_rounds + 1):
        new: dict = {}
        for (sa, sd), p in dist.items():
            states = [sa, sd]
            stood = [False, False]
            act = 0 if r % 2 == 1 else 1
            if states[act][0] == KD:
                states[act], stood[act] = (UP, 0), True
            elif states[act][0] == ST:
                states[act] = (KD, 0)
            # order: charge in round 1; stood up strikes last; else Initiative, ties 1/2
            if r == 1:
                orders = [((0, 1), 1.0)]
            elif stood[0] != stood[1]:
                orders = [((1, 0) if stood[0] else (0, 1), 1.0)]
            elif att.i != dfn.i:
                orders = [((0, 1) if att.i > dfn.i else (1, 0), 1.0)]
            else:
                orders = [((0, 1), 0.5), ((1, 0), 0.5)]
            sides = (att, dfn)
            for order, po in orders:
                branch = {tuple(states): p * po}
                for striker in order:
                    nxt: dict = {}
                    for st, q in branch.items():
                        if st[striker][0] != UP or st[1 - striker][0] == OOA:
                            nxt[st] = nxt.get(st, 0) + q
                            continue
                        key = (striker, st[1 - striker])
                        if key not in tables:
                            tables[key] = {k: float(v) for k, v in
                                           batch(sides[striker], sides[1 - striker], st[1 - striker]).items()}
                        for tgt, q2 in tables[key].items():
                            s2 = list(st)
                            s2[1 - striker] = tgt
                            nxt[tuple(s2)] = nxt.get(tuple(s2), 0) + q * q2
                    branch = nxt
                for st, q in branch.items():
                    new[st] = new.get(st, 0) + q
        dist = {}
        for (sa, sd), q in new.items():
            if sd[0] == OOA:
                p_a += q
                rounds[r] += q
                dmg_d += q * dfn.w
            elif sa[0] == OOA:
                p_d += q
                rounds[r] += q
                dmg_d += q * (dfn.w - sd[1])
            else:
                dist[(sa, sd)] = q
    capped = sum(dist.values(), 0.0)
    rounds[max_rounds] += capped
    dmg_d += sum((q * (dfn.w - sd[1]) for (sa, sd), q in dist.items()), 0.0)
    return p_a, p_d, capped, rounds, dmg_d


CHAINS = [
    # WS4 vs WS3: 3+; S3 vs T3: 4+; no armour; defender W2, I4 (strikes first after round 1)
    (W(ws=4, i=3), W(w=2, i=4), Side(F(4, 6), 4, 0, 1, 3), Side(F(3, 6), 4, 0, 2, 4)),
    # club (concussion) vs a helmeted, light-armoured (axe: no save) W1 target; equal I: roll-offs
    (W(weapons=["club"]), W(helmet=True, armour="light"), Side(F(3, 6), 4, 0, 1, 3, concussion=True),
     Side(F(3, 6), 4, F(1, 6), 1, 3, helmet=True)),
    # S3+1 (mighty blow) vs T4: 4+, no save against the axe at S4; a dagger-wielding S4 W3 brute
    # (3+ to wound) against heavy armour: 5+, +1 for S4, -1 for the dagger: 5+
    (W(s=3, skills=["mighty_blow"], armour="heavy"), W(t=4, s=4, w=3, i=2, weapons=["dagger"]),
     Side(F(3, 6), 4, F(2, 6), 1, 3), Side(F(3, 6), 3, 0, 3, 2)),
    # helmets and heavy armour against a fast defender: WS4 vs WS3 3+, S4 vs T3 3+; heavy armour
    # 5+ is 6+ against the S4 club and 6+ against the axe
    (W(ws=4, s=4, i=1, armour="heavy", helmet=True, weapons=["club"]), W(i=6, armour="heavy", helmet=True),
     Side(F(4, 6), 3, F(1, 6), 1, 1, concussion=True, helmet=True), Side(F(3, 6), 4, F(1, 6), 1, 6, helmet=True)),
]


@pytest.mark.parametrize("att, dfn, sa, sd", CHAINS)
def test_one_on_one_to_the_end_matches_the_markov_chain(att, dfn, sa, sd):
    p_a, p_d, capped, rounds, dmg_d = markov_fight(sa, sd)
    n = 200_000
    out = kernel(att, dfn, n)
    assert abs(p_a + p_d + capped - 1) < 1e-12
    assert_proportion(int((out.winner == 1).sum()), n, float(p_a), what="attacker wins")
    assert_proportion(int((out.winner == 2).sum()), n, float(p_d), what="defender wins")
    probs = np.array([float(x) for x in rounds])
    assert_distribution(np.bincount(out.rounds, minlength=len(probs)), probs / probs.sum(), what="rounds")
    # damage to the defender: mean against the exact mean (sd bounded by W)
    assert_mean(float(out.damage_to_defender.mean()), float(dmg_d), sd.w / 2, n, what="damage to defender")
    ref = reference(att, dfn, 20_000)
    assert_proportion(int((ref.winner == 1).sum()), 20_000, float(p_a), what="reference attacker wins")


# ------------------------------------------------------------------------ kernel vs reference
GRID = [
    ("Mercenary Captain", "Swordsman", {}, "end", None),
    ("Champion", "Ogre Brute", {}, "end", None),
    ("Champion", "Zealot", {}, "end", {"attacker": {"i": 6}}),          # double-handed: last despite I 6
    ("Pit Fighter", "Dwarf Clansman", {}, 3, None),
    ("Elf Blademaster", "Zealot", {"attacker": {"charging": False}}, "end", None),
    ("Skaven Verminkin", "Spearman", {}, 2, None),
    ("Orc Boy", "Youngbloods", {}, "end", None),                     # 1 v 3
    ("Swordsman", "Orc Boy", {}, "end", {"attacker": {"count": 2}}),  # 2 v 1
    ("Youngblood", "Mercenary Warrior", {}, "end", {"attacker": {"count": 3}, "defender": {"count": 2}}),  # 3 v 2
    ("Ogre Brute", "Mercenary Captain", {}, 4, {"attacker": {"count": 2}, "defender": {"count": 3}}),
]


@pytest.mark.parametrize("att, dfn, states, rounds, over", GRID)
def test_kernel_matches_reference_in_distribution(att, dfn, states, rounds, over):
    plan = sim.build_matchup(WB, att, dfn, states=states, overrides=over, budget="none")[1]
    k = WB.simulate(plan, 100_000, np.random.default_rng(21), rounds, 50).expand()
    dice = RandomDice(np.random.default_rng(22))
    r = Outcomes.stack([WB.resolve_one(plan, dice, rounds, 50) for _ in range(8_000)])
    for f in ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender", "rounds"):
        assert_same_distribution(np.bincount(getattr(k, f)), np.bincount(getattr(r, f)), what=f"{att} v {dfn}: {f}")
    for e in ("out_of_action_attacker", "out_of_action_defender"):
        assert_same_distribution(np.bincount(k.extras[e]), np.bincount(r.extras[e]), what=e)


@pytest.mark.parametrize("att, dfn", [
    (W(ws=4, skills=["web_of_steel", "strike_to_injure"]), W(weapons=["sword"], buckler=True, helmet=True, w=2)),
    (W(count=2, weapons=["club"]), W(count=2, weapons=["sword"], skills=["jump_up", "step_aside"], armour="light")),
])
def test_one_attack_tables_match_the_dice_path(att, dfn):
    """The precomputed one-attack outcome tables against the kernel's general dice-rolling batch."""
    from dataclasses import replace

    plan = sim.build_matchup(WB, att, dfn, budget="none")[1]
    kp = plan.kernel
    dice_plan = replace(plan, kernel=replace(kp, blows=tuple(tuple(replace(b, single=None) for b in pair)
                                                             for pair in kp.blows)))
    assert kp.blows[0][0].single is not None
    a = WB.simulate(plan, 150_000, np.random.default_rng(31), "end", 50)
    b = WB.simulate(dice_plan, 150_000, np.random.default_rng(32), "end", 50)
    for f in ("winner", "damage_to_attacker", "damage_to_defender", "rounds"):
        assert_same_distribution(np.bincount(getattr(a, f)), np.bincount(getattr(b, f)), what=f)


def test_groups_first_round_exact():
    """3 v 2 charge, plain W1 axemen (WS3 S3 T3, no armour): A1 and A3 fight D1, A2 fights D2.

    D2 takes one batch. D1 takes two: whatever the first leaves stunned is out of action, a
    knocked-down D1 is auto-hit (out of action on a wound), a standing one takes a fresh batch.
    """
    s = Side(F(3, 6), 4, 0, 1, 3)
    one = batch(s, s, (UP, 1))
    p1 = {k[0]: v for k, v in one.items()}
    p_ooa_single = p1[OOA]
    p_ooa_kd = batch(s, s, (KD, 0))[(OOA, 0)]
    p_ooa_double = p1[OOA] + p1[ST] + p1[KD] * p_ooa_kd + p1[UP] * p_ooa_single
    assert p1[UP] + p1[KD] + p1[ST] + p1[OOA] == 1
    exact = [(1 - p_ooa_double) * (1 - p_ooa_single),
             p_ooa_double * (1 - p_ooa_single) + (1 - p_ooa_double) * p_ooa_single,
             p_ooa_double * p_ooa_single]
    n = 200_000
    out = kernel(W(count=3), W(count=2), n, rounds=1)
    assert_distribution(np.bincount(out.extras["out_of_action_defender"], minlength=3), [float(x) for x in exact],
                        what="defenders out of action after the charge")
    ref = reference(W(count=3), W(count=2), 20_000, rounds=1)
    assert_distribution(np.bincount(ref.extras["out_of_action_defender"], minlength=3), [float(x) for x in exact],
                        what="reference")


def test_kernel_stood_up_warrior_strikes_last():
    """Round 3 (attacker's turn) starting with the fast attacker (I9) knocked down: it stands up
    and strikes after the slow defender. The defender leaves it standing with 1 - 1/2 * 1/2 = 3/4
    (at 0 wounds any wound means an injury); then the attacker takes the W1 defender out of action
    with 1/9 (see test_single_attack_table_matches_hand_values): 1/12 in all (1/9 if it struck first)."""
    from sim.rulesets.warband.kernel import _play_round, _State

    plan = sim.build_matchup(WB, W(i=9), W(i=1), budget="none")[1]
    n = 200_000
    st = _State(plan.kernel, n)
    st.status[:, 0], st.wounds[:, 0] = 2 - 1, 0          # knocked down
    _play_round(plan.kernel, st, 3, np.random.default_rng(41))
    assert_proportion(int((st.status[:, 1] == 3).sum()), n, 1 / 12, what="defender out of action")


# ------------------------------------------------------------ optional small-group rules
def p_2d6_above(ld: int) -> F:
    """P(2D6 > Ld), by enumerating the 36 throws."""
    return F(sum(1 for a, b in itertools.product(range(1, 7), repeat=2) if a + b > ld), 36)


def test_2d6_fail_chances_by_hand():
    assert (p_2d6_above(7), p_2d6_above(8), p_2d6_above(12), p_2d6_above(2)) == (F(15, 36), F(10, 36), 0, F(35, 36))


SWITCH_GRID = [
    # 1 v 2: the lone Youngblood tests All Alone every one of its turns
    ("Youngblood", "Mercenary Warrior", {"all_alone": True}, "end",
     {"attacker": {"ld": 6}, "defender": {"count": 2, "ld": 7}}),
    ("Youngblood", "Mercenary Warrior", {"all_alone": True, "rout": True}, "end",
     {"attacker": {"ld": 6, "w": 2}, "defender": {"count": 2, "ld": 5}}),
    # 3 v 2 with both switches, to the end and for 4 rounds
    ("Youngblood", "Mercenary Warrior", {"all_alone": True, "rout": True}, "end",
     {"attacker": {"count": 3, "ld": 6}, "defender": {"count": 2, "ld": 6}}),
    ("Orc Boy", "Swordsman", {"all_alone": True, "rout": True}, 4,
     {"attacker": {"count": 3, "ld": 5}, "defender": {"count": 2, "ld": 7}}),
]


@pytest.mark.parametrize("att, dfn, options, rounds, over", SWITCH_GRID)
def test_switches_kernel_matches_reference_in_distribution(att, dfn, options, rounds, over):
    plan = sim.build_matchup(WB, att, dfn, options=options, overrides=over, budget="none")[1]
    k = WB.simulate(plan, 100_000, np.random.default_rng(51), rounds, 50).expand()
    dice = RandomDice(np.random.default_rng(52))
    r = Outcomes.stack([WB.resolve_one(plan, dice, rounds, 50) for _ in range(6_000)])
    for f in ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender", "rounds"):
        assert_same_distribution(np.bincount(getattr(k, f)), np.bincount(getattr(r, f)), what=f"{att} v {dfn}: {f}")
    for e in ("out_of_action_attacker", "out_of_action_defender"):
        assert_same_distribution(np.bincount(k.extras[e]), np.bincount(r.extras[e]), what=e)


def test_all_alone_in_a_harmless_fight_is_a_geometric_number_of_own_turns():
    """1 v 2 where nobody can wound (S1 against T5): only the lone charger's All Alone test (Ld 7,
    fails with 15/36, taken in its own turns 1, 3, 5, ...) ends the fight; the fled warrior is out of
    action, so the defenders win in round 2k - 1 with (21/36)^(k-1) 15/36; 25 passes reach the cap."""
    q = p_2d6_above(7)
    probs = np.zeros(51)
    for k in range(1, 26):
        probs[2 * k - 1] = float((1 - q) ** (k - 1) * q)
    probs[50] = float((1 - q) ** 25)
    att, dfn = W(s=1, t=5, ld=7), W(s=1, t=5, count=2, ld=2)
    plan = sim.build_matchup(WB, att, dfn, options={"all_alone": True}, budget="none")[1]
    n = 200_000
    out = WB.simulate(plan, n, np.random.default_rng(61), "end", 50).expand()
    assert_distribution(np.bincount(out.rounds, minlength=51), probs, what="rounds")
    assert_proportion(int((out.winner == 2).sum()), n, float(1 - (1 - q) ** 25), what="defenders win")
    assert out.damage_to_attacker.max() == 0 and (out.category_attacker[out.winner == 2] == 0).all()
    dice = RandomDice(np.random.default_rng(62))
    ref = Outcomes.stack([WB.resolve_one(plan, dice, "end", 50) for _ in range(20_000)])
    assert_proportion(int((ref.rounds == 1).sum()), 20_000, float(q), what="reference: fled in round 1")


def _auto_hit_wounds_exact(w: int, ld: int) -> list[F]:
    """Damage to a lone W``w`` warrior (Ld ``ld``) from one All Alone test against two plain axemen
    (S3 vs T3, no armour): each automatic hit does 0 (to wound 1-3), 1 (4-5) or 2 (6: every
    critical does 2 wounds and none is saved without armour) wounds; damage is capped at W."""
    q = p_2d6_above(ld)
    one = {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}
    dist = [F(0)] * (w + 1)
    dist[0] += 1 - q
    for a, b in itertools.product(one, repeat=2):
        dist[min(a + b, w)] += q * one[a] * one[b]
    return dist


def test_all_alone_automatic_hits_exact_kernel_and_reference():
    from sim.rulesets.warband.kernel import _all_alone, _State
    from sim.rulesets.warband.reference import _Fight

    exact = _auto_hit_wounds_exact(3, 8)
    att, dfn = W(w=3, ld=8), W(count=2, ld=7)
    plan = sim.build_matchup(WB, att, dfn, options={"all_alone": True}, budget="none")[1]
    n = 200_000
    st = _State(plan.kernel, n)
    _all_alone(plan.kernel, st, 0, False, np.random.default_rng(71))
    assert_distribution(np.bincount(3 - st.wounds[:, 0], minlength=4), [float(x) for x in exact], what="kernel")
    assert_proportion(int((st.status[:, 0] == 3).sum()), n, float(p_2d6_above(8)), what="kernel fled")
    dice = RandomDice(np.random.default_rng(72))
    dmg = []
    for _ in range(20_000):
        f = _Fight(att, dfn, True, False, dice, all_alone=True)
        f.all_alone_test(f.att, 3)
        dmg.append(3 - f.att[0].wounds)
    assert_distribution(np.bincount(dmg, minlength=4), [float(x) for x in exact], what="reference")


def test_rout_test_chance_exact_kernel_and_reference():
    """A side of 4 with one warrior out of action (25 %) tests at the start of its turn: 2D6 > Ld 8."""
    from sim.rulesets.warband.kernel import _rout, _State
    from sim.rulesets.warband.reference import Warrior, rout_test

    q = float(p_2d6_above(8))
    plan = sim.build_matchup(WB, W(count=4, ld=8), W(count=2, ld=8), options={"rout": True}, budget="none")[1]
    n = 200_000
    st = _State(plan.kernel, n)
    st.status[:, 0] = 3
    assert_proportion(int(_rout(plan.kernel, st, 3, np.random.default_rng(81)).sum()), n, q, what="kernel")
    assert not _rout(plan.kernel, st, 2, np.random.default_rng(81)).any()       # the defenders: none lost
    dice = RandomDice(np.random.default_rng(82))
    side = [Warrior("attacker", i, W(count=4, ld=8), 1, status=3 if i == 0 else 0) for i in range(4)]
    assert_proportion(sum(rout_test(side, dice) for _ in range(20_000)), 20_000, q, what="reference")
