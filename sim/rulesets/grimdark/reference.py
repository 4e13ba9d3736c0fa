"""``grimdark`` scalar reference: one fight, model by model and die by die, as the spec reads.

This is the spec in code; the vectorised kernel in ``grimdark.py`` is checked
against it. Dice order (scripted tests rely on it), per strike step: the
attacker's striking pools, then the defender's; a pool is the engaged models of
one group (with their weapon), then that group's models that are not engaged
(one plain attack each); groups in listed order. For each pool: every to-hit
die, then a to-wound die per hit (none when the chart says "–"), then a save die
per wound (none without a usable save).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dice import DiceStream
from ...outcomes import ATTACKER, DEFENDER, DRAW, TrialOutcome
from ...ruleset import END, Matchup, Rounds
from .charts import to_hit, to_wound
from .units import ModelGroup, Squad

__all__ = ["resolve_fight", "WIPED_OUT", "SURVIVED", "COVER_STEP", "FIST_STEP"]

WIPED_OUT, SURVIVED = 0, 1
#: Step keys, sorted so that the cover step is first and the fist step last.
COVER_STEP, FIST_STEP = 100, -100


@dataclass
class Model:
    """One model of a squad: its group (index into the squad's groups) and wounds left."""

    group: int
    wounds: int


def _models(squad: Squad) -> list[Model]:
    return [Model(g, grp.w) for g, grp in enumerate(squad.groups) for _ in range(grp.count)]


def step_of(group: ModelGroup, side: str, engaged: bool, first_round: bool, in_cover: bool,
            all_defenders_infantry: bool) -> int:
    """The strike step of a model: COVER_STEP, its Initiative, or FIST_STEP.

    Rule 4: power fists (used in base contact) always strike last, even in cover
    or with frag grenades. Rule 1: round 1 only, defenders in cover strike first.
    Rule 5: infantry attackers with frag grenades strike with them, when every
    defending group is infantry. Otherwise rule 2: by Initiative.
    """
    if engaged and group.weapon == "power_fist":
        return FIST_STEP
    if first_round and in_cover:
        if side == "defender":
            return COVER_STEP
        if group.frag_grenades and group.infantry and all_defenders_infantry:
            return COVER_STEP
    return group.i


def _roll_pool(dice: DiceStream, attacks: int, grp: ModelGroup, weapon: str, target: ModelGroup) -> int:
    """Roll one pool of identical attacks against ``target``'s profile: unsaved wounds."""
    strength = min(2 * grp.s, 10) if weapon == "power_fist" else grp.s
    hits = sum(1 for _ in range(attacks) if dice.d6() >= to_hit(grp.ws, target.ws))
    need = to_wound(strength, target.t)
    wounds = 0 if need == 0 else sum(1 for _ in range(hits) if dice.d6() >= need)
    # Saves: armour does not count against power weapons, fists and monsters;
    # the invulnerable save always does; take the better one; a 1 always fails.
    ignores_armour = weapon in ("power_weapon", "power_fist") or grp.monster
    usable = [x for x in (None if ignores_armour else target.save, target.invuln) if x is not None]
    if not usable:
        return wounds
    best = min(usable)
    unsaved = 0
    for _ in range(wounds):
        roll = dice.d6()
        if roll == 1 or roll < best:
            unsaved += 1
    return unsaved


def resolve_fight(m: Matchup, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
    """One fight of ``m`` (see the module docstring for the dice order)."""
    sides = ("attacker", "defender")
    squads = {s: m.unit(s) for s in sides}
    models = {s: _models(squads[s]) for s in sides}
    lost = {s: 0 for s in sides}  # wounds lost (the damage unit)
    instant_death = bool(m.options["instant_death"])
    all_defenders_infantry = all(g.infantry for g in squads["defender"].groups)
    limit = max_rounds if rounds == END else int(rounds)

    def alive(side: str) -> list[Model]:
        return [x for x in models[side] if x.wounds > 0]

    fought = 0
    while fought < limit and alive("attacker") and alive("defender"):
        fought += 1
        r = fought
        # 1. Set up the round: engagement and attacks are fixed now.
        engaged: dict[str, list[Model]] = {}
        in_base_contact: dict[str, set[int]] = {}
        attacks: dict[int, int] = {}  # id(model) -> attacks this round
        step: dict[int, int] = {}
        for s in sides:
            n_engaged, n_supporting = m.state(s, "engaged"), m.state(s, "supporting")
            living = alive(s)
            engaged[s] = living if n_engaged < 0 else living[:n_engaged]
            in_base_contact[s] = {id(x) for x in engaged[s]}
            # within 2": the next n_supporting models alive (all the rest by default); further back, out of combat
            rest = living[len(engaged[s]):]
            near = rest if n_supporting < 0 else rest[:n_supporting]
            for x in engaged[s] + near:
                grp = squads[s].groups[x.group]
                in_contact = id(x) in in_base_contact[s]
                if in_contact:
                    n = grp.a + (1 if grp.two_weapons else 0)
                    if s == "attacker" and r == 1 and m.state("attacker", "charging"):
                        n += 1
                else:
                    n = 1  # within 2": exactly one plain attack
                attacks[id(x)] = n
                step[id(x)] = step_of(grp, s, in_contact, r == 1, bool(m.state("defender", "in_cover")),
                                      all_defenders_infantry)
        # 2. Strike steps: cover, Initiative 10..1, power fists.
        for key in sorted(set(step.values()), reverse=True):
            targets = {s: alive(s) for s in sides}
            unsaved: dict[str, list[tuple[int, int]]] = {s: [] for s in sides}  # (strength, n) in order
            # 3. Everyone in the step rolls before any casualty is removed.
            for s in sides:
                enemy = "defender" if s == "attacker" else "attacker"
                if not targets[enemy]:
                    continue
                target = squads[enemy].groups[targets[enemy][0].group]
                for g, grp in enumerate(squads[s].groups):
                    strikers = [x for x in targets[s] if x.group == g and step.get(id(x)) == key]  # out of combat: none
                    in_contact = [x for x in strikers if id(x) in in_base_contact[s]]
                    others = [x for x in strikers if id(x) not in in_base_contact[s]]
                    for pool, weapon in ((in_contact, grp.weapon), (others, "ccw")):
                        if not pool:
                            continue
                        n = sum(attacks[id(x)] for x in pool)
                        strength = min(2 * grp.s, 10) if weapon == "power_fist" else grp.s
                        unsaved[enemy].append((strength, _roll_pool(dice, n, grp, weapon, target)))
            # 5. Casualties: wounds on one model until it dies, engaged models first.
            for s in sides:
                for strength, n in unsaved[s]:
                    for _ in range(n):
                        _take_wound(s, squads[s], models[s], engaged[s], strength, instant_death, lost)
    a_alive, d_alive = len(alive("attacker")), len(alive("defender"))
    capped = rounds == END and fought >= limit and a_alive > 0 and d_alive > 0
    if a_alive and not d_alive:
        winner = ATTACKER
    elif d_alive and not a_alive:
        winner = DEFENDER
    elif not a_alive or capped:
        winner = DRAW
    else:
        # Both standing after N rounds: more wounds inflicted wins.
        winner = ATTACKER if lost["defender"] > lost["attacker"] else DEFENDER if lost["attacker"] > lost["defender"] else DRAW
    extras = {"models_lost_attacker": len(models["attacker"]) - a_alive,
              "models_lost_defender": len(models["defender"]) - d_alive}
    return TrialOutcome(winner, lost["attacker"], lost["defender"], SURVIVED if a_alive else WIPED_OUT,
                        SURVIVED if d_alive else WIPED_OUT, fought, capped, extras)


def _take_wound(side: str, squad: Squad, models: list[Model], engaged: list[Model], strength: int,
                instant_death: bool, lost: dict[str, int]) -> None:
    """One unsaved wound on ``side``: the first living engaged model, else the first living model."""
    victim = next((x for x in engaged if x.wounds > 0), None)
    if victim is None:
        victim = next((x for x in models if x.wounds > 0), None)
    if victim is None:
        return  # the squad is gone: the wound is wasted
    grp = squad.groups[victim.group]
    if instant_death and grp.w > 1 and strength >= 2 * grp.t:
        lost[side] += victim.wounds  # killed outright: every remaining wound is lost
        victim.wounds = 0
    else:
        lost[side] += 1
        victim.wounds -= 1
