"""``warband`` units: the warrior profile, the legality of its equipment and its display row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import Where
from .tables import WEAPONS, canonical_weapons

__all__ = ["WarbandUnit", "check_equipment", "unit_summary", "line_up"]


@dataclass(frozen=True, slots=True)
class WarbandUnit:
    """A warrior profile; ``count`` warriors with it form one side's group."""

    name: str
    ws: int
    s: int
    t: int
    i: int
    w: int
    a: int
    count: int = 1
    ld: int | None = None
    armour: str = "none"
    shield: bool = False
    buckler: bool = False
    helmet: bool = False
    weapons: tuple[str, ...] = ("dagger",)
    skills: tuple[str, ...] = ()
    points: float | None = None


def check_equipment(unit: WarbandUnit, where: Where) -> None:
    """Raise an InputError for an illegal combination of weapons, armour and shields."""
    weapons = canonical_weapons(unit.weapons)
    given = list(unit.weapons)
    if len(weapons) == 2 and "fist" in weapons:
        raise where.error("weapons", given, "fist alone (fighting without a weapon cannot be combined with a weapon)")
    for name in weapons:
        wp = WEAPONS[name]
        if wp.two_handed and (len(weapons) > 1 or unit.shield or unit.buckler):
            raise where.error("weapons", given, f"{name} alone, without shield or buckler (it is two-handed)")
        if wp.difficult and (len(weapons) > 1 or unit.buckler):
            raise where.error("weapons", given, f"{name} without a second weapon or buckler (difficult to use; a shield is allowed)")
        if wp.unwieldy and len(weapons) > 1:
            raise where.error("weapons", given, f"{name} without a second weapon (unwieldy: only a shield or buckler in the other hand)")
    if len(weapons) == 2 and (unit.shield or unit.buckler):
        what = "shield" if unit.shield else "buckler"
        raise where.error(what, True, "false with two weapons (no free hand)")
    if unit.shield and unit.buckler:
        raise where.error("buckler", True, "false with a shield (no free hand)")
    if unit.armour == "toughened_leathers" and unit.shield:
        raise where.error("shield", True, "false with toughened_leathers (they combine only with a helmet or buckler)")


def unit_summary(unit: WarbandUnit) -> dict[str, Any]:
    """Table row: the profile with lists joined."""
    out = {f: getattr(unit, f) for f in unit.__slots__}
    out["weapons"] = "+".join(unit.weapons)
    out["skills"] = ",".join(unit.skills)
    return out


def line_up(side: Any) -> tuple[WarbandUnit, ...]:
    """A side's warriors in line-up order: one profile's ``count`` warriors, or an army list's groups
    (:class:`sim.lists.MixedSide`) one after the other in listed order."""
    groups = getattr(side, "groups", None) or (side,)
    return tuple(g for g in groups for _ in range(g.count))
