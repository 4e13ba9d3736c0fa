"""Army lists (issue 40): the kernels of mixed sides against the reference, each other and exact answers.

* ``warband``: the compiled loop of mixed sides (``_mixed_loop.py``) and the vectorised
  kernel (``mixed_kernel.py``) against the scalar reference, in distribution (two-sample
  chi-square on every outcome field), under both pairings, both re-engaging rules and the
  small-group switches; and against an exact composition of one round of a two-profile
  side against one warrior, built here from the exact one-attack batch tables.
* ``duel``: the compiled loop of mixed sides (``duel/_mixed_loop.py``) and the vectorised
  kernel (``duel/mixed.py``) against the reference, and against an exact answer derived by
  hand below (a side of two profiles against one model, one phase).
* A list with one unit swapped for a strictly stronger one at the same points wins more.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import sim
from sim.rulesets.duel import RULESET as DU
from sim.rulesets.warband import RULESET as WB
from sim.testing import RandomDice
from tests.helpers import assert_distribution, assert_same_distribution

FIELDS = ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender", "rounds",
          "capped")


def _reference(rs, plan, n: int, seed: int, rounds) -> dict[str, np.ndarray]:
    dice = RandomDice(np.random.default_rng(seed))
    outs = [rs.resolve_one(plan, dice, rounds, 50) for _ in range(n)]
    res = {f: np.bincount([int(getattr(o, f)) for o in outs]) for f in FIELDS}
    for e in outs[0].extras:
        res[e] = np.bincount([int(o.extras[e]) for o in outs])
    return res


def _kernel(rs, plan, n: int, seed: int, rounds) -> dict[str, np.ndarray]:
    o = rs.simulate(plan, n, np.random.default_rng(seed), rounds, 50)
    res = {f: np.bincount(getattr(o, f).astype(np.int64)) for f in FIELDS}
    for e, v in o.extras.items():
        res[e] = np.bincount(v)
    return res


def _same(a, b, what):
    for f in a:
        assert_same_distribution(a[f], b[f], what=f"{what}: {f}")


WARBAND = [
    # (attacker, defender, options, rounds): the compiled loop plays the first four
    ({"Mercenary Captain": 1, "Champion": 2, "Mercenary Warrior": 3}, {"Orc Boy": 3, "Swordsman": 3}, {}, "end"),
    ({"Ogre Brute": 1, "Youngblood": 2}, {"Elf Blademaster": 2, "Zealot": 1}, {}, "end"),
    ({"Mercenary Captain": 1, "Zealot": 3}, {"Dwarf Clansman": 1, "Youngblood": 2}, {"pairing": "random"}, "end"),
    ({"Spearman": 2, "Pit Fighter": 1}, {"Skaven Verminkin": 2, "Champion": 1}, {"reengage": "every_round"}, 4),
    # the switches: the vectorised kernel plays
    ({"Mercenary Warrior": 2, "Zealot": 2}, {"Youngblood": 3, "Swordsman": 1}, {"all_alone": True, "rout": True},
     "end"),
]


@pytest.mark.parametrize("att, dfn, options, rounds", WARBAND)
def test_warband_mixed_kernels_match_the_reference(att, dfn, options, rounds):
    plan = sim.build_matchup("warband", att, dfn, options=options, budget="none")[1]
    switches = options.get("all_alone") or options.get("rout")
    assert (plan.kernel.loop is None) == bool(switches)
    ref = _reference(WB, plan, 2_500, 1, rounds)
    _same(_kernel(WB, plan, 60_000, 2, rounds), ref, f"{att} v {dfn} {options}: kernel v reference")
    if not switches:
        _same(_kernel(WB, WB.with_engine(plan, "numpy"), 60_000, 3, rounds), ref,
              f"{att} v {dfn} {options}: vectorised v reference")


@pytest.mark.slow
@pytest.mark.parametrize("att, dfn, options, rounds", WARBAND[:4] + [
    ({"Mercenary Warrior": 3, "Youngblood": 3}, {"Youngblood": 3, "Mercenary Warrior": 3}, {}, "end"),
    ({"Elf Blademaster": 2, "Champion": 2, "Youngblood": 2}, {"Orc Boy": 4, "Pit Fighter": 2}, {"pairing": "random"},
     "end"),
])
def test_warband_compiled_and_vectorised_mixed_kernels_agree(att, dfn, options, rounds):
    plan = sim.build_matchup("warband", att, dfn, options=options, budget="none")[1]
    _same(_kernel(WB, plan, 200_000, 4, rounds), _kernel(WB, WB.with_engine(plan, "numpy"), 200_000, 5, rounds),
          f"{att} v {dfn} {options}")


def _warband_exact_one_round():
    """One round of a charging side {Elf Blademaster (I 6), Zealot (I 3)} against one Orc Boy (I 2), composed
    exactly.

    Both attackers touch the Orc (round-robin of 2 onto 1). The Elf strikes first (strike first class,
    higher Initiative), then the Zealot (its flail at +2 Strength in round 1) on the Orc whatever state
    it is in (stunned: out of action; knocked down: every blow hits, an unsaved wound puts it out of
    action), then the Orc, if standing, on the first attacker in its line (the Elf, who may parry with
    his sword). Each batch is the exact one-attack table (``single.batch_distribution``); the
    composition is this test's.
    """
    from sim.rulesets.warband.plan import _blows_of, _side
    from sim.rulesets.warband.fused import _profile
    from sim.rulesets.warband.single import batch_distribution
    from sim.rulesets.warband.tables import KNOCKED_DOWN, OUT_OF_ACTION, STANDING, STUNNED

    ros = sim.default_roster("warband")
    cap, zea, orc = ros["Elf Blademaster"], ros["Zealot"], ros["Orc Boy"]

    def table(att, dfn, striker):
        blows = _blows_of(_profile(att), _profile(dfn), True, False)[striker][1]      # round 1
        target = _side(dfn if striker == 0 else att, striker == 1, True)
        return blows, target

    def rows(att, dfn, striker):
        blows, t = table(att, dfn, striker)
        assert blows.n == 1, "one attack a batch keeps this composition short"
        return batch_distribution(blows, t.w, t.parry_reroll, t.step_aside, t.helmet, t.jump_up), t.w

    cap_on_orc, W = rows(cap, orc, 0)
    zea_on_orc, _ = rows(zea, orc, 0)
    orc_on_cap, Wc = rows(cap, orc, 1)

    def strike(dist, w, status, W, may_parry=True):
        if status == STUNNED:
            return {(0, OUT_OF_ACTION): 1.0}
        if status == OUT_OF_ACTION:
            return {(w, status): 1.0}
        row = 2 * (W + 1) if status == KNOCKED_DOWN else w + (W + 1) * may_parry
        out = {}
        for (nw, ns, _), p in dist[row].items():
            out[(nw, ns)] = out.get((nw, ns), 0.0) + p
        return out

    final = {}
    for (w1, s1), p1 in strike(cap_on_orc, W, STANDING, W).items():
        for (w2, s2), p2 in strike(zea_on_orc, w1, s1, W).items():
            orc_up = s2 == STANDING
            hits = strike(orc_on_cap, Wc, STANDING, Wc) if orc_up else {(Wc, STANDING): 1.0}
            for (wc, sc), p3 in hits.items():
                key = (wc, sc, w2, s2)
                final[key] = final.get(key, 0.0) + p1 * p2 * p3
    # winner (the Zealot is never struck): the Orc all out of action -> attacker; else fewer out of action,
    # then fewer wounds lost, else a draw
    winner = np.zeros(3)
    for (wc, sc, wo, so), p in final.items():
        ooa_a, ooa_d = int(sc == OUT_OF_ACTION), int(so == OUT_OF_ACTION)
        lost_a, lost_d = Wc - wc, W - wo
        if ooa_d == 1:
            w = 1
        elif ooa_a != ooa_d:
            w = 1 if ooa_a < ooa_d else 2
        elif lost_a != lost_d:
            w = 1 if lost_a < lost_d else 2
        else:
            w = 0
        winner[w] += p
    cat_d = np.zeros(3)
    for (wc, sc, wo, so), p in final.items():
        cat_d[0 if so == OUT_OF_ACTION else 2 if so == STANDING else 1] += p
    return winner, cat_d


def test_warband_one_round_of_a_mixed_side_is_exact():
    winner, cat_d = _warband_exact_one_round()
    assert abs(winner.sum() - 1) < 1e-12
    plan = sim.build_matchup("warband", {"Elf Blademaster": 1, "Zealot": 1}, {"Orc Boy": 1}, budget="none")[1]
    for p in (plan, WB.with_engine(plan, "numpy")):
        o = WB.simulate(p, 200_000, np.random.default_rng(17), 1, 50)
        assert_distribution(np.bincount(o.winner, minlength=3), winner, what="warband mixed one round: winner")
        assert_distribution(np.bincount(o.category_defender, minlength=3), cat_d,
                            what="warband mixed one round: defender's state")


DUEL_ROSTER = """
ruleset = "duel"
[[unit]]
name = "A"
wounds = 1
toughness = 4
ws = 3
strength = 3
weapon = { strength = 3, damage = 1 }
points = 10
[[unit]]
name = "B"
wounds = 1
toughness = 3
ws = 4
strength = 5
weapon = { strength = 5, damage = 1 }
points = 10
[[unit]]
name = "D"
wounds = 1
toughness = 5
ws = 3
strength = 3
weapon = { strength = 3, damage = 1 }
points = 20
"""


def test_duel_one_phase_of_a_mixed_side_is_exact(tmp_path):
    """{A, B} (one wound each) against D, one combat phase, derived by hand.

    Combat 0 holds all three. The side rolls two dice (keeps the best), D one; a tie goes to the side
    with the higher best WS (B's 4 against D's 3): the side wins with P(best of 2 >= D) = 161/216.
    Its hits: A's (Strength 3 against Toughness 5: a check at T' = 2, failed 4/6, costing D its wound),
    then B's, instant death (Strength 5 >= 5), so D always dies, misted when A's check was passed (2/6).
    D wins 55/216: its one hit goes to the model with the fewest wounds, the first listed on a tie (A):
    Strength 3 against Toughness 4, failed 5/6 (A dies, the side lost half its wounds: D wins), else
    nobody lost anything: a draw.
    """
    p = tmp_path / "d.toml"
    p.write_text(DUEL_ROSTER, encoding="utf-8")
    ros = sim.load_roster(p)
    win_a = Fraction(161, 216)
    win_d = Fraction(55, 216) * Fraction(5, 6)
    draw = Fraction(55, 216) * Fraction(1, 6)
    assert win_a + win_d + draw == 1
    misted_d = win_a * Fraction(2, 6)
    plan = sim.build_matchup("duel", {"A": 1, "B": 1}, "D", roster=ros, budget="none")[1]
    for p in (plan, DU.with_engine(plan, "numpy")):
        o = DU.simulate(p, 300_000, np.random.default_rng(23), 1, 50)
        assert_distribution(np.bincount(o.winner, minlength=3), [float(draw), float(win_a), float(win_d)],
                            what=f"duel mixed one phase ({p.engine}): winner")
        assert_distribution(np.bincount(o.extras["misted_defender"], minlength=2),
                            [1 - float(misted_d), float(misted_d)], what=f"duel mixed one phase ({p.engine}): misted")
    ref = _reference(DU, plan, 20_000, 4, 1)
    assert_distribution(ref["winner"], [float(draw), float(win_a), float(win_d)], what="the reference: winner")


DUEL = [
    ({"Knight": 1, "Sellsword": 2}, {"Goblin Mob": 1, "Assassin": 1}, {}, {}, "end"),
    ({"Ogre": 1, "Militia": 1}, {"Duellist": 1, "Brawler": 2}, {}, {}, "end"),
    ({"Ironclad": 1, "Goblin Mob": 1}, {"Reaver": 2, "Assassin": 1}, {"hit_assignment": "spread"}, {}, 3),
    ({"Knight": 1, "Sellsword": 2}, {"Goblin Mob": 1, "Assassin": 1}, {"pairing": "random", "dual_wield": "both"}, {},
     "end"),
    ({"Duellist": 2, "Militia": 1}, {"Reaver": 1, "Brawler": 1}, {"toughness_die": "2d6"},
     {"defender": {"space": 1}}, "end"),
]


@pytest.mark.parametrize("att, dfn, options, states, rounds", DUEL)
def test_duel_mixed_kernel_matches_the_reference(att, dfn, options, states, rounds):
    plan = sim.build_matchup("duel", att, dfn, options=options, states=states, budget="none")[1]
    ref = _reference(DU, plan, 3_000, 1, rounds)
    _same(_kernel(DU, plan, 100_000, 2, rounds), ref, f"{att} v {dfn} {options} {states}: compiled v reference")
    _same(_kernel(DU, DU.with_engine(plan, "numpy"), 40_000, 3, rounds), ref,
          f"{att} v {dfn} {options} {states}: vectorised v reference")


@pytest.mark.slow
@pytest.mark.parametrize("att, dfn, options, states, rounds", DUEL + [
    ({"Goblin Mob": 3, "Assassin": 1}, {"Brawler": 2, "Goblin Mob": 2}, {}, {"attacker": {"space": 0}}, "end"),
])
def test_duel_compiled_and_vectorised_mixed_kernels_agree(att, dfn, options, states, rounds):
    plan = sim.build_matchup("duel", att, dfn, options=options, states=states, budget="none")[1]
    _same(_kernel(DU, plan, 200_000, 4, rounds), _kernel(DU, DU.with_engine(plan, "numpy"), 200_000, 5, rounds),
          f"{att} v {dfn} {options} {states}")


@pytest.mark.parametrize("ruleset, keep, weak, strong, field", [
    ("warband", {"Mercenary Warrior": 3}, "Youngblood", "ws", 2),
    ("duel", {"Sellsword": 2}, "Brawler", "toughness", 2),
])
def test_a_strictly_stronger_unit_at_the_same_points_wins_more(ruleset, keep, weak, strong, field):
    """Swap one unit of a list for a copy of it with a better stat at the same points: over many seeds the
    swapped list scores more against the same opponent, in nearly every seed and in total."""
    import dataclasses

    ros = sim.default_roster(ruleset)
    better = dataclasses.replace(ros[weak], name=f"{weak} plus", **{strong: getattr(ros[weak], strong) + field})
    ros = ros.with_unit(better)
    opponent = {"warband": {"Orc Boy": 4}, "duel": {"Knight": 1, "Goblin Mob": 1}}[ruleset]
    base = {**keep, weak: 1}
    swapped = {**keep, f"{weak} plus": 1}
    gains, wins = [], 0
    for seed in range(20):
        a = sim.fight(ruleset, base, opponent, roster=ros, budget="none", trials=8_000, seed=seed, method="mc")
        b = sim.fight(ruleset, swapped, opponent, roster=ros, budget="none", trials=8_000, seed=seed, method="mc")
        gain = b.win["attacker"] - a.win["attacker"]
        gains.append(gain)
        wins += gain > 0
    assert wins >= 17, gains
    assert np.mean(gains) > 4 * np.std(gains) / np.sqrt(len(gains))
