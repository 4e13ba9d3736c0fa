"""``grimdark`` squads: model groups, their schema, TOML/CSV parsing and ``--set`` overrides.

A squad is an ordered tuple of :class:`ModelGroup` (the models of a group share a
profile). The list order is the casualty order (spec: engaged models first, then
the rest, groups in listed order) and the order in which a step's wounds are
applied. Two ways to write a squad in TOML::

    [[unit]]                      # homogeneous shorthand
    name = "Troopers"
    models = 10
    ws = 3
    ...

    [[unit]]                      # mixed squad: groups in casualty order
    name = "Assault squad"
    [[unit.models]]
    count = 4
    ws = 4
    ...
    [[unit.models]]
    name = "Sergeant"             # optional group label
    count = 1
    weapon = "power_fist"
    ...

In CSV there is one row per group and a ``unit`` column naming the squad; rows
with the same ``unit`` form one squad, in file order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from ...errors import InputError, Where
from ...schema import Field, parse_fields, points_field

__all__ = [
    "ModelGroup", "Squad", "WEAPONS", "PROFILE_FIELDS", "GROUP_FIELDS", "UNIT_FIELDS",
    "parse_squad", "squads_from_rows", "squad_rows", "squad_to_dict", "squad_with_overrides",
]

WEAPONS = ("ccw", "power_weapon", "power_fist")


@dataclass(frozen=True, slots=True)
class ModelGroup:
    """Models of one profile inside a squad (spec table, one row per group)."""

    count: int
    ws: int
    s: int
    t: int
    i: int
    w: int
    a: int
    save: int | None = None
    invuln: int | None = None
    weapon: str = "ccw"
    two_weapons: bool = False
    frag_grenades: bool = False
    monster: bool = False
    infantry: bool = True
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Squad:
    """A grimdark unit: named, optionally costed, one or more model groups in casualty order."""

    name: str
    groups: tuple[ModelGroup, ...]
    points: float | None = None

    @property
    def models(self) -> int:
        """Number of models in the squad."""
        return sum(g.count for g in self.groups)

    @property
    def wounds(self) -> int:
        """Total wounds of the squad."""
        return sum(g.count * g.w for g in self.groups)


#: The profile of a group (spec table), shared by groups and the homogeneous shorthand.
PROFILE_FIELDS = (
    Field("ws", "int", "weapon skill", lo=1, hi=10),
    Field("s", "int", "strength", lo=1, hi=10),
    Field("t", "int", "toughness", lo=1, hi=10),
    Field("i", "int", "initiative", lo=1, hi=10),
    Field("w", "int", "wounds per model", lo=1, hi=10),
    Field("a", "int", "attacks per model", lo=1, hi=10),
    Field("save", "int", "armour save X+ (none: no armour)", lo=2, hi=6, default=None, optional=True),
    Field("invuln", "int", "invulnerable save X+, usable against attacks ignoring armour", lo=2, hi=6,
          default=None, optional=True),
    Field("weapon", "choice", "close-combat weapon", choices=WEAPONS, default="ccw"),
    Field("two_weapons", "bool", "a weapon or pistol in each hand: +1 A in base contact", default=False),
    Field("frag_grenades", "bool", "strikes with the cover step against infantry in cover", default=False),
    Field("monster", "bool", "its attacks ignore armour saves", default=False),
    Field("infantry", "bool", "infantry (for frag grenades)", default=True),
)
#: Fields of one ``[[unit.models]]`` table or one CSV row (besides ``unit`` and ``points``).
GROUP_FIELDS = (
    Field("count", "int", "models in the group", lo=1, hi=100),
    *PROFILE_FIELDS,
    Field("name", "str", "optional group label (e.g. Sergeant)", default=None, optional=True),
)
#: Fields of a ``[[unit]]`` table in the homogeneous shorthand (``models = N``).
UNIT_FIELDS = (
    Field("name", "str", "unit name"),
    points_field("points cost of the squad"),
    Field("models", "int", "models in a homogeneous squad (or [[unit.models]] tables for groups)", lo=1, hi=100),
    *PROFILE_FIELDS,
)
_PROFILE_NAMES = tuple(f.name for f in PROFILE_FIELDS)


def _group(values: Mapping[str, Any]) -> ModelGroup:
    return ModelGroup(**{k: values[k] for k in ("count", *_PROFILE_NAMES, "name") if k in values})


def parse_squad(mapping: Mapping[str, Any], where: Where, *, from_text: bool = False) -> Squad:
    """A squad from a ``[[unit]]`` mapping: shorthand (``models = N``) or ``models`` = list of group tables."""
    groups_raw = mapping.get("models")
    if isinstance(groups_raw, list):
        head = parse_fields(UNIT_FIELDS[:2], {k: v for k, v in mapping.items() if k != "models"}, where,
                            from_text=from_text)
        if not groups_raw:
            raise where.error("models", groups_raw, "an integer 1..100 or at least one [[unit.models]] table")
        groups = []
        for k, raw in enumerate(groups_raw, start=1):
            if not isinstance(raw, Mapping):
                raise where.error(f"models[{k}]", raw, "a table of group fields ([[unit.models]])")
            sub = Where(where.source, f"{where.unit} group {k}" if where.unit is not None else f"group {k}")
            if "models" in raw and "count" not in raw:
                raise sub.error("models", raw["models"], "the field 'count' inside a [[unit.models]] group")
            groups.append(_group(parse_fields(GROUP_FIELDS, raw, sub, from_text=from_text)))
        return Squad(head["name"], tuple(groups), head["points"])
    values = parse_fields(UNIT_FIELDS, mapping, where, from_text=from_text)
    values["count"] = values.pop("models")
    return Squad(values["name"], (_group(values),), values["points"])


def squads_from_rows(rows: list[Mapping[str, str]], where: Where) -> list[Squad]:
    """Squads from CSV rows: one row per group, the ``unit`` column names the squad.

    Rows with the same ``unit`` form one squad, groups in file order. ``points``
    is the squad's cost: give it on one row (or repeat the same value). Without a
    ``unit`` column (or with an empty cell) a row is a homogeneous squad named by
    ``name`` with ``count`` (or ``models``) models.
    """
    order: list[str] = []
    by_unit: dict[str, list[Mapping[str, str]]] = {}
    for row in rows:
        unit = (row.get("unit") or "").strip()
        if not unit:
            unit = (row.get("name") or "").strip()
            row = {k: v for k, v in row.items() if k not in ("unit", "name")}
            if not unit:
                raise where.error("unit", "", "a squad name in the unit column (or name, for one-row squads)")
        if unit not in by_unit:
            order.append(unit)
            by_unit[unit] = []
        by_unit[unit].append(row)
    squads = []
    for unit in order:
        uw = where.at(unit)
        points_cells = {(r.get("points") or "").strip() for r in by_unit[unit]} - {""}
        if len(points_cells) > 1:
            raise uw.error("points", sorted(points_cells), "one points value per squad (on one row, or the same on every row)")
        points = parse_fields(UNIT_FIELDS[1:2], {"points": points_cells.pop()} if points_cells else {}, uw,
                              from_text=True)["points"]
        groups = []
        for k, row in enumerate(by_unit[unit], start=1):
            cells = {key: v for key, v in row.items() if key not in ("unit", "points")}
            if "models" in cells:
                if (cells.get("count") or "").strip() and (cells["models"] or "").strip():
                    raise uw.error("models", cells["models"], "either count or models, not both")
                models = cells.pop("models")
                if (models or "").strip():
                    cells["count"] = models
            gw = Where(where.source, f"{unit} group {k}" if len(by_unit[unit]) > 1 else unit)
            groups.append(_group(parse_fields(GROUP_FIELDS, cells, gw, from_text=True)))
        squads.append(Squad(unit, tuple(groups), points))
    return squads


def squad_to_dict(squad: Squad) -> dict[str, Any]:
    """The squad as a ``[[unit]]`` mapping with ``models`` = group tables (inverse of :func:`parse_squad`)."""
    groups = []
    for g in squad.groups:
        d = {k: v for k, v in asdict(g).items() if v is not None}
        groups.append(d)
    out: dict[str, Any] = {"name": squad.name}
    if squad.points is not None:
        out["points"] = squad.points
    out["models"] = groups
    return out


def squad_rows(squad: Squad) -> list[dict[str, Any]]:
    """One display row per group: squad name, points (first row), group label, count and profile."""
    rows = []
    for k, g in enumerate(squad.groups):
        row: dict[str, Any] = {"name": squad.name, "points": squad.points if k == 0 else None,
                               "group": g.name or ("" if len(squad.groups) == 1 else f"group {k + 1}"),
                               "count": g.count}
        row.update({f: getattr(g, f) for f in _PROFILE_NAMES})
        rows.append(row)
    return rows


def squad_with_overrides(squad: Squad, overrides: Mapping[str, Any], where: Where, *, from_text: bool = False) -> Squad:
    """``--set`` changes of unit fields.

    ``ws=5`` (any profile field) changes every group of the squad; ``2.ws=5``
    changes group 2 only (groups numbered from 1 in listed order); ``points``
    changes the squad's cost; ``models=N`` (or ``count=N``) sets the size of a
    homogeneous squad, ``2.count=N`` the size of group 2.
    """
    if not overrides:
        return squad
    by_name = {f.name: f for f in GROUP_FIELDS}
    groups = list(squad.groups)
    points = squad.points
    known = "points, models, " + ", ".join(_PROFILE_NAMES) + ", or N.field for group N"

    def parse(f: Field, raw: Any, key: str) -> Any:
        try:
            return f.parse_text(raw, where) if from_text and isinstance(raw, str) else f.parse(raw, where)
        except InputError:
            raise where.error(key, raw, f.expected) from None

    for key, raw in overrides.items():
        if not isinstance(key, str):
            raise where.error(repr(key), raw, "a field name (a string)")
        head, _, rest = key.partition(".")
        if rest:
            if not head.isdigit() or not 1 <= int(head) <= len(groups):
                raise where.error(key, raw, f"a group number 1..{len(groups)} before the dot")
            targets, name = [int(head) - 1], rest
        else:
            targets, name = list(range(len(groups))), key
        if name == "points" and not rest:
            points = parse(UNIT_FIELDS[1], raw, key)
            continue
        if name in ("models", "count"):
            if len(targets) > 1:
                raise where.error(key, raw, f"a size for a homogeneous squad ({squad.name!r} has {len(groups)} "
                                            f"groups: use N.count for group N)")
            name = "count"
        if name not in by_name or name == "name":
            raise where.error(key, raw, f"a unit field of grimdark ({known})")
        value = parse(by_name[name], raw, key)
        for k in targets:
            groups[k] = replace(groups[k], **{name: value})
    return Squad(squad.name, tuple(groups), points)
