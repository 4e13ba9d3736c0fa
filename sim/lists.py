"""Army lists: a side made of several unit types, priced as the sum of its units.

A roster may hold ``[[list]]`` tables besides its units::

    [[list]]
    name = "Reikland sword band"
    units = { "Mercenary Captain" = 1, "Champion" = 2, "Mercenary Warrior" = 3 }

An :class:`ArmyList` names roster units and how many of each (a unit whose own
``count`` is 3 fields 3 models per copy); its points are the sum of its units'
points. :func:`sim.fight` and :func:`sim.build_matchup` take a list's name, an
:class:`ArmyList`, or a mapping ``{unit name: count}`` for either side.

How a list is fielded (:func:`field_list`): every unit's copies in listed order
(:meth:`~sim.ruleset.Ruleset.copies`), then the ruleset's
:meth:`~sim.ruleset.Ruleset.mixed_side`. A list whose units all share one fighting
profile is exactly that many copies of it (the same plan, so the same results seed
for seed as today's copies); any other list is a :class:`MixedSide`, which only the
rulesets with group rules for several profiles accept (``warband`` and ``duel``,
whose ``Ruleset.fields_lists`` is true). The others refuse a list in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import MatchupError, Where, shown

__all__ = ["ArmyList", "MixedSide", "list_from_mapping", "parse_list_tables", "check_list", "field_list",
           "composition_name", "side_limit", "list_points", "list_models"]

#: Keys a ``[[list]]`` table may hold.
LIST_KEYS = ("name", "units")


@dataclass(frozen=True)
class ArmyList:
    """A named list of roster units: ``(unit name, count)`` in listed order.

    Attributes
    ----------
    name : str
    units : tuple of (str, int)
        Unit names (each once) and how many of each, in the order the list gives them:
        the order the side's models are lined up in (the rulesets' pairing rules read it).
    """

    name: str
    units: tuple[tuple[str, int], ...]

    @property
    def counts(self) -> dict[str, int]:
        """``{unit name: count}`` in listed order."""
        return dict(self.units)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "units": self.counts}

    def units_text(self) -> str:
        """``"1 Mercenary Captain, 2 Champion"``: the composition in words."""
        return ", ".join(f"{k} {n}" for n, k in self.units)


@dataclass(frozen=True)
class MixedSide:
    """A list as it fights: each unit's fielded group (its copies combined) in listed order.

    Attributes
    ----------
    name : str
        The list's name (results are reported under it).
    groups : tuple
        The ruleset's unit profiles, one per unit of the list, ``count`` already multiplied
        by the list's count of that unit.
    points : float or None
        The list's points (None when a unit has no points).
    """

    name: str
    groups: tuple[Any, ...]
    points: float | None = None

    @property
    def count(self) -> int:
        """Models on the side."""
        return sum(int(getattr(g, "count", 1)) for g in self.groups)


def composition_name(units: Mapping[str, int] | tuple[tuple[str, int], ...]) -> str:
    """The name a list given as a mapping gets: ``"1 Mercenary Captain + 2 Champion"``."""
    items = units.items() if isinstance(units, Mapping) else units
    return " + ".join(f"{k} {n}" for n, k in items)


def side_limit(rs: Any) -> int | None:
    """Most models a side of ``rs`` can field (its unit field ``count``'s upper bound), or None."""
    for f in getattr(rs, "unit_fields", ()):
        if f.name == "count" and f.hi is not None:
            return int(f.hi)
    return None


def list_models(lst: ArmyList, units: Mapping[str, Any]) -> int:
    """Models the list fields: each unit's own ``count`` times the list's count of it."""
    return sum(int(getattr(units[n], "count", 1)) * k for n, k in lst.units)


def list_points(lst: ArmyList, units: Mapping[str, Any]) -> float | None:
    """The sum of the list's units' points (None when one of them has no points)."""
    total = 0.0
    for n, k in lst.units:
        p = getattr(units[n], "points", None)
        if p is None:
            return None
        total += float(p) * k
    return total


def _check_count(value: Any, unit: str, where: Where, limit: int | None) -> int:
    expected = f"a whole number of copies 1..{limit}" if limit else "a whole number of copies, at least 1"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (limit and value > limit):
        raise where.error(f"units.{unit}", value, expected)
    return int(value)


def check_list(rs: Any, lst: ArmyList, units: Mapping[str, Any], where: Where) -> ArmyList:
    """Check a list against a roster's units: known names, counts 1..the side limit, models within it.

    Raises
    ------
    InputError
        One line naming the source, the list and what is wrong.
    """
    limit = side_limit(rs)
    if not lst.units:
        raise where.error("units", {}, "at least one unit (an empty list fields nobody)")
    seen = set()
    for name, k in lst.units:
        if name not in units:
            known = ", ".join(units) or "none"
            raise where.error(f"units.{name}", k, f"a unit of the roster ({known})")
        if name in seen:
            raise where.error(f"units.{name}", k, "each unit once in a list")
        seen.add(name)
        _check_count(k, name, where, limit)
    models = list_models(lst, units)
    if limit is not None and models > limit:
        raise where.error("units", lst.counts, f"at most {limit} models on a side ({models} here)")
    return lst


def list_from_mapping(rs: Any, mapping: Mapping[str, Any], units: Mapping[str, Any], *, name: str | None = None,
                      where: Where | None = None) -> ArmyList:
    """An :class:`ArmyList` from ``{unit name: count}`` (the API's form), checked against ``units``."""
    where = where or Where("list", name)
    if not isinstance(mapping, Mapping):
        raise where.error("units", mapping, "a table of unit name = count")
    for key in mapping:
        if not isinstance(key, str):
            raise where.error("units", dict(mapping), "unit names (strings) as keys")
    entries = tuple((k, v) for k, v in mapping.items())
    for n, v in entries:
        _check_count(v, n, where, side_limit(rs))
    lst = ArmyList(name if name is not None else composition_name(entries), tuple((n, int(v)) for n, v in entries))
    return check_list(rs, lst, units, where)


def parse_list_tables(rs: Any, raw: Any, units: Mapping[str, Any], where: Where) -> dict[str, ArmyList]:
    """The ``[[list]]`` tables of a roster, validated: ``{name: ArmyList}`` in file order.

    Refused in one line: a ruleset without mixed sides, a table that is not ``{name, units}``,
    an empty or missing name, a name used twice (or by a unit), an empty list, an unknown unit,
    a count that is not 1..the side limit, more models than a side can field.
    """
    if not getattr(rs, "fields_lists", False):
        raise where.error("list", "[[list]]", f"no army lists: {rs.id} {rs.lists_refusal}")
    if not isinstance(raw, list) or not all(isinstance(t, Mapping) for t in raw):
        raise where.error("list", raw, "an array of tables ([[list]] with name and units)")
    out: dict[str, ArmyList] = {}
    for i, table in enumerate(raw, start=1):
        name = table.get("name")
        label = name.strip() if isinstance(name, str) and name.strip() else f"#{i}"
        at = Where(where.source, None)
        for key in table:
            if key not in LIST_KEYS:
                raise at.error(f"list {label!r}: {key}", table[key], "a key of a [[list]] table (name, units)")
        if not isinstance(name, str) or not name.strip():
            raise at.error(f"list #{i}: name", name, "a non-empty list name")
        if name != name.strip():
            raise at.error(f"list {label!r}: name", name, "a name without leading or trailing spaces")
        if name in out:
            raise at.error(f"list {label!r}: name", name, "a list name used once in the roster (duplicate)")
        if name in units:
            raise at.error(f"list {label!r}: name", name, "a name that is not also a unit's")
        if "units" not in table:
            raise at.error(f"list {label!r}: units", None, "a table of unit name = count (the key is required)")
        out[name] = list_from_mapping(rs, table["units"], units, name=name, where=Where(where.source, f"list {name}"))
    return out


def field_list(rs: Any, lst: ArmyList, units: Mapping[str, Any], budget: float | None = None) -> Any:
    """The side ``lst`` fields in ``rs``: its units' copies, combined by ``rs.mixed_side``.

    Raises
    ------
    MatchupError
        The ruleset has no mixed sides and the list holds more than one profile, or the list
        costs more than ``budget``.
    """
    if budget is not None:
        points = list_points(lst, units)
        if points is None:
            raise MatchupError(f"list {shown(lst.name)}: a unit has no points, so it cannot be checked against "
                               f"the budget of {budget:g}")
        if points > budget * (1 + 1e-9):
            raise MatchupError(f"list {shown(lst.name)} costs {points:g} points, more than the budget of {budget:g}")
    groups = [rs.copies(units[n], k) for n, k in lst.units]
    return rs.mixed_side(lst.name, groups, list_points(lst, units))

