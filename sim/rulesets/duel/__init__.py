"""``duel``: duel-roll skirmish combat (a homebrew skirmish game's combat phase).

Rules: ``docs/rules/duel.md``; written from the original text ``002_905b96e2697bc56f.txt`` (not distributed).

Each combat phase the models are paired off (ganging up when the numbers differ);
in each combat both sides roll one d6 per remaining wound and keep the highest,
ties going to the higher Weapon Skill and then to a double loss. Every model of the
winning side inflicts as many hits as its remaining wounds; each hit is a Toughness
check at ``T - S`` (a 6 always fails) dealing the weapon's Damage on a fail, or
instant death (misted) when ``S >= T``. A surviving loser backs away a yard per
wound lost and takes one more hit per yard it cannot back. Fights run to the end
by default.

Interpretations in detail (all described in ``docs/rules/duel.md``; each a default a designer can see in the code):

- One round is one combat phase. Wounds, space used and deaths carry over; ``prone``
  holds for the whole fight.
- ``initiative`` is a per-side flag (``defender.initiative=true`` or
  ``attacker.initiative=false`` hand it to the defender; setting both alike is an error).
  With pairing in listed order and left-overs joining the first combat, the
  pairing is the same whichever side pairs, so it does not change the odds.
- "+1A" (``dual_wield = "extra_hit"``) also applies in a double loss: the model
  strikes then too. Identical weapons = same Strength, Damage and set of
  abilities. A ``second_weapon`` needs a ``weapon``. Abilities are carried as data.
- ``space`` is per model and used up: each yard backed is gone for later phases.
  The hits of blocked yards do not push the model back again.
- ``spread`` gives one hit to each standing loser in listed order, round after
  round; ``fewest_wounds`` gives each hit to the standing loser with the fewest
  wounds (ties: listed order).
- ``toughness_die = "2d6"``: pass on a total <= T - S, a double six always fails.

Modules: ``units`` (profiles and validation), ``plan`` (shared numbers
and outcome assembly), ``reference`` (the scalar reference), ``chain``
(the exact Markov-chain kernel, one model a side), ``groups`` (the same chain
for small groups), ``tables`` and ``fast`` (the group kernel: every
combat of a phase drawn whole from exact per-combat tables; up to 20 models a side),
``compiled`` and ``_loop`` (the same fights, model by model, from the same
tables in a loop compiled by Numba: it plays them when Numba imports;
:meth:`Duel.with_engine` picks the vectorised one), ``kernel`` (the general
kernel, for ``spread`` assignment with ganging), and ``mixed`` with ``_mixed_loop`` (army lists: sides of
several profiles, every model its own; a loop compiled by Numba, or vectorised).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ...dice import DiceStream
from ...errors import MatchupError, Where
from ...lists import MixedSide
from ...outcomes import Outcomes, TrialOutcome
from ...ruleset import END, ExactOutcome, Extra, Matchup, Rounds, Ruleset
from ...schema import Field, StateField
from . import exact as exact_chain
from .chain import build_chain, simulate_chain
from .compiled import available, simulate_loop
from .fast import simulate_fast
from .groups import build_group_chain
from .kernel import simulate_general
from .mixed import PAIRINGS, MixedDuelPlan, build_mixed_plan, simulate_mixed, simulate_mixed_loop
from .plan import DuelPlan, SideSpec, check_pass_probability
from .reference import resolve_fight
from .tables import build_tables
from .units import (UNIT_FIELDS, DuelUnit, Weapon, apply_overrides, parse_duel_unit, rows_to_mappings,
                          unit_row, unit_to_dict)

__all__ = ["Duel", "DuelUnit", "Weapon", "RULESET"]


class Duel(Ruleset):
    """The ``duel`` ruleset (see the module docstring and ``docs/rules/duel.md``)."""

    id = "duel"
    title = "Duel-roll skirmish combat (homebrew skirmish combat phase)"
    source = "002_905b96e2697bc56f.txt: homebrew skirmish game, '4. Combat Phase'"
    spec = "docs/rules/duel.md"
    damage_unit = "wounds lost (a misted model loses all its remaining wounds)"
    default_rounds = END
    outcome_categories = ("survived", "eliminated")
    unit_type = DuelUnit
    unit_fields = UNIT_FIELDS
    state_fields = (
        StateField(Field("prone", "bool", "prone: rolls no dice (counts as a 1) and cannot back up", default=False)),
        StateField(Field("space", "int", "yards each model can back up (none: unlimited; 0: against a wall)",
                         lo=0, hi=1000, default=None, optional=True)),
        StateField(Field("initiative", "bool",
                         "this side pairs off the combats (default: the attacker); set it on one side only",
                         default=None, optional=True)),
    )
    option_fields = (
        Field("dual_wield", "choice", 'two identical weapons ("+1A"): "extra_hit" (one more hit when its side '
              'wins or double-loses), "extra_die" (one more duel die) or "both"',
              choices=("extra_hit", "extra_die", "both"), default="extra_hit"),
        Field("hit_assignment", "choice", 'how the winner assigns hits among several losers: "fewest_wounds" '
              '(the weakest model first) or "spread" (one hit each in turn)',
              choices=("fewest_wounds", "spread"), default="fewest_wounds"),
        Field("toughness_die", "choice", 'the Toughness check: "d6" (pass on <= T - S, a 6 fails) or "2d6" '
              '(pass on a total <= T - S, a double six fails)', choices=("d6", "2d6"), default="d6"),
        Field("pairing", "choice", 'how an army list\'s models pair off each phase: "listed" (default: in the order '
              "the list names its units, the pairing player's choice written down) or \"random\" (a random order "
              "each phase, for each side with more than one profile)", choices=PAIRINGS, default="listed"),
    )
    extras = (
        Extra("misted_attacker", "mean", "attacker models slain by instant death (misted, no corpse)"),
        Extra("misted_defender", "mean", "defender models slain by instant death (misted, no corpse)"),
        Extra("models_lost_attacker", "mean", "attacker models lost (misted or slain); misted/lost = share misted"),
        Extra("models_lost_defender", "mean", "defender models lost (misted or slain); misted/lost = share misted"),
    )

    # ------------------------------------------------------------ validation
    def parse_unit(self, mapping: Mapping[str, Any], where: Where, *, from_text: bool = False) -> DuelUnit:
        return parse_duel_unit(mapping, where, from_text=from_text)

    def units_from_rows(self, rows: list[Mapping[str, str]], where: Where) -> list[DuelUnit]:
        """CSV rows, with flat ``weapon_*`` / ``second_weapon_*`` columns (see ``units``)."""
        units = []
        for row in rows:
            name = (row.get("name") or "").strip() or None
            w = where.at(name)
            units.append(self.parse_unit(rows_to_mappings(row, w), w, from_text=True))
        return units

    def unit_to_dict(self, unit: DuelUnit) -> dict[str, Any]:
        return unit_to_dict(unit)

    def unit_rows(self, unit: DuelUnit) -> list[dict[str, Any]]:
        return [unit_row(unit)]

    # ------------------------------------------------------------ copies
    fields_copies = True
    fields_lists = True

    def copies(self, unit: DuelUnit, k: int) -> DuelUnit:
        """``k`` copies fight as one side: ``count`` and ``points`` multiplied (up to the count limit)."""
        if k == 1:
            return unit
        limit = int(next(f.hi for f in self.unit_fields if f.name == "count"))
        if unit.count * k > limit:
            raise MatchupError(f"duel: {k} copies of {unit.name!r} ({unit.count} each) make {unit.count * k} "
                               f"models, more than the {limit} a side can field; lower the budget")
        return replace(unit, count=unit.count * k, points=None if unit.points is None else unit.points * k)

    def with_overrides(self, unit: DuelUnit, overrides: Mapping[str, Any], where: Where, *,
                       from_text: bool = False) -> DuelUnit:
        if not overrides:
            return unit
        return apply_overrides(unit, overrides, where, from_text=from_text)

    # ----------------------------------------------------------------- plan
    def prepare(self, matchup: Matchup) -> DuelPlan:
        flags = [matchup.state(side, "initiative") for side in ("attacker", "defender")]
        if flags[0] is not None and flags[0] == flags[1]:
            raise MatchupError(f"duel: attacker.initiative and defender.initiative are both {flags[0]}: "
                               "exactly one side has the initiative (set it on one side)")
        initiative = 1 if (flags[1] is True or flags[0] is False) else 0
        dual = matchup.options["dual_wield"]
        die = matchup.options["toughness_die"]

        def spec(u: DuelUnit, side: str, count: int) -> SideSpec:
            pair = u.identical_pair
            return SideSpec(
                count=count, wounds=u.wounds, toughness=u.toughness, ws=u.ws,
                hit_strength=u.hit_strength, hit_damage=u.hit_damage,
                extra_die=int(pair and dual in ("extra_die", "both")),
                extra_hit=int(pair and dual in ("extra_hit", "both")),
                prone=bool(matchup.state(side, "prone")), space=matchup.state(side, "space"),
            )

        if any(isinstance(matchup.unit(side), MixedSide) for side in ("attacker", "defender")):
            # army lists: every model with its own profile (:mod:`.mixed`)
            specs = tuple([spec(g, side, 1) for g in _groups(matchup.unit(side)) for _ in range(g.count)]
                          for side in ("attacker", "defender"))
            return build_mixed_plan(matchup, specs, initiative, matchup.options["hit_assignment"], die,
                                    str(matchup.options.get("pairing", "listed")))
        sides = [spec(matchup.unit(side), side, matchup.unit(side).count) for side in ("attacker", "defender")]
        instant, p_fail, target = [], [], []
        for i in (0, 1):
            t_eff = sides[1 - i].toughness - sides[i].hit_strength
            instant.append(t_eff <= 0)  # Strength >= Toughness: instant death, no check
            target.append(t_eff)
            p_fail.append(0.0 if t_eff <= 0 else float(1 - check_pass_probability(t_eff, die)))
        plan = DuelPlan(matchup, (sides[0], sides[1]), (instant[0], instant[1]), (p_fail[0], p_fail[1]),
                        (target[0], target[1]), initiative, matchup.options["hit_assignment"], die)
        if plan.sides[0].count == 1 and plan.sides[1].count == 1:
            chain = build_chain(plan)
        else:
            chain = build_group_chain(plan)
        if chain is not None:
            return dataclasses.replace(plan, chain=chain)
        one_each = plan.sides[0].count == 1 and plan.sides[1].count == 1
        if plan.assignment == "fewest_wounds" or one_each:  # ``spread`` only matters when models gang up
            plan = dataclasses.replace(plan, tables=build_tables(plan))
        return plan

    # ---------------------------------------------------------------- kernel
    def simulate(self, plan: DuelPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
        """``n`` fights: the exact Markov chain when it was built (small matchups), else the group kernel
        (whole combats from exact tables: compiled, or vectorised, see :meth:`with_engine`), else
        (``spread`` with ganging) the general one; army lists: the mixed kernel (:mod:`.mixed`)."""
        if isinstance(plan, MixedDuelPlan):
            if plan.engine == "auto" and available():
                return simulate_mixed_loop(plan, n, rng, rounds, max_rounds)
            return simulate_mixed(plan, n, rng, rounds, max_rounds)
        if plan.chain is not None:
            return simulate_chain(plan, n, rng, rounds, max_rounds)
        if plan.tables is not None:
            if plan.engine == "auto" and available():
                return simulate_loop(plan, plan.tables, n, rng, rounds, max_rounds)
            return simulate_fast(plan, plan.tables, n, rng, rounds, max_rounds)
        return simulate_general(plan, n, rng, rounds, max_rounds)

    def with_engine(self, plan: DuelPlan, engine: str) -> DuelPlan:
        """``plan`` played by ``engine``: ``"auto"`` (the compiled group kernel where Numba imports)
        or ``"numpy"`` (the vectorised group kernel, which the tests hold to the same answers)."""
        if engine not in ("auto", "numpy"):
            raise ValueError(f"duel: engine must be 'auto' or 'numpy', not {engine!r}")
        return replace(plan, engine=engine)

    # ----------------------------------------------------------------- exact
    def exact_work(self, plan: DuelPlan, rounds: Rounds, max_rounds: int) -> int | None:
        """Matchups the kernel plays as a chain (one a side, small groups) are exact (:mod:`.exact`)."""
        if isinstance(plan, MixedDuelPlan):
            return None
        return exact_chain.exact_work(plan, rounds, max_rounds)

    def exact(self, plan: DuelPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
        if isinstance(plan, MixedDuelPlan):
            a, d = plan.matchup.attacker, plan.matchup.defender
            raise MatchupError(f"duel {a.name} v {d.name}: army lists of several profiles have no exact chain; "
                               'use Monte Carlo (method="mc")')
        return exact_chain.exact(plan, rounds, max_rounds)

    # ------------------------------------------------------------- reference
    def working_set(self, plan: DuelPlan, n: int) -> int:
        """Memory guard estimate: the chain tables (built lazily, under 64 MiB) and per fight arrays that
        grow with the models on both sides (measured 2.7 KB for 20 against 20)."""
        from ...limits import table_bytes

        models = sum(getattr(u, "count", 1) for u in (plan.matchup.attacker, plan.matchup.defender))
        return table_bytes(plan) + (64 << 20) + int(n) * (512 + 96 * models)

    def resolve_one(self, plan: DuelPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        return resolve_fight(plan, dice, rounds, max_rounds)

    def bench_matchup(self) -> tuple[str, str, dict[str, dict[str, Any]], Rounds]:
        return "Duellist", "Reaver", {}, END

    def bench_extra_matchups(self):
        """Issue 14's group fights: the standard matchup with 10 and 20 models a side."""
        return tuple(group_matchup(n) for n in (10, 20))


def group_matchup(n: int) -> tuple:
    """The benchmark's Duellist against Reaver with ``n`` models a side (``count`` multiplied)."""
    from ...roster import default_roster  # the roster module imports the registry, which imports this one

    ros = default_roster("duel")
    att, dfn = (dataclasses.replace(ros.unit(name), name=f"{name} x{n}", count=n) for name in ("Duellist", "Reaver"))
    return att, dfn, {}, END, f"{n} v {n}: {att.name} vs {dfn.name}, rounds=end"


def _groups(side: Any) -> tuple:
    """The profiles of a side: its groups for an army list, else the unit itself."""
    return side.groups if isinstance(side, MixedSide) else (side,)


RULESET = Duel()
