"""``warband`` data: equipment tables and charts (the warrior profile and its equipment legality: :mod:`.units`).

Everything the reference reads from the rules text's tables lives here as data:
to hit, to wound, armour saves, strength save modifiers, weapon rules, the
critical hit table and the injury table (printed in ``docs/rules/warband.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: units imports this module
    from .units import WarbandUnit

__all__ = [
    "Weapon", "WEAPONS", "WEAPON_ALIASES", "ARMOUR_SAVE", "SKILLS",
    "to_hit_needed", "to_wound_needed", "strength_save_modifier", "critical_result",
    "injury_result", "attack_columns", "weapon_strength",
    "STANDING", "KNOCKED_DOWN", "STUNNED", "OUT_OF_ACTION",
    "VITAL_PART", "EXPOSED_SPOT", "MASTER_STRIKE",
]

#: Warrior status codes (also the kernel's). Higher is worse; injuries keep the highest.
STANDING, KNOCKED_DOWN, STUNNED, OUT_OF_ACTION = 0, 1, 2, 3
#: Critical hit results.
VITAL_PART, EXPOSED_SPOT, MASTER_STRIKE = 1, 2, 3


@dataclass(frozen=True, slots=True)
class Weapon:
    """One close-combat weapon of the Weapons & Armour table.

    Attributes
    ----------
    strength_bonus : int
        Added to the user's Strength (fist: -1 by default, see the ``fist_strength`` option).
    first_round_only : bool
        *Heavy*: the bonus applies in the first round of the combat only.
    enemy_save_bonus : int
        Improves the enemy's save by this much (dagger, fist: 6+ if it has none).
    cutting_edge : int
        Extra worsening of the enemy's save (axe).
    concussion : bool
        An injury total of 2-4 means stunned (hammer, club, mace, staff).
    parry : bool
        Allows a parry (sword).
    strike_first_round1 : bool
        Strikes first in round 1 (spear).
    strike_last : bool
        Always strikes last, even when charging (double-handed, unless strongman).
    two_handed : bool
        No shield, buckler or second weapon.
    difficult : bool
        No second weapon or buckler; a shield is allowed (morning star).
    unwieldy : bool
        Only a shield or buckler in the other hand, no second weapon (spear).
    max_attacks : int or None
        Cap on the warrior's Attacks (fist: 1).
    """

    name: str
    strength_bonus: int = 0
    first_round_only: bool = False
    enemy_save_bonus: int = 0
    cutting_edge: int = 0
    concussion: bool = False
    parry: bool = False
    strike_first_round1: bool = False
    strike_last: bool = False
    two_handed: bool = False
    difficult: bool = False
    unwieldy: bool = False
    max_attacks: int | None = None


WEAPONS: dict[str, Weapon] = {
    w.name: w
    for w in (
        Weapon("fist", strength_bonus=-1, enemy_save_bonus=1, max_attacks=1),
        Weapon("dagger", enemy_save_bonus=1),
        Weapon("club", concussion=True),
        Weapon("axe", cutting_edge=1),
        Weapon("sword", parry=True),
        Weapon("spear", strike_first_round1=True, unwieldy=True),
        Weapon("halberd", strength_bonus=1, two_handed=True),
        Weapon("flail", strength_bonus=2, first_round_only=True, two_handed=True),
        Weapon("morning_star", strength_bonus=1, first_round_only=True, difficult=True),
        Weapon("double_handed", strength_bonus=2, strike_last=True, two_handed=True),
    )
}
#: Other names of the same weapon (the table lists hammer / club / mace / staff together).
WEAPON_ALIASES = {"mace": "club", "hammer": "club", "staff": "club"}
WEAPON_NAMES = tuple(WEAPONS) + tuple(WEAPON_ALIASES)

#: Armour save needed on a d6 (7 = no save). A shield improves it by 1 (alone: 6+).
ARMOUR_SAVE = {"none": 7, "light": 6, "heavy": 5, "gromril": 4, "ithilmar": 5, "toughened_leathers": 6}

SKILLS = ("strike_to_injure", "web_of_steel", "resilient", "mighty_blow", "step_aside",
          "lightning_reflexes", "strongman", "jump_up")


# ------------------------------------------------------------------ charts
def to_hit_needed(ws_attacker: int, ws_target: int) -> int:
    """Close-combat to-hit chart: 3+ if WS is higher, 5+ if the target's is more than double, else 4+."""
    if ws_attacker > ws_target:
        return 3
    if ws_target > 2 * ws_attacker:
        return 5
    return 4


def to_wound_needed(strength: int, toughness: int) -> int:
    """To-wound chart (S vs T). 7 means the dash: it cannot wound."""
    diff = toughness - strength
    if diff >= 4:
        return 7
    if diff >= 2:
        return 6
    return max(2, 4 + diff)


def strength_save_modifier(strength: int) -> int:
    """Worsening of the enemy's armour save: S1-3 none, S4 -1, ... S9+ -6."""
    return min(max(strength - 3, 0), 6)


def critical_result(roll: int) -> int:
    """Critical hit table: 1-2 vital part, 3-4 exposed spot, 5-6 master strike (roll already modified)."""
    roll = min(roll, 6)
    return VITAL_PART if roll <= 2 else EXPOSED_SPOT if roll <= 4 else MASTER_STRIKE


def injury_result(total: int, concussion: bool) -> int:
    """Injury table on the modified total (capped at 6); concussion reads 2-4 as stunned."""
    total = min(total, 6)
    if total >= 5:
        return OUT_OF_ACTION
    if total >= 3 or (concussion and total == 2):
        return STUNNED
    return KNOCKED_DOWN


# ------------------------------------------------------------ equipment
def canonical_weapons(weapons: tuple[str, ...]) -> tuple[str, ...]:
    """Weapon names with the club aliases (mace, hammer, staff) resolved."""
    return tuple(WEAPON_ALIASES.get(w, w) for w in weapons)


def attack_columns(unit: WarbandUnit) -> tuple[str, ...]:
    """The weapon of each attack, in rolling order.

    Two one-handed weapons give +1 Attack. With two different weapons one attack
    is made with the second weapon listed and the others with the first (our
    fixed choice for the player's). A fist allows at most one attack.
    """
    weapons = canonical_weapons(unit.weapons)
    n = unit.a + (1 if len(weapons) == 2 else 0)
    cap = min((WEAPONS[w].max_attacks for w in weapons if WEAPONS[w].max_attacks), default=None)
    if cap is not None:
        n = min(n, cap)
    if len(weapons) == 2 and weapons[0] != weapons[1]:
        return (weapons[0],) * (n - 1) + (weapons[1],)
    return (weapons[0],) * n


def weapon_strength(unit: WarbandUnit, weapon: str, first_round: bool, fist_as_user: bool) -> int:
    """Strength of a blow: user S + weapon bonus (heavy: round 1 only) + mighty blow; fist at least 1."""
    wp = WEAPONS[weapon]
    bonus = wp.strength_bonus
    if wp.first_round_only and not first_round:
        bonus = 0
    if weapon == "fist" and fist_as_user:
        bonus = 0
    s = unit.s + bonus + (1 if "mighty_blow" in unit.skills else 0)
    return max(s, 1)


def save_needed(attacker: WarbandUnit, weapon: str, strength: int, target: WarbandUnit) -> int:
    """Armour save the target needs against a blow (7 or more: no save).

    Base armour (7 if none), -1 for a shield, + the strength modifier, + cutting
    edge, - the dagger/fist bonus; a natural 1 always fails.
    """
    wp = WEAPONS[weapon]
    need = ARMOUR_SAVE[target.armour] - (1 if target.shield else 0)
    need += strength_save_modifier(strength) + wp.cutting_edge - wp.enemy_save_bonus
    return max(need, 2)
