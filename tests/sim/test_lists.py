"""Army lists (issue 40): a side of several unit types, in rosters and in the API.

A list of k copies of one unit fights, seed for seed, exactly as today's k copies
(the same plan); a list of one unit is the one-against-one fight; rosters refuse bad
lists in one line; rulesets without mixed sides refuse lists in one line.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import sim
from sim.errors import InputError, MatchupError
from sim.lists import ArmyList, MixedSide

WARBAND_LISTS = """
ruleset = "warband"
budget = 300
[[unit]]
name = "Captain"
ws = 4
s = 4
t = 3
i = 4
w = 1
a = 1
weapons = ["sword", "dagger"]
points = 60
[[unit]]
name = "Warrior"
ws = 3
s = 3
t = 3
i = 3
w = 1
a = 1
weapons = ["axe"]
points = 30
[[unit]]
name = "Pack"
count = 3
ws = 2
s = 3
t = 3
i = 3
w = 1
a = 1
points = 80
[[list]]
name = "Band"
units = { "Captain" = 1, "Warrior" = 3 }
[[list]]
name = "Three warriors"
units = { "Warrior" = 3 }
"""


def _roster(tmp_path, text=WARBAND_LISTS, name="r.toml"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return sim.load_roster(p)


def test_a_roster_holds_lists_with_their_points(tmp_path):
    ros = _roster(tmp_path)
    assert list(ros.lists) == ["Band", "Three warriors"]
    band = ros.army_list("Band")
    assert band.units == (("Captain", 1), ("Warrior", 3))
    from sim.lists import list_models, list_points

    assert list_points(band, ros.units) == 60 + 3 * 30
    assert list_models(band, ros.units) == 4


def test_a_list_of_copies_is_the_copies_fight_seed_for_seed(tmp_path):
    """The acceptance test of the issue: k copies as a list = today's k copies (bit for bit)."""
    ros = _roster(tmp_path)
    a = sim.fight("warband", "Three warriors", "Pack", roster=ros, budget="none", trials=70_000, seed=11,
                  method="mc")
    b = sim.fight("warband", "Warrior", "Pack", roster=ros, copies={"attacker": 3, "defender": 1}, trials=70_000,
                  seed=11, method="mc")
    assert a.tally.same_as(b.tally)
    assert a.attacker == "Three warriors"
    c = sim.fight("warband", {"Warrior": 3}, {"Pack": 2}, roster=ros, budget="none", trials=70_000, seed=11,
                  method="mc")
    d = sim.fight("warband", "Warrior", "Pack", roster=ros, copies={"attacker": 3, "defender": 2}, trials=70_000,
                  seed=11, method="mc")
    assert c.tally.same_as(d.tally)


@pytest.mark.parametrize("ruleset, unit, other", [("warband", "Champion", "Youngblood"),
                                                  ("duel", "Knight", "Goblin Mob")])
def test_shipped_rosters_copies_equal_lists(ruleset, unit, other):
    ros = sim.default_roster(ruleset)
    for k in (1, 2, 3):
        a = sim.fight(ruleset, {unit: k}, other, budget="none", trials=70_000, seed=5, method="mc")
        b = sim.fight(ruleset, unit, other, copies={"attacker": k, "defender": 1}, trials=70_000, seed=5,
                      method="mc")
        assert a.tally.same_as(b.tally), (unit, k)
    assert ros  # the roster holds both units


def test_a_one_unit_list_is_the_one_against_one_fight():
    a = sim.fight("warband", {"Champion": 1}, {"Youngblood": 1}, budget="none", trials=50_000, seed=2, method="mc")
    b = sim.fight("warband", "Champion", "Youngblood", budget="none", trials=50_000, seed=2, method="mc")
    assert a.tally.same_as(b.tally)
    e1 = sim.fight("duel", {"Knight": 1}, {"Reaver": 1}, budget="none")
    e2 = sim.fight("duel", "Knight", "Reaver", budget="none")
    assert e1.method == e2.method == "exact" and e1.win == e2.win


def test_twins_under_two_names_are_one_profile(tmp_path):
    text = WARBAND_LISTS.replace('[[list]]\nname = "Band"', '[[unit]]\nname = "Warrior twin"\nws = 3\ns = 3\nt = 3\n'
                                 'i = 3\nw = 1\na = 1\nweapons = ["axe"]\npoints = 31\n[[list]]\nname = "Band"')
    ros = _roster(tmp_path, text)
    m, plan = sim.build_matchup("warband", {"Warrior": 2, "Warrior twin": 1}, "Pack", roster=ros, budget="none")
    assert not isinstance(m.attacker, MixedSide) and m.attacker.count == 3 and m.attacker.points == 91
    a = sim.fight("warband", {"Warrior": 2, "Warrior twin": 1}, "Pack", roster=ros, budget="none", trials=30_000,
                  seed=3, method="mc")
    b = sim.fight("warband", "Warrior", "Pack", roster=ros, copies={"attacker": 3, "defender": 1}, trials=30_000,
                  seed=3, method="mc")
    assert a.tally.same_as(b.tally)


def test_a_mixed_list_is_a_mixed_side_priced_as_its_units(tmp_path):
    ros = _roster(tmp_path)
    m, plan = sim.build_matchup("warband", "Band", "Pack", roster=ros)
    assert isinstance(m.attacker, MixedSide)
    assert [g.name for g in m.attacker.groups] == ["Captain", "Warrior"]
    assert [g.count for g in m.attacker.groups] == [1, 3] and m.attacker.points == 150
    assert m.copies == {"attacker": 1, "defender": 3}          # the unit side: 300 / 80 copies
    r = sim.fight("warband", "Band", "Pack", roster=ros, trials=5_000, seed=1)
    assert r.attacker == "Band" and r.settings["fielded"]["attacker"] == 150
    assert [row["name"] for row in r.settings["attacker_profile"]] == ["Captain", "Warrior"]


def test_an_army_list_object_and_a_mapping_are_the_same_side(tmp_path):
    ros = _roster(tmp_path)
    a = sim.fight("warband", ArmyList("x", (("Captain", 1), ("Warrior", 3))), "Pack", roster=ros, trials=20_000,
                  seed=4, method="mc")
    b = sim.fight("warband", {"Captain": 1, "Warrior": 3}, "Pack", roster=ros, trials=20_000, seed=4, method="mc")
    c = sim.fight("warband", "Band", "Pack", roster=ros, trials=20_000, seed=4, method="mc")
    assert a.tally.same_as(b.tally) and b.tally.same_as(c.tally)
    assert b.attacker == "1 Captain + 3 Warrior"


def _bad(tmp_path, lists: str) -> str:
    head = WARBAND_LISTS[:WARBAND_LISTS.index("[[list]]")]
    p = tmp_path / "bad.toml"
    p.write_text(head + lists, encoding="utf-8")
    with pytest.raises(InputError) as e:
        sim.load_roster(p)
    msg = str(e.value)
    assert "\n" not in msg and "bad.toml" in msg
    return msg


@pytest.mark.parametrize("lists, needle", [
    ('[[list]]\nname = "L"\nunits = { "Nobody" = 1 }\n', "a unit of the roster"),
    ('[[list]]\nname = "L"\nunits = { "Warrior" = 0 }\n', "whole number of copies 1..20"),
    ('[[list]]\nname = "L"\nunits = { "Warrior" = -2 }\n', "whole number of copies 1..20"),
    ('[[list]]\nname = "L"\nunits = { "Warrior" = 21 }\n', "whole number of copies 1..20"),
    ('[[list]]\nname = "L"\nunits = { "Warrior" = 1.5 }\n', "whole number of copies"),
    ('[[list]]\nname = "L"\nunits = { "Pack" = 7 }\n', "at most 20 models on a side (21 here)"),
    ('[[list]]\nname = "L"\nunits = {}\n', "at least one unit"),
    ('[[list]]\nname = "L"\nunits = { "Warrior" = 1 }\n[[list]]\nname = "L"\nunits = { "Captain" = 1 }\n',
     "used once in the roster (duplicate)"),
    ('[[list]]\nname = "Warrior"\nunits = { "Captain" = 1 }\n', "not also a unit's"),
    ('[[list]]\nunits = { "Captain" = 1 }\n', "a non-empty list name"),
    ('[[list]]\nname = "L"\n', "the key is required"),
    ('[[list]]\nname = "L"\nunits = { "Warrior" = 1 }\npoints = 3\n', "a key of a [[list]] table"),
])
def test_bad_lists_are_one_line(tmp_path, lists, needle):
    assert needle in _bad(tmp_path, lists)


def test_a_list_key_that_is_not_tables_is_one_line(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("list = 3\n" + WARBAND_LISTS[:WARBAND_LISTS.index("[[list]]")], encoding="utf-8")
    with pytest.raises(InputError, match="an array of tables"):
        sim.load_roster(p)


@pytest.mark.parametrize("ruleset", ["mecha", "grimdark", "pools"])
def test_rulesets_without_mixed_sides_refuse_lists(tmp_path, ruleset):
    ros = sim.default_roster(ruleset)
    unit = ros.names[0]
    with pytest.raises(MatchupError) as e:
        sim.fight(ruleset, {unit: 1}, ros.names[-1], trials=100)
    assert "army lists are not available" in str(e.value) and "\n" not in str(e.value)
    p = tmp_path / "r.toml"
    p.write_text(f'ruleset = "{ruleset}"\n[[list]]\nname = "L"\nunits = {{ "{unit}" = 1 }}\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        sim.load_roster(p)
    assert "no army lists" in str(e.value)


def test_api_refusals_are_one_line(tmp_path):
    ros = _roster(tmp_path)
    for args, needle in [
        (({"Captain": 1, "Warrior": 9},), "costs 330 points, more than the budget of 300"),
        (({"Nobody": 1},), "a unit of the roster"),
        (({"Warrior": 0},), "whole number of copies"),
        (({},), "at least one unit"),
        (("Nobody",), "no unit or list 'Nobody'"),
    ]:
        with pytest.raises(sim.MeleelabError) as e:
            sim.fight("warband", *args, "Pack", roster=ros, trials=100)
        assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)
    with pytest.raises(InputError, match="a unit field can be changed on a unit, not on a list"):
        sim.fight("warband", "Band", "Pack", roster=ros, trials=100, overrides={"attacker": {"ws": 5}})
    with pytest.raises(InputError, match="fielded as it is"):
        sim.fight("warband", "Band", "Pack", roster=ros, trials=100, copies={"attacker": 2})


def test_subset_keeps_the_lists_whose_units_remain(tmp_path):
    ros = _roster(tmp_path)
    assert list(ros.subset(["Warrior", "Pack"]).lists) == ["Three warriors"]
    assert list(ros.with_budget(200).lists) == ["Band", "Three warriors"]


def test_pairing_random_leaves_one_profile_sides_alone():
    """``pairing = "random"`` draws nothing for a side of one profile: the same fights, seed for seed."""
    a = sim.fight("warband", {"Champion": 2, "Youngblood": 2}, "Orc Boy", budget="none", trials=20_000, seed=9,
                  method="mc", copies=None)
    assert a.trials == 20_000
    for ruleset, x, y in (("warband", "Champion", "Youngblood"), ("duel", "Knight", "Sellsword")):
        r1 = sim.fight(ruleset, {x: 3}, {y: 2}, budget="none", trials=30_000, seed=9, method="mc")
        r2 = sim.fight(ruleset, {x: 3}, {y: 2}, budget="none", trials=30_000, seed=9, method="mc",
                       options={"pairing": "random"})
        assert r1.tally.same_as(r2.tally)


def test_listed_order_is_the_pairing():
    """In listed order the first unit of each list meets the other's first: reversing one list changes the fight."""
    a = sim.fight("warband", {"Ogre Brute": 1, "Youngblood": 3}, {"Pit Fighter": 1, "Zealot": 3}, budget="none",
                  trials=60_000, seed=1, method="mc")
    b = sim.fight("warband", {"Youngblood": 3, "Ogre Brute": 1}, {"Pit Fighter": 1, "Zealot": 3}, budget="none",
                  trials=60_000, seed=1, method="mc")
    pa, pb = a.win["attacker"], b.win["attacker"]
    assert abs(pa - pb) > 5 * np.sqrt(pa * (1 - pa) / 60_000 + pb * (1 - pb) / 60_000)


def test_the_mixed_loop_reads_one_profile_sides_as_the_copies_loop():
    """The compiled loop of army lists, given sides of one profile, plays the very fights of the copies loop."""
    from sim.rulesets.warband import RULESET as WB
    from sim.rulesets.warband.mixed import build_mixed_plan, simulate_mixed_loop

    ros = sim.default_roster("warband")
    for an, dn, ca, cd, opts in [("Mercenary Warrior", "Youngblood", 6, 6, {}), ("Swordsman", "Elf Blademaster", 3, 5, {}),
                                 ("Ogre Brute", "Skaven Verminkin", 2, 6, {}),
                                 ("Zealot", "Dwarf Clansman", 4, 3, {"reengage": "every_round"})]:
        a, d = dataclasses.replace(ros[an], count=ca), dataclasses.replace(ros[dn], count=cd)
        plan = sim.build_matchup("warband", a, d, budget="none", options=opts)[1]
        mp = build_mixed_plan(a, d, plan.charging, plan.fist_as_user, reengage=plan.reengage)
        assert mp.loop is not None
        o1 = WB.simulate(plan, 20_000, np.random.default_rng(7), "end", 50)
        o2 = simulate_mixed_loop(mp, 20_000, np.random.default_rng(7), "end", 50)
        for f in ("winner", "damage_to_attacker", "damage_to_defender", "rounds", "category_attacker",
                  "category_defender"):
            assert np.array_equal(getattr(o1, f), getattr(o2, f)), (an, dn, f)
