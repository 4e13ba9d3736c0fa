"""``duel`` scalar reference: one fight, read like the spec, every die from ``dice.d6()``.

Rule numbers in comments are the steps of the original text (``source/002``):
1 pair off, 2 duel roll, 3 saving throws (Toughness checks), backing away,
instant death. Interpretation numbers ("ambiguity n") are those of the
ruleset's original spec; every interpretation is described in ``docs/rules/duel.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...dice import DiceStream
from ...outcomes import ATTACKER, DEFENDER, DRAW, TrialOutcome
from ...ruleset import END, Rounds
from .plan import ELIMINATED, SURVIVED, DuelPlan, SideSpec, line_up

__all__ = ["resolve_fight"]


@dataclass
class _Model:
    """One model during a fight (mutable bookkeeping, the reference only)."""

    side: int
    index: int          # listed order within its side
    wounds: int
    space: int | None   # yards it can still back up (None: unlimited)
    spec: SideSpec      # its profile (the side's, or its own in an army list)
    misted: bool = False


def resolve_fight(plan: DuelPlan | Any, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
    """One whole fight (``rounds`` combat phases, or to the end capped at ``max_rounds``).

    ``plan`` is a :class:`.plan.DuelPlan` (one profile a side) or a :class:`.mixed.MixedDuelPlan` (army
    lists): every model fights with its own profile (:func:`.plan.line_up`), in the list's order, or
    in a random order drawn each phase with ``pairing = "random"`` (see ``_combat_phase``).
    """
    models = [[_Model(i, k, spec.wounds, spec.space, spec) for k, spec in enumerate(line_up(plan, i))]
              for i in (0, 1)]
    limit = max_rounds if rounds == END else int(rounds)
    fought = 0
    while fought < limit and _alive(models[0]) and _alive(models[1]):
        fought += 1
        _combat_phase(plan, dice, models)
    alive = [len(_alive(models[i])) for i in (0, 1)]
    lost = [plan.start_wounds[i] - sum(m.wounds for m in models[i]) for i in (0, 1)]
    capped = rounds == END and alive[0] > 0 and alive[1] > 0
    if capped:
        winner = DRAW
    elif alive[0] == 0 and alive[1] == 0:
        winner = DRAW
    elif alive[1] == 0:
        winner = ATTACKER
    elif alive[0] == 0:
        winner = DEFENDER
    else:
        # rounds = N, both standing: the smaller share of starting wounds lost wins.
        share_a = lost[0] * plan.start_wounds[1]
        share_d = lost[1] * plan.start_wounds[0]
        winner = ATTACKER if share_a < share_d else DEFENDER if share_a > share_d else DRAW
    extras = {
        "misted_attacker": sum(m.misted for m in models[0]),
        "misted_defender": sum(m.misted for m in models[1]),
        "models_lost_attacker": len(models[0]) - alive[0],
        "models_lost_defender": len(models[1]) - alive[1],
    }
    return TrialOutcome(winner, lost[0], lost[1],
                        ELIMINATED if alive[0] == 0 else SURVIVED, ELIMINATED if alive[1] == 0 else SURVIVED,
                        fought, capped, extras)


def _alive(side_models: list[_Model]) -> list[_Model]:
    return [m for m in side_models if m.wounds > 0]


def _combat_phase(plan: DuelPlan, dice: DiceStream, models: list[list[_Model]]) -> None:
    # 1. Pair off: the side with the initiative pairs its models, in listed order, one to
    # one with the enemies in listed order; left-over models (of either side) join the
    # first combat and gang up. Combats are resolved one by one in listed order.
    # pairing = "random" (army lists): each side of several profiles lines its living models up in a random
    # order first (a Fisher-Yates shuffle, the position swapped with the last of x + 1 read from dice.d(x + 1))
    first = plan.initiative
    second = 1 - first
    ready = [_alive(models[0]), _alive(models[1])]
    if getattr(plan, "pairing", "listed") == "random":
        for side in (0, 1):
            if len({m.spec for m in models[side]}) > 1:
                for x in range(len(ready[side]) - 1, 0, -1):
                    j = dice.d(x + 1) - 1
                    ready[side][x], ready[side][j] = ready[side][j], ready[side][x]
    pairs = min(len(ready[first]), len(ready[second]))
    combats = []
    for k in range(pairs):
        combat = [[], []]
        combat[first].append(ready[first][k])
        combat[second].append(ready[second][k])
        combats.append(combat)
    for side in (0, 1):
        for extra in ready[side][pairs:]:
            combats[0][side].append(extra)
    for combat in combats:
        _resolve_combat(plan, dice, combat)


def _resolve_combat(plan: DuelPlan, dice: DiceStream, combat: list[list[_Model]]) -> None:
    # Wounds are counted at the start of the roll (ambiguity 5): hits use these.
    start = {id(m): m.wounds for side in combat for m in side}

    # 2. Duel roll: one d6 per remaining wound among the side's models, keep the highest.
    result = [0, 0]
    for side in (0, 1):
        if combat[side][0].spec.prone:  # (prone is a state of the side: every model of it shares it)
            result[side] = 1  # a prone model rolls no dice and counts as a 1
            continue
        n_dice = sum(m.wounds + m.spec.extra_die for m in combat[side])  # dual_wield = extra_die: +1 die
        result[side] = max(dice.d6() for _ in range(n_dice))
    # Tie: the higher melee Weapon Skill wins, each side's highest in this combat (ambiguity 6)
    ws = [max(m.spec.ws for m in combat[side]) for side in (0, 1)]
    if result[0] != result[1]:
        losers = [1] if result[0] > result[1] else [0]
    elif ws[0] != ws[1]:
        losers = [1] if ws[0] > ws[1] else [0]
    else:
        losers = [0, 1]  # still tied: both sides lose and take hits from each other

    # 3. Toughness checks: each model of the winning side inflicts as many hits as its
    # own remaining wounds (+1 per "+1A" model), with its own weapon; the winner assigns them,
    # model after model in listed order.
    took = {id(m): 0 for side in combat for m in side}
    for loser in losers:
        winner = 1 - loser
        received = {id(m): 0 for m in combat[loser]}
        hitters = [m for m in combat[winner] for _ in range(start[id(m)] + m.spec.extra_hit)]
        for hitter in hitters:
            targets = [m for m in combat[loser] if m.wounds > 0]
            if not targets:
                break  # every loser is down: the remaining hits have no one to strike
            target = _choose_target(plan, targets, received)
            received[id(target)] += 1
            took[id(target)] += _hit(plan, dice, hitter.spec, target)

    # Backing away: a surviving loser backs away one yard per wound it lost; every yard
    # it cannot back (beyond its space; any yard when prone) is one more hit (ambiguity 8),
    # with the weapon of the winning side's first model in this combat.
    for loser in losers:
        winner = 1 - loser
        lead = combat[winner][0].spec
        for m in combat[loser]:
            if m.wounds == 0 or took[id(m)] == 0:
                continue
            room = 0 if m.spec.prone else m.space
            yards = took[id(m)]
            backed = yards if room is None else min(yards, room)
            if m.space is not None:
                m.space -= backed
            for _ in range(yards - backed):
                if m.wounds == 0:
                    break
                _hit(plan, dice, lead, m)  # these hits do not push it back again


def _choose_target(plan: DuelPlan, targets: list[_Model], received: dict[int, int]) -> _Model:
    """The winner's choice: fewest remaining wounds first, or spread the hits evenly."""
    if plan.assignment == "spread":
        return min(targets, key=lambda m: (received[id(m)], m.index))
    return min(targets, key=lambda m: (m.wounds, m.index))


def _hit(plan: DuelPlan, dice: DiceStream, hitter: SideSpec, target: _Model) -> int:
    """One hit with ``hitter``'s weapon on ``target``; returns the wounds it lost to a failed check."""
    need = target.spec.toughness - hitter.hit_strength  # T - S
    if need <= 0:
        # Instant death: Strength >= Toughness slays the model, no check; it is misted.
        target.wounds = 0
        target.misted = True
        return 0
    if plan.toughness_die == "2d6":
        roll = dice.d6() + dice.d6()
        passed = roll != 12 and roll <= need
    else:
        roll = dice.d6()
        passed = roll != 6 and roll <= need  # a 6 always fails
    if passed:
        return 0
    loss = min(hitter.hit_damage, target.wounds)  # damage beyond its wounds is lost
    target.wounds -= loss
    return loss
