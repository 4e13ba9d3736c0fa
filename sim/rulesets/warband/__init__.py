"""``warband``: skirmish warriors fought to the end, with parries, criticals and injuries.

Rules: ``docs/rules/warband.md``; written from the original text ``004_7a625f83867ff841.txt`` (not distributed)
(the hand-to-hand chapter of a 1999 skirmish game set in a ruined city).

A side is one warrior profile with ``count`` warriors (up to 20). One round is
one player turn: the active player's Recovery, then one hand-to-hand phase in
which every engaged warrior fights in strike order (strike first, Initiative
with roll-offs, strike last). Round 1 is the attacker's (charge) turn. The
larger side's warriors start paired round-robin onto the smaller side's.

Modules: ``units`` (the warrior profile and equipment legality), ``tables``
(weapon/armour tables, charts), ``plan`` (the prepared matchup and the per-side
blow tables), ``reference`` (the scalar reference, the spec in code), ``kernel``
(the vectorised kernel of 1 v 1 and 1 v n fights, and of groups under the old
re-engaging rule), ``groups`` with ``phases``, ``fused``, ``strikes`` and
``stars`` (the vectorised kernel of group fights under the default rule and its
exact outcome tables), ``single`` (exact one-attack outcome tables), and
``compiled`` with ``_loop`` (the kernel compiled with Numba that plays, by
default, every fight without the ``all_alone`` and ``rout`` switches whose
batches are tabulated; :meth:`Warband.with_engine` picks the vectorised
kernels instead).

Re-engaging (option ``reengage``), for a warrior whose every opponent is out of
action (only possible when both sides have two or more warriors):

* ``"own_turn_charge"`` (default; the spec's decision of 2026-12-01, from the
  movement and charge rules): a warrior moves only in its own side's turn. At
  the start of its side's turn, after Recovery, a *standing* warrior with no
  enemy left in base contact charges the enemy not out of action that has the
  fewest opponents in contact (ties: the enemy listed first; warriors are
  placed one at a time in index order, each counting those placed before it).
  It counts as charging that turn: it strikes first, unless it stood up in
  this Recovery or fights with a double-handed weapon (without Strongman),
  which strike last. An enemy it charged that has Lightning Reflexes strikes
  first too. A warrior freed during a phase waits, unengaged, until its side's
  next turn; a knocked-down or stunned one first recovers as usual.
* ``"every_round"`` (the behaviour before issue 16, kept so older reports can
  be reproduced die for die): at the start of every round, before Recovery and
  in either side's turn, every warrior not out of action whose opponents are
  all out of action joins the live enemy with the fewest live opponents
  (attackers first, then defenders), with no charge bonus.

One against one and one against many fights never re-engage, so both values
give them the same results (the same dice, seed for seed).

Simplifications and interpretations where the spec is silent (also in the
report): each striker puts all its attacks into one target (standing enemies
first, lowest index); with two different weapons one attack is made with the
second weapon listed; a re-engaging charge starts no new "first turn of
combat" (the heavy weapons' Strength bonus and the spear's strike-first stay
with round 1 of the fight); Step Aside also protects knocked-down warriors and
applies to critical hits that allow no armour save.

The spec's optional small-group rules are switches, both off by default (then
no die is rolled for them and results are exactly those without them):

* ``all_alone``: at the end of the active side's hand-to-hand phase, its only
  standing warrior, if it touches two or more standing enemies, tests 2D6
  against its ``ld``. Every friend counts as "within 6 inches" here, so "no
  standing friend" means no other standing warrior on its side. On a fail each
  standing enemy in contact gets one automatic hit (its first attack column's
  weapon: to wound, critical, save, Step Aside; wounds count as damage), then
  the warrior flees: it leaves the combat and is counted as out of action in
  every outcome (categories, the ``out_of_action_*`` extras, the winner rule).
* ``rout``: at the start of every round from round 2, the active side tests
  2D6 against its highest ``ld`` if at least 25 % of its starting warriors are
  out of action (fled ones included): ``4 * out_of_action >= count``. On a fail
  the fight ends in that round and the other side wins; each side's category,
  damage and out-of-action count are its state at that moment (a routed side
  usually shows ``standing``; ``down`` can now also end a fight to the
  ``end``). The fight's rounds count the round whose start saw the rout. A lone
  warrior never tests (its loss ends the fight anyway).

With either switch on, each warrior needs ``ld``: a missing one is an input
error naming the unit and field (there is no default Leadership).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ...dice import DiceStream
from ...errors import MatchupError, Where
from ...lists import MixedSide
from ...outcomes import Outcomes, TrialOutcome
from ...ruleset import ExactOutcome, Extra, Matchup, Rounds, Ruleset
from ...schema import Field, StateField, points_field
from . import exact as exact_chain
from .compiled import simulate_loop
from .groups import simulate_groups
from .kernel import simulate
from .mixed import MixedPlan, build_mixed_plan, simulate_mixed_loop
from .mixed_kernel import simulate_mixed
from .plan import WarbandPlan, build_plan
from .reference import PAIRINGS, REENGAGE_RULES, resolve_fight
from .tables import ARMOUR_SAVE, SKILLS, WEAPON_NAMES
from .units import WarbandUnit, check_equipment, unit_summary

__all__ = ["Warband", "WarbandPlan", "RULESET"]


class Warband(Ruleset):
    """The ``warband`` ruleset (see the module docstring)."""

    id = "warband"
    title = "Skirmish warband hand-to-hand combat (1999 ruined-city skirmish game)"
    source = "004_7a625f83867ff841.txt: the 'Close Combat' chapter"
    spec = "docs/rules/warband.md"
    damage_unit = "wounds lost (capped at each warrior's W)"
    default_rounds = "end"
    outcome_categories = ("out_of_action", "down", "standing")
    unit_type = WarbandUnit
    unit_fields = (
        Field("name", "str", "warrior name"),
        Field("count", "int", "warriors with this profile (a side is one group)", lo=1, hi=20, default=1),
        Field("ws", "int", "Weapon Skill", lo=1, hi=10),
        Field("s", "int", "Strength", lo=1, hi=10),
        Field("t", "int", "Toughness", lo=1, hi=10),
        Field("i", "int", "Initiative", lo=1, hi=10),
        Field("w", "int", "Wounds", lo=1, hi=10),
        Field("a", "int", "Attacks", lo=1, hi=10),
        Field("ld", "int", "Leadership (needed by the all_alone and rout switches)", lo=2, hi=12,
              default=None, optional=True),
        Field("armour", "choice", "body armour", choices=tuple(ARMOUR_SAVE), default="none"),
        Field("shield", "bool", "carries a shield (+1 save)", default=False),
        Field("buckler", "bool", "carries a buckler (parry)", default=False),
        Field("helmet", "bool", "wears a helmet (4+ save against stunned)", default=False),
        Field("weapons", "str_list", "one or two close-combat weapons", choices=WEAPON_NAMES,
              default=("dagger",), min_items=1, max_items=2),
        Field("skills", "str_list", "combat skills", choices=SKILLS, default=()),
        points_field("points cost"),
    )
    state_fields = (
        StateField(Field("charging", "bool", "charged this fight: strikes first in round 1", default=True),
                   sides=("attacker",)),
    )
    option_fields = (
        Field("fist_strength", "choice", 'fist Strength: "user-1" (rulebook copy, default) or "user" (BSData)',
              choices=("user-1", "user"), default="user-1"),
        Field("all_alone", "bool", "All Alone test: a lone warrior facing 2+ standing enemies tests 2D6 vs Ld "
              "at the end of its turn's combat phase; on a fail each takes an auto-hit and it flees "
              "(counted as out of action)", default=False),
        Field("rout", "bool", "Rout test: from round 2, the active side with >= 25% out of action tests 2D6 "
              "vs its highest Ld; on a fail it loses at once", default=False),
        Field("reengage", "choice", 'a warrior whose opponents are all out of action: "own_turn_charge" '
              "(default: charges the least-engaged enemy at the start of its own side's turn, after Recovery, "
              'and strikes first) or "every_round" (before 2026-12: joins it at the start of every round, '
              "no charge bonus)", choices=REENGAGE_RULES, default="own_turn_charge"),
        Field("pairing", "choice", 'how an army list\'s warriors line up for the charge: "listed" (default: in the '
              'order the list names its units, the charging player\'s choice written down) or "random" (a random '
              "line-up in every fight, for each side with more than one profile)", choices=PAIRINGS,
              default="listed"),
    )
    extras = (
        Extra("out_of_action_attacker", "mean", "attacking warriors out of action at the end"),
        Extra("out_of_action_defender", "mean", "defending warriors out of action at the end"),
    )

    # ------------------------------------------------------------ validation
    def parse_unit(self, mapping: Mapping[str, Any], where: Where, *, from_text: bool = False) -> WarbandUnit:
        unit = super().parse_unit(mapping, where, from_text=from_text)
        if len(set(unit.skills)) != len(unit.skills):
            raise where.error("skills", list(unit.skills), "each skill at most once")
        check_equipment(unit, where)
        return unit

    def unit_rows(self, unit: WarbandUnit) -> list[dict[str, Any]]:
        return [unit_summary(unit)]

    # ------------------------------------------------------------ copies
    fields_copies = True
    fields_lists = True

    def copies(self, unit: WarbandUnit, k: int) -> WarbandUnit:
        """``k`` copies fight as one group: ``count`` and ``points`` multiplied (up to the count limit)."""
        if k == 1:
            return unit
        limit = int(next(f.hi for f in self.unit_fields if f.name == "count"))
        if unit.count * k > limit:
            raise MatchupError(f"warband: {k} copies of {unit.name!r} ({unit.count} each) make {unit.count * k} "
                               f"warriors, more than the {limit} a side can field; lower the budget")
        return replace(unit, count=unit.count * k, points=None if unit.points is None else unit.points * k)
    def check_roster(self, units: list[Any], options: Mapping[str, Any], where: Where) -> None:
        """The all_alone and rout switches test Leadership: every unit needs ``ld`` when one is on."""
        switch = "all_alone" if options.get("all_alone") else "rout" if options.get("rout") else None
        for u in units if switch else ():
            if u.ld is None:
                raise where.at(u.name).error("ld", None, f"a Leadership 2..12 (the {switch} switch is on)")

    def prepare(self, matchup: Matchup) -> WarbandPlan:
        for side in ("attacker", "defender"):
            for u in _groups(matchup.unit(side)):
                if not isinstance(u, WarbandUnit):
                    raise MatchupError(f"warband: {side} is not a warband warrior ({type(u).__name__})")
                check_equipment(u, Where("matchup", u.name))
        charging = bool(matchup.state("attacker", "charging"))
        fist_as_user = matchup.options["fist_strength"] == "user"
        all_alone = bool(matchup.options.get("all_alone", False))
        rout = bool(matchup.options.get("rout", False))
        reengage = str(matchup.options.get("reengage", "own_turn_charge"))
        pairing = str(matchup.options.get("pairing", "listed"))
        if all_alone or rout:
            for side in ("attacker", "defender"):
                for u in _groups(matchup.unit(side)):
                    if u.ld is None:
                        switch = "all_alone" if all_alone else "rout"
                        raise Where("matchup", u.name).error(
                            "ld", None, f"a Leadership 2..12 (the {switch} switch is on)")
        if any(isinstance(matchup.unit(side), MixedSide) for side in ("attacker", "defender")):
            return WarbandPlan(matchup, matchup.attacker, matchup.defender, charging, fist_as_user,
                               build_mixed_plan(matchup.attacker, matchup.defender, charging, fist_as_user,
                                                all_alone=all_alone, rout=rout, reengage=reengage, pairing=pairing),
                               all_alone, rout, reengage, pairing)
        return WarbandPlan(matchup, matchup.attacker, matchup.defender, charging, fist_as_user,
                           build_plan(matchup.attacker, matchup.defender, charging, fist_as_user,
                                      all_alone=all_alone, rout=rout, reengage=reengage),
                           all_alone, rout, reengage)

    # ------------------------------------------------------------- behaviour
    def simulate(self, plan: WarbandPlan, n: int, rng: np.random.Generator, rounds: Rounds,
                 max_rounds: int) -> Outcomes:
        if isinstance(plan.kernel, MixedPlan):
            if plan.kernel.loop is not None:
                return simulate_mixed_loop(plan.kernel, n, rng, rounds, max_rounds)
            return simulate_mixed(plan.kernel, n, rng, rounds, max_rounds)
        if plan.kernel.loop is not None:
            return simulate_loop(plan.kernel.loop, n, rng, rounds, max_rounds)
        if plan.kernel.groups is not None:
            return simulate_groups(plan.kernel, n, rng, rounds, max_rounds)
        return simulate(plan.kernel, n, rng, rounds, max_rounds)

    def with_engine(self, plan: WarbandPlan, engine: str) -> WarbandPlan:
        """``plan`` played by ``engine``: ``"auto"`` (the compiled kernel where it can, as prepared)
        or ``"numpy"`` (the vectorised kernels only, which the tests hold to the same answers)."""
        if isinstance(plan.kernel, MixedPlan):
            return replace(plan, kernel=build_mixed_plan(plan.attacker, plan.defender, plan.charging,
                                                         plan.fist_as_user, all_alone=plan.all_alone, rout=plan.rout,
                                                         reengage=plan.reengage, pairing=plan.pairing, engine=engine))
        return replace(plan, kernel=build_plan(plan.attacker, plan.defender, plan.charging, plan.fist_as_user,
                                               all_alone=plan.all_alone, rout=plan.rout, reengage=plan.reengage,
                                               engine=engine))

    # ----------------------------------------------------------------- exact
    def exact_work(self, plan: WarbandPlan, rounds: Rounds, max_rounds: int) -> int | None:
        """One warrior against one is a chain over both warriors' (wounds, status) (:mod:`.exact`)."""
        return exact_chain.exact_work(plan, rounds, max_rounds)

    def exact(self, plan: WarbandPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
        return exact_chain.exact(plan, rounds, max_rounds)

    def working_set(self, plan: WarbandPlan, n: int) -> int:
        """Memory guard estimate: per fight, int8 state per warrior and int8 dice per attack
        (measured 1.6 KB for 10 against 10 warriors of 10 attacks)."""
        from ...limits import table_bytes

        attacks = sum(u.count * (u.a + 2) for side in (plan.matchup.attacker, plan.matchup.defender)
                      for u in _groups(side))
        if isinstance(plan.kernel, MixedPlan):
            # the loop's concatenated tables, and a few KiB of blows per pair of profiles (walking them all
            # would cost more than a cell of a few thousand fights)
            tables = plan.kernel.loop.nbytes if plan.kernel.loop is not None else 0
            tables += 16384 * len(plan.kernel.profiles[0]) * len(plan.kernel.profiles[1])
            # the vectorised kernel: state per fight and warrior, and the order keys
            return tables + int(n) * (512 + 16 * attacks + 64 * sum(plan.kernel.counts))
        return table_bytes(plan) + int(n) * (512 + 16 * attacks)

    def resolve_one(self, plan: WarbandPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        return resolve_fight(plan.attacker, plan.defender, plan.charging, plan.fist_as_user, dice, rounds, max_rounds,
                             all_alone=plan.all_alone, rout=plan.rout, reengage=plan.reengage,
                             pairing_rule=plan.pairing)

    def bench_matchup(self):
        return "Mercenary Warrior", "Youngblood", {}, "end"

    def bench_extra_matchups(self):
        """Issue 14's group goals: plain warriors, fights to the end, 3 v 3 and 10 v 10 (labelled with the sizes);
        issue 40's: 6 v 6 of the same two profiles as copies and as army lists that mix them (the goal: the
        mixed fight costs at most 1.5 times the copies fight)."""
        from ...roster import default_roster

        roster = default_roster(self.id)
        a, d = roster["Mercenary Warrior"], roster["Youngblood"]
        groups = tuple((replace(a, count=n), replace(d, count=n), {}, "end",
                        f"{a.name} v {d.name}, {n} v {n}, rounds=end") for n in (3, 10))
        mixed = ({a.name: 3, d.name: 3}, {d.name: 3, a.name: 3}, {}, "end",
                 f"army lists 3 {a.name} + 3 {d.name} v 3 {d.name} + 3 {a.name}, 6 v 6, rounds=end")
        return groups + ((replace(a, count=6), replace(d, count=6), {}, "end",
                          f"{a.name} v {d.name}, 6 v 6 copies, rounds=end"), mixed)


def _groups(side: Any) -> tuple:
    """The warrior profiles of a side: its groups for an army list, else the unit itself."""
    return side.groups if isinstance(side, MixedSide) else (side,)


RULESET = Warband()
