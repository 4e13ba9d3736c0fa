"""grimdark: charts, squads and their validation, and every rule on scripted dice."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import sim
from sim.dice import ScriptedDice
from sim.errors import InputError, Where
from sim.outcomes import ATTACKER, DEFENDER, DRAW
from sim.roster import load_roster, roster_from_dict
from sim.rulesets.grimdark.chain import chain_tables, round_matrix
from sim.rulesets.grimdark.charts import WOUND_CHART, WS_CHART
from sim.rulesets.grimdark import RULESET as rs

WIPED, SURVIVED = 0, 1


def group(count: int = 1, **kw) -> dict:
    """A group mapping: WS4 S4 T4 I4 W1 A1, no save, unless overridden."""
    base = {"count": count, "ws": 4, "s": 4, "t": 4, "i": 4, "w": 1, "a": 1}
    base.update(kw)
    return base


def squad(name: str, *groups: dict, points: float | None = None):
    data = {"name": name, "models": list(groups)}
    if points is not None:
        data["points"] = points
    return rs.parse_unit(data, Where("test", name))


def fight(att, dfn, dice, rounds=1, max_rounds=50, states=None, options=None, exhausted=True):
    _, plan = sim.build_matchup(rs, att, dfn, states=states, options=options, budget="none")
    script = ScriptedDice(dice)
    out = rs.resolve_one(plan, script, rounds, max_rounds)
    if exhausted:
        script.assert_exhausted()
    return out


# ----------------------------------------------------------------- charts
def test_ws_chart_is_the_rule():
    # 3+ if the attacker's WS is higher; 5+ if the target's is more than double; else 4+.
    for a in range(1, 11):
        for d in range(1, 11):
            want = 3 if a > d else 5 if d > 2 * a else 4
            assert WS_CHART[a - 1][d - 1] == want, (a, d)


def test_wound_chart_is_the_rule():
    for s in range(1, 11):
        for t in range(1, 11):
            if t >= s + 4:
                want = 0
            elif t >= s + 2:
                want = 6
            elif t == s + 1:
                want = 5
            elif t == s:
                want = 4
            elif s == t + 1:
                want = 3
            else:
                want = 2
            assert WOUND_CHART[s - 1][t - 1] == want, (s, t)


# ----------------------------------------------------------------- squads
def test_homogeneous_shorthand_and_groups():
    ros = roster_from_dict({"ruleset": "grimdark", "unit": [
        {"name": "A", "points": 60, "models": 10, "ws": 3, "s": 3, "t": 3, "i": 3, "w": 1, "a": 1, "save": 5},
        {"name": "B", "models": [group(4, two_weapons=True), group(1, name="Sarge", weapon="power_fist", a=2)]},
    ]})
    a, b = ros["A"], ros["B"]
    assert len(a.groups) == 1 and a.groups[0].count == 10 and a.groups[0].save == 5 and a.points == 60
    assert a.groups[0].weapon == "ccw" and a.groups[0].infantry and a.groups[0].invuln is None
    assert [g.count for g in b.groups] == [4, 1] and b.groups[1].weapon == "power_fist" and b.models == 5
    assert b.groups[1].name == "Sarge" and b.points is None
    rows = rs.unit_rows(b)
    assert len(rows) == 2 and rows[1]["group"] == "Sarge" and rows[0]["name"] == "B"
    # unit_to_dict is the inverse of parse_unit
    assert rs.parse_unit(rs.unit_to_dict(b), Where("x")) == b


def test_default_roster_is_valid_and_varied():
    ros = sim.default_roster("grimdark")
    assert 8 <= len(ros) <= 12
    assert all(u.points is not None for u in ros.units.values())
    groups = [g for u in ros.units.values() for g in u.groups]
    assert any(g.weapon == "power_fist" for g in groups) and any(g.weapon == "power_weapon" for g in groups)
    assert any(g.monster for g in groups) and any(g.invuln for g in groups)
    assert any(len(u.groups) > 1 for u in ros.units.values())
    att, dfn, _, rounds = rs.bench_matchup()
    for name in (att, dfn):
        assert len(ros[name].groups) == 1 and ros[name].models == 10 and ros[name].groups[0].w == 1
    assert rounds == "end"


def test_csv_rows_form_squads(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(
        "unit,points,name,count,ws,s,t,i,w,a,save,weapon\n"
        "Assault,140,,4,4,4,4,4,1,1,3,ccw\n"
        "Troop,60,,10,3,3,3,3,1,1,5,\n"
        "Assault,,Sarge,1,4,4,4,4,1,2,3,power_fist\n", encoding="utf-8")
    ros = load_roster(path, "grimdark")
    assert ros.names == ["Assault", "Troop"]
    assert [g.count for g in ros["Assault"].groups] == [4, 1] and ros["Assault"].points == 140
    assert ros["Assault"].groups[1].weapon == "power_fist" and ros["Assault"].groups[1].name == "Sarge"
    assert ros["Troop"].groups[0].save == 5 and ros["Troop"].groups[0].weapon == "ccw"


def test_csv_without_unit_column_is_one_squad_per_row(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("name,points,models,ws,s,t,i,w,a,save\nTroop,60,10,3,3,3,3,1,1,5\nBeast,90,1,3,6,6,2,4,3,\n",
                    encoding="utf-8")
    ros = load_roster(path, "grimdark")
    assert ros.names == ["Troop", "Beast"] and ros["Troop"].models == 10 and ros["Beast"].groups[0].save is None
    assert ros["Beast"].groups[0].name is None and ros["Beast"].points == 90


@pytest.mark.parametrize("text, match", [
    ("unit,points,count,ws,s,t,i,w,a\nX,10,1,4,4,4,4,1,1\nX,20,1,4,4,4,4,1,1\n", "points"),
    ("unit,count,ws,s,t,i,w,a\nX,1,11,4,4,4,1,1\n", "'ws'.*got 11.*1..10"),
    ("unit,count,ws,s,t,i,w,a,save\nX,1,4,4,4,4,1,1,7\n", "'save'.*2..6"),
    ("unit,count,ws,s,t,i,w,a,weapon\nX,1,4,4,4,4,1,1,lance\n", "'weapon'.*ccw, power_weapon, power_fist"),
    ("unit,count,ws,s,t,i,w,a,colour\nX,1,4,4,4,4,1,1,red\n", "'colour'.*(unknown|no such) field"),
])
def test_csv_errors(tmp_path, text, match):
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        load_roster(path, "grimdark")


@pytest.mark.parametrize("unit, match", [
    ({"name": "X", "models": 0, "ws": 4, "s": 4, "t": 4, "i": 4, "w": 1, "a": 1}, "'models'.*1..100"),
    ({"name": "X", "models": 5, "ws": 4, "s": 4, "t": 4, "i": 4, "w": 1}, "'a'.*required"),
    ({"name": "X", "models": 5, "ws": 4, "s": 4, "t": 4, "i": 4, "w": 1, "a": 1, "invuln": 1}, "'invuln'"),
    ({"name": "X", "models": []}, "'models'"),
    ({"name": "X", "ws": 4, "models": [group()]}, "'ws'.*(unknown|no such) field"),
    ({"name": "X", "models": [{**group(), "models": 2}]}, "'models'.*count"),
    ({"name": "X", "models": [group(two_weapons="yes")]}, "group 1.*'two_weapons'.*true or false"),
])
def test_unit_errors(unit, match):
    with pytest.raises(InputError, match=match):
        roster_from_dict({"ruleset": "grimdark", "unit": [unit]}, source="r.toml")


def test_overrides_apply_to_every_group_or_one():
    u = squad("M", group(4), group(1, weapon="power_fist"))
    v = rs.with_overrides(u, {"ws": "5", "2.a": "3", "points": "99"}, Where("--set attacker"), from_text=True)
    assert [g.ws for g in v.groups] == [5, 5] and [g.a for g in v.groups] == [1, 3] and v.points == 99
    h = sim.default_roster("grimdark")["Troopers"]
    assert rs.with_overrides(h, {"models": 4}, Where("--set")).models == 4
    with pytest.raises(InputError, match="homogeneous"):
        rs.with_overrides(u, {"models": 3}, Where("--set attacker"))
    with pytest.raises(InputError, match="'ws'.*1..10"):
        rs.with_overrides(u, {"ws": "12"}, Where("--set attacker"), from_text=True)
    with pytest.raises(InputError, match="group number 1..2"):
        rs.with_overrides(u, {"3.ws": 4}, Where("--set attacker"))
    with pytest.raises(InputError, match="a unit field of grimdark"):
        rs.with_overrides(u, {"colour": "red"}, Where("--set attacker"))


def test_settings_route_states_and_overrides():
    states, overrides, options = sim.parse_settings(rs, ["attacker.ws=5", "defender.in_cover=true",
                                                         "attacker.engaged=3", "instant_death=false"])
    assert overrides == {"attacker": {"ws": "5"}} and options == {"instant_death": "false"}
    m, _ = sim.build_matchup(rs, "Troopers", "Troopers", states=states, overrides=overrides, options=options,
                             from_text=True, budget="none")
    assert m.attacker.groups[0].ws == 5 and m.state("defender", "in_cover") and m.state("attacker", "engaged") == 3
    assert m.state("attacker", "charging") and m.state("defender", "engaged") == -1
    with pytest.raises(InputError, match="defender only"):
        sim.build_matchup(rs, "Troopers", "Troopers", states={"attacker": {"in_cover": True}}, budget="none")
    with pytest.raises(InputError, match="engaged.*-1..500"):
        sim.build_matchup(rs, "Troopers", "Troopers", states={"defender": {"engaged": -2}}, budget="none")


# ----------------------------------------------------------- scripted dice
A1 = squad("A1", group())
D1 = squad("D1", group())


def test_equal_initiative_is_simultaneous():
    # both I4: the attacker (2 attacks: charging) and the defender strike together and both die
    out = fight(A1, D1, [4, 3, 4, 6, 6])
    assert (out.winner, out.category_attacker, out.category_defender) == (DRAW, WIPED, WIPED)
    assert (out.damage_to_attacker, out.damage_to_defender, out.rounds) == (1, 1, 1)


def test_higher_initiative_strikes_first_and_the_dead_do_not_strike():
    fast = squad("fast", group(i=5))
    out = fight(fast, squad("slow", group(i=3)), [4, 1, 5])
    assert (out.winner, out.damage_to_attacker, out.damage_to_defender) == (ATTACKER, 0, 1)


def test_charging_bonus_only_when_charging_and_in_round_one():
    # no charge: one attack in round 1; round 2 one attack (I5 first, then I3)
    fast, slow = squad("fast", group(i=5)), squad("slow", group(i=3))
    out = fight(fast, slow, [1, 1, 1, 1], rounds=2, states={"attacker": {"charging": False}})
    assert out.rounds == 2 and out.winner == DRAW
    fight(fast, slow, [1, 1, 1, 1, 1], rounds=2)  # charging: 2 + 1 + 1 + 1 dice


def test_cover_strikes_first_in_round_one():
    fast, slow = squad("fast", group(i=5)), squad("slow", group(i=3))
    out = fight(fast, slow, [4, 4], states={"defender": {"in_cover": True}})
    assert (out.winner, out.damage_to_attacker, out.damage_to_defender) == (DEFENDER, 1, 0)


def test_cover_only_in_round_one():
    fast, slow = squad("fast", group(i=5)), squad("slow", group(i=3))
    # round 1: defender (cover) misses, attacker misses twice; round 2: I5 strikes first and kills
    out = fight(fast, slow, [1, 1, 1, 6, 6], rounds=2, states={"defender": {"in_cover": True}})
    assert (out.winner, out.rounds, out.damage_to_defender) == (ATTACKER, 2, 1)


def test_frag_grenades_strike_with_the_cover_step():
    grenadier = squad("gren", group(i=1, frag_grenades=True))
    quick = squad("quick", group(i=5))
    # simultaneous: attacker pool first (2 attacks), then the defender's
    out = fight(grenadier, quick, [6, 1, 6, 6, 6], states={"defender": {"in_cover": True}})
    assert (out.winner, out.category_attacker, out.category_defender) == (DRAW, WIPED, WIPED)
    # without grenades the defender in cover strikes first and the attacker never strikes
    out = fight(squad("plain", group(i=1)), quick, [6, 6], states={"defender": {"in_cover": True}})
    assert out.winner == DEFENDER
    # grenades only help against infantry
    beast = squad("beast", group(i=5, infantry=False))
    assert fight(grenadier, beast, [6, 6], states={"defender": {"in_cover": True}}).winner == DEFENDER
    # ...and only infantry throw them
    assert fight(squad("g2", group(i=1, frag_grenades=True, infantry=False)), quick, [6, 6],
                 states={"defender": {"in_cover": True}}).winner == DEFENDER
    # not in cover: grenades change nothing, Initiative order (I5 first)
    assert fight(grenadier, quick, [6, 6]).winner == DEFENDER


def test_power_fist_strikes_last():
    fist = squad("fist", group(i=5, weapon="power_fist"))
    out = fight(fist, squad("slow", group(i=1)), [6, 6])  # the I1 defender strikes first and kills
    assert out.winner == DEFENDER
    # even in cover: the defender's fist waits for the I1 attacker
    out = fight(squad("slow", group(i=1)), fist, [6, 1, 6], states={"defender": {"in_cover": True}})
    assert out.winner == ATTACKER
    # and with frag grenades
    gfist = squad("gfist", group(i=5, weapon="power_fist", frag_grenades=True))
    assert fight(gfist, squad("cov", group(i=1)), [6, 6], states={"defender": {"in_cover": True}}).winner == DEFENDER
    # fist against fist is simultaneous: the attacker's pool, then the defender's, both die
    out = fight(fist, squad("fist2", group(i=1, weapon="power_fist")), [6, 1, 2, 6, 2])
    assert out.winner == DRAW and out.category_attacker == out.category_defender == WIPED


def test_power_fist_doubles_strength_capped_at_10():
    # S3 fist = S6 against T6: 4+ to wound (S3 needs 6+: a 5 wounds only with the fist)
    fist = squad("fist", group(s=3, weapon="power_fist"))
    out = fight(fist, squad("tough", group(t=6, i=1)), [1, 6, 5], states={"attacker": {"charging": False}})
    assert out.damage_to_defender == 1
    out = fight(squad("club", group(s=3)), squad("tough", group(t=6, i=1)), [6, 5, 1],
                states={"attacker": {"charging": False}})
    assert out.damage_to_defender == 0
    # S6 fist = S10 (not 12) against T10: 4+ (S12 would be off the chart)
    big = squad("big", group(s=6, weapon="power_fist"))
    out = fight(big, squad("wall", group(t=10, i=1)), [1, 6, 3], states={"attacker": {"charging": False}})
    assert out.damage_to_defender == 0


def test_instant_death():
    fist = squad("fist", group(i=5, weapon="power_fist"))
    hero = squad("hero", group(t=4, w=3, i=1))
    # defender (I1) misses; fist S8 >= 2 x T4: one unsaved wound kills the W3 model outright
    out = fight(fist, hero, [1, 4, 1, 2])
    assert (out.winner, out.damage_to_defender, out.category_defender) == (ATTACKER, 3, WIPED)
    assert out.extras["models_lost_defender"] == 1
    out = fight(fist, hero, [1, 4, 1, 2], options={"instant_death": False})
    assert (out.winner, out.damage_to_defender, out.category_defender) == (ATTACKER, 1, SURVIVED)
    # S8 against T5: no instant death
    out = fight(fist, squad("t5", group(t=5, w=3, i=1)), [1, 4, 1, 2])
    assert out.damage_to_defender == 1
    # a monster (S9 >= 2 x T4) kills multi-wound models outright too
    out = fight(squad("beast", group(s=9, monster=True)), squad("vets", group(2, w=2, i=1)), [6, 6, 2, 2])
    assert out.damage_to_defender == 4 and out.extras["models_lost_defender"] == 2


@pytest.mark.parametrize("weapon, dice, saved", [
    ("power_weapon", [6, 6, 4], False),      # armour 2+ ignored: only the 5+ invulnerable save
    ("power_weapon", [6, 6, 5, 1], True),
    ("power_fist", [1, 6, 6, 4], False),     # (the defender strikes first, against the fist)
    ("ccw", [6, 6, 2, 1], True),             # the better of armour 2+ and invulnerable 5+
    ("ccw", [6, 6, 1], False),               # a 1 always fails
])
def test_saves_and_invulnerable_against_power_weapons(weapon, dice, saved):
    # the attacker is T10: the defender's single attack can only roll to hit
    att = squad("att", group(i=5, s=5, t=10, weapon=weapon))
    dfn = squad("dfn", group(i=1, t=4, save=2, invuln=5))
    # 1 attack (not charging): hit, wound, save; a surviving defender then misses
    out = fight(att, dfn, dice, states={"attacker": {"charging": False}})
    assert out.damage_to_defender == (0 if saved else 1)


def test_monster_ignores_armour_but_not_invulnerable():
    beast = squad("beast", group(i=5, monster=True))
    assert fight(beast, squad("d", group(i=1, save=2)), [6, 6], states={"attacker": {"charging": False}}).winner == ATTACKER
    out = fight(beast, squad("d", group(i=1, save=2, invuln=4)), [6, 6, 4, 1], states={"attacker": {"charging": False}})
    assert out.damage_to_defender == 0


def test_models_not_engaged_make_one_plain_attack():
    # 3 models A3 with two weapons, charging, one engaged: 5 attacks + 1 + 1, all against T10 (no wound dice)
    att = squad("att", group(3, a=3, two_weapons=True, i=5))
    wall = squad("wall", group(t=10, i=1))
    out = fight(att, wall, [1] * 8, states={"attacker": {"engaged": 1}})
    assert out.winner == DRAW
    # a power fist not in base contact: one plain attack at its Initiative, S4, armour allowed
    fist = squad("fist", group(i=5, weapon="power_fist"))
    out = fight(fist, squad("arm", group(i=1, save=3)), [6, 4, 3, 1], states={"attacker": {"engaged": 0}})
    assert (out.damage_to_defender, out.damage_to_attacker) == (0, 0)
    # no attacker engaged at all: nobody gets the charge bonus
    fight(att, wall, [1, 1, 1, 1], states={"attacker": {"engaged": 0}})


def test_casualty_order_keeps_the_sergeant_last():
    # 3 attacks (charging A2) kill two models: the troopers listed first go, the fist sergeant (A3) strikes
    att = squad("att", group(a=2, i=5))
    dfn = squad("dfn", group(2, i=1), group(1, i=1, a=3, weapon="power_fist"))
    out = fight(att, dfn, [6, 6, 6, 6, 6, 1, 1, 1, 1])
    assert out.extras["models_lost_defender"] == 2 and out.damage_to_defender == 2 and out.winner == ATTACKER
    # engaged models die first (engaged = 1: the first trooper), then list order: the sergeant,
    # not engaged, survives and makes one plain attack at I1
    out = fight(att, dfn, [6, 6, 6, 6, 6, 1, 1], states={"defender": {"engaged": 1}})
    assert out.extras["models_lost_defender"] == 2


def test_wounds_stay_on_one_model_and_carry_over():
    att = squad("att", group(a=2, i=5))
    vets = squad("vets", group(2, w=2, i=1))
    out = fight(att, vets, [6, 6, 6, 6, 6, 6, 1])  # 3 unsaved: one dead, one left on 1 wound, who misses
    assert out.damage_to_defender == 3 and out.extras["models_lost_defender"] == 1


def test_spill_over_uses_the_first_groups_profile_and_the_landing_models_toughness():
    # both wounds rolled against T3 (3+); the second spills onto a T10 model that S4 could never wound
    att = squad("att", group(i=5))
    dfn = squad("dfn", group(1, t=3, i=1), group(1, t=10, save=2, i=1))
    out = fight(att, dfn, [6, 6, 3, 3])
    assert out.winner == ATTACKER and out.damage_to_defender == 2
    # instant death is judged on the model the wound lands on: S8 vs a T4 W3 model behind a T5 one
    fist = squad("fist", group(i=5, weapon="power_fist"))
    dfn = squad("dfn", group(1, t=5, i=1), group(1, t=4, w=3, i=1))
    out = fight(fist, dfn, [1, 1, 6, 6, 2, 2])  # two defenders miss; two hits, two wounds on 2+ (S8 vs T5)
    assert out.damage_to_defender == 4 and out.category_defender == WIPED


def test_winner_by_wounds_after_n_rounds_and_cap():
    att = squad("att", group(2, i=5))
    dfn = squad("dfn", group(2, i=1))
    # round 1: attacker 4 attacks, one unsaved; defender 1 survivor misses: attacker ahead on wounds
    out = fight(att, dfn, [6, 1, 1, 1, 6, 1])
    assert (out.winner, out.damage_to_defender, out.category_defender) == (ATTACKER, 1, SURVIVED)
    out = fight(att, dfn, [1, 1, 1, 1, 1, 1])
    assert out.winner == DRAW and not out.capped
    # "end" capped: nobody can wound (S4 vs T10 both ways)
    w1, w2 = squad("w1", group(t=10, i=5)), squad("w2", group(t=10, i=1))
    out = fight(w1, w2, [1, 1, 1, 1, 1], rounds="end", max_rounds=2)
    assert out.capped and out.winner == DRAW and out.rounds == 2


# ---------------------------------------------------------------- kernel
def test_kernel_shapes_reproducibility_and_both_paths():
    _, plan = sim.build_matchup(rs, "Assault squad", "Horde mob", budget="none")
    slow = dataclasses.replace(plan, fast=False, cache={})
    for p in (plan, slow):
        a = rs.simulate(p, 5000, np.random.default_rng(3), "end", 50)
        b = rs.simulate(p, 5000, np.random.default_rng(3), "end", 50)
        assert np.array_equal(a.winner, b.winner) and np.array_equal(a.rounds, b.rounds)
        assert len(a) == 5000 and a.damage_to_defender.min() >= 0 and a.rounds.min() >= 1
        assert a.extras["models_lost_attacker"].max() <= 5 and a.damage_to_attacker.max() <= 5
        assert set(np.unique(a.category_attacker)) <= {0, 1}
        dead = (a.category_attacker == 0) | (a.category_defender == 0)
        assert dead[~a.capped].all()  # to the end: every uncapped fight ends with a wipe
    assert plan.cache.get("chain") is not None and slow.cache == {}


def test_kernel_capped_when_nobody_can_wound():
    w1, w2 = squad("w1", group(3, t=10)), squad("w2", group(2, t=10))
    _, plan = sim.build_matchup(rs, w1, w2, budget="none")
    for p in (plan, dataclasses.replace(plan, fast=False, cache={})):
        out = rs.simulate(p, 100, np.random.default_rng(0), "end", 7)
        assert out.capped.all() and (out.rounds == 7).all() and (out.winner == DRAW).all()


def test_chain_matrices_are_stochastic_and_plan_pickles_without_cache():
    _, plan = sim.build_matchup(rs, "Assault squad", "Veteran squad", budget="none")
    for first in (True, False):
        R = round_matrix(plan, first)
        assert np.allclose(R.sum(1), 1.0) and R.min() >= 0
    assert chain_tables(plan) is not None
    rs.simulate(plan, 10, np.random.default_rng(0), 1, 50)
    copy = pickle.loads(pickle.dumps(plan))
    assert copy.cache == {} and plan.cache
    _, partial = sim.build_matchup(rs, "Assault squad", "Veteran squad", states={"defender": {"engaged": 2}},
                                   budget="none")
    assert chain_tables(partial) is None  # engagement limits: the binomial kernel


# ------------------------------------------------ big squads (issue 14)
def one_wound(sq, L: int, strength: int) -> int:
    """Wounds lost after one more unsaved wound of ``strength`` at ``L``, model by model as the spec reads."""
    lost = 0
    for g in sq.groups:
        for _ in range(g.count):
            if L < lost + g.w:  # this model is in front: it has taken L - lost wounds
                return lost + g.w if (g.w > 1 and strength >= 2 * g.t) else L + 1
            lost += g.w
    return L


@pytest.mark.parametrize("strength", [3, 6, 8])
def test_wound_map_is_one_wound_at_a_time(strength):
    from sim.rulesets.grimdark.plan import _instant_key, wound_map
    sq = squad("mixed", group(2, w=2, t=3), group(1, w=3, t=4), group(2, w=1, t=3), group(1, w=2, t=5),
               group(1, w=2, t=3))
    key = _instant_key(strength, sq, True)
    W = sq.wounds
    for L in range(W + 1):
        want = L
        for u in range(W + 2):
            got = int(wound_map(key, sq).apply(np.array([L]), np.array([u]))[0]) if key else min(L + u, W)
            assert got == want, (strength, L, u)
            want = one_wound(sq, want, strength)


def test_copies_strike_as_one_pool_and_the_limits_are_checked():
    ros = sim.default_roster("grimdark")
    troopers, terms = ros["Troopers"], ros["Terminators"]
    big = dataclasses.replace(troopers, groups=troopers.groups * 33)
    _, plan = sim.build_matchup(rs, big, dataclasses.replace(terms, groups=terms.groups * 8), budget="none")
    assert [len(step) for step in plan.steps_first] == [1, 1]
    assert plan.steps_first[0][0].groups == tuple(range(33))
    assert plan.table_bytes < 4 * 2 ** 20
    too_many = dataclasses.replace(troopers, groups=troopers.groups * 51)
    with pytest.raises(sim.errors.MatchupError, match="at most 500 models and 50 groups"):
        sim.build_matchup(rs, too_many, troopers, budget="none")


def test_huge_pools_draw_binomials_and_agree_with_the_tables(monkeypatch):
    from sim.rulesets.grimdark import plan as grimdark_plan
    # 200 models a side: more than a roster squad may hold, so fielded as two copies (as a budget does)
    big = rs.copies(squad("big", group(100, a=3, s=5)), 2)
    foe = rs.copies(squad("foe", group(100, t=4, save=4)), 2)
    _, plan = sim.build_matchup(rs, big, foe, budget="none")
    monkeypatch.setattr(grimdark_plan, "MAX_COUNT_ENTRIES", 0)
    _, untabled = sim.build_matchup(rs, big, foe, budget="none")
    assert all(p.counts is not None for s in plan.steps_later for p in s)
    assert all(p.counts is None for s in untabled.steps_later for p in s)
    a = rs.simulate(plan, 20_000, np.random.default_rng(1), 1, 50)
    b = rs.simulate(untabled, 20_000, np.random.default_rng(2), 1, 50)
    for x, y in ((a.damage_to_defender, b.damage_to_defender), (a.damage_to_attacker, b.damage_to_attacker)):
        se = np.sqrt(x.var() / len(x) + y.var() / len(y))
        assert abs(x.mean() - y.mean()) < 6 * se


def test_budget_bench_matchup_fields_copies():
    att, dfn, states, rounds, label = rs.bench_extra_matchups()[-1]
    assert "budget 2000" in label and rounds == "end" and not states
    squads = [u for u in sim.default_roster("grimdark").units.values() if u.points]
    cheap, dear = min(squads, key=lambda u: u.points), max(squads, key=lambda u: u.points)
    k, j = 2000 // cheap.points, 2000 // dear.points
    assert att.models == k * cheap.models and len(att.groups) == k * len(cheap.groups)
    assert dfn.models == j * dear.models and len(dfn.groups) == j * len(dear.groups)
    sim.build_matchup(rs, att, dfn, budget="none")
