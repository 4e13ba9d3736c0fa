"""warband: tables, equipment legality, and every rule on the scalar reference with scripted dice.

Dice order (see ``sim/rulesets/warband/reference.py``): strike-order roll-offs;
then per striker: to-hit dice, parry die (and re-roll), then per hit: to-wound,
critical, save, Step Aside; then injury dice (one per wound at or beyond W = 0),
then the helmet die.
"""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.dice import RandomDice, ScriptedDice
from sim.errors import InputError, Where
from sim.outcomes import ATTACKER, DEFENDER, DRAW
from sim.rulesets.warband import RULESET as WB
from sim.rulesets.warband.reference import Warrior, _charge, _Fight, _rejoin, _strike_class, pairing
from sim.rulesets.warband.tables import (
    EXPOSED_SPOT,
    KNOCKED_DOWN,
    MASTER_STRIKE,
    OUT_OF_ACTION,
    STANDING,
    STUNNED,
    VITAL_PART,
    attack_columns,
    critical_result,
    injury_result,
    save_needed,
    strength_save_modifier,
    to_hit_needed,
    to_wound_needed,
    weapon_strength,
)

OOA, KD, ST, UP = OUT_OF_ACTION, KNOCKED_DOWN, STUNNED, STANDING


def W(**kw):
    """A validated warrior: WS3 S3 T3 I3 W1 A1 with an axe unless told otherwise."""
    base = dict(name="w", ws=3, s=3, t=3, i=3, w=1, a=1, weapons=["axe"])
    base.update(kw)
    return WB.parse_unit(base, Where("test", base["name"]))


def fight(att, dfn, dice, *, charging=True, fist="user-1", rounds="end", max_rounds=50, reengage="own_turn_charge"):
    plan = sim.build_matchup(WB, att, dfn, states={"attacker": {"charging": charging}},
                             options={"fist_strength": fist, "reengage": reengage}, budget="none")[1]
    d = ScriptedDice(dice)
    out = WB.resolve_one(plan, d, rounds, max_rounds)
    d.assert_exhausted()
    return out


def phase(att, dfn, dice, *, charging=True, round_no=1, setup=None):
    """Play one round of a fresh fight (after ``setup(f)``); return the fight to inspect."""
    f = _Fight(att, dfn, charging, False, ScriptedDice(dice))
    if setup:
        setup(f)
    f.play_round(round_no)
    f.dice.assert_exhausted()
    return f


# ---------------------------------------------------------------------------- tables
def test_to_hit_chart():
    assert to_hit_needed(4, 3) == 3 and to_hit_needed(3, 3) == 4 and to_hit_needed(3, 6) == 4
    assert to_hit_needed(3, 7) == 5 and to_hit_needed(2, 5) == 5 and to_hit_needed(1, 2) == 4


def test_to_wound_chart():
    assert [to_wound_needed(3, t) for t in range(1, 9)] == [2, 3, 4, 5, 6, 6, 7, 7]
    assert to_wound_needed(10, 1) == 2


def test_strength_save_modifiers():
    assert [strength_save_modifier(s) for s in range(1, 11)] == [0, 0, 0, 1, 2, 3, 4, 5, 6, 6]


def test_critical_and_injury_tables():
    assert [critical_result(r) for r in range(1, 8)] == [VITAL_PART] * 2 + [EXPOSED_SPOT] * 2 + [MASTER_STRIKE] * 3
    assert [injury_result(t, False) for t in range(1, 9)] == [KD, KD, ST, ST, OOA, OOA, OOA, OOA]
    assert [injury_result(t, True) for t in range(1, 7)] == [KD, ST, ST, ST, OOA, OOA]


def test_saves_with_armour_shield_strength_and_weapons():
    axe, dagger = W(), W(weapons=["dagger"])
    assert save_needed(axe, "axe", 3, W(armour="light")) == 7          # 6+ worsened by the axe
    assert save_needed(dagger, "dagger", 3, W()) == 6                   # no armour: 6+ against a dagger
    assert save_needed(dagger, "dagger", 3, W(armour="light", shield=True)) == 4
    assert save_needed(dagger, "dagger", 4, W(armour="heavy")) == 5
    assert save_needed(dagger, "dagger", 3, W(armour="gromril", shield=True)) == 2
    assert save_needed(axe, "axe", 5, W(armour="gromril")) == 7
    assert save_needed(dagger, "dagger", 3, W(shield=True)) == 5        # a shield alone gives 6+ (dagger 5+)
    fist = W(weapons=["fist"])
    assert save_needed(fist, "fist", 2, W(armour="ithilmar")) == 4


def test_weapon_strength_and_attacks():
    u = W(s=3, weapons=["flail"])
    assert weapon_strength(u, "flail", True, False) == 5 and weapon_strength(u, "flail", False, False) == 3
    ms = W(s=3, weapons=["morning_star"], skills=["mighty_blow"])
    assert weapon_strength(ms, "morning_star", True, False) == 5 and weapon_strength(ms, "morning_star", False, False) == 4
    assert weapon_strength(W(weapons=["halberd"]), "halberd", False, False) == 4
    assert weapon_strength(W(weapons=["double_handed"]), "double_handed", False, False) == 5
    assert weapon_strength(W(weapons=["fist"]), "fist", False, False) == 2
    assert weapon_strength(W(weapons=["fist"]), "fist", False, True) == 3
    assert attack_columns(W(a=2, weapons=["sword", "dagger"])) == ("sword", "sword", "dagger")
    assert attack_columns(W(a=1, weapons=["dagger", "dagger"])) == ("dagger", "dagger")
    assert attack_columns(W(a=3, weapons=["fist"])) == ("fist",)
    assert attack_columns(W(a=2, weapons=["mace"])) == ("club", "club")


# ------------------------------------------------------------------------ validation
@pytest.mark.parametrize("kw, match", [
    (dict(weapons=["double_handed"], shield=True), "double_handed alone"),
    (dict(weapons=["sword", "dagger", "axe"]), "weapons"),
    (dict(weapons=["morning_star"], buckler=True), "morning_star without a second weapon or buckler"),
    (dict(weapons=["halberd", "dagger"]), "halberd alone"),
    (dict(weapons=["flail"], buckler=True), "flail alone"),
    (dict(weapons=["spear", "dagger"]), "spear without a second weapon"),
    (dict(weapons=["fist", "sword"]), "fist alone"),
    (dict(weapons=["sword", "dagger"], shield=True), "shield"),
    (dict(weapons=["sword", "dagger"], buckler=True), "buckler"),
    (dict(shield=True, buckler=True), "buckler"),
    (dict(armour="toughened_leathers", shield=True), "toughened_leathers"),
    (dict(weapons=["lance"]), "weapons"),
    (dict(weapons=[]), "weapons"),
    (dict(armour="plate"), "armour"),
    (dict(count=21), "count"),
    (dict(ws=0), "ws"),
    (dict(skills=["frenzy"]), "skills"),
    (dict(skills=["resilient", "resilient"]), "each skill at most once"),
    (dict(colour="red"), "unknown field"),
])
def test_illegal_units_are_one_line_errors(kw, match):
    with pytest.raises(InputError, match=match) as e:
        W(name="Bad Bob", **kw)
    assert "\n" not in str(e.value) and "'Bad Bob'" in str(e.value) and "test" in str(e.value)


def test_legal_combinations():
    W(weapons=["morning_star"], shield=True)
    W(weapons=["spear"], buckler=True)
    W(weapons=["sword"], buckler=True, armour="toughened_leathers", helmet=True)
    W(weapons=["hammer", "staff"])


def test_overrides_are_validated():
    with pytest.raises(InputError, match="shield"):
        sim.build_matchup(WB, "Mercenary Captain", "Youngblood", overrides={"attacker": {"shield": True}},
                          budget="none")


# ------------------------------------------------------------------- a simple fight
def test_charge_hit_wound_injury_out_of_action():
    out = fight(W(), W(), [4, 4, 5])          # hit 4+, wound 4+, no save, injury 5: out of action
    assert (out.winner, out.rounds, out.damage_to_defender, out.damage_to_attacker) == (ATTACKER, 1, 1, 0)
    assert (out.category_attacker, out.category_defender) == (2, 0)
    assert out.extras == {"out_of_action_attacker": 0, "out_of_action_defender": 1}


def test_miss_then_the_defender_knocks_down_and_wins_on_wounds_after_one_round():
    out = fight(W(), W(), [3, 4, 4, 1], rounds=1)
    assert (out.winner, out.category_attacker, out.category_defender, out.damage_to_attacker) == (DEFENDER, 1, 2, 1)


def test_knocked_down_stays_down_in_enemy_turn_is_hit_automatically_then_stands_and_strikes_last():
    # r1: att misses (3); def hits, wounds, injury 1: attacker knocked down.
    # r2 (defender's turn): attacker still down; def auto-hits, to-wound 3 fails.
    # r3 (attacker's turn): attacker stands up and strikes last despite I 5: def misses (1),
    #     then the attacker hits, wounds, injury 6.
    out = fight(W(i=5), W(i=1), [3, 4, 4, 1, 3, 1, 4, 4, 6])
    assert (out.winner, out.rounds) == (ATTACKER, 3)


def test_knocked_down_target_any_unsaved_wound_is_out_of_action():
    # r1: att misses; def (dagger: light armour saves on 5+) hits, wounds, save 1 fails, injury 1.
    # r2: the knocked-down attacker is auto-hit: wound 5, save 2 fails -> out of action.
    out = fight(W(armour="light"), W(weapons=["dagger"]), [3, 4, 4, 1, 1, 5, 2])
    assert (out.winner, out.rounds) == (DEFENDER, 2)


def test_knocked_down_target_cannot_parry_and_needs_no_to_hit_roll():
    def setup(f):
        f.dfn[0].status, f.dfn[0].wounds = KD, 0
    f = phase(W(), W(weapons=["sword"], buckler=True), [4], setup=setup)  # only the to-wound die
    assert f.dfn[0].status == OOA


def test_stunned_in_own_turn_is_out_of_action_when_the_enemy_next_strikes():
    # r1: att misses (1), def stuns the attacker (injury 3). r2 is the defender's turn:
    # the attacker does not recover, so the defender takes it out of action without dice.
    out = fight(W(), W(), [1, 4, 4, 3])
    assert (out.winner, out.rounds) == (DEFENDER, 2)


def test_stunned_recovers_to_knocked_down_then_stands_a_turn_later():
    # r1: att stuns def (4, 4, 3). r2 (def turn): stunned -> knocked down; att auto-hits, wound 3 fails.
    # r3: def still down; wound 2 fails. r4 (def turn): def stands and strikes last: att misses (1),
    # def hits, wounds, injury 6.
    out = fight(W(), W(), [4, 4, 3, 3, 2, 1, 4, 4, 6])
    assert (out.winner, out.rounds) == (DEFENDER, 4)


def test_recovery_only_for_the_active_side():
    def setup(f):
        f.att[0].status, f.dfn[0].status = STUNNED, KD
        f.att[0].wounds = f.dfn[0].wounds = 0
    f = phase(W(), W(), [], round_no=3, setup=setup)   # attacker's turn: only the attacker recovers
    assert (f.att[0].status, f.dfn[0].status) == (KD, KD)


# --------------------------------------------------------------------- strike order
def test_roll_off_for_equal_initiative():
    out = fight(W(), W(), [2, 5, 4, 4, 5], charging=False)     # defender wins the roll-off
    assert out.winner == DEFENDER and out.rounds == 1


def test_roll_off_ties_are_rerolled():
    out = fight(W(), W(), [3, 3, 5, 2, 4, 4, 5], charging=False)
    assert out.winner == ATTACKER


def test_higher_initiative_strikes_first_without_a_roll():
    assert fight(W(i=2), W(i=4), [4, 4, 5], charging=False).winner == DEFENDER


def test_charger_strikes_first_whatever_its_initiative():
    assert fight(W(i=1), W(i=9), [4, 4, 5]).winner == ATTACKER


def test_charge_bonus_only_in_round_1():
    # r1: the charger (I 1) misses (1), defender misses (1); r2: the defender (I 9) goes first.
    assert fight(W(i=1), W(i=9), [1, 1, 4, 4, 5]).winner == DEFENDER


def test_double_handed_strikes_last_even_when_charging_unless_strongman():
    assert fight(W(weapons=["double_handed"]), W(i=1), [4, 4, 5]).winner == DEFENDER
    assert fight(W(weapons=["double_handed"], skills=["strongman"]), W(i=1), [4, 4, 5]).winner == ATTACKER


def test_both_strike_last_ordered_by_initiative():
    assert fight(W(weapons=["double_handed"], i=2), W(weapons=["double_handed"], i=4), [4, 4, 5]).winner == DEFENDER


def test_spear_strikes_first_in_round_1_against_a_charger():
    # both strike first: ordered by Initiative, the spearman's 4 beats 3
    assert fight(W(), W(weapons=["spear"], i=4), [4, 4, 5]).winner == DEFENDER
    # in round 2 (attacker I 5) the spear gives nothing: r1 both miss, r2 attacker first
    assert fight(W(i=5), W(weapons=["spear"], i=4), [1, 1, 4, 4, 5]).winner == ATTACKER


def test_lightning_reflexes_strike_first_against_a_charger():
    assert fight(W(), W(i=4, skills=["lightning_reflexes"]), [4, 4, 5]).winner == DEFENDER
    assert fight(W(i=4), W(i=3, skills=["lightning_reflexes"]), [4, 4, 5]).winner == ATTACKER
    # no charge: no effect, normal roll-off at equal Initiative
    assert fight(W(), W(skills=["lightning_reflexes"]), [6, 1, 4, 4, 5], charging=False).winner == ATTACKER


# ----------------------------------------------------------------------------- parry
def test_parry_must_beat_the_to_hit_die():
    sword = W(weapons=["sword"])
    f = phase(W(), sword, [4, 5, 1])                 # hit 4, parry 5 > 4: parried; defender misses
    assert f.dfn[0].status == UP
    f = phase(W(), sword, [4, 4, 4, 5])              # parry 4 is not higher: wound, injury 5
    assert f.dfn[0].status == OOA


def test_a_six_cannot_be_parried_and_no_parry_die_is_rolled():
    f = phase(W(), W(weapons=["sword"]), [6, 4, 5])
    assert f.dfn[0].status == OOA


def test_sword_and_buckler_reroll_a_failed_parry_two_swords_do_not():
    f = phase(W(), W(weapons=["sword"], buckler=True), [4, 2, 6, 1])
    assert f.dfn[0].status == UP
    f = phase(W(), W(weapons=["sword", "sword"]), [4, 2, 4, 5])   # no re-roll; two swords: no free hit here
    assert f.dfn[0].status == OOA
    f = phase(W(), W(weapons=["sword"]), [4, 2, 4, 5])
    assert f.dfn[0].status == OOA


def test_buckler_alone_parries():
    assert phase(W(), W(weapons=["axe"], buckler=True), [4, 5, 1]).dfn[0].status == UP


def test_no_parry_against_twice_the_parriers_strength():
    # halberd S3+1 = 4 against a parrier of S2: not parried, no parry die
    f = phase(W(weapons=["halberd"]), W(s=2, weapons=["sword"]), [4, 3, 5])
    assert f.dfn[0].status == OOA


def test_parry_cancels_the_highest_hit():
    # two attacks hit with 4 and 5; parry 6 cancels the 5; the 4 wounds (4), injury 5
    f = phase(W(a=2), W(weapons=["sword"]), [4, 5, 6, 4, 5])
    assert f.dfn[0].status == OOA and f.dice.used == 5


def test_parry_only_against_the_first_opponent_to_score_hits():
    # 2 v 1: attackers roll off (6, 1); A1 hits (4), parried (5); A2 hits (5): no parry left
    f = phase(W(count=2), W(weapons=["sword"]), [6, 1, 4, 5, 5, 4, 5])
    assert f.dfn[0].status == OOA
    # A1 misses, so A2 is the first to score hits and may be parried (6); then D1 strikes A1 (miss)
    f = phase(W(count=2), W(weapons=["sword"]), [6, 1, 1, 4, 6, 1])
    assert f.dfn[0].status == UP


# ------------------------------------------------------------- wounds and criticals
def test_strength_bonuses_flail_first_round_only():
    # flail S5 vs T5 in round 1: wound on 4
    f = phase(W(weapons=["flail"]), W(t=5), [4, 4, 5])
    assert f.dfn[0].status == OOA
    # round 3 (attacker's turn, no charge bonus): S3 vs T5 needs 6: a 5 fails; the defender misses
    f = phase(W(weapons=["flail"]), W(t=5), [6, 1, 4, 5, 1], charging=False, round_no=3)
    assert f.dfn[0].status == UP


def test_resilient_and_mighty_blow():
    f = phase(W(), W(skills=["resilient"]), [4, 4, 1])            # S3-1 vs T3 needs 5: a 4 fails
    assert f.dfn[0].status == UP
    f = phase(W(skills=["mighty_blow"]), W(t=4), [4, 4, 5])       # S4 vs T4 needs 4
    assert f.dfn[0].status == OOA


def test_cannot_wound_rolls_no_die():
    f = phase(W(s=1), W(t=5), [4, 1])                             # hit, no wound roll, defender misses
    assert f.dfn[0].status == UP and f.att[0].status == UP


def test_critical_vital_part_one_save_covers_two_wounds():
    tgt = W(w=2, armour="light", shield=True)                     # 5+ (axe: 6+)
    f = phase(W(), tgt, [4, 6, 1, 6, 1])                          # crit 1: vital; save 6 saves both
    assert f.dfn[0].wounds == 2
    f = phase(W(), tgt, [4, 6, 2, 5, 5])                          # save 5 fails: 2 wounds, injury 5
    assert f.dfn[0].wounds == 0 and f.dfn[0].status == OOA


def test_critical_exposed_spot_no_save():
    f = phase(W(), W(w=2, armour="gromril", shield=True), [4, 6, 3, 6])   # no save die; injury 6
    assert f.dfn[0].status == OOA


def test_critical_master_strike_adds_two_to_injury():
    f = phase(W(), W(w=2), [4, 6, 5, 3])                          # injury 3 + 2 = 5
    assert f.dfn[0].status == OOA


def test_web_of_steel_adds_one_to_the_critical_roll():
    f = phase(W(skills=["web_of_steel"]), W(w=2), [4, 6, 4, 3])   # 4 + 1: master strike, injury 3+2
    assert f.dfn[0].status == OOA


def test_no_critical_when_six_is_needed_anyway():
    f = phase(W(), W(t=5, w=2), [4, 6, 1])                        # one wound, no crit die; defender misses
    assert f.dfn[0].wounds == 1


def test_only_the_first_six_is_critical():
    # two attacks, both wound on 6: one critical (vital part: 2 wounds) + 1 wound on a W4 target
    f = phase(W(a=2), W(w=4), [4, 4, 6, 1, 6, 1])
    assert f.dfn[0].wounds == 1


# -------------------------------------------------------------------------- saves
def test_armour_save_and_step_aside():
    f = phase(W(weapons=["dagger"]), W(armour="light"), [4, 4, 5, 1])     # dagger: 5+ save, 5 saves
    assert f.dfn[0].status == UP
    f = phase(W(weapons=["dagger"]), W(armour="light"), [4, 4, 4, 5])     # 4 fails, injury 5
    assert f.dfn[0].status == OOA
    f = phase(W(), W(skills=["step_aside"]), [4, 4, 5, 1])                # no armour; step aside 5
    assert f.dfn[0].status == UP
    f = phase(W(s=4), W(armour="light", skills=["step_aside"]), [4, 4, 4, 6])  # S4+axe: no armour save; step aside 4 fails
    assert f.dfn[0].status == OOA


def test_fist_strength_option():
    # fist S3-1 = 2 vs T3 needs 5: a 4 fails by default, wounds "as user"
    att = W(weapons=["fist"], a=2)
    assert fight(att, W(), [4, 4, 1], rounds=1).winner == DRAW
    assert fight(att, W(), [4, 4, 1, 5], fist="user", rounds=1).winner == ATTACKER   # save 6+ (fist) fails


# ------------------------------------------------------------------------- injuries
def test_no_injury_while_wounds_remain():
    f = phase(W(), W(w=2), [4, 4, 1])
    assert (f.dfn[0].wounds, f.dfn[0].status) == (1, UP)


def test_several_wounds_keep_the_highest_injury():
    # exposed spot on a W1 target: 2 wounds, both at 0: two injury rolls 1 and 4 -> stunned
    f = phase(W(), W(), [4, 6, 3, 1, 4])
    assert f.dfn[0].status == ST


def test_concussion():
    assert phase(W(weapons=["club"]), W(), [4, 4, 2]).dfn[0].status == ST
    assert phase(W(weapons=["staff"]), W(), [4, 4, 1]).dfn[0].status == KD
    assert phase(W(), W(), [4, 4, 2]).dfn[0].status == KD


def test_helmet_turns_stunned_into_knocked_down_on_4_plus():
    assert phase(W(), W(helmet=True), [4, 4, 3, 4]).dfn[0].status == KD
    assert phase(W(), W(helmet=True), [4, 4, 3, 3]).dfn[0].status == ST


def test_strike_to_injure():
    assert phase(W(skills=["strike_to_injure"]), W(), [4, 4, 4]).dfn[0].status == OOA


def test_jump_up_ignores_knocked_down_but_not_a_helmet_save():
    f = phase(W(), W(skills=["jump_up"]), [4, 4, 1, 1])           # stays up with 0 wounds, defender misses
    assert (f.dfn[0].status, f.dfn[0].wounds) == (UP, 0)
    f = phase(W(), W(skills=["jump_up"], helmet=True), [4, 4, 3, 5])
    assert f.dfn[0].status == KD


def test_standing_at_zero_wounds_any_wound_rolls_an_injury():
    def setup(f):
        f.dfn[0].wounds = 0
    f = phase(W(), W(w=2), [4, 4, 5], setup=setup)
    assert f.dfn[0].status == OOA


def test_a_batch_does_not_finish_its_own_victim():
    # two attacks both wound a W1 target: injuries 1 and 2 -> knocked down, not out of action
    f = phase(W(a=2), W(), [4, 4, 4, 4, 1, 2])
    assert f.dfn[0].status == KD and f.dfn[0].put_down_by == f.att[0].id


def test_another_warrior_may_finish_a_knocked_down_enemy():
    # 2 v 1: roll-off 5, 2; A1 knocks D down (4, 4, 1); A2 auto-hits, wound 4: out of action
    out = fight(W(count=2), W(), [5, 2, 4, 4, 1, 4])
    assert (out.winner, out.rounds, out.extras["out_of_action_defender"]) == (ATTACKER, 1, 1)


def test_a_striker_does_not_attack_a_target_it_put_down_this_phase():
    f = _Fight(W(), W(count=2), True, False, ScriptedDice([]))
    f.dfn[0].status, f.dfn[0].put_down_by = KD, f.att[0].id
    f.dfn[1].status, f.dfn[1].put_down_by = ST, f.att[0].id
    assert f.choose_target(f.att[0]) is None
    f.dfn[1].put_down_by = None
    assert f.choose_target(f.att[0]) is f.dfn[1]


def test_standing_enemies_are_attacked_before_fallen_ones():
    f = _Fight(W(), W(count=2), True, False, ScriptedDice([]))
    f.contacts = {(0, 0), (0, 1)}
    f.dfn[0].status = ST
    assert f.choose_target(f.att[0]) is f.dfn[1]


# ---------------------------------------------------------------------------- groups
def test_round_robin_pairing():
    assert pairing(3, 2) == {(0, 0), (1, 1), (2, 0)}
    assert pairing(1, 3) == {(0, 0), (0, 1), (0, 2)}
    assert pairing(2, 2) == {(0, 0), (1, 1)}


def test_free_warriors_join_the_least_engaged_enemy():
    f = _Fight(W(count=3), W(count=2), True, False, ScriptedDice([]))
    f.dfn[1].status = OOA
    _rejoin(f.att, f.dfn, f.contacts)
    assert (1, 0) in f.contacts


# ------------------------------------------------------- re-engaging (issue 16, spec "Re-engaging")
# 2 v 2, round 1: roll-offs (6, 1) for the chargers, (6, 1) for the defenders; A1 takes D1 out of
# action (4, 4, injury 5); A2 and D2 miss (1, 1).
FREE_R1 = [6, 1, 6, 1, 4, 4, 5, 1, 1]


def test_a_freed_warrior_waits_for_its_own_turn_then_charges_and_strikes_first():
    att, dfn = W(count=2, i=1), W(count=2, i=5)
    # round 2 (defenders' turn): A1 waits unengaged; D2 (I5) strikes before A2 (I1): two misses.
    # round 3 (attackers' turn): A1 charges D2 and strikes first despite I1: 4, 4, 5 -> out of action.
    out = fight(att, dfn, FREE_R1 + [1, 1] + [4, 4, 5])
    assert (out.winner, out.rounds, out.extras["out_of_action_defender"]) == (ATTACKER, 3, 2)
    # the old rule: A1 joins D2 at the start of round 2 and strikes in it: A1 and A2 roll off (6, 1),
    # D2 (I5) misses A1 (1), A1 takes D2 out (4, 4, 5)
    out = fight(att, dfn, FREE_R1 + [6, 1, 1, 4, 4, 5], reengage="every_round")
    assert (out.winner, out.rounds) == (ATTACKER, 2)


def test_charge_goes_to_the_enemy_with_fewest_opponents_lowest_index_first():
    f = _Fight(W(count=3), W(count=3), True, False, ScriptedDice([]))
    f.dfn[0].status = OOA
    f.contacts.add((2, 1))                     # D1 now has A1 and A2, D2 has A2
    _charge(f.att, f.dfn, f.contacts, True)
    assert (0, 2) in f.contacts and f.att[0].charged and f.dfn[2].was_charged
    assert not f.att[1].charged and not f.att[2].charged
    g = _Fight(W(count=3), W(count=3), True, False, ScriptedDice([]))
    g.dfn[0].status = OOA                      # D1 and D2 have one opponent each: D1 is listed first
    _charge(g.att, g.dfn, g.contacts, True)
    assert (0, 1) in g.contacts
    # two free warriors are placed in index order, each counting the one placed before it
    h = _Fight(W(count=3), W(count=3), True, False, ScriptedDice([]))
    h.dfn[0].status = h.dfn[1].status = OOA
    _charge(h.att, h.dfn, h.contacts, True)
    assert {(0, 2), (1, 2)} <= h.contacts


def test_only_standing_warriors_charge_and_never_an_enemy_out_of_action():
    f = _Fight(W(count=2), W(count=2), True, False, ScriptedDice([]))
    f.dfn[0].status = OOA
    f.att[0].status = KD                       # free but down: it stays where it is
    _charge(f.att, f.dfn, f.contacts, True)
    assert not f.att[0].charged and all(c[0] != 0 or c[1] == 0 for c in f.contacts)
    f.dfn[1].status = OOA                      # no enemy left: nobody moves
    f.att[0].status = UP
    _charge(f.att, f.dfn, f.contacts, True)
    assert not f.att[0].charged


def test_a_charger_strikes_first_unless_it_stood_up_or_strikes_last():
    def warrior(**kw):
        flags = {k: kw.pop(k) for k in ("charged", "stood_up", "was_charged") if k in kw}
        w = Warrior("attacker", 0, W(**kw), 1)
        for k, v in flags.items():
            setattr(w, k, v)
        return w
    assert _strike_class(warrior(charged=True), 3, True) == 0
    assert _strike_class(warrior(charged=True, stood_up=True), 3, True) == 2
    assert _strike_class(warrior(charged=True, weapons=["double_handed"]), 3, True) == 2
    assert _strike_class(warrior(charged=True, weapons=["double_handed"], skills=["strongman"]), 3, True) == 0
    assert _strike_class(warrior(was_charged=True, skills=["lightning_reflexes"]), 4, True) == 0
    assert _strike_class(warrior(was_charged=True), 4, True) == 1


def test_a_knocked_down_free_warrior_stands_then_charges_and_strikes_last():
    # 2 v 2 from round 3 (attackers' turn): A1 knocked down with no live enemy, D2 fights A2.
    def setup(f):
        f.att[0].status, f.att[0].wounds = KD, 0
        f.dfn[0].status = OOA
    # A1 stands, charges D2 but strikes last; A2 (I3) and D2 (I3) roll off (6, 1): A2 misses, D2
    # misses A2 (its first standing contact), A1 hits 4, wounds 4, injury 5
    f = phase(W(count=2), W(count=2), [6, 1, 1, 1, 4, 4, 5], round_no=3, setup=setup)
    assert (0, 1) in f.contacts and f.att[0].charged and f.att[0].stood_up and f.dfn[1].status == OOA


def test_reengage_option_values():
    assert sim.build_matchup(WB, W(count=2), W(count=2), budget="none")[1].reengage == "own_turn_charge"
    with pytest.raises(InputError, match="reengage"):
        sim.build_matchup(WB, W(count=2), W(count=2), options={"reengage": "sometimes"}, budget="none")


def test_groups_three_against_two_fight_to_the_end():
    plan = sim.build_matchup(WB, W(count=3), W(count=2), budget="none")[1]
    dice = RandomDice(np.random.default_rng(3))
    for _ in range(200):
        o = WB.resolve_one(plan, dice, "end", 50)
        assert o.winner in (ATTACKER, DEFENDER) and o.category_attacker != 1 and o.category_defender != 1
        assert o.extras["out_of_action_attacker"] == 3 or o.extras["out_of_action_defender"] == 2


# -------------------------------------------------------------------- end and winner
def test_cap_is_a_draw():
    out = fight(W(s=1, t=5, i=4), W(t=5, s=1), [4, 4] * 5, max_rounds=5)
    assert (out.winner, out.capped, out.rounds) == (DRAW, True, 5)


def test_rounds_n_winner_by_wounds_then_draw():
    out = fight(W(), W(w=2), [4, 4, 1], rounds=1)
    assert (out.winner, out.capped, out.category_defender) == (ATTACKER, False, 2)
    assert fight(W(), W(), [1, 1], rounds=1).winner == DRAW


# ------------------------------------------------------------------------------ kernel
def _kernel(att, dfn, n=20000, rounds="end", seed=5, states=None):
    plan = sim.build_matchup(WB, att, dfn, states=states, budget="none")[1]
    return WB.simulate(plan, n, np.random.default_rng(seed), rounds, 50)


def test_kernel_is_reproducible_and_integral():
    a, b = _kernel(W(count=2), W(w=2)), _kernel(W(count=2), W(w=2))
    for f in ("winner", "damage_to_attacker", "damage_to_defender", "rounds", "category_attacker"):
        assert np.array_equal(getattr(a, f), getattr(b, f))
        assert getattr(a, f).min() >= 0
    assert a.damage_to_defender.max() <= 2 and a.damage_to_attacker.max() <= 2


def test_kernel_groups_only_where_warriors_can_re_engage():
    """The vectorised kernel's group tables (the compiled kernel, where it plays, needs none)."""
    plan = lambda a, d, **o: WB.with_engine(sim.build_matchup(WB, a, d, options=o, budget="none")[1], "numpy").kernel
    assert plan(W(count=2), W(count=2)).groups is not None
    assert plan(W(), W()).groups is None and plan(W(), W(count=3)).groups is None      # nobody is ever free
    assert plan(W(count=2), W(count=2), reengage="every_round").groups is None


def test_one_against_one_and_one_against_many_ignore_the_rule():
    for a, d in ((W(), W(w=2)), (W(), W(count=3)), (W(count=4), W(weapons=["sword"]))):
        out = [WB.simulate(sim.build_matchup(WB, a, d, options={"reengage": r}, budget="none")[1], 5000,
                           np.random.default_rng(9), "end", 50) for r in ("own_turn_charge", "every_round")]
        for f in ("winner", "damage_to_attacker", "damage_to_defender", "rounds"):
            assert np.array_equal(getattr(out[0], f), getattr(out[1], f))


def test_twenty_a_side():
    out = _kernel(W(count=20), W(count=20, weapons=["sword"], armour="light"), n=3000)
    assert not out.capped.any() and out.extras["out_of_action_defender"].max() <= 20
    assert ((out.extras["out_of_action_attacker"] == 20) | (out.extras["out_of_action_defender"] == 20)).all()


def test_kernel_cannot_wound_means_capped_draws():
    out = _kernel(W(s=1, t=5), W(s=1, t=5), n=2000)
    assert (out.winner == DRAW).all() and out.capped.all() and (out.rounds == 50).all()


def test_kernel_fights_end_with_one_side_out_of_action():
    out = _kernel(W(count=3), W(count=2, w=2))
    assert not out.capped.any()
    assert ((out.extras["out_of_action_attacker"] == 3) | (out.extras["out_of_action_defender"] == 2)).all()
    assert set(np.unique(out.category_attacker)) <= {0, 2}


def test_bench_matchup_is_in_the_default_roster():
    att, dfn, states, rounds = WB.bench_matchup()
    roster = sim.default_roster("warband")
    assert att in roster.names and dfn in roster.names and rounds == "end"
    assert 10 <= len(roster) <= 14 and all(roster[n].points is not None for n in roster.names)


def test_bench_group_matchups_say_their_sizes():
    """Issue 14: ``meleelab bench`` lists 3 v 3 and 10 v 10 of the bench pair as extra entries named by size."""
    att, dfn, _, _ = WB.bench_matchup()
    extra = WB.bench_extra_matchups()
    groups, lists = extra[:2], extra[2:]
    assert [(a.name, a.count, d.name, d.count) for a, d, *_ in groups] == [(att, 3, dfn, 3), (att, 10, dfn, 10)]
    assert all(states == {} and rounds == "end" for _, _, states, rounds, _ in extra)
    assert ["3 v 3" in extra[0][4], "10 v 10" in extra[1][4]] == [True, True]
    # issue 40: 6 v 6 of the same two profiles as copies and as mixed army lists
    (ca, cd, *_), (la, ld, *_) = lists
    assert (ca.name, ca.count, cd.name, cd.count) == (att, 6, dfn, 6)
    assert la == {att: 3, dfn: 3} and ld == {dfn: 3, att: 3} and "6 v 6" in lists[1][4]


# ------------------------------------------------------------- one-attack outcome tables
def _table_probs(tb, row):
    """Outcome probabilities of one row of an alias table: {(wounds, status, hit): p}."""
    out = {}
    for j in range(tb.K):
        flat = row * tb.K + j
        for idx, p in ((flat, tb.prob[flat]), (tb.alias[flat], 1 - tb.prob[flat])):
            key = (int(tb.new_w[idx]), int(tb.new_status[idx]), bool(tb.hit[idx]))
            out[key] = out.get(key, 0) + p / tb.K
    return out


def test_single_attack_table_matches_hand_values():
    plan = sim.build_matchup(WB, W(), W(), budget="none")[1]
    tb = plan.kernel.blows[0][0].single
    # knocked-down target: auto-hit, S3 vs T3 wounds on 4+, no save: out of action 1/2
    kd = _table_probs(tb, tb.kd_row)
    assert kd[(0, OOA, False)] == pytest.approx(1 / 2)
    # standing W1: hit 1/2; plain wound (4, 5) 2/6 -> one injury roll, OOA 1/3;
    # critical (6) 1/6 -> two rolls: vital/exposed 1 - (2/3)^2, master (+2) 1 - (1/3)^2  => 1/9
    up = _table_probs(tb, 1)
    assert sum(p for (w, s, h), p in up.items() if s == OOA) == pytest.approx(1 / 9)
    assert up[(1, UP, False)] == pytest.approx(1 / 2)                    # missed
    assert sum(up.values()) == pytest.approx(1)


def test_single_attack_table_with_parry_reroll_and_helmet():
    plan = sim.build_matchup(WB, W(), W(weapons=["sword"], buckler=True, helmet=True), budget="none")[1]
    tb = plan.kernel.blows[0][0].single
    may = _table_probs(tb, 1 + 2)                                        # W1, may parry
    p_land = (1 / 6) * ((4 / 6) ** 2 + (5 / 6) ** 2 + 1)
    hurt = sum(p for (w, s, h), p in may.items() if s != UP)
    assert hurt == pytest.approx(p_land * 1 / 2)                          # every landed wound injures a W1
    no_parry = _table_probs(tb, 1)
    assert sum(p for (w, s, h), p in no_parry.items() if s != UP) == pytest.approx(1 / 4)
    # the helmet halves stunned results into knocked down; plain wound: 1/3 each before the helmet
    assert sum(p for (w, s, h), p in no_parry.items() if s == ST) < sum(p for (w, s, h), p in no_parry.items() if s == KD)


# ------------------------------------------------------------------------- rosters
def test_csv_roster_with_weapon_lists(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("name,ws,s,t,i,w,a,weapons,skills,buckler\n"
                 "Duellist,4,3,3,4,1,1,sword;dagger,step_aside;web_of_steel,false\n"
                 "Guard,3,3,3,3,1,1,spear,,true\n")
    roster = sim.load_roster(p, "warband")
    assert roster["Duellist"].weapons == ("sword", "dagger") and roster["Guard"].buckler
    bad = tmp_path / "bad.csv"
    bad.write_text("name,ws,s,t,i,w,a,weapons\nOaf,3,3,3,3,1,1,halberd;sword\n")
    with pytest.raises(InputError, match=r"bad\.csv.*'Oaf'.*weapons.*halberd alone"):
        sim.load_roster(bad, "warband")


def test_text_overrides_parse_lists():
    m, plan = sim.build_matchup(WB, "Youngblood", "Orc Boy", overrides={"attacker": {"weapons": "sword,dagger"}},
                                from_text=True, budget="none")
    assert m.attacker.weapons == ("sword", "dagger")


# ------------------------------------------------------------ optional small-group rules
def switched(att, dfn, dice, *, rounds="end", **opts):
    """A scripted fight with the ``all_alone`` / ``rout`` switches."""
    plan = sim.build_matchup(WB, att, dfn, options=opts, budget="none")[1]
    d = ScriptedDice(dice)
    out = WB.resolve_one(plan, d, rounds, 50)
    d.assert_exhausted()
    return out


def test_switches_are_off_by_default():
    plan = sim.build_matchup(WB, W(), W(), budget="none")[1]
    assert (plan.all_alone, plan.rout) == (False, False)
    assert (plan.kernel.all_alone, plan.kernel.rout, plan.kernel.auto_hit) == (False, False, None)


@pytest.mark.parametrize("opt", ["all_alone", "rout"])
def test_a_switch_needs_leadership(opt):
    with pytest.raises(InputError, match=rf"unit 'w'.*field 'ld'.*{opt}") as e:
        sim.build_matchup(WB, W(ld=7), W(), options={opt: True}, budget="none")
    assert "\n" not in str(e.value)
    sim.build_matchup(WB, W(), W(), budget="none")                  # no switch: ld is not needed


# 1 v 2, round 1: roll-off of the two defenders (6, 1), then the charger's to-hit, D1's, D2's;
# then the lone charger's All Alone test (2D6 against Ld 7).
ALONE_R1 = [6, 1, 1, 1, 1]


def test_all_alone_pass_fights_on():
    out = switched(W(ld=7), W(count=2, ld=7), ALONE_R1 + [3, 4], rounds=1, all_alone=True)
    assert (out.winner, out.rounds, out.category_attacker, out.damage_to_attacker) == (DRAW, 1, 2, 0)
    assert switched(W(ld=7), W(count=2, ld=7), ALONE_R1, rounds=1).winner == DRAW     # off: no test dice


def test_all_alone_fail_each_opponent_auto_hits_then_it_flees():
    # 4 + 4 = 8 > Ld 7: D1's automatic hit wounds on 4 (1 wound); D2's wounds on a 6: critical,
    # 5 = master strike (2 wounds, no save). 3 wounds on a W2 warrior: damage 2; no injury dice,
    # it flees and counts as out of action: the defenders win in round 1.
    out = switched(W(ld=7, w=2), W(count=2, ld=7), ALONE_R1 + [4, 4, 4, 6, 5], all_alone=True)
    assert (out.winner, out.rounds, out.damage_to_attacker, out.category_attacker) == (DEFENDER, 1, 2, 0)
    assert out.extras["out_of_action_attacker"] == 1
    # the automatic hits are saved as usual: light armour + shield 5+ (axe: 6+); both fail to wound or are saved
    out = switched(W(ld=7, armour="light", shield=True), W(count=2, ld=7), ALONE_R1 + [6, 6, 4, 6, 1], all_alone=True)
    assert (out.winner, out.damage_to_attacker, out.category_attacker) == (DEFENDER, 0, 0)


def test_all_alone_only_in_its_own_turn_and_only_when_alone_against_two():
    # round 2 is the defenders' turn: roll-off A, D1, D2 (6, 2, 1), three misses, no test
    out = switched(W(ld=7), W(count=2, ld=7), ALONE_R1 + [3, 4] + [6, 2, 1, 1, 1, 1], rounds=2, all_alone=True)
    assert (out.winner, out.rounds) == (DRAW, 2)
    # 2 v 2: every warrior has one opponent and a standing friend: no test
    out = switched(W(count=2, ld=2), W(count=2, ld=2), [6, 1, 6, 1, 1, 1, 1, 1], rounds=1, all_alone=True)
    assert out.winner == DRAW


def test_all_alone_not_for_a_fallen_warrior_or_against_one_standing_enemy():
    f = _Fight(W(ld=2), W(count=2), True, False, ScriptedDice([6, 6, 1, 1]), all_alone=True)
    f.dfn[1].status = KD
    f.all_alone_test(f.att, 1)                       # one standing enemy: no dice read
    assert f.att[0].status == UP and f.dice.used == 0
    f.dfn[1].status = UP
    f.all_alone_test(f.att, 1)                       # two: 12 > 2 fails; auto-hit wound dice 1, 1
    assert f.att[0].status == OOA
    f.dice.assert_exhausted()


# 2 v 2, round 1: roll-offs (6, 1) for the chargers and (6, 1) for the defenders; A1 takes D1 out of
# action (4, 4, injury 5), A2 misses, D2 misses. Round 2 is the defenders' turn: 1 of 2 is out of
# action (>= 25 %), so they take a rout test, 2D6 against Ld 7.
ROUT_R1 = [6, 1, 6, 1, 4, 4, 5, 1, 1]


def test_rout_fail_ends_the_fight_the_other_side_wins():
    out = switched(W(count=2, ld=7), W(count=2, ld=7), ROUT_R1 + [4, 4], rout=True)
    assert (out.winner, out.rounds, out.capped) == (ATTACKER, 2, False)
    assert (out.category_defender, out.extras["out_of_action_defender"], out.damage_to_defender) == (2, 1, 1)


def test_rout_pass_fights_on():
    # 3 + 4 = 7 passes; round 2 is the defenders' turn: the freed A1 waits for its own turn, so
    # only A2 and D2 fight: roll-off (6, 1), two misses
    out = switched(W(count=2, ld=7), W(count=2, ld=7), ROUT_R1 + [3, 4] + [6, 1, 1, 1], rounds=2, rout=True)
    assert (out.winner, out.rounds, out.extras["out_of_action_defender"]) == (ATTACKER, 2, 1)
    # the defenders' highest Ld counts; the test is against the leader
    out = switched(W(count=2, ld=7), W(count=2, ld=9), ROUT_R1 + [4, 5] + [6, 1, 1, 1], rounds=2, rout=True)
    assert out.rounds == 2 and out.extras["out_of_action_defender"] == 1


def test_rout_pass_fights_on_every_round_rule():
    # the old rule: round 2, A1 joins D2 at once; roll-off A1, A2, D2 (6, 2, 1), three misses
    out = switched(W(count=2, ld=7), W(count=2, ld=7), ROUT_R1 + [3, 4] + [6, 2, 1, 1, 1, 1], rounds=2, rout=True,
                   reengage="every_round")
    assert (out.winner, out.rounds, out.extras["out_of_action_defender"]) == (ATTACKER, 2, 1)


def test_rout_threshold_is_a_quarter_of_the_starting_count():
    from sim.rulesets.warband.reference import Warrior, rout_test

    u = W(count=5, ld=7)
    side = [Warrior("attacker", i, u, 1) for i in range(5)]
    side[0].status = OOA
    d = ScriptedDice([])
    assert rout_test(side, d) is False               # 1 of 5 < 25 %: no dice
    side[1].status = OOA
    d = ScriptedDice([6, 2])
    assert rout_test(side, d) is True and d.used == 2   # 2 of 5: tests, 8 > 7
    assert rout_test(side, ScriptedDice([1, 6])) is False


def test_kernel_switches_draw_nothing_when_off_and_fights_end_when_on():
    plan = sim.build_matchup(WB, W(count=3, ld=6), W(count=2, ld=6), options={"all_alone": True, "rout": True},
                             budget="none")[1]
    out = WB.simulate(plan, 20000, np.random.default_rng(5), "end", 50)
    assert not out.capped.any() and out.winner.min() >= 1
    assert out.damage_to_attacker.min() >= 0 and out.rounds.min() >= 1
