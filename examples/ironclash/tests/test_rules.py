"""Ironclash: the README's rules on scripted dice, validation, and the conformance kit."""

from __future__ import annotations

import pytest

import sim
from sim.ruleset import ATTACKER, DEFENDER, DRAW, END, MatchupError
from sim.testing import ScriptedDice, check_ruleset
from ironclash.rules import DOWN, UNHURT, WOUNDED, RULESET


def plan(att, dfn, states=None, options=None):
    return sim.build_matchup(RULESET, att, dfn, states=states, options=options)[1]


def fight(att, dfn, rolls, rounds=1, **kw):
    dice = ScriptedDice(rolls)
    out = RULESET.resolve_one(plan(att, dfn, **kw), dice, rounds, 50)
    dice.assert_exhausted()
    return out


def test_higher_total_strikes_and_armour_soaks_then_dents():
    # Gladiator 7+3=10 beats Knight 5+2=7: damage 2 - armour 4 = 0 wounds, the armour dents to 3.
    out = fight("Gladiator", "Knight", [7, 5])
    assert (out.winner, out.damage_to_defender, out.category_defender) == (DRAW, 0, UNHURT)
    # Blows on armour 4, 3, 2 deal 0 wounds; on armour 1, 1 wound; on armour 0, 2 wounds.
    out = fight("Gladiator", "Knight", [7, 5] * 5, rounds=5)
    assert (out.damage_to_defender, out.category_defender, out.winner) == (3, WOUNDED, ATTACKER)


def test_a_natural_ten_crushes_through_armour_without_denting_it():
    out = fight("Gladiator", "Knight", [10, 1, 7, 5], rounds=2)  # 2 wounds, then an ordinary blow on armour 4
    assert out.damage_to_defender == 2 and out.extras["crushing_blows"] == 1
    out = fight("Gladiator", "Knight", [10, 1], options={"crushing_blows": False})
    assert out.damage_to_defender == 0 and out.extras["crushing_blows"] == 0


def test_ties_clinch_or_both_strike():
    out = fight("Gladiator", "Gladiator", [4, 4])
    assert out.damage_to_attacker == out.damage_to_defender == 0
    out = fight("Gladiator", "Gladiator", [4, 4], options={"ties": "both_strike"})
    assert out.damage_to_attacker == out.damage_to_defender == 1 and out.winner == DRAW  # 2 - armour 1


def test_braced_adds_two_in_the_first_exchange_only():
    # Duellist 3+5=8 against a braced Militia 5+1+2=8: a clinch; in exchange 2 the same dice let the Duellist strike.
    out = fight("Duellist", "Militia", [3, 5, 3, 5], rounds=2, states={"defender": {"braced": True}})
    assert out.damage_to_defender == 1 and out.rounds == 2


def test_the_fight_ends_when_a_fighter_is_down():
    # Brute (damage 3) against Duellist (4 wounds, no armour): two blows put it down; no third exchange.
    out = fight("Brute", "Duellist", [9, 1, 9, 1], rounds=END)
    assert (out.winner, out.category_defender, out.damage_to_defender, out.rounds) == (ATTACKER, DOWN, 4, 2)


def test_on_points_after_the_last_exchange():
    # Militia 1+1=2 against Duellist 9+5=14: the Duellist's blow deals 2 - armour 1 = 1 wound; both stand.
    out = fight("Militia", "Duellist", [1, 9], rounds=1)
    assert (out.winner, out.damage_to_attacker, out.category_attacker, out.capped) == (DEFENDER, 1, WOUNDED, False)


def test_wounds_taken_must_leave_a_wound():
    with pytest.raises(MatchupError, match="wounds_taken"):
        plan("Militia", "Duellist", states={"attacker": {"wounds_taken": 4}})


def test_conformance():
    report = check_ruleset(RULESET)
    assert report.dice == {10}
