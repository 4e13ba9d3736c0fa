"""``pools`` scalar reference: one fight played die by die, as ``docs/rules/pools.md`` reads.

The vectorised kernel (:mod:`.kernel`) is tested against :func:`resolve_fight`; the
dice order is the one the ruleset's docstring states (:mod:`sim.rulesets.pools`).
"""

from __future__ import annotations

from ...dice import DiceStream
from ...outcomes import ATTACKER, DEFENDER, DRAW, TrialOutcome
from ...ruleset import END, Rounds
from .kernel import DESTROYED, HELD, RETREATED
from .plan import SIDES, PoolsPlan

__all__ = ["resolve_fight"]


def resolve_fight(plan: PoolsPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
    """One fight of ``plan`` from ``dice`` (:meth:`sim.ruleset.Ruleset.resolve_one`)."""
    m, o = plan.matchup, plan.matchup.options
    unit = {"attacker": m.attacker, "defender": m.defender}
    other = {"attacker": "defender", "defender": "attacker"}
    wounds_left = {s: unit[s].bases * unit[s].wounds for s in SIDES}
    damage = {s: 0 for s in SIDES}
    shaken = {s: bool(m.state(s, "shaken")) for s in SIDES}
    destroyed = {s: False for s in SIDES}
    retreated = {s: False for s in SIDES}   # retreated in the previous engagement
    lost_last = {s: False for s in SIDES}
    limit = max_rounds if rounds == END else int(rounds)
    fought = 0
    while fought < limit:
        fought += 1
        # Fighting on: the sides take turns as attacker, the original attacker in odd rounds.
        att = "attacker" if fought % 2 == 1 else "defender"
        dfn = other[att]
        if fought == 1:
            # The first engagement is the one the states describe.
            charging = bool(m.state("attacker", "charge"))
            flanked = {s: bool(m.state(s, "flanked")) for s in SIDES}
            dash = {s: bool(m.state(s, "dash")) for s in SIDES}
            cover = {s: bool(m.state(s, "cover")) for s in SIDES}
        else:
            # Rally (switch): Shaken clears at the start of the unit's own turn as attacker.
            if o["rally"] and shaken[att]:
                shaken[att] = False
            # Each new attacker charges out of the open; a unit that retreated in the
            # previous engagement faces away, so it counts as flanked when charged.
            charging = True
            flanked = {att: False, dfn: retreated[dfn]}
            dash = {s: False for s in SIDES}
            cover = {s: False for s in SIDES}

        # 2. Attack pools: stat x bases remaining, then per-base modifiers.
        pool = {}
        for s in (att, dfn):
            u = unit[s]
            bases = -(-wounds_left[s] // u.wounds)  # a partly damaged base still fights
            raw = u.attack * bases
            per_base = 0
            if s == att and charging:
                per_base += 1
            if shaken[s]:
                per_base -= 1
            if flanked[s]:
                per_base -= 1
            if u.vehicle and s == dfn:
                per_base -= 1
            final = raw + per_base * bases
            if per_base < 0:
                # reductions stop at one die per base (but never raise the stat itself)
                final = max(final, min(raw, bases))
            pool[s] = final

        # 3. Both roll at once: 4+ to hit, moved by Dash, Cover and Flanking, clamped 2+..6+.
        hits = {}
        for s in (att, dfn):
            t = other[s]
            threshold = 4
            if dash[s]:
                threshold += o["dash_shift"]
            if dash[t]:
                threshold += o["target_dash_shift"]
            if cover[t]:
                threshold += o["cover_shift"]
            if flanked[t]:
                threshold += o["flank_shift"]
            threshold = min(max(threshold, 2), 6)
            hits[s] = sum(1 for _ in range(pool[s]) if dice.d6() >= threshold)
        # Shaken check straight after the roll, on hits received before saves.
        for s in (att, dfn):
            if hits[other[s]] >= unit[s].courage:
                shaken[s] = True

        # 4. Saves: one die per hit received, each die >= save cancels one hit.
        unsaved = {}
        for s in (att, dfn):
            received = hits[other[s]]
            if unit[s].save is None:
                unsaved[s] = received
            else:
                saved = sum(1 for _ in range(received) if dice.d6() >= unit[s].save)
                unsaved[s] = received - saved

        # 5. Fewer unsaved hits wins, more loses, equal is a tie.
        if unsaved[att] < unsaved[dfn]:
            loser = dfn
        elif unsaved[dfn] < unsaved[att]:
            loser = att
        else:
            loser = None

        # 6. Wounds = unsaved hits, filling one base at a time.
        for s in SIDES:
            taken = min(unsaved[s], wounds_left[s])
            damage[s] += taken
            wounds_left[s] -= taken
            if wounds_left[s] == 0:
                destroyed[s] = True
        # The loser retreats half its move and turns away; a stationary loser is destroyed.
        # On a tie the attacker is pushed back 1" (no lasting effect here).
        for s in SIDES:
            lost_last[s] = s == loser
            retreated[s] = False
            if s == loser and not destroyed[s]:
                if unit[s].move == 0:
                    destroyed[s] = True
                else:
                    retreated[s] = True
        if destroyed["attacker"] or destroyed["defender"]:
            break

    # Outcome.
    capped = rounds == END and fought >= limit and not (destroyed["attacker"] or destroyed["defender"])
    if destroyed["attacker"] and destroyed["defender"]:
        winner = DRAW
    elif destroyed["defender"]:
        winner = ATTACKER
    elif destroyed["attacker"]:
        winner = DEFENDER
    elif capped:
        winner = DRAW
    elif damage["attacker"] < damage["defender"]:
        winner = ATTACKER
    elif damage["defender"] < damage["attacker"]:
        winner = DEFENDER
    else:
        winner = DRAW
    category, extras = {}, {}
    for s in SIDES:
        if destroyed[s]:
            category[s] = DESTROYED
        elif lost_last[s]:
            category[s] = RETREATED
        else:
            category[s] = HELD
        extras[f"shaken_{s}"] = int(shaken[s])
        bases_left = 0 if destroyed[s] else -(-wounds_left[s] // unit[s].wounds)
        extras[f"bases_lost_{s}"] = unit[s].bases - bases_left
    return TrialOutcome(winner, damage["attacker"], damage["defender"], category["attacker"],
                        category["defender"], fought, capped, extras)
