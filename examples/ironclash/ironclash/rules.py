"""``ironclash``: opposed d10 duels with armour that dents (rules: this package's README.md).

An example meleelab plugin. Everything it needs from meleelab comes from
``sim.ruleset``, the public protocol; the reference reads its dice with
``dice.d(10)``, the kernel draws them with ``rng.integers(1, 11)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.ruleset import (ATTACKER, DEFENDER, DRAW, END, SIDES, DiceStream, Extra, Field, Matchup, MatchupError,
                         Outcomes, Rounds, Ruleset, StateField, TrialOutcome)

__all__ = ["Fighter", "Plan", "Ironclash", "RULESET", "UNHURT", "WOUNDED", "DOWN"]

#: Outcome categories, mildest first.
UNHURT, WOUNDED, DOWN = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Fighter:
    """One duellist's profile."""

    name: str
    skill: int
    wounds: int
    armour: int
    damage: int
    points: float | None = None


@dataclass(frozen=True)
class Plan:
    """What both the reference and the kernel need, per side as (attacker, defender)."""

    matchup: Matchup
    skill: tuple[int, int]
    start_wounds: tuple[int, int]
    armour: tuple[int, int]
    damage: tuple[int, int]
    braced: bool
    both_strike: bool
    crushing: bool


class Ironclash(Ruleset):
    id = "ironclash"
    title = "Ironclash: opposed d10 duels with armour that dents (example plugin)"
    source = "meleelab's example plugin (examples/ironclash)"
    spec = "README.md of meleelab-ironclash"
    damage_unit = "wounds"
    default_rounds = END
    outcome_categories = ("unhurt", "wounded", "down")
    unit_type = Fighter
    unit_fields = (
        Field("name", "str", "fighter name"),
        Field("skill", "int", "added to the d10", lo=0, hi=9),
        Field("wounds", "int", "wounds", lo=1, hi=12),
        Field("armour", "int", "armour points: soak damage, dent by 1 per ordinary blow", lo=0, hi=9),
        Field("damage", "int", "wounds a blow deals before armour", lo=1, hi=6),
        Field("points", "number", "points cost", lo=0, default=None, optional=True),
    )
    state_fields = (
        StateField(Field("braced", "bool", "+2 to the defender's total in the first exchange", default=False),
                   sides=("defender",)),
        StateField(Field("wounds_taken", "int", "wounds already lost before the fight", lo=0, hi=11, default=0)),
    )
    option_fields = (
        Field("ties", "choice", "equal totals: nobody strikes (clinch) or both strike",
              choices=("clinch", "both_strike"), default="clinch"),
        Field("crushing_blows", "bool", "a natural 10 that strikes ignores armour", default=True),
    )
    extras = (Extra("crushing_blows", "mean", "crushing blows struck in the fight (both sides)"),)

    def prepare(self, matchup: Matchup) -> Plan:
        for side in SIDES:
            unit, taken = matchup.unit(side), matchup.state(side, "wounds_taken")
            if taken >= unit.wounds:
                raise MatchupError(f"ironclash: the {side} {unit.name!r} has {unit.wounds} wounds and starts with "
                                   f"{taken} taken: no wound left to fight with (lower {side}.wounds_taken)")
        a, d = matchup.attacker, matchup.defender
        return Plan(matchup, (a.skill, d.skill),
                    (a.wounds - matchup.state("attacker", "wounds_taken"),
                     d.wounds - matchup.state("defender", "wounds_taken")),
                    (a.armour, d.armour), (a.damage, d.damage), bool(matchup.state("defender", "braced")),
                    matchup.options["ties"] == "both_strike", bool(matchup.options["crushing_blows"]))

    # ------------------------------------------------------------- reference
    def resolve_one(self, plan: Plan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        limit = max_rounds if rounds == END else int(rounds)
        side_index = {"attacker": 0, "defender": 1}
        other = {"attacker": "defender", "defender": "attacker"}
        left = {s: plan.start_wounds[i] for s, i in side_index.items()}
        armour = {s: plan.armour[i] for s, i in side_index.items()}
        lost = {"attacker": 0, "defender": 0}
        crushing_blows = 0
        fought = 0
        while fought < limit and left["attacker"] > 0 and left["defender"] > 0:
            fought += 1
            # 1. Both roll a d10 and add their skill; a braced defender adds 2 in the first exchange.
            roll = {"attacker": dice.d(10), "defender": dice.d(10)}
            total = {s: roll[s] + plan.skill[i] for s, i in side_index.items()}
            if fought == 1 and plan.braced:
                total["defender"] += 2
            # 2. The higher total strikes; equal totals clinch (or both strike).
            if total["attacker"] > total["defender"]:
                strikers = ["attacker"]
            elif total["defender"] > total["attacker"]:
                strikers = ["defender"]
            else:
                strikers = ["attacker", "defender"] if plan.both_strike else []
            # 3-4. Work out every blow against the armour as it stands (5: blows are simultaneous).
            blows = []
            for s in strikers:
                target, damage = other[s], plan.damage[side_index[s]]
                if plan.crushing and roll[s] == 10:
                    crushing_blows += 1
                    blows.append((target, damage, False))  # ignores armour, leaves no dent
                else:
                    blows.append((target, max(damage - armour[target], 0), armour[target] > 0))
            for target, wounds, dents in blows:
                dealt = min(wounds, left[target])
                left[target] -= dealt
                lost[target] += dealt
                if dents:
                    armour[target] -= 1
        # 6. Down at no wounds; the fight's end and its winner.
        down = {s: left[s] == 0 for s in SIDES}
        capped = rounds == END and fought >= limit and not (down["attacker"] or down["defender"])
        if down["attacker"] and down["defender"]:
            winner = DRAW
        elif down["defender"]:
            winner = ATTACKER
        elif down["attacker"]:
            winner = DEFENDER
        elif capped or lost["attacker"] == lost["defender"]:
            winner = DRAW
        else:  # the exchanges ran out: on points
            winner = ATTACKER if lost["attacker"] < lost["defender"] else DEFENDER
        category = {s: DOWN if down[s] else WOUNDED if lost[s] > 0 else UNHURT for s in SIDES}
        return TrialOutcome(winner, lost["attacker"], lost["defender"], category["attacker"], category["defender"],
                            fought, capped, {"crushing_blows": crushing_blows})

    # ---------------------------------------------------------------- kernel
    def simulate(self, plan: Plan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
        limit = max_rounds if rounds == END else int(rounds)
        left = [np.full(n, plan.start_wounds[i], np.int64) for i in (0, 1)]
        armour = [np.full(n, plan.armour[i], np.int64) for i in (0, 1)]
        lost = [np.zeros(n, np.int64) for _ in (0, 1)]
        crushes = np.zeros(n, np.int64)
        fought = np.zeros(n, np.int64)
        alive = np.arange(n)  # fights still going: finished ones leave the working set
        r = 0
        while alive.size and r < limit:
            r += 1
            roll = rng.integers(1, 11, size=(2, alive.size))
            total = roll + np.array(plan.skill)[:, None]
            if r == 1 and plan.braced:
                total[1] += 2
            strikes = [total[0] > total[1], total[1] > total[0]]
            if plan.both_strike:
                tie = total[0] == total[1]
                strikes = [strikes[0] | tie, strikes[1] | tie]
            blows = []
            for s in (0, 1):  # the blow struck by side s on side 1 - s, against the armour as it stands
                t = 1 - s
                crush = strikes[s] & (roll[s] == 10) if plan.crushing else np.zeros(alive.size, bool)
                arm = armour[t][alive]
                wounds = np.where(crush, plan.damage[s], np.maximum(plan.damage[s] - arm, 0)) * strikes[s]
                blows.append((t, wounds, strikes[s] & ~crush & (arm > 0)))
                crushes[alive] += crush
            for t, wounds, dents in blows:
                dealt = np.minimum(wounds, left[t][alive])
                left[t][alive] -= dealt
                lost[t][alive] += dealt
                armour[t][alive] -= dents
            fought[alive] = r
            alive = alive[(left[0][alive] > 0) & (left[1][alive] > 0)]
        down = [left[0] == 0, left[1] == 0]
        capped = (rounds == END) & (fought >= limit) & ~down[0] & ~down[1]
        on_points = np.where(lost[0] < lost[1], ATTACKER, np.where(lost[1] < lost[0], DEFENDER, DRAW))
        winner = np.where(down[0] & down[1], DRAW, np.where(down[1], ATTACKER, np.where(down[0], DEFENDER,
                          np.where(capped, DRAW, on_points))))
        category = [np.where(down[i], DOWN, np.where(lost[i] > 0, WOUNDED, UNHURT)).astype(np.int8) for i in (0, 1)]
        return Outcomes(winner.astype(np.int8), lost[0], lost[1], category[0], category[1], fought, capped,
                        {"crushing_blows": crushes})

    def bench_matchup(self):
        return "Knight", "Gladiator", {}, END


RULESET = Ironclash()
