"""``mecha`` scalar reference: one fight played die by die, as ``docs/rules/mecha.md`` reads.

The vectorised kernel (:mod:`.kernel`) is tested against :func:`resolve_fight`.
"""

from __future__ import annotations

from ...dice import DiceStream
from ...outcomes import ATTACKER, DEFENDER, DRAW, TrialOutcome
from ...ruleset import END, Rounds
from .plan import MechaPlan
from .units import DESTROYED, IMMOBILISED, UNHARMED

__all__ = ["resolve_fight"]


def resolve_fight(plan: MechaPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
    """One fight of ``plan`` from ``dice`` (:meth:`sim.ruleset.Ruleset.resolve_one`)."""
    m, chart = plan.matchup, plan.chart
    immobilised = {side: bool(m.state(side, "immobilised")) for side in ("attacker", "defender")}
    destroyed = {"attacker": False, "defender": False}
    wants_to_evade = bool(m.state("defender", "evading"))
    limit = max_rounds if rounds == END else int(rounds)
    fought = 0
    while fought < limit:
        fought += 1
        # Declarations: the defender evades if it chose to and is not immobilised.
        evading = wants_to_evade and not immobilised["defender"]
        # Rolls: the evader's opponent does not roll at all.
        rollers = ["defender"] if evading else ["attacker", "defender"]
        results = {}
        for side in rollers:
            unit = m.unit(side)
            total = dice.d6() + unit.defence + unit.physical
            if immobilised[side]:
                total -= 2
            if side == "defender" and evading:
                total += 2
            # Each unit reads its own total under its own armour letter.
            results[side] = chart.lookup(unit.armour, total)
        # Results apply after both rolls: the rolls are simultaneous.
        for side, result in results.items():
            if result == "D":
                destroyed[side] = True
            elif result == "M":
                if not immobilised[side]:
                    immobilised[side] = True
                elif plan.second_m_destroys:
                    destroyed[side] = True
        if destroyed["attacker"] or destroyed["defender"]:
            break
    severity = {
        side: DESTROYED if destroyed[side] else IMMOBILISED if immobilised[side] else UNHARMED
        for side in ("attacker", "defender")
    }
    capped = rounds == END and fought >= limit and not (destroyed["attacker"] or destroyed["defender"])
    if capped or severity["attacker"] == severity["defender"]:
        winner = DRAW
    else:
        winner = ATTACKER if severity["attacker"] < severity["defender"] else DEFENDER
    return TrialOutcome(winner, severity["attacker"], severity["defender"], severity["attacker"],
                        severity["defender"], fought, capped)
