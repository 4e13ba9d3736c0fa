"""``warband`` scalar reference: one fight, transcribed literally from the spec's procedure.

Every die comes from ``dice.d6()``. The order dice are read in (the order the
scripted-dice tests rely on), per striker's batch against a standing target:

1. to-hit dice, one per attack, in attack order (:func:`attack_columns`);
2. the target's parry die (and the sword-and-buckler re-roll), if it may parry;
3. per remaining hit: to-wound die; critical table die (if critical); armour save
   die (if a save is possible); Step Aside die (if the wound is still unsaved);
4. injury dice, one per wound at or beyond W = 0, in wound order;
5. the helmet die, if the kept result is stunned.

Against a knocked-down target each attack auto-hits and step 3 is rolled per
attack until one wound is unsaved (out of action). Strike-order roll-offs: each
tied model rolls a d6, ties re-roll, before the phase's first blow.

Re-engaging (option ``reengage``; no dice either way):

* ``"own_turn_charge"`` (default, the spec's decision): at the start of its own
  side's turn, after Recovery, a standing warrior with no enemy in base contact
  (every enemy it touched is out of action) charges the enemy not out of action
  with the fewest opponents in contact (ties: lowest index); warriors are placed
  one at a time in index order, each seeing the contacts of those placed before
  it. It counts as charging this turn (strike first, unless it stood up this
  turn or strikes last with a double-handed weapon), and a warrior it charged
  that has Lightning Reflexes strikes first too. A warrior freed during a phase
  waits, unengaged, until its side's next turn (see ``_charge``).
* ``"every_round"`` (the behaviour before issue 16): before each round's
  Recovery, every warrior of either side not out of action whose opponents are
  all out of action joins the enemy with the fewest live opponents (attackers
  first, then defenders), with no charge bonus (see ``_rejoin``).

Optional small-group rules (switches ``all_alone`` and ``rout``, off by default;
when off no die is read for them):

* Rout test, at the start of every round from round 2, before anything else:
  2 dice (2D6) for the active side if at least 25 % of its warriors are out of
  action; above the side's Ld it loses at once.
* All Alone, at the end of the active side's hand-to-hand phase: 2 dice (2D6)
  for its only standing warrior if it touches two or more standing enemies;
  above its Ld, per standing enemy in contact (index order) the dice of one
  automatic hit with that enemy's first attack column: to-wound, critical,
  save, Step Aside (no injury dice: the warrior flees, which counts as out of
  action, whatever the injury would have been).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...dice import DiceStream
from ...outcomes import ATTACKER, DEFENDER, DRAW, TrialOutcome
from ...ruleset import END, Rounds
from .tables import (
    EXPOSED_SPOT, KNOCKED_DOWN, MASTER_STRIKE, OUT_OF_ACTION, STANDING, STUNNED, WEAPONS,
    attack_columns, canonical_weapons, critical_result, injury_result, save_needed,
    to_hit_needed, to_wound_needed, weapon_strength,
)
from .units import WarbandUnit, line_up

__all__ = ["Warrior", "resolve_fight", "pairing", "side_outcome", "REENGAGE_RULES", "PAIRINGS"]

#: Values of the ``pairing`` option (how an army list's warriors line up): the default first.
PAIRINGS = ("listed", "random")

#: Values of the ``reengage`` option: the default first.
REENGAGE_RULES = ("own_turn_charge", "every_round")


@dataclass
class Warrior:
    """One model's state during a fight."""

    side: str
    index: int
    unit: WarbandUnit
    wounds: int
    status: int = STANDING
    stood_up: bool = False
    put_down_by: int | None = None   # id of the striker that knocked down / stunned it this phase
    hits_taken: bool = False         # an opponent already scored hits on it this phase (parry gone)
    charged: bool = False            # re-engaged by a charge this turn (own_turn_charge)
    was_charged: bool = False        # an enemy charged it this turn (Lightning Reflexes)

    @property
    def id(self) -> int:
        return self.index if self.side == "attacker" else 100 + self.index

    def has(self, skill: str) -> bool:
        return skill in self.unit.skills


def pairing(n_att: int, n_def: int) -> set[tuple[int, int]]:
    """Initial contacts: the larger side's warriors round-robin onto the smaller side's."""
    if n_att >= n_def:
        return {(i, i % n_def) for i in range(n_att)}
    return {(j % n_att, j) for j in range(n_def)}


def _rejoin(att: list[Warrior], dfn: list[Warrior], contacts: set[tuple[int, int]]) -> None:
    """[INTERP] A warrior whose every contact is out of action moves into contact with the
    enemy (not out of action) that has the fewest live opponents, lowest index first.
    Attackers are placed first, in index order, then defenders."""
    def live(w: Warrior) -> bool:
        return w.status != OUT_OF_ACTION

    for mine, theirs, me_first in ((att, dfn, True), (dfn, att, False)):
        for w in mine:
            if not live(w):
                continue
            engaged = any(live(theirs[e]) for e in range(len(theirs))
                          if ((w.index, e) if me_first else (e, w.index)) in contacts)
            if engaged:
                continue
            best, best_n = None, None
            for e in theirs:
                if not live(e):
                    continue
                n = sum(1 for m in mine if live(m) and ((m.index, e.index) if me_first else (e.index, m.index)) in contacts)
                if best_n is None or n < best_n:
                    best, best_n = e, n
            if best is not None:
                contacts.add((w.index, best.index) if me_first else (best.index, w.index))


def _charge(mine: list[Warrior], theirs: list[Warrior], contacts: set[tuple[int, int]], me_first: bool) -> None:
    """Re-engaging by a charge, at the start of ``mine``'s own turn after Recovery (spec "Re-engaging").

    A standing warrior of ``mine`` with no enemy in base contact (every enemy it touched is out
    of action) charges the enemy not out of action that has the fewest opponents in contact (ties:
    the enemy listed first). Warriors are placed one at a time, in index order, so a later one sees
    the contacts of those placed before it. The charger counts as charging this turn; the enemy it
    charged as charged (for Lightning Reflexes). ``me_first``: ``mine`` are the attackers.
    """
    def touching(m: Warrior, e: Warrior) -> bool:
        return ((m.index, e.index) if me_first else (e.index, m.index)) in contacts

    for w in mine:
        if w.status != STANDING or any(e.status != OUT_OF_ACTION and touching(w, e) for e in theirs):
            continue
        best, best_n = None, None
        for e in theirs:
            if e.status == OUT_OF_ACTION:
                continue
            n = sum(1 for m in mine if m.status != OUT_OF_ACTION and touching(m, e))
            if best_n is None or n < best_n:
                best, best_n = e, n
        if best is None:
            continue
        contacts.add((w.index, best.index) if me_first else (best.index, w.index))
        w.charged, best.was_charged = True, True


def _roll_off(group: list[Warrior], dice: DiceStream) -> list[Warrior]:
    """Equal Initiative: each rolls a die, highest first, ties roll again."""
    if len(group) <= 1:
        return list(group)
    rolls = [(dice.d6(), w) for w in group]
    out: list[Warrior] = []
    for value in range(6, 0, -1):
        tied = [w for r, w in rolls if r == value]
        out.extend(_roll_off(tied, dice))
    return out


def _strike_class(w: Warrior, round_no: int, attacker_charging: bool) -> int:
    """0 strike first, 1 normal, 2 strike last (strike last overrides strike first)."""
    if w.stood_up:
        return 2
    weapons = canonical_weapons(w.unit.weapons)
    if any(WEAPONS[x].strike_last for x in weapons) and not w.has("strongman"):
        return 2
    if w.charged or (w.was_charged and w.has("lightning_reflexes")):
        return 0                                          # re-engaged by a charge this turn (or charged by one)
    if round_no == 1:
        if w.side == "attacker" and attacker_charging:
            return 0
        if any(WEAPONS[x].strike_first_round1 for x in weapons):
            return 0
        if w.side == "defender" and attacker_charging and w.has("lightning_reflexes"):
            return 0
    return 1


def _line(side: Any, name: str, dice: DiceStream, shuffle: bool) -> list[Warrior]:
    """The side's warriors, indexed in line-up order: an army list's groups in listed order, or (``shuffle``,
    a side of several profiles under ``pairing = "random"``) in a random order: a Fisher-Yates shuffle, the
    position swapped with the last of ``x + 1`` read from ``dice.d(x + 1)``, x from the last position down."""
    units = list(line_up(side))
    if shuffle and len(set(units)) > 1:
        for x in range(len(units) - 1, 0, -1):
            j = dice.d(x + 1) - 1
            units[x], units[j] = units[j], units[x]
    return [Warrior(name, i, u, u.w) for i, u in enumerate(units)]


class _Fight:
    def __init__(self, att_unit: Any, def_unit: Any, charging: bool, fist_as_user: bool,
                 dice: DiceStream, all_alone: bool = False, reengage: str = "own_turn_charge",
                 pairing_rule: str = "listed") -> None:
        if reengage not in REENGAGE_RULES:
            raise ValueError(f"reengage must be one of {REENGAGE_RULES}, got {reengage!r}")
        if pairing_rule not in PAIRINGS:
            raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing_rule!r}")
        self.all_alone = all_alone
        self.reengage = reengage
        self.att = _line(att_unit, "attacker", dice, pairing_rule == "random")
        self.dfn = _line(def_unit, "defender", dice, pairing_rule == "random")
        self.contacts = pairing(len(self.att), len(self.dfn))
        self.charging = charging
        self.fist_as_user = fist_as_user
        self.dice = dice

    def enemies_in_contact(self, w: Warrior) -> list[Warrior]:
        if w.side == "attacker":
            return [d for d in self.dfn if (w.index, d.index) in self.contacts]
        return [a for a in self.att if (a.index, w.index) in self.contacts]

    # ------------------------------------------------------------- a round
    def play_round(self, round_no: int) -> None:
        active = self.att if round_no % 2 == 1 else self.dfn
        if self.reengage == "every_round":
            _rejoin(self.att, self.dfn, self.contacts)
        # 1. Recovery, active player's models only.
        for w in self.att + self.dfn:
            w.stood_up = w.charged = w.was_charged = False
        for w in active:
            if w.status == KNOCKED_DOWN:
                w.status, w.stood_up = STANDING, True
            elif w.status == STUNNED:
                w.status = KNOCKED_DOWN   # [INTERP] never stunned -> standing in one Recovery
        if self.reengage == "own_turn_charge":
            if active is self.att:
                _charge(self.att, self.dfn, self.contacts, True)
            else:
                _charge(self.dfn, self.att, self.contacts, False)
        # 2. Order the strikers: standing models touching an enemy still in the fight.
        strikers = [w for w in self.att + self.dfn if w.status == STANDING
                    and any(e.status != OUT_OF_ACTION for e in self.enemies_in_contact(w))]
        keys = sorted({(_strike_class(w, round_no, self.charging), -w.unit.i) for w in strikers})
        order: list[Warrior] = []
        for key in keys:
            group = [w for w in strikers if (_strike_class(w, round_no, self.charging), -w.unit.i) == key]
            order.extend(_roll_off(group, self.dice))
        for w in self.att + self.dfn:
            w.put_down_by, w.hits_taken = None, False
        # 3. Each striker in order.
        for s in order:
            if s.status != STANDING:
                continue
            target = self.choose_target(s)
            if target is not None:
                self.strike(s, target, round_no)
        # 4. End of the phase: All Alone (optional switch).
        if self.all_alone:
            self.all_alone_test(active, round_no)

    def all_alone_test(self, active: list[Warrior], round_no: int) -> None:
        """All Alone: a warrior of the active side fighting two or more standing enemies with no
        standing friend tests 2D6 against its Ld at the end of its (own turn's) combat phase.

        [INTERP] In this simulator every friend is within 6", so "no standing friend" means no
        other standing warrior on its side; the tester itself must be standing. On a fail each
        standing enemy in contact gets one automatic hit (to wound, critical, save, Step Aside,
        with its first attack column's weapon); then it flees: out of the combat, counted as
        out of action. Injury dice are not rolled: fleeing removes it whatever they show.
        """
        standing = [w for w in active if w.status == STANDING]
        if len(standing) != 1:
            return
        w = standing[0]
        foes = [e for e in self.enemies_in_contact(w) if e.status == STANDING]
        if len(foes) < 2:
            return
        if self.dice.d6() + self.dice.d6() <= w.unit.ld:
            return                                        # passed: fights on
        for e in foes:                                    # each opponent: one automatic hit
            weapon = attack_columns(e.unit)[0]
            strength = weapon_strength(e.unit, weapon, round_no == 1, self.fist_as_user)
            wounds, _, _ = self.wound_and_save(e, w, weapon, strength, False)
            w.wounds = max(w.wounds - wounds, 0)
        w.status = OUT_OF_ACTION                          # fled: out of the combat

    def choose_target(self, s: Warrior) -> Warrior | None:
        """Standing enemies first; else stunned, then knocked-down ones it did not put down itself."""
        enemies = self.enemies_in_contact(s)
        for wanted in (STANDING, STUNNED, KNOCKED_DOWN):
            for e in enemies:
                if e.status == wanted and (wanted == STANDING or e.put_down_by != s.id):
                    return e
        return None

    # ------------------------------------------------------------ a batch
    def strike(self, s: Warrior, t: Warrior, round_no: int) -> None:
        d6 = self.dice.d6
        first_round = round_no == 1
        if t.status == STUNNED:
            t.status = OUT_OF_ACTION                      # stunned: automatically out of action
            return
        columns = attack_columns(s.unit)
        strengths = [weapon_strength(s.unit, wp, first_round, self.fist_as_user) for wp in columns]
        if t.status == KNOCKED_DOWN:
            # All attacks hit automatically; any unsaved wound: out of action. No parry.
            crit_used = False
            for wp, st in zip(columns, strengths):
                wounds, crit_used, _ = self.wound_and_save(s, t, wp, st, crit_used)
                if wounds:
                    t.status = OUT_OF_ACTION
                    return
            return
        # To hit by the WS chart.
        need = to_hit_needed(s.unit.ws, t.unit.ws)
        rolls = [d6() for _ in columns]
        hits = [k for k, r in enumerate(rolls) if r >= need]
        # Parry: sword or buckler, first opponent to score hits this phase, against blows
        # below twice its basic Strength; beat the highest such to-hit die (a 6 cannot be parried).
        if hits:
            tw = canonical_weapons(t.unit.weapons)
            can_parry = "sword" in tw or t.unit.buckler
            parryable = [k for k in hits if strengths[k] < 2 * t.unit.s]
            if can_parry and not t.hits_taken and parryable:
                best = max(rolls[k] for k in parryable)
                if best < 6:
                    ok = d6() > best
                    if not ok and "sword" in tw and t.unit.buckler:
                        ok = d6() > best                   # sword + buckler: re-roll a failed parry
                    if ok:
                        hits.remove(next(k for k in parryable if rolls[k] == best))
            t.hits_taken = True
        # To wound, criticals, saves, in attack order; collect the wounds in order.
        crit_used = False
        wound_list: list[tuple[int, int]] = []   # (injury modifier, concussion) per wound
        for k in hits:
            wounds, crit_used, crit = self.wound_and_save(s, t, columns[k], strengths[k], crit_used)
            mod = (2 if crit == MASTER_STRIKE else 0) + (1 if s.has("strike_to_injure") else 0)
            wound_list += [(mod, WEAPONS[columns[k]].concussion)] * wounds
        if not wound_list:
            return
        # Apply wounds: an injury roll for the wound that takes W to 0 and every later one; keep the highest.
        worst = None
        for mod, concussion in wound_list:
            if t.wounds > 0:
                t.wounds -= 1
                if t.wounds > 0:
                    continue
            result = injury_result(d6() + mod, concussion)
            worst = result if worst is None else max(worst, result)
        if worst is None:
            return
        if worst == STUNNED and t.unit.helmet and d6() >= 4:
            worst = KNOCKED_DOWN                             # helmet: 4+ save against being stunned
        elif worst == KNOCKED_DOWN and t.has("jump_up"):
            worst = STANDING                                 # jump up ignores knocked-down results
        t.status = worst
        if worst in (KNOCKED_DOWN, STUNNED):
            t.put_down_by = s.id

    def wound_and_save(self, s: Warrior, t: Warrior, weapon: str, strength: int, crit_used: bool):
        """One hit: to wound (critical on the first eligible natural 6), armour save, Step Aside.

        Returns (unsaved wounds 0/1/2, crit_used, critical result or None).
        """
        d6 = self.dice.d6
        need = to_wound_needed(strength - (1 if t.has("resilient") else 0), t.unit.t)
        if need > 6:
            return 0, crit_used, None                       # "-": cannot wound, no roll
        roll = d6()
        if roll < need:
            return 0, crit_used, None
        crit = None
        if roll == 6 and need < 6 and not crit_used:
            crit_used = True
            crit = critical_result(d6() + (1 if s.has("web_of_steel") else 0))
        wounds = 2 if crit is not None else 1
        save = save_needed(s.unit, weapon, strength, t.unit)
        if crit not in (EXPOSED_SPOT, MASTER_STRIKE) and save <= 6 and d6() >= save:
            return 0, crit_used, crit                       # saved (vital part: one save covers both)
        if t.has("step_aside") and d6() >= 5:
            return 0, crit_used, crit
        return wounds, crit_used, crit


def side_outcome(warriors: list[Warrior]) -> int:
    """Outcome category: 0 out_of_action, 1 down, 2 standing."""
    if all(w.status == OUT_OF_ACTION for w in warriors):
        return 0
    if any(w.status == STANDING for w in warriors):
        return 2
    return 1


def rout_test(side: list[Warrior], dice: DiceStream) -> bool:
    """Rout test of the active side at the start of its turn: True if it routs.

    Taken when at least 25 % of the side (warriors out of action or fled, against its starting
    count) are out of action; 2D6 against the side's highest Ld; above it, the side routs.
    """
    ooa = sum(w.status == OUT_OF_ACTION for w in side)
    if 4 * ooa < len(side):
        return False
    return dice.d6() + dice.d6() > max(w.unit.ld for w in side)


def resolve_fight(att: Any, dfn: Any, charging: bool, fist_as_user: bool, dice: DiceStream,
                  rounds: Rounds, max_rounds: int, *, all_alone: bool = False, rout: bool = False,
                  reengage: str = "own_turn_charge", pairing_rule: str = "listed") -> TrialOutcome:
    """One fight from the attacker's charge turn until the end or ``rounds`` rounds.

    ``att`` and ``dfn`` are warrior profiles (``count`` warriors each) or army lists
    (:class:`sim.lists.MixedSide`: each warrior keeps its own profile, lined up in listed order, or
    shuffled at the start with ``pairing_rule = "random"``; see ``_line``).

    With ``rout``, a side that fails its rout test at the start of one of its turns (round 2 on)
    loses at once: the fight ends in that round, the other side wins, and both sides keep their
    current state (categories, damage, warriors out of action).
    """
    f = _Fight(att, dfn, charging, fist_as_user, dice, all_alone, reengage, pairing_rule)
    limit = max_rounds if rounds == END else int(rounds)
    fought = 0
    done = False
    routed = None
    while fought < limit and not done:
        fought += 1
        if rout and fought >= 2:
            active = f.att if fought % 2 == 1 else f.dfn
            if rout_test(active, dice):
                routed = ATTACKER if active is f.att else DEFENDER
                done = True
                break
        f.play_round(fought)
        done = all(w.status == OUT_OF_ACTION for w in f.att) or all(w.status == OUT_OF_ACTION for w in f.dfn)
    ooa_a = sum(w.status == OUT_OF_ACTION for w in f.att)
    ooa_d = sum(w.status == OUT_OF_ACTION for w in f.dfn)
    dmg_a = sum(w.unit.w - w.wounds for w in f.att)
    dmg_d = sum(w.unit.w - w.wounds for w in f.dfn)
    capped = rounds == END and not done
    if capped:
        winner = DRAW
    elif routed is not None:
        winner = DEFENDER if routed == ATTACKER else ATTACKER
    elif ooa_d == len(f.dfn):
        winner = ATTACKER
    elif ooa_a == len(f.att):
        winner = DEFENDER
    elif ooa_a != ooa_d:
        winner = ATTACKER if ooa_a < ooa_d else DEFENDER
    elif dmg_a != dmg_d:
        winner = ATTACKER if dmg_a < dmg_d else DEFENDER
    else:
        winner = DRAW
    return TrialOutcome(winner, dmg_a, dmg_d, side_outcome(f.att), side_outcome(f.dfn), fought, capped,
                        {"out_of_action_attacker": ooa_a, "out_of_action_defender": ooa_d})
