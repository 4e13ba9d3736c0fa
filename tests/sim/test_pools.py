"""pools: every rule on scripted dice (scalar reference), validation, roster, kernel sanity.

Dice order in ``resolve_one`` per engagement: the round's attacker's attack
pool, the round's defender's attack pool, the round's attacker's saves (one
die per hit it received), the round's defender's saves. Units without a save
roll no save dice, which keeps most scripts short.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import sim
from sim.dice import ScriptedDice
from sim.errors import InputError, MatchupError
from sim.outcomes import ATTACKER, DEFENDER, DRAW
from sim.roster import default_roster, roster_from_dict
from sim.rulesets.pools import RULESET as POOLS
from sim.rulesets.pools import PoolsUnit

DESTROYED, RETREATED, HELD = 0, 1, 2


def unit(name="U", bases=3, attack=1, courage=99, move=6, save=None, wounds=1, vehicle=False):
    return PoolsUnit(name, bases, attack, courage, move, save, wounds, vehicle)


def plan(att, dfn, states=None, options=None):
    return sim.build_matchup("pools", att, dfn, states=states, options=options, budget="none")[1]


def run(att, dfn, dice, states=None, options=None, rounds=1, max_rounds=50, exhausted=True):
    d = ScriptedDice(dice)
    out = POOLS.resolve_one(plan(att, dfn, states, options), d, rounds, max_rounds)
    if exhausted:
        d.assert_exhausted()
    return out


NO_CHARGE = {"attacker": {"charge": False}}


# ------------------------------------------------------------------ attack pools
def test_pool_is_attack_times_bases():
    # 2 x 3 = 6 attacker dice (no charge), 1 x 2 = 2 defender dice; all miss.
    out = run(unit(attack=2, bases=3), unit(bases=2), [1] * 8, NO_CHARGE)
    assert out.winner == DRAW and out.damage_to_attacker == out.damage_to_defender == 0


def test_charge_adds_one_die_per_base():
    # charging: (1 + 1) x 3 = 6 dice; defender 3 dice
    run(unit(), unit(), [1] * 9)
    with pytest.raises(AssertionError):  # without the charge the script has 3 dice too many
        run(unit(), unit(), [1] * 9, NO_CHARGE)


@pytest.mark.parametrize("state", ["shaken", "flanked"])
def test_shaken_or_flanked_loses_one_die_per_base(state):
    # defender 2 x 3 = 6, minus 3 -> 3 dice; attacker 1 x 3 = 3 (no charge)
    run(unit(), unit(attack=2), [1] * 6, {"attacker": {"charge": False}, "defender": {state: True}})


def test_shaken_and_flanked_stack_down_to_one_die_per_base():
    # defender 3 x 3 = 9, -2 per base -> 3; 2 x 3 = 6, -2 per base -> 0, floored to 3
    run(unit(), unit(attack=3), [1] * 6, {"attacker": {"charge": False}, "defender": {"shaken": True, "flanked": True}})
    run(unit(), unit(attack=2), [1] * 6, {"attacker": {"charge": False}, "defender": {"shaken": True, "flanked": True}})


def test_vehicle_defender_loses_one_die_per_base_but_not_as_attacker():
    tank = unit(attack=3, bases=2, vehicle=True)
    run(unit(), tank, [1] * (3 + 4), NO_CHARGE)          # defending: (3 - 1) x 2 = 4
    run(tank, unit(), [1] * (6 + 3), NO_CHARGE)          # attacking: 3 x 2 = 6
    run(tank, unit(), [1] * (8 + 3))                     # attacking with a charge: 4 x 2 = 8


def test_floor_never_raises_a_zero_stat():
    # stat 0 and shaken: raw 0 - 3 -> max(-3, min(0, 3)) = 0 dice; the defender rolls 3
    run(unit(attack=0), unit(), [1] * 3, {"attacker": {"charge": False, "shaken": True}})
    # stat 0 charging: 0 + 1 per base = 3 dice
    run(unit(attack=0), unit(), [1] * 6)


def test_charge_and_shaken_cancel_and_net_minus_one_is_floored():
    # charge + shaken: net 0 -> 1 x 4 = 4 dice; charge + shaken + flanked: net -1 -> 0, floored to 4
    run(unit(bases=4), unit(bases=1), [1] * 5, {"attacker": {"shaken": True}})
    run(unit(bases=4), unit(bases=1), [1] * 5, {"attacker": {"shaken": True, "flanked": True}})


def test_pool_uses_every_remaining_base_including_a_damaged_one():
    # defender 3 bases x 2 wounds; round 1 it takes 3 unsaved (1 base lost, 1 damaged): 2 bases remain.
    # Round 2: the defender attacks (charging): (1 + 1) x 2 = 4 dice.
    att, dfn = unit(attack=1, bases=3), unit(attack=1, bases=3, wounds=2)
    r1 = [6, 6, 6] + [1, 1, 1]
    r2 = [1, 1, 1, 1] + [1, 1, 1]  # defender (now attacker) 4 dice, then attacker 3 dice
    out = run(att, dfn, r1 + r2, NO_CHARGE, rounds=2)
    assert out.damage_to_defender == 3 and out.extras["bases_lost_defender"] == 1
    assert out.rounds == 2


# ------------------------------------------------------------------ hit threshold
def _hits_on(threshold_dice, states=None, options=None):
    """Attacker (1 die, no charge) rolls the given die against a 1-die defender that misses."""
    out = run(unit(bases=1), unit(bases=1), [threshold_dice, 1], {**(states or {}),
              "attacker": {"charge": False, **(states or {}).get("attacker", {})}}, options)
    return out.damage_to_defender == 1


def test_base_threshold_is_four_plus():
    assert _hits_on(4) and not _hits_on(3)


def test_dash_token_makes_own_hits_harder():
    s = {"attacker": {"dash": True}}
    assert _hits_on(5, s) and not _hits_on(4, s)


def test_cover_makes_hits_against_it_harder():
    s = {"defender": {"cover": True}}
    assert _hits_on(5, s) and not _hits_on(4, s)


def test_flanked_target_is_easier_to_hit():
    # defender flanked: 1 x 1 - 1 -> floored to 1 die; attacker hits on 3+
    s = {"defender": {"flanked": True}}
    assert _hits_on(3, s) and not _hits_on(2, s)


def test_threshold_clamps_to_six_and_two():
    hard = {"attacker": {"dash": True}, "defender": {"cover": True}}
    assert _hits_on(6, hard, {"dash_shift": 3}) and not _hits_on(5, hard, {"dash_shift": 3})
    easy = {"defender": {"flanked": True}}
    assert _hits_on(2, easy, {"flank_shift": -3}) and not _hits_on(1, easy, {"flank_shift": -3})


def test_target_dash_option():
    s = {"defender": {"dash": True}}
    assert _hits_on(4, s) and not _hits_on(3, s)  # default: no effect
    assert _hits_on(3, s, {"target_dash_shift": -1}) and not _hits_on(2, s, {"target_dash_shift": -1})


# ------------------------------------------------------------------ shaken check and saves
def test_shaken_check_uses_hits_before_saves():
    # attacker (charging, 1 base: 2 dice) hits twice; defender courage 2, save 4+ saves both.
    out = run(unit(bases=1), unit(bases=1, courage=2, save=4), [5, 6, 1, 4, 6])
    assert out.extras["shaken_defender"] == 1 and out.damage_to_defender == 0 and out.winner == DRAW
    # one hit below courage: not shaken
    out = run(unit(bases=1), unit(bases=1, courage=2, save=4), [5, 1, 1, 4])
    assert out.extras["shaken_defender"] == 0


def test_new_shaken_does_not_change_the_pool_just_rolled():
    # both shaken by the roll, both pools were already rolled in full
    out = run(unit(bases=2, courage=1), unit(bases=2, courage=1), [6, 1, 1, 1] + [6, 1], )
    assert out.extras["shaken_attacker"] == out.extras["shaken_defender"] == 1


def test_saves_cancel_hits_at_or_above_the_save():
    # attacker 2 bases charging: 4 dice, 3 hits; defender save 5+: dice 5, 4, 6 -> 2 saved, 1 unsaved
    out = run(unit(bases=2), unit(bases=2, save=5), [4, 5, 6, 1] + [1, 1] + [5, 4, 6])
    assert out.damage_to_defender == 1


def test_both_sides_roll_saves_attacker_first():
    a, d = unit(bases=1, save=3), unit(bases=1, save=6)
    # attacker 2 dice (both hit), defender 1 die (hits); attacker saves 1 die (3: saved), defender saves 2 (6, 1)
    out = run(a, d, [4, 4, 4, 3, 6, 1])
    assert (out.damage_to_attacker, out.damage_to_defender) == (0, 1)


# ------------------------------------------------------------------ winner, loser, tie
def test_fewer_unsaved_hits_wins_and_the_loser_retreats():
    out = run(unit(), unit(), [4, 4, 1, 1, 1, 1] + [4, 1, 1])
    assert out.winner == ATTACKER
    assert (out.category_attacker, out.category_defender) == (HELD, RETREATED)
    out = run(unit(), unit(), [4, 1, 1, 1, 1, 1] + [4, 4, 1])
    assert out.winner == DEFENDER
    assert (out.category_attacker, out.category_defender) == (RETREATED, HELD)


def test_tie_nobody_retreats():
    out = run(unit(), unit(), [4, 1, 1, 1, 1, 1] + [4, 1, 1])
    assert out.winner == DRAW and (out.category_attacker, out.category_defender) == (HELD, HELD)


def test_stationary_loser_is_destroyed_but_not_on_a_tie_or_a_win():
    gun = unit(move=0, bases=3)
    out = run(unit(), gun, [4, 4, 1, 1, 1, 1] + [4, 1, 1])
    assert out.category_defender == DESTROYED and out.winner == ATTACKER
    assert out.damage_to_defender == 2 and out.extras["bases_lost_defender"] == 3
    assert run(unit(), gun, [4, 1, 1, 1, 1, 1] + [4, 1, 1]).category_defender == HELD
    assert run(unit(), gun, [1] * 6 + [4, 1, 1]).category_defender == HELD


def test_wounds_fill_one_base_at_a_time_and_damage_is_capped():
    # defender 2 bases x 2 wounds; 3 unsaved -> 1 base lost, 1 damaged
    out = run(unit(bases=2), unit(bases=2, wounds=2), [4, 4, 4, 1] + [1, 1])
    assert out.damage_to_defender == 3 and out.extras["bases_lost_defender"] == 1
    assert out.category_defender == RETREATED
    # 1 base x 2 wounds takes 4 unsaved: destroyed, damage capped at 2
    out = run(unit(bases=2), unit(bases=1, wounds=2), [4, 4, 4, 4] + [1])
    assert out.damage_to_defender == 2 and out.category_defender == DESTROYED and out.winner == ATTACKER


def test_a_loser_destroyed_by_wounds_does_not_retreat_and_both_destroyed_is_a_draw():
    out = run(unit(bases=1), unit(bases=1), [4, 4, 4])
    assert out.winner == DRAW
    assert (out.category_attacker, out.category_defender) == (DESTROYED, DESTROYED)


def test_the_engagement_winner_can_still_be_destroyed():
    # attacker 1 base takes 1 unsaved (destroyed); defender 3 bases takes 2 and retreats: defender wins the fight
    out = run(unit(bases=1), unit(bases=3), [4, 4] + [4, 1, 1])
    assert out.winner == DEFENDER
    assert (out.category_attacker, out.category_defender) == (DESTROYED, RETREATED)


def test_a_destroyed_engagement_winner_and_a_stationary_loser_draw():
    out = run(unit(bases=1), unit(bases=3, move=0), [4, 4] + [4, 1, 1])
    assert out.winner == DRAW and out.category_defender == DESTROYED


# ------------------------------------------------------------------ fights over several rounds
def test_rounds_alternate_attackers_and_each_new_attacker_charges():
    a, d = unit(bases=1, attack=1), unit(bases=2, attack=1)
    # round 1: attacker charges (2 dice), defender 2 dice; all miss.
    # round 2: defender charges (4 dice), original attacker 1 die.
    # round 3: original attacker charges (2 dice), defender 2 dice.
    dice = [1] * 4 + [1] * 5 + [1] * 4
    out = run(a, d, dice, rounds=3)
    assert out.rounds == 3 and out.winner == DRAW and not out.capped


def test_dice_order_follows_the_round_attacker():
    a, d = unit(bases=1, attack=1), unit(bases=1, attack=3)
    # round 2: the defender attacks first with (3 + 1) dice; one hit with its first die only
    dice = [1, 1] + [1, 1, 1] + [6, 1, 1, 1] + [1]
    out = run(a, d, dice, rounds=2)
    assert out.damage_to_attacker == 1 and out.category_attacker == DESTROYED and out.rounds == 2


def test_a_unit_that_retreated_is_flanked_when_charged():
    a, d = unit(bases=2, attack=2), unit(bases=3, attack=1)
    # round 1: the attacker (charging) rolls (2 + 1) x 2 = 6 dice, all miss; the defender rolls 3, one hit:
    # the attacker loses (1 base left) and retreats, facing away.
    r1 = [1] * 6 + [4, 1, 1]
    # round 2: the defender charges with (1 + 1) x 3 = 6 dice and, the target being flanked, hits on 3+;
    # the flanked attacker rolls 2 x 1 - 1 = 1 die.
    r2 = [3] + [1] * 5 + [1]
    out = run(a, d, r1 + r2, rounds=2)
    assert out.damage_to_attacker == 2 and out.category_attacker == DESTROYED and out.rounds == 2


def test_a_unit_that_retreated_and_then_attacks_is_not_flanked():
    a, d = unit(bases=2, attack=1), unit(bases=2, attack=2)
    # round 1: attacker (charging) 4 dice: one hit; defender 4 dice miss -> the defender retreats
    # round 2: the defender attacks, charging: (2 + 1) x 1 = 3 dice... its bases: 1 left; hits need 4+
    r1 = [4, 1, 1, 1] + [1] * 4
    r2 = [3, 3, 3] + [1, 1]
    out = run(a, d, r1 + r2, rounds=2)
    assert out.damage_to_attacker == 0 and out.rounds == 2


def test_flanked_state_describes_the_first_engagement_only():
    a, d = unit(bases=1, attack=2), unit(bases=1, attack=2)
    # round 1: defender flanked: 2 - 1 = 1 die; round 2 (tie in round 1): defender charges with 3, attacker 2
    out = run(a, d, [1] * 3 + [1] + [1] * 3 + [1] * 2, {"defender": {"flanked": True}}, rounds=2)
    assert out.winner == DRAW


def test_cover_and_dash_describe_the_first_engagement_only():
    a, d = unit(bases=1), unit(bases=1)
    s = {"attacker": {"charge": False, "dash": True}, "defender": {"cover": True}}
    # round 1: attacker 1 die (no charge), a 5 misses (6+ needed); round 2: attacker's 4 hits the charging defender
    out = run(a, d, [5, 1] + [1, 1] + [4], s, rounds=2)
    assert out.damage_to_defender == 1 and out.category_defender == DESTROYED


def test_shaken_carries_over_to_later_rounds():
    a, d = unit(bases=2, attack=2, courage=1), unit(bases=2, attack=1)
    # round 1 (no charge): attacker 4 dice, one hit; defender 2 dice, one hit: a tie, and courage 1
    # shakes the attacker. Each side is down to 1 base.
    r1 = [4, 1, 1, 1] + [4, 1]
    # round 2: the defender charges with (1 + 1) x 1 = 2 dice; the still-Shaken attacker rolls 2 - 1 = 1 die
    r2 = [1, 1] + [1]
    out = run(a, d, r1 + r2, NO_CHARGE, rounds=2)
    assert out.extras["shaken_attacker"] == 1 and out.rounds == 2 and out.winner == DRAW


def test_rally_clears_shaken_at_the_start_of_its_own_attack():
    a, d = unit(bases=1, attack=2), unit(bases=1, attack=1)
    # attacker starts shaken. round 1 (no charge): 2 - 1 = 1 die; defender 1 die. Tie.
    # round 2: defender charges 2 dice; attacker still shaken: 1 die. Tie.
    # round 3: with rally the attacker recovers: charges with 3 dice; without rally it rolls 2.
    r12 = [1, 1] + [1, 1, 1]
    states = {"attacker": {"charge": False, "shaken": True}}
    out = run(a, d, r12 + [1, 1, 1] + [1], states, {"rally": True}, rounds=3)
    assert out.extras["shaken_attacker"] == 0
    out = run(a, d, r12 + [1, 1] + [1], states, {"rally": False}, rounds=3)
    assert out.extras["shaken_attacker"] == 1


def test_rounds_n_winner_is_fewer_unsaved_hits_over_the_fight():
    a, d = unit(bases=5), unit(bases=5)
    # round 1: attacker scores 2, defender 1 (defender loses); round 2: defender (attacker now) scores 2, other 0
    r1 = [4, 4] + [1] * 8 + [4, 1, 1, 1, 1]
    r2 = [4, 4] + [1] * 4 + [1] * 4  # the defender charges with (1 + 1) x 3 bases = 6 dice; attacker 4 bases
    out = run(a, d, r1 + r2, rounds=2)
    assert (out.damage_to_attacker, out.damage_to_defender) == (3, 2)
    assert out.winner == DEFENDER and out.category_attacker == RETREATED and out.category_defender == HELD


def test_end_stops_at_destruction_and_caps_as_a_draw():
    a, d = unit(bases=1), unit(bases=1)
    out = run(a, d, [1, 1, 1] + [1, 1, 1] + [6, 1, 1], rounds="end")
    assert out.rounds == 3 and out.winner == ATTACKER and out.category_defender == DESTROYED
    out = run(a, d, [1] * 6, rounds="end", max_rounds=2)
    assert out.capped and out.winner == DRAW and out.rounds == 2


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("field,value,match", [
    ("bases", 0, "bases"), ("bases", 51, "bases"), ("attack", 11, "attack"), ("save", 1, "save"),
    ("save", 7, "save"), ("courage", 0, "courage"), ("move", -1, "move"), ("wounds", 0, "wounds"),
    ("vehicle", "yes", "vehicle"), ("attack", 1.5, "attack"), ("colour", "red", "colour"),
])
def test_bad_unit_fields_are_rejected(field, value, match):
    good = {"name": "X", "bases": 3, "attack": 1, "courage": 3, "move": 6}
    with pytest.raises(InputError, match=match):
        roster_from_dict({"ruleset": "pools", "unit": [{**good, field: value}]})


def test_missing_field_is_rejected():
    with pytest.raises(InputError, match="courage"):
        roster_from_dict({"ruleset": "pools", "unit": [{"name": "X", "bases": 3, "attack": 1, "move": 6}]})


def test_charge_with_a_dash_token_is_rejected():
    with pytest.raises(MatchupError, match="Dash"):
        plan(unit(), unit(), {"attacker": {"dash": True}})


def test_charge_is_an_attacker_state_and_unknown_states_are_rejected():
    with pytest.raises(InputError, match="charge"):
        plan(unit(), unit(), {"defender": {"charge": True}})
    with pytest.raises(InputError, match="state"):
        plan(unit(), unit(), {"defender": {"evading": True}})
    with pytest.raises(InputError, match="flank_shift"):
        plan(unit(), unit(), options={"flank_shift": 9})


# ------------------------------------------------------------------ roster and kernel sanity
def test_default_roster_has_the_promised_units():
    ros = default_roster("pools")
    units = list(ros.units.values())
    assert 8 <= len(units) <= 12 and all(u.points is not None for u in units)
    assert any(u.vehicle for u in units) and any(u.move == 0 for u in units)
    att, dfn, _, rounds = POOLS.bench_matchup()
    assert ros.unit(att).bases == ros.unit(dfn).bases == 10 and rounds == 1


def test_kernel_methods_agree_on_deterministic_fights():
    # two stat-0 units that do not charge never roll a die: a tie, every time
    p = plan(unit(attack=0), unit(attack=0), NO_CHARGE)
    for method in ("multinomial", "table", "binomial"):
        out = POOLS.simulate(p, 1000, np.random.default_rng(0), 1, 50, method=method).expand()
        assert (out.winner == DRAW).all() and (out.category_attacker == HELD).all()
    # to the end they charge each other from round 2: the fight always ends in destruction or the cap
    out = POOLS.simulate(p, 1000, np.random.default_rng(0), "end", 50).expand()
    assert ((out.category_attacker == DESTROYED) | (out.category_defender == DESTROYED) | out.capped).all()


def test_kernel_is_reproducible_and_uses_only_its_rng():
    p = plan(unit(bases=10), unit(bases=10, save=5, courage=5))
    for rounds in (1, "end"):
        a = POOLS.simulate(p, 5000, np.random.default_rng(7), rounds, 50).expand()
        b = POOLS.simulate(p, 5000, np.random.default_rng(7), rounds, 50).expand()
        assert np.array_equal(a.winner, b.winner) and np.array_equal(a.damage_to_defender, b.damage_to_defender)


def test_kernel_outputs_are_non_negative_integers_with_consistent_categories():
    p = plan(unit(bases=4, wounds=2, move=0), unit(bases=3, attack=2, save=4, courage=3))
    for rounds in (1, 3, "end"):
        out = POOLS.simulate(p, 20000, np.random.default_rng(3), rounds, 50).expand()
        for arr in (out.damage_to_attacker, out.damage_to_defender, out.rounds, *out.extras.values()):
            assert arr.dtype.kind in "iu" and arr.min() >= 0
        assert out.damage_to_attacker.max() <= 8 and out.damage_to_defender.max() <= 3
        # a stationary side never retreats
        assert not (out.category_attacker == RETREATED).any()


def test_very_large_pools_use_the_binomial_path():
    big = unit(bases=50, attack=10)
    p = plan(big, big)
    assert p.single is None and p.tables == (None, None)
    for rounds in (1, 2):
        out = POOLS.simulate(p, 1000, np.random.default_rng(0), rounds, 50)
        assert out.n_trials == 1000 and (out.damage_to_attacker <= 50).all()
    with pytest.raises(ValueError):
        POOLS.simulate(p, 10, np.random.default_rng(0), 1, 50, method="multinomial")


def test_overrides_are_validated():
    with pytest.raises(InputError, match="save"):
        sim.build_matchup("pools", "Line Infantry", "Spear Wall", overrides={"attacker": {"save": 9}}, budget="none")
    m, _ = sim.build_matchup("pools", "Line Infantry", "Spear Wall", overrides={"attacker": {"save": None}},
                             budget="none")
    assert m.attacker.save is None and dataclasses.replace(m.attacker, save=5).save == 5


def test_unit_rows_show_saves_as_written():
    rows = POOLS.unit_rows(unit(save=4)) + POOLS.unit_rows(unit())
    assert rows[0]["save"] == "4+" and rows[1]["save"] is None
