"""``duel``: scripted-dice tests of every rule on the scalar reference, validation, kernels' plumbing.

Scripts list the dice in the order the procedure rolls them: per combat the
attacker's duel dice, the defender's duel dice, then the Toughness checks (hits on
the attacker first in a double loss), then the checks of blocked yards.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import sim
from sim.dice import ScriptedDice
from sim.errors import InputError, MatchupError, Where
from sim.outcomes import ATTACKER, DEFENDER, DRAW
from sim.roster import default_roster, load_roster
from sim.rulesets.duel import RULESET

ELIM, SURV = 1, 0


def unit(name="U", count=1, wounds=1, toughness=5, ws=3, strength=3, weapon=(3, 1), second=None, points=None):
    m = {"name": name, "count": count, "wounds": wounds, "toughness": toughness, "ws": ws, "strength": strength}
    if weapon is not None:
        m["weapon"] = {"strength": weapon[0], "damage": weapon[1], "abilities": list(weapon[2:])}
    if second is not None:
        m["second_weapon"] = {"strength": second[0], "damage": second[1], "abilities": list(second[2:])}
    if points is not None:
        m["points"] = points
    return RULESET.parse_unit(m, Where("test", name))


def plan_of(a, d, states=None, options=None):
    return sim.build_matchup("duel", a, d, states=states, options=options, budget="none")[1]


def run(plan, dice, rounds="end", max_rounds=50):
    script = ScriptedDice(dice)
    out = RULESET.resolve_one(plan, script, rounds, max_rounds)
    script.assert_exhausted()
    return out


# ------------------------------------------------------------------ duel roll
def test_duel_roll_keeps_the_highest_die_and_winner_hits_with_its_wounds():
    a, d = unit("A", wounds=2), unit("D", wounds=3)
    # A rolls 2 dice (max 5), D rolls 3 (max 4): A wins, 2 hits at T' = 5 - 3 = 2: pass, fail
    out = run(plan_of(a, d), [2, 5, 4, 1, 3, 1, 3], rounds=1)
    assert (out.winner, out.damage_to_attacker, out.damage_to_defender) == (ATTACKER, 0, 1)
    assert (out.category_attacker, out.category_defender, out.rounds) == (SURV, SURV, 1)


def test_loser_takes_one_check_per_winner_wound_until_slain():
    a, d = unit("A", wounds=2), unit("D", wounds=3)
    # D's 6 beats A's 5; D's 3 hits on A: fail, pass, fail -> A (2 wounds) is slain
    out = run(plan_of(a, d), [5, 2, 6, 1, 1, 6, 2, 4])
    assert (out.winner, out.damage_to_attacker, out.damage_to_defender) == (DEFENDER, 2, 0)
    assert (out.category_attacker, out.category_defender, out.rounds) == (ELIM, SURV, 1)
    assert out.extras["misted_attacker"] == 0 and out.extras["models_lost_attacker"] == 1


@pytest.mark.parametrize("ws_a, ws_d, winner", [(4, 3, ATTACKER), (3, 4, DEFENDER)])
def test_tie_goes_to_the_higher_weapon_skill(ws_a, ws_d, winner):
    a, d = unit("A", ws=ws_a), unit("D", ws=ws_d)
    out = run(plan_of(a, d), [5, 5, 6])  # tie on 5; the WS winner's one hit fails its check
    assert out.winner == winner and out.rounds == 1


def test_double_loss_is_simultaneous_hits_from_wounds_at_the_start():
    a, d = unit("A", wounds=1), unit("D", wounds=2)
    # tie and equal WS: both lose. D's 2 hits on A: the first fails and slays A, the second
    # finds no target. A still strikes with its starting wound: 1 hit on D, failed.
    out = run(plan_of(a, d), [2, 2, 1, 6, 6])
    assert (out.winner, out.damage_to_attacker, out.damage_to_defender) == (DEFENDER, 1, 1)
    assert (out.category_attacker, out.category_defender) == (ELIM, SURV)


def test_double_loss_can_kill_both():
    out = run(plan_of(unit("A"), unit("D")), [3, 3, 6, 6])
    assert (out.winner, out.category_attacker, out.category_defender) == (DRAW, ELIM, ELIM)
    assert not out.capped


# --------------------------------------------------------------------- prone
def test_prone_rolls_no_dice_counts_as_one_and_cannot_back_up():
    a, d = unit("A", wounds=1), unit("D", wounds=2)
    # D prone: no duel dice, a 1. A's 2 wins; its hit fails (D 2 -> 1); D cannot back the
    # yard: one more hit, failed -> slain.
    out = run(plan_of(a, d, states={"defender": {"prone": True}}), [2, 6, 6])
    assert (out.winner, out.damage_to_defender, out.category_defender) == (ATTACKER, 2, ELIM)


def test_prone_against_prone_goes_to_weapon_skill_without_dice():
    a, d = unit("A", ws=4), unit("D", ws=3)
    out = run(plan_of(a, d, states={"attacker": {"prone": True}, "defender": {"prone": True}}), [6])
    assert (out.winner, out.category_defender) == (ATTACKER, ELIM)


def test_prone_one_loses_to_any_roll_above_one():
    a, d = unit("A", ws=5), unit("D", ws=3)
    # A prone counts as 1 and has the higher WS: a defender 1 ties and A wins; a 2 beats it
    plan = plan_of(a, d, states={"attacker": {"prone": True}})
    assert run(plan, [1, 6]).winner == ATTACKER
    assert run(plan, [2, 6]).winner == DEFENDER


# ------------------------------------------------------------ weapons, checks
def test_bare_hands_halve_strength_rounded_up_and_deal_one_damage():
    a = unit("A", wounds=2, strength=5, weapon=None)
    assert (a.hit_strength, a.hit_damage) == (3, 1)
    d = unit("D", wounds=3, toughness=4)
    # T' = 4 - 3 = 1: a 2 fails (it would pass at Strength 2), a 1 passes
    out = run(plan_of(a, d), [6, 1, 1, 1, 1, 2, 1], rounds=1)
    assert out.damage_to_defender == 1


def test_bare_hands_can_be_instant_death():
    a, d = unit("A", strength=6, weapon=None), unit("D", wounds=2, toughness=3)
    out = run(plan_of(a, d), [6, 1, 1])  # ceil(6/2) = 3 >= T 3: misted, no check die
    assert (out.winner, out.damage_to_defender, out.extras["misted_defender"]) == (ATTACKER, 2, 1)


def test_weapon_damage_per_failed_check_capped_at_remaining_wounds():
    a, d = unit("A", weapon=(3, 3)), unit("D", wounds=2)
    out = run(plan_of(a, d), [6, 1, 1, 6])
    assert (out.damage_to_defender, out.category_defender) == (2, ELIM)


@pytest.mark.parametrize("check, lost", [(6, 1), (5, 0), (1, 0)])
def test_a_six_always_fails_the_toughness_check(check, lost):
    a, d = unit("A", weapon=(2, 1)), unit("D", wounds=2, toughness=9)  # T' = 7
    assert run(plan_of(a, d), [6, 1, 1, check], rounds=1).damage_to_defender == lost


@pytest.mark.parametrize("check, lost", [(2, 0), (3, 1)])
def test_check_passes_on_d6_at_most_toughness_minus_strength(check, lost):
    a, d = unit("A", weapon=(3, 1)), unit("D", wounds=2, toughness=5)  # T' = 2
    assert run(plan_of(a, d), [6, 1, 1, check], rounds=1).damage_to_defender == lost


def test_two_d6_toughness_die_option():
    a, d = unit("A", weapon=(2, 1)), unit("D", wounds=2, toughness=9)  # T' = 7 on 2d6
    plan = plan_of(a, d, options={"toughness_die": "2d6"})
    assert run(plan, [6, 1, 1, 3, 4], rounds=1).damage_to_defender == 0   # 7 <= 7 passes
    assert run(plan, [6, 1, 1, 4, 4], rounds=1).damage_to_defender == 1   # 8 fails
    plan = plan_of(a, unit("D", wounds=2, toughness=20), options={"toughness_die": "2d6"})
    assert run(plan, [6, 1, 1, 6, 6], rounds=1).damage_to_defender == 1   # double six fails


def test_instant_death_when_strength_at_least_toughness_mists_without_a_check():
    a, d = unit("A", weapon=(5, 1)), unit("D", wounds=3, toughness=5)
    out = run(plan_of(a, d), [6, 1, 1, 1])
    assert (out.winner, out.damage_to_defender, out.category_defender) == (ATTACKER, 3, ELIM)
    assert out.extras["misted_defender"] == 1 and out.extras["models_lost_defender"] == 1


# ------------------------------------------------------------- dual wielding
def test_identical_weapons_give_one_extra_hit_by_default():
    a = unit("A", weapon=(3, 1, "keen"), second=(3, 1, "keen"))
    out = run(plan_of(a, unit("D", wounds=3)), [6, 1, 1, 1, 6, 6], rounds=1)  # 1 die, 2 hits
    assert out.damage_to_defender == 2


def test_identical_weapons_extra_die_option():
    a = unit("A", weapon=(3, 1), second=(3, 1))
    plan = plan_of(a, unit("D", wounds=3), options={"dual_wield": "extra_die"})
    out = run(plan, [1, 6, 5, 5, 5, 6], rounds=1)  # 2 duel dice, 1 hit
    assert (out.winner, out.damage_to_defender) == (ATTACKER, 1)
    plan = plan_of(a, unit("D", wounds=3), options={"dual_wield": "both"})
    assert run(plan, [1, 6, 5, 5, 5, 6, 6], rounds=1).damage_to_defender == 2


def test_extra_hit_also_counts_in_a_double_loss():
    a = unit("A", weapon=(3, 1), second=(3, 1))
    out = run(plan_of(a, unit("D", wounds=3)), [4, 4, 1, 1, 1, 1, 1, 6, 6], rounds=1)
    # both lose: D's 3 hits on A (pass x3), A's 1 + 1 hits on D (fail, fail)
    assert (out.damage_to_attacker, out.damage_to_defender) == (0, 2)


def test_different_weapons_use_the_primary_and_both_abilities_but_no_extra():
    a = unit("A", weapon=(4, 2, "parry"), second=(2, 1, "quick"))
    assert not a.identical_pair and a.abilities == ("parry", "quick")
    out = run(plan_of(a, unit("D", wounds=3)), [6, 1, 1, 1, 2], rounds=1)  # T' = 1: a 2 fails, 2 damage
    assert out.damage_to_defender == 2


# ------------------------------------------------------------ backing away
def test_blocked_yards_are_extra_hits():
    a, d = unit("A", weapon=(3, 2)), unit("D", wounds=5)
    # hit fails: D loses 2 and must back 2 yards with 1 yard of space: one more hit, failed
    out = run(plan_of(a, d, states={"defender": {"space": 1}}), [6, 1, 1, 1, 1, 1, 6, 6], rounds=1)
    assert out.damage_to_defender == 4
    out = run(plan_of(a, d, states={"defender": {"space": 0}}), [6, 1, 1, 1, 1, 1, 6, 6, 1], rounds=1)
    assert out.damage_to_defender == 4  # against a wall: two extra hits (fail, pass)
    out = run(plan_of(a, d), [6, 1, 1, 1, 1, 1, 6], rounds=1)
    assert out.damage_to_defender == 2  # open ground: no extra hit


def test_space_is_used_up_over_the_phases():
    a, d = unit("A", wounds=2), unit("D", wounds=6)
    plan = plan_of(a, d, states={"defender": {"space": 2}})
    # phase 1: 1 fail, backs 1 (1 yard left). Phase 2: 2 fails, backs 1, 1 blocked -> 1 more fail
    out = run(plan, [6, 6, 1, 1, 1, 1, 1, 1, 6, 1, 6, 6, 1, 1, 1, 1, 1, 6, 6, 6], rounds=2)
    assert out.damage_to_defender == 4


# ------------------------------------------------------ pairing and ganging
def test_left_over_models_gang_up_in_the_first_combat():
    a, d = unit("A", count=2), unit("D", wounds=2)
    out = run(plan_of(a, d), [3, 5, 4, 2, 6, 6])  # A rolls one die per model's wound: 2 dice
    assert (out.winner, out.damage_to_defender, out.rounds) == (ATTACKER, 2, 1)


def test_pairing_in_listed_order_and_fewest_wounds_first():
    a = unit("A", count=3, wounds=2)
    d = unit("D", count=2, wounds=2, ws=4)
    script = [6, 1, 1, 1, 1, 1, 6, 6,       # phase 1 combat 0: A0 + A2 (4 dice) vs D0; D0 slain
              1, 1, 6, 1, 6, 1,             # combat 1: A1 vs D1; D1 wins, A1 loses 1 wound
              1, 1, 1, 1, 1, 1, 1, 6, 1]    # phase 2: A0, A1, A2 vs D1; D wins on WS; A1 (1 wound) is hit
    out = run(plan_of(a, d), script, rounds=2)              # first and slain; the second hit passes
    assert (out.damage_to_attacker, out.damage_to_defender) == (2, 2)
    assert out.extras["models_lost_attacker"] == 1 and out.extras["models_lost_defender"] == 1
    assert out.winner == ATTACKER  # lost 2 of 6 wounds against 2 of 4


def test_spread_assignment_takes_turns():
    a = unit("A", count=2, wounds=2)
    d = unit("D", wounds=3, ws=5)
    script = [1, 1, 1, 1, 1, 1, 1, 3, 3, 1]  # D wins on WS; 3 hits: fail, fail, pass
    fewest = run(plan_of(a, d), script, rounds=1)
    spread = run(plan_of(a, d, options={"hit_assignment": "spread"}), script, rounds=1)
    assert fewest.extras["models_lost_attacker"] == 1 and fewest.damage_to_attacker == 2
    assert spread.extras["models_lost_attacker"] == 0 and spread.damage_to_attacker == 2


def test_instant_death_hits_each_slay_one_model():
    a, d = unit("A", count=3, toughness=3), unit("D", wounds=2, ws=5, weapon=(4, 1))
    out = run(plan_of(a, d), [1, 1, 1, 1, 1], rounds=1)  # D wins on WS: 2 hits, 2 misted, no checks
    assert out.extras["misted_attacker"] == 2 and out.extras["models_lost_attacker"] == 2


def test_initiative_state_and_symmetric_pairing():
    a, d = unit("A", count=2), unit("D", wounds=2)
    plan = plan_of(a, d, states={"defender": {"initiative": True}})
    assert plan.initiative == 1
    assert plan_of(a, d, states={"attacker": {"initiative": False}}).initiative == 1
    assert plan_of(a, d).initiative == 0
    assert run(plan, [3, 5, 4, 2, 6, 6]).row() == run(plan_of(a, d), [3, 5, 4, 2, 6, 6]).row()
    with pytest.raises(MatchupError, match="initiative"):
        plan_of(a, d, states={"attacker": {"initiative": True}, "defender": {"initiative": True}})


# -------------------------------------------------------------- rounds, winner
def test_fixed_rounds_winner_by_share_of_starting_wounds():
    a, d = unit("A", wounds=2), unit("D", wounds=3)
    # double loss: A loses 1 of 2, D loses 1 of 3 -> the defender lost the smaller share
    out = run(plan_of(a, d), [4, 4, 4, 4, 4, 6, 1, 1, 6, 1], rounds=1)
    assert (out.damage_to_attacker, out.damage_to_defender, out.winner) == (1, 1, DEFENDER)


def test_fixed_rounds_equal_shares_are_a_draw():
    a, d = unit("A", wounds=2), unit("D", wounds=2)
    out = run(plan_of(a, d), [4, 4, 4, 4, 6, 1, 6, 1], rounds=1)  # double loss, 1 of 2 each
    assert (out.damage_to_attacker, out.damage_to_defender, out.winner) == (1, 1, DRAW)


def test_end_is_capped_as_a_draw():
    a, d = unit("A", weapon=(1, 1)), unit("D", toughness=9)
    out = run(plan_of(a, d), [6, 1, 1, 6, 1, 1], rounds="end", max_rounds=2)
    assert (out.winner, out.capped, out.rounds) == (DRAW, True, 2)


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("weapon, match", [
    ({"strength": 3, "damage": 0}, "weapon.damage"),
    ({"strength": -1, "damage": 1}, "weapon.strength"),
    ({"strength": "big", "damage": 1}, "weapon.strength"),
    ({"strength": 3}, "weapon.damage"),
    ({"strength": 3, "damage": 1, "abilities": "keen"}, "weapon.abilities"),
    ({"strength": 3, "damage": 1, "reach": 2}, "weapon.reach"),
    ("sword", "weapon"),
])
def test_bad_weapon_tables(weapon, match):
    m = {"name": "X", "wounds": 1, "toughness": 3, "ws": 3, "strength": 3, "weapon": weapon}
    with pytest.raises(InputError, match=match):
        RULESET.parse_unit(m, Where("r.toml", "X"))


@pytest.mark.parametrize("field, value", [("count", 0), ("count", 21), ("wounds", 0), ("toughness", 0),
                                          ("ws", -1), ("strength", 21), ("points", -5), ("speed", 3)])
def test_bad_unit_fields(field, value):
    m = {"name": "X", "wounds": 1, "toughness": 3, "ws": 3, "strength": 3, field: value}
    with pytest.raises(InputError, match=f"r.toml: unit 'X': field '{field}'"):
        RULESET.parse_unit(m, Where("r.toml", "X"))


def test_second_weapon_needs_a_weapon():
    m = {"name": "X", "wounds": 1, "toughness": 3, "ws": 3, "strength": 3,
         "second_weapon": {"strength": 3, "damage": 1}}
    with pytest.raises(InputError, match="second_weapon"):
        RULESET.parse_unit(m, Where("r.toml", "X"))


def test_bad_states_and_options():
    a, d = unit("A"), unit("D")
    with pytest.raises(InputError, match="space"):
        plan_of(a, d, states={"defender": {"space": -1}})
    with pytest.raises(InputError, match="dual_wield"):
        plan_of(a, d, options={"dual_wield": "twice"})
    with pytest.raises(InputError, match="hit_assignment"):
        plan_of(a, d, options={"hit_assignment": "random"})


def test_csv_roster_with_flat_weapon_columns(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("name,count,wounds,toughness,ws,strength,weapon_strength,weapon_damage,weapon_abilities,"
                 "second_weapon_strength,second_weapon_damage,second_weapon_abilities,points\n"
                 "Twin,1,3,5,5,3,3,1,keen;fast,3,1,keen;fast,40\n"
                 "Fist,2,2,4,3,4,,,,,,,\n")
    ros = load_roster(p, "duel")
    twin, fist = ros["Twin"], ros["Fist"]
    assert twin.identical_pair and twin.weapon.abilities == ("keen", "fast") and twin.points == 40
    assert fist.weapon is None and fist.count == 2 and (fist.hit_strength, fist.hit_damage) == (2, 1)
    row = RULESET.unit_rows(twin)[0]
    assert row["weapon_strength"] == 3 and row["second_weapon_abilities"] == "keen;fast"
    p.write_text("name,wounds,toughness,ws,strength,weapon_strength,weapon_damage\nBad,1,3,3,3,x,1\n")
    with pytest.raises(InputError, match=r"r.csv: unit 'Bad': field 'weapon.strength': got 'x'"):
        load_roster(p, "duel")


def test_overrides_reach_into_weapons():
    states, overrides, options = sim.parse_settings("duel", [
        "attacker.weapon.strength=6", "attacker.second_weapon=none", "defender.weapon_damage=2",
        "defender.space=0", "dual_wield=extra_die"])
    m, plan = sim.build_matchup("duel", "Duellist", "Reaver", states=states, overrides=overrides,
                                options=options, from_text=True, budget="none")
    assert m.attacker.weapon.strength == 6 and m.attacker.second_weapon is None
    assert m.defender.weapon.damage == 2 and plan.sides[1].space == 0
    with pytest.raises(InputError, match="weapon.speed"):
        sim.build_matchup("duel", "Duellist", "Reaver", overrides={"attacker": {"weapon.speed": "2"}},
                          from_text=True, budget="none")
    with pytest.raises(InputError, match="weapon.damage"):
        sim.build_matchup("duel", "Brawler", "Reaver", overrides={"attacker": {"weapon.strength": "4"}},
                          from_text=True, budget="none")  # a bare-handed model needs a whole weapon


def test_default_roster():
    ros = default_roster("duel")
    assert 8 <= len(ros) <= 12
    assert all(u.points is not None for u in ros.units.values())
    kinds = ros.units.values()
    assert any(u.count > 1 for u in kinds) and any(u.weapon is None for u in kinds)
    assert any(u.identical_pair for u in kinds)


# --------------------------------------------------------------- kernels
def test_chain_kernel_when_small_general_otherwise():
    assert plan_of(unit("A", wounds=3), unit("D", wounds=2)).chain is not None
    assert plan_of(unit("A", count=2), unit("D")).chain is not None
    big = plan_of(unit("A", count=20, wounds=5), unit("D", count=20, wounds=5, toughness=9))
    assert big.chain is None  # too many states: the general kernel runs it


@pytest.mark.parametrize("names", [("Duellist", "Reaver"), ("Goblin Mob", "Militia")])
def test_kernel_output_is_integral_and_reproducible(names):
    plan = sim.build_matchup("duel", *names, budget="none")[1]
    outs = [RULESET.simulate(plan, 5000, np.random.default_rng(7), "end", 50).expand() for _ in range(2)]
    for f in ("winner", "damage_to_attacker", "damage_to_defender", "rounds"):
        assert np.array_equal(getattr(outs[0], f), getattr(outs[1], f))
        assert getattr(outs[0], f).min() >= 0
    assert len(outs[0]) == 5000
    assert outs[0].damage_to_attacker.max() <= plan.start_wounds[0]


def test_general_kernel_handles_one_model_a_side_too():
    plan = plan_of(unit("A", wounds=2), unit("D", wounds=2))
    out = RULESET.simulate(dataclasses.replace(plan, chain=None), 2000, np.random.default_rng(3), 3, 50)
    assert out.n_trials == 2000 and out.rounds.max() <= 3


@pytest.mark.parametrize("assignment, hits, after", [
    ("fewest_wounds", 1, (2, 0, 2)), ("fewest_wounds", 3, (0, 0, 2)), ("spread", 3, (1, 0, 1))])
def test_both_kernels_assign_hits_like_the_reference(assignment, hits, after):
    # every check fails (p_fail forced to 1): the allocation alone decides who is hit
    import importlib
    kernel = importlib.import_module("sim.rulesets.duel.kernel")
    groups = importlib.import_module("sim.rulesets.duel.groups")
    plan = plan_of(unit("A", weapon=(3, 1)), unit("D", count=3, wounds=2), options={"hit_assignment": assignment})
    plan = dataclasses.replace(plan, p_fail=(1.0, 1.0))
    W = np.array([[2, 1, 2]], np.int32)
    kernel._apply_hits(plan, np.random.default_rng(0), 0, W, np.ones((1, 3), bool), np.array([hits]))
    assert tuple(W[0]) == after
    dist = groups._Builder(plan).hits_on(0, hits, (2, 1, 2))
    assert {k: v for k, v in dist.items() if v > 0} == {(after, 0): 1.0}


# ------------------------------------------------- the group kernel (issue 14)
def test_group_kernel_is_used_for_large_groups_and_spread_ganging_falls_back():
    big = plan_of(unit("A", count=20, wounds=5), unit("D", count=20, wounds=5, toughness=9))
    assert big.chain is None and big.tables is not None
    spread = plan_of(unit("A", count=20, wounds=5), unit("D", count=20, wounds=5, toughness=9),
                     options={"hit_assignment": "spread"})
    assert spread.tables is None  # ``spread`` redirects hits as models fall: the general kernel


@pytest.mark.parametrize("hits, after", [(1, (2, 0, 2)), (2, (1, 0, 2)), (3, (0, 0, 2)), (4, (0, 0, 1))])
def test_group_kernel_assigns_hits_to_the_weakest_first(hits, after):
    # every check fails (p_fail forced to 1): the allocation alone decides who is hit
    from sim.rulesets.duel import fast as duel_fast, tables as duel_tables
    plan = plan_of(unit("A", wounds=5, weapon=(3, 1)), unit("D", count=3, wounds=2))
    plan = dataclasses.replace(plan, p_fail=(1.0, 1.0))
    tables = duel_tables.build_tables(plan)
    key = np.array([[5], [2], [1], [2]], np.int8)  # one trial (column): the attacker's key, the defenders'
    # three defenders in combat 0 (no pairs beyond it): all are members; every hit is a fail
    duel_fast._assign(plan, tables, key, [(0, np.array([0]), np.array([1]), np.array([hits]))],
                       np.random.default_rng(0))
    assert tuple(key[1:, 0] & duel_tables.WOUNDS) == after
    assert tuple((key[1:, 0] & duel_tables.DEAD) > 0) == tuple(v == 0 for v in after)


@pytest.mark.parametrize("nA, nB", [(3, 5), (4, 4), (6, 1)])
def test_group_kernel_compaction_keeps_standing_models_in_listed_order(nA, nB):
    """Each side's standing models move to the front in listed order (the pairing order), the fallen
    after them (their keys kept: the results read them), the counts are the standing models, and only
    the kept trials stay, in descending order of their pairs (ties in trial order: the pair combats
    draw for column prefixes): checked trial by trial against a plain list filter."""
    from sim.rulesets.duel import fast as duel_fast, tables as duel_tables
    rng = np.random.default_rng(5)
    m = 300
    wounds = rng.integers(1, 21, (nA + nB, m))
    fallen = rng.random((nA + nB, m)) < 0.4
    key = np.where(fallen, duel_tables.DEAD | (rng.random((nA + nB, m)) < 0.5) * duel_tables.MISTED,
                   wounds).astype(np.int8)
    keep = rng.random(m) < 0.7
    target, cA, cB = duel_fast._new_rows(key, nA)
    order = duel_fast._by_pairs(cA, cB, keep)
    pairs = np.minimum(cA, cB)
    assert sorted(order) == list(np.flatnonzero(keep))
    assert list(order) == sorted(np.flatnonzero(keep), key=lambda t: (-pairs[t], t))
    out = duel_fast._compact(key, target, order)
    assert out.shape == (nA + nB, keep.sum())
    assert np.array_equal(duel_fast._compact(key, target, duel_fast._by_pairs(cA, cB, None)),
                          duel_fast._compact(key, target, duel_fast._by_pairs(cA, cB, np.ones(m, bool))))
    for new_col, trial in enumerate(order):
        for lo, hi, count in ((0, nA, cA), (nA, nA + nB, cB)):
            before = list(key[lo:hi, trial])
            standing = [k for k in before if k < duel_tables.DEAD]
            assert count[trial] == len(standing)
            after = list(out[lo:hi, new_col])
            assert after[:len(standing)] == standing
            assert sorted(after[len(standing):]) == sorted(k for k in before if k >= duel_tables.DEAD)


def test_group_kernel_memory_per_block_is_bounded():
    import tracemalloc
    plan = sim.build_matchup("duel", *RULESET.bench_extra_matchups()[1][:2], budget="none")[1]
    tracemalloc.start()
    try:
        RULESET.simulate(plan, 65_536, np.random.default_rng(0), "end", 50)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2 ** 20  # chunks of fights: about 11 MB for 20 against 20


def test_bench_group_matchups_say_their_sizes():
    labels = [m[4] for m in RULESET.bench_extra_matchups()]
    assert labels[0].startswith("10 v 10") and labels[1].startswith("20 v 20")
    att, dfn = RULESET.bench_extra_matchups()[1][:2]
    assert att.count == dfn.count == 20


@pytest.mark.parametrize("rows, outcomes, zeros", [(50, 7, 0.3), (20, 3, 0.0), (10, 40, 0.5), (5, 1, 0.0)])
def test_bit_alias_tables_hold_the_exact_distribution(rows, outcomes, zeros):
    """The group kernel's tables (AliasBits, 32-bit uniforms): the probability each row's slots and
    thresholds give every outcome is the dense matrix's, within width * 2**-32; impossible outcomes
    are never drawn; a fixed seed gives the same draws."""
    from sim.kernels.alias import AliasBits
    rng = np.random.default_rng(7)
    P = rng.random((rows, outcomes)) * (rng.random((rows, outcomes)) >= zeros)
    P[:, 0] += 1e-3
    P /= P.sum(axis=1, keepdims=True)
    t = AliasBits.build(P)
    K, shift = 1 << t.bits, 32 - t.bits
    keep = (t.threshold.astype(np.int64) - (np.tile(np.arange(K), rows) << shift)) / 2.0 ** shift
    assert ((keep >= 0) & (keep <= 1)).all()
    implied = np.zeros((rows, outcomes))
    row = np.repeat(np.arange(rows), K)
    np.add.at(implied, (row, t.pick[0::2]), keep / K)
    np.add.at(implied, (row, t.pick[1::2]), (1 - keep) / K)
    assert np.abs(implied - P).max() <= K * 2.0 ** -32
    assert not ((implied > 0) & (P == 0)).any()
    draws = t.sample(np.arange(rows).repeat(100), np.random.default_rng(3))
    assert np.array_equal(draws, t.sample(np.arange(rows).repeat(100), np.random.default_rng(3)))
    assert (P[np.arange(rows).repeat(100), draws] > 0).all()


@pytest.mark.parametrize("rows, outcomes, zeros", [(50, 7, 0.3), (20, 3, 0.0), (10, 40, 0.5), (5, 1, 0.0)])
def test_packed_alias_tables_draw_what_the_bit_tables_draw(rows, outcomes, zeros):
    """The pair table's packed form (threshold and both values in one record): for the same stream,
    the very same outcomes as the AliasBits table it packs (whose distribution the test above checks),
    so it holds the same distribution; values outside int16 are refused."""
    from sim.kernels.alias import AliasBits, AliasPacked
    rng = np.random.default_rng(11)
    P = rng.random((rows, outcomes)) * (rng.random((rows, outcomes)) >= zeros)
    P[:, 0] += 1e-3
    P /= P.sum(axis=1, keepdims=True)
    values = rng.integers(-30000, 30000, outcomes)
    bits = AliasBits.build(P, values, dtype=np.int16)
    packed = AliasPacked.from_bits(bits)
    code = rng.integers(0, rows, (7, 3000)).astype(np.int16)
    expect = bits.sample(code, np.random.default_rng(4))
    got = packed.sample(code, np.random.default_rng(4))
    assert got.dtype == np.int16 and np.array_equal(got, expect)
    with pytest.raises(ValueError):
        AliasPacked.from_bits(AliasBits.build(P, values * 10, dtype=np.int32))


@pytest.mark.parametrize("seed", range(4))
def test_compiled_vose_builds_the_same_tables_to_the_bit(seed):
    """The compiled alias construction (used by the compiled kernels) pairs columns exactly as the
    vectorised one: the same prob and alias arrays, bit for bit, also where a column's scaled mass
    lands exactly on 1 (quarters), rows of one outcome and rows of zeros but one; and so the same
    AliasBits tables. A pairing in another order would still be a valid table: this checks the claim
    that the shipped tables, and so the draws, do not change."""
    from sim.kernels.alias import AliasBits, alias_tables
    rng = np.random.default_rng(seed)
    for trial in range(60):
        rows, cols = int(rng.integers(1, 80)), int(rng.integers(1, 40))
        P = rng.random((rows, cols)) * (rng.random((rows, cols)) > rng.random())
        if trial % 3 == 0:
            P = np.round(P * 4) / 4
        P[:, 0] += P.sum(axis=1) == 0
        prob, alias = alias_tables(P)
        prob_c, alias_c = alias_tables(P, compiled=True)
        assert np.array_equal(prob, prob_c) and np.array_equal(alias, alias_c)
        values = rng.integers(0, 1000, cols)
        a = AliasBits.build(P / P.sum(1, keepdims=True), values, dtype=np.int32)
        b = AliasBits.build(P / P.sum(1, keepdims=True), values, dtype=np.int32, compiled=True)
        assert a.bits == b.bits and np.array_equal(a.threshold, b.threshold) and np.array_equal(a.pick, b.pick)
        # the compiled build does every step row by row (warband's values depend on the row)
        per_row = rng.integers(-30000, 30000, (rows, cols))
        a = AliasBits.build(P / P.sum(1, keepdims=True), per_row, dtype=np.int64)
        b = AliasBits.build(P / P.sum(1, keepdims=True), per_row, dtype=np.int64, compiled=True)
        assert a.bits == b.bits and a.pick.dtype == b.pick.dtype and a.threshold.dtype == b.threshold.dtype
        assert np.array_equal(a.threshold, b.threshold) and np.array_equal(a.pick, b.pick)
