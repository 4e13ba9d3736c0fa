"""Rosters: units loaded from TOML or CSV and validated against a ruleset's schema.

TOML::

    ruleset = "mecha"
    description = "..."          # optional
    budget = 500                 # optional: equal-points budget (rulesets that field copies)
    [[list]]                     # optional: army lists (rulesets with mixed sides, see sim.lists)
    name = "..."
    units = { "AFS" = 2 }
    [options]                    # optional: ruleset switches
    second_m_destroys = false
    [[unit]]
    name = "AFS"
    defence = 2
    ...

CSV: one row per unit, columns are field names (a ``ruleset`` column is optional
when the caller names the ruleset). Every error names the file, the unit, the
field, the value and what was expected.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .budget import parse_budget
from .errors import InputError, Where, shown
from .files import check_depth, parse_toml, read_input_text
from .limits import MAX_ROSTER_BYTES
from .ruleset import Ruleset
from .rulesets import get_ruleset

__all__ = ["Roster", "load_roster", "default_roster", "roster_from_dict", "check_lookalikes"]


@dataclass(frozen=True)
class Roster:
    """Validated units of one ruleset.

    Attributes
    ----------
    ruleset : str
        Ruleset id.
    units : dict of str to profile
        Units by name, in file order.
    options : dict
        Ruleset options set by the file (``[options]`` and tables such as ``[chart]``).
    source : str
        Where the roster came from.
    description : str
    budget : float or None
        The roster's equal-points budget (top-level ``budget = N``): the default
        ``budget`` of every fight and analysis on this roster (see :mod:`sim.budget`).
    lists : dict of str to ArmyList
        The roster's army lists (``[[list]]`` tables, :mod:`sim.lists`), by name, in file order.
    """

    ruleset: str
    units: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    source: str = "<memory>"
    description: str = ""
    budget: float | None = None
    lists: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.unit(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.units)

    def __len__(self) -> int:
        return len(self.units)

    @property
    def names(self) -> list[str]:
        return list(self.units)

    def unit(self, name: str) -> Any:
        """The unit called ``name``; a one-line error listing the names otherwise."""
        if not isinstance(name, str):
            raise InputError(f"{self.source}: a unit name must be a string, got {type(name).__name__}")
        if name not in self.units:
            raise InputError(f"{self.source}: no unit {name!r} (units: {', '.join(self.units)})")
        return self.units[name]

    def army_list(self, name: str) -> Any:
        """The army list called ``name``; a one-line error listing the lists otherwise."""
        if not isinstance(name, str):
            raise InputError(f"{self.source}: a list name must be a string, got {type(name).__name__}")
        if name not in self.lists:
            known = ", ".join(self.lists) or "none"
            raise InputError(f"{self.source}: no list {name!r} (lists: {known})")
        return self.lists[name]

    def side(self, name: str) -> Any:
        """The unit or, failing that, the army list called ``name`` (one line naming both otherwise)."""
        if isinstance(name, str) and name not in self.units and name in self.lists:
            return self.lists[name]
        if isinstance(name, str) and name not in self.units and self.lists:
            raise InputError(f"{self.source}: no unit or list {name!r} (units: {', '.join(self.units)}; "
                             f"lists: {', '.join(self.lists)})")
        return self.unit(name)

    def with_lists(self, lists: dict[str, Any]) -> "Roster":
        """A copy holding ``lists``: name -> :class:`sim.lists.ArmyList` of this roster's units (parsed from a
        file by :func:`sim.lists.parse_list_tables`)."""
        from .lists import ArmyList

        if not isinstance(lists, dict) or not all(isinstance(k, str) and isinstance(v, ArmyList) and k == v.name
                                                   for k, v in lists.items()):
            raise InputError(f"lists: got {shown(lists)}, expected a dict of list name -> ArmyList")
        for lst in lists.values():
            unknown = [u for u, _ in lst.units if u not in self.units]
            if unknown:
                raise InputError(f"lists: list {lst.name!r} names {unknown[0]!r}, not a unit of {self.source}")
        return Roster(self.ruleset, self.units, self.options, self.source, self.description, self.budget, dict(lists))

    def subset(self, names: list[str]) -> "Roster":
        """The roster restricted to ``names``, in that order (keeping the lists whose units all remain)."""
        if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)) or \
                not all(isinstance(n, str) for n in names):
            raise InputError(f"names: got {shown(names)}, expected a list of unit names")
        kept = {n: lst for n, lst in self.lists.items() if all(u in names for u, _ in lst.units)}
        return Roster(self.ruleset, {n: self.unit(n) for n in names}, self.options, self.source, self.description,
                      self.budget, kept)

    def with_unit(self, unit: Any) -> "Roster":
        """A copy with ``unit`` added (or replacing the unit of the same name); a name that looks like another
        unit's is refused (:func:`check_lookalikes`)."""
        from .rulesets import get_ruleset

        kind = get_ruleset(self.ruleset).unit_type
        if not isinstance(unit, kind):
            raise InputError(f"unit: got {shown(unit)}, expected a {self.ruleset} unit ({kind.__name__})")
        check_lookalikes([n for n in self.units if n != unit.name] + [unit.name], Where(self.source))
        if unit.name in self.lists:
            raise Where(self.source).at(unit.name).error("name", unit.name, "a name that is not also a list's")
        units = dict(self.units)
        units[unit.name] = unit
        return Roster(self.ruleset, units, self.options, self.source, self.description, self.budget, self.lists)

    def with_budget(self, budget: float | None) -> "Roster":
        """A copy with another default budget (None: one unit a side)."""
        given = parse_budget(budget, "budget")
        return Roster(self.ruleset, self.units, self.options, self.source, self.description,
                      None if given in (None, "none") else float(given), self.lists)


def load_roster(path: str | Path, ruleset: str | Ruleset | None = None) -> Roster:
    """Load and validate a roster file.

    Parameters
    ----------
    path : str or pathlib.Path
        A ``.toml`` or ``.csv`` file.
    ruleset : str or Ruleset, optional
        Expected ruleset (id or instance). Required for a CSV without a ``ruleset`` column;
        for TOML, a mismatch with the file's ``ruleset`` key is an error.

    Returns
    -------
    Roster

    Raises
    ------
    sim.errors.InputError
        One line naming the file, unit, field, value and what was expected.
    """
    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise InputError(f"path: got {shown(path)}, expected a roster file path (str or pathlib.Path)")
    p = Path(path)
    where = Where(str(path))
    # a regular file of bounded size only (no /dev/zero, no FIFO): see sim.files and the limits in sim.limits
    text = read_input_text(path, "roster file", MAX_ROSTER_BYTES)
    suffix = p.suffix.lower()
    if suffix == ".toml":
        return roster_from_dict(parse_toml(text, str(path), "roster"), source=str(path), ruleset=ruleset)
    if suffix == ".csv":
        return _roster_from_csv(text, where, ruleset)
    raise InputError(f"{path}: unknown roster format {suffix or '(no suffix)'!r}, expected .toml or .csv")


def roster_from_dict(data: Mapping[str, Any], *, source: str = "<memory>",
                     ruleset: str | Ruleset | None = None) -> Roster:
    """Build a roster from the mapping a TOML file parses to (see :func:`load_roster`)."""
    if not isinstance(source, str) or not source.strip():
        raise InputError(f"source: got {shown(source)}, expected text naming where the roster comes from")
    where = Where(source)
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: got {type(data).__name__}, expected a mapping (the tables of a TOML roster)")
    check_depth(data, source, "roster")  # before any message could repr a value nested thousands deep
    if "ruleset" not in data:
        raise where.error("ruleset", None, 'the ruleset id, e.g. ruleset = "mecha" (the key is required)')
    rs = _ruleset_of(data.get("ruleset"), ruleset, where)
    allowed = {"ruleset", "unit", "options", "description", "title", "budget", "list"} | set(rs.roster_tables)
    for key in data:
        if key not in allowed:
            raise where.error(key, data[key], f"a top-level key of a {rs.id} roster ({', '.join(sorted(allowed))})")
    raw_units = data.get("unit", [])
    if not isinstance(raw_units, list) or not all(isinstance(u, Mapping) for u in raw_units):
        raise where.error("unit", raw_units, "an array of tables ([[unit]])")
    options_in: dict[str, Any] = {}
    raw_options = data.get("options", {})
    if not isinstance(raw_options, Mapping):
        raise where.error("options", raw_options, "a table ([options])")
    options_in.update(raw_options)
    for name in rs.roster_tables:
        if name in data:
            options_in.update(rs.parse_roster_table(name, data[name], where))
    try:
        options = rs.resolve_options(options_in) if options_in else {}
    except InputError as e:
        raise InputError(f"{source}: {e}") from None
    units = []
    for i, raw in enumerate(raw_units, start=1):
        raw = dict(raw)
        name = raw.get("name")
        label = name.strip() if isinstance(name, str) and name.strip() else f"#{i}"
        units.append(rs.parse_unit(raw, where.at(label)))
    description = data.get("description", data.get("title", ""))
    if not isinstance(description, str):
        raise where.error("description", description, "a string")
    budget = None
    if "budget" in data:
        if not rs.fields_copies:
            raise where.error("budget", data["budget"], f"no budget: {rs.id} cannot field copies ({rs.copies_refusal})")
        budget = parse_budget(data["budget"], f"{source}: field 'budget'")
        if not isinstance(budget, float):
            raise where.error("budget", data["budget"], "a positive number of points")
    roster = _finish(rs, units, options, where, description=description).with_budget(budget)
    if "list" in data:
        from .lists import parse_list_tables

        lists = parse_list_tables(rs, data["list"], roster.units, where)
        check_lookalikes(list(roster.units) + list(lists), where)
        roster = roster.with_lists(lists)
    return roster


def _roster_from_csv(text: str, where: Where, ruleset: str | Ruleset | None) -> Roster:
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames
        if header is not None:
            seen: set[str] = set()
            for column in header:
                if column in seen:
                    raise InputError(f"{where.source}: line 1: column {column!r} appears twice in the header")
                seen.add(column)
        rows = [dict(r) for r in reader]
    except csv.Error as e:
        why = str(e)
        if "field limit" in why:
            why = f"a cell is longer than {csv.field_size_limit():,} characters"
        # the error comes while reading the next line, before the reader counts it
        raise InputError(f"{where.source}: line {reader.line_num + 1}: not valid CSV ({why})") from None
    if reader.fieldnames is None:
        raise InputError(f"{where.source}: empty CSV roster (expected a header row of field names)")
    for i, r in enumerate(rows, start=2):
        if None in r:
            raise InputError(f"{where.source}: line {i}: more cells than header columns")
    declared = {(r.pop("ruleset", None) or "").strip() for r in rows} - {""}
    if len(declared) > 1:
        raise where.error("ruleset", sorted(declared), "one ruleset for the whole file")
    rs = _ruleset_of(declared.pop() if declared else None, ruleset, where)
    units = rs.units_from_rows(rows, where)
    return _finish(rs, units, {}, where)


def _ruleset_of(declared: Any, expected: str | Ruleset | None, where: Where) -> Ruleset:
    if declared is None:
        if expected is None:
            raise where.error("ruleset", None, "the ruleset id (a `ruleset = \"...\"` key, or name the ruleset)")
        return get_ruleset(expected)
    if not isinstance(declared, str):
        raise where.error("ruleset", declared, "a ruleset id string")
    if isinstance(expected, Ruleset) and declared == expected.id:
        return expected  # the ruleset itself, registered or not (a plugin under test)
    try:
        rs = get_ruleset(declared)
    except InputError as e:
        raise InputError(f"{where.source}: {e}") from None
    if expected is not None and get_ruleset(expected).id != rs.id:
        raise where.error("ruleset", declared, f"a {get_ruleset(expected).id} roster (this file is for {declared})")
    return rs


def _finish(rs: Ruleset, units: list[Any], options: dict[str, Any], where: Where, description: str = "") -> Roster:
    by_name: dict[str, Any] = {}
    for u in units:
        if u.name in by_name:
            raise where.at(u.name).error("name", u.name, "a unit name used once in the roster (duplicate)")
        by_name[u.name] = u
    check_lookalikes(list(by_name), where)
    rs.check_roster(units, options or rs.resolve_options(), where)
    return Roster(rs.id, by_name, options, where.source or "<memory>", description)


def check_lookalikes(names: list[str], where: Where) -> None:
    """Refuse a name that looks like an earlier one (:func:`sim.names.lookalike`: the same once invisible
    characters are removed, in NFKC form, or by its confusable skeleton): two rows a reader cannot tell apart."""
    from .names import lookalike, skeleton

    seen: dict[str, str] = {}
    for name in names:
        key = skeleton(name)
        other = seen.get(key)
        if other is not None and other != name:
            raise where.at(name).error("name", name, f"a unit name that does not look like another unit's ({name!a} "
                                                     f"and {other!a} print alike: {lookalike(name, other)})")
        seen.setdefault(key, name)


def default_roster(ruleset: str | Ruleset) -> Roster:
    """The example roster shipped for ``ruleset`` (see :meth:`~sim.ruleset.Ruleset.default_roster_file`)."""
    rs = get_ruleset(ruleset)
    res = rs.default_roster_file()
    if res is None:
        raise InputError(f"ruleset {rs.id!r} ships no default roster (give one with --roster)")
    data = parse_toml(res.read_text(encoding="utf-8"), f"default {rs.id} roster", "roster")
    return roster_from_dict(data, source=f"default {rs.id} roster", ruleset=rs)
