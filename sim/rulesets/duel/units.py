"""``duel`` unit data: weapons, profiles, and their validation from TOML, CSV and ``--set``.

A unit is one profile repeated ``count`` times (one model or a small group on one
side of a combat). A weapon is a table ``{strength, damage, abilities}``; no
weapon means bare hands (Strength ``ceil(strength / 2)``, Damage 1).

CSV rosters use flat columns for the two weapon tables:

``weapon_strength, weapon_damage, weapon_abilities`` and
``second_weapon_strength, second_weapon_damage, second_weapon_abilities``

(abilities separated by ``;``; empty weapon cells mean "no weapon"). The same
flat names, or dotted ones (``weapon.strength``), work in ``--set``; ``weapon=none``
disarms a unit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import Where
from ...schema import Field, parse_fields, points_field

__all__ = ["Weapon", "DuelUnit", "UNIT_FIELDS", "WEAPON_FIELDS", "WEAPON_SLOTS", "parse_weapon", "parse_duel_unit",
           "unit_to_dict", "unit_row", "rows_to_mappings", "apply_overrides"]

#: The two weapon slots of a model.
WEAPON_SLOTS = ("weapon", "second_weapon")

#: Fields of a weapon table (validated with the same one-line errors as unit fields).
WEAPON_FIELDS = (
    Field("strength", "int", "weapon Strength (subtracted from the target's Toughness)", lo=0, hi=20),
    Field("damage", "int", "wounds lost per failed Toughness check", lo=1, hi=20),
    Field("abilities", "str_list", "special abilities (carried as data; none changes the procedure)", default=()),
)

UNIT_FIELDS = (
    Field("name", "str", "unit name"),
    Field("count", "int", "models with this profile on the side", lo=1, hi=20, default=1),
    Field("wounds", "int", "wounds per model (one duel die each)", lo=1, hi=20),
    Field("toughness", "int", "Toughness", lo=1, hi=20),
    Field("ws", "int", "melee Weapon Skill (duel tie-break)", lo=0, hi=20),
    Field("strength", "int", "the model's own Strength (bare hands: ceil(strength/2), damage 1)", lo=0, hi=20),
    Field("weapon", "table", "{ strength, damage, abilities }; absent = bare hands", default=None, optional=True),
    Field("second_weapon", "table", "a second melee weapon (identical: +1A; different: both abilities)",
          default=None, optional=True),
    points_field("points cost"),
)


@dataclass(frozen=True, slots=True)
class Weapon:
    """A melee weapon: Strength, Damage and (inert) abilities."""

    strength: int
    damage: int
    abilities: tuple[str, ...] = ()

    def same_as(self, other: "Weapon | None") -> bool:
        """Identical weapons (same Strength, Damage and set of abilities) give "+1A"."""
        return (other is not None and self.strength == other.strength and self.damage == other.damage
                and sorted(self.abilities) == sorted(other.abilities))

    def to_dict(self) -> dict[str, Any]:
        return {"strength": self.strength, "damage": self.damage, "abilities": list(self.abilities)}


@dataclass(frozen=True, slots=True)
class DuelUnit:
    """One model's profile, repeated ``count`` times on its side."""

    name: str
    count: int
    wounds: int
    toughness: int
    ws: int
    strength: int
    weapon: Weapon | None = None
    second_weapon: Weapon | None = None
    points: float | None = None

    @property
    def hit_strength(self) -> int:
        """Strength of this model's hits: the (primary) weapon's, or half its own rounded up bare-handed."""
        return self.weapon.strength if self.weapon is not None else -(-self.strength // 2)

    @property
    def hit_damage(self) -> int:
        """Damage per failed check: the (primary) weapon's, or 1 bare-handed."""
        return self.weapon.damage if self.weapon is not None else 1

    @property
    def identical_pair(self) -> bool:
        """Two identical melee weapons ("+1A")."""
        return self.weapon is not None and self.weapon.same_as(self.second_weapon)

    @property
    def abilities(self) -> tuple[str, ...]:
        """Abilities in use: both weapons' when they differ (the primary's otherwise)."""
        out: list[str] = []
        for w in (self.weapon, self.second_weapon):
            for a in (w.abilities if w is not None else ()):
                if a not in out:
                    out.append(a)
        return tuple(out)


def parse_weapon(value: Any, slot: str, where: Where) -> Weapon | None:
    """Validate one weapon table (``None`` = no weapon in that slot)."""
    if value is None:
        return None
    if isinstance(value, Weapon):
        return value
    if not isinstance(value, Mapping):
        raise where.error(slot, value, "a table { strength = int, damage = int >= 1, abilities = [...] } or none")
    prefixed = tuple(Field(f"{slot}.{f.name}", f.kind, f.doc, lo=f.lo, hi=f.hi, default=f.default)
                     for f in WEAPON_FIELDS)
    values = parse_fields(prefixed, {f"{slot}.{k}": v for k, v in value.items()}, where)
    return Weapon(values[f"{slot}.strength"], values[f"{slot}.damage"], tuple(values[f"{slot}.abilities"]))


def parse_duel_unit(mapping: Mapping[str, Any], where: Where, *, from_text: bool = False) -> DuelUnit:
    """Validate a unit mapping (TOML table, API dict, or a CSV row already regrouped)."""
    values = parse_fields(UNIT_FIELDS, mapping, where, from_text=from_text)
    for slot in WEAPON_SLOTS:
        values[slot] = parse_weapon(values[slot], slot, where)
    if values["second_weapon"] is not None and values["weapon"] is None:
        raise where.error("second_weapon", values["second_weapon"].to_dict(),
                          "a weapon in the first slot too (a second weapon needs a `weapon`)")
    return DuelUnit(**values)


def unit_to_dict(unit: DuelUnit) -> dict[str, Any]:
    """Plain values, weapons as tables: the inverse of :func:`parse_duel_unit`."""
    out = {f.name: getattr(unit, f.name) for f in UNIT_FIELDS}
    for slot in WEAPON_SLOTS:
        out[slot] = out[slot].to_dict() if out[slot] is not None else None
    return out


def unit_row(unit: DuelUnit) -> dict[str, Any]:
    """One flat display row, with the CSV column names for the weapons."""
    row: dict[str, Any] = {f.name: getattr(unit, f.name) for f in UNIT_FIELDS if f.name not in WEAPON_SLOTS}
    for slot in WEAPON_SLOTS:
        w = getattr(unit, slot)
        row[f"{slot}_strength"] = w.strength if w else None
        row[f"{slot}_damage"] = w.damage if w else None
        row[f"{slot}_abilities"] = ";".join(w.abilities) if w else None
    row["hit_strength"] = unit.hit_strength
    row["hit_damage"] = unit.hit_damage
    return row


def _split_abilities(text: str) -> list[str]:
    sep = ";" if ";" in text else ","
    return [p.strip() for p in text.split(sep) if p.strip()]


def rows_to_mappings(row: Mapping[str, Any], where: Where) -> dict[str, Any]:
    """Regroup a CSV row's flat ``weapon_*`` / ``second_weapon_*`` cells into weapon tables.

    Cells stay text; they are validated (and named in errors) as ``weapon.strength`` etc.
    """
    out: dict[str, Any] = {}
    parts: dict[str, dict[str, Any]] = {slot: {} for slot in WEAPON_SLOTS}
    for key, raw in row.items():
        key = (key or "").strip()
        slot = next((s for s in ("second_weapon", "weapon") if key.startswith(s + "_") or key.startswith(s + ".")),
                    None)
        if slot is None:
            out[key] = raw
            continue
        part = key[len(slot) + 1:]
        if part not in ("strength", "damage", "abilities"):
            raise where.error(key, raw, f"a weapon column ({slot}_strength, {slot}_damage, {slot}_abilities)")
        text = "" if raw is None else str(raw).strip()
        if text.lower() in ("", "none", "-"):
            continue
        parts[slot][part] = _split_abilities(text) if part == "abilities" else _int_cell(f"{slot}.{part}", text)
    for slot in WEAPON_SLOTS:
        if slot in out and parts[slot]:
            raise where.error(slot, out[slot], f"either a {slot} column or {slot}_* columns, not both")
        if parts[slot]:
            out[slot] = parts[slot]
        elif slot in out and str(out[slot]).strip().lower() in ("", "none", "-"):
            out[slot] = None
    return out


def _int_cell(name: str, text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text  # reported by the weapon field check with what was expected


def apply_overrides(unit: DuelUnit, overrides: Mapping[str, Any], where: Where, *, from_text: bool) -> DuelUnit:
    """A copy of ``unit`` with fields changed: plain fields, ``weapon.strength`` / ``weapon_strength``, ``weapon``."""
    values = unit_to_dict(unit)
    by_name = {f.name: f for f in UNIT_FIELDS}
    known = sorted([k for k in by_name if k != "name"] +
                   [f"{s}.{p}" for s in WEAPON_SLOTS for p in ("strength", "damage", "abilities")])
    for key, raw in overrides.items():
        if not isinstance(key, str):
            raise where.error(repr(key), raw, "a field name (a string)")
        slot = next((s for s in ("second_weapon", "weapon") if key.startswith(s + "_") or key.startswith(s + ".")),
                    None)
        if slot is not None:
            part = key[len(slot) + 1:]
            if part not in ("strength", "damage", "abilities"):
                raise where.error(key, raw, f"a unit field of duel ({', '.join(known)})")
            table = dict(values[slot] or {})
            if from_text and isinstance(raw, str):
                raw = _split_abilities(raw) if part == "abilities" else _int_cell(f"{slot}.{part}", raw)
            table[part] = raw
            values[slot] = table
            continue
        if key not in by_name or key == "name":
            raise where.error(key, raw, f"a unit field or state of duel ({', '.join(known)})")
        values[key] = by_name[key].parse_text(raw, where) if from_text and isinstance(raw, str) else raw
    # ``weapon=none`` disarms the model: without a first weapon a second one is not allowed, so
    # it goes too, unless the same overrides give a second weapon (then the unit is refused).
    if "weapon" in overrides and values["weapon"] is None and not any(k.startswith("second_weapon") for k in overrides):
        values["second_weapon"] = None
    return parse_duel_unit(values, where)
