"""Typed fields: the schema of units, states and options, with strict validation.

A :class:`Field` knows its type and range, parses a value (from TOML/JSON/API, or
from text for CSV cells and ``--set``) and, when the value is wrong, raises an
:class:`~sim.errors.InputError` that says what was expected.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError, Where

__all__ = ["REQUIRED", "MAX_TEXT", "Field", "StateField", "parse_fields", "text_to_value", "points_field",
           "format_character"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Marker default: the field must be given.
REQUIRED: Any = _Required()

#: Longest text of a ``str`` field (unit names, labels): they go into tables and plot labels.
MAX_TEXT = 100
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_NONE = {"", "none", "null", "-"}


@dataclass(frozen=True)
class Field:
    """One field of a unit, state or option.

    Parameters
    ----------
    name : str
        The field name, exactly as in rosters and ``--set``.
    kind : {"int", "number", "bool", "str", "choice", "str_list", "table"}
        Value type. ``table`` values are mappings validated by the ruleset.
    doc : str
        One line for tables and the designer's guide.
    lo, hi : float, optional
        Inclusive range for ``int`` and ``number``.
    choices : tuple of str
        Allowed values for ``choice`` and the items of ``str_list``.
    default : object
        Value when absent; :data:`REQUIRED` makes the field mandatory.
    optional : bool
        ``None`` (absent, or ``none`` in text) is allowed, meaning "has none".
    min_items, max_items : int
        Length bounds for ``str_list``.
    """

    name: str
    kind: str
    doc: str = ""
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    default: Any = REQUIRED
    optional: bool = False
    min_items: int = 0
    max_items: int = 1_000

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def expected(self) -> str:
        """What a valid value looks like, in words."""
        text = {
            "int": "an integer",
            "number": "a number",
            "bool": "true or false",
            "str": "a string",
            "choice": "one of " + ", ".join(self.choices),
            "str_list": "a list of " + ", ".join(self.choices) if self.choices else "a list of strings",
            "table": "a table",
        }[self.kind]
        if self.kind in ("int", "number"):
            if self.lo is not None and self.hi is not None:
                text += f" in {_fmt(self.lo)}..{_fmt(self.hi)}"
            elif self.lo is not None:
                text += f" >= {_fmt(self.lo)}"
            elif self.hi is not None:
                text += f" <= {_fmt(self.hi)}"
        if self.kind == "str_list" and (self.min_items or self.max_items < 1_000):
            text += f" ({self.min_items}..{self.max_items} items)"
        if self.optional:
            text += " or none"
        return text

    def parse(self, value: Any, where: Where = Where()) -> Any:
        """Validate a typed value (TOML, JSON or API) and return it normalised."""
        if value is None:
            if self.optional:
                return None
            raise where.error(self.name, value, self.expected)
        bad = where.error(self.name, value, self.expected)
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, (int,)) and not _is_integral_numpy(value):
                raise bad
            value = int(value)
            self._check_range(value, bad)
        elif self.kind == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float)) and not _is_numpy_number(value):
                raise bad
            value = float(value) if not isinstance(value, int) else value
            if isinstance(value, float) and not math.isfinite(value):
                raise bad
            self._check_range(value, bad)
        elif self.kind == "bool":
            if not isinstance(value, (bool,)) and type(value).__name__ != "bool_":
                raise bad
            value = bool(value)
        elif self.kind == "str":
            if not isinstance(value, str) or not value.strip():
                raise bad
            value = value.strip()
            if len(value) > MAX_TEXT or any(unicodedata.category(c) == "Cc" for c in value):
                raise where.error(self.name, value, f"{self.expected} of at most {MAX_TEXT} characters, "
                                                    "without control characters (tabs, line breaks)")
            invisible = next((c for c in value if unicodedata.category(c) == "Cf"), None)
            if invisible is not None:
                # "AFS" and "AFS\u200b" print alike; a right-to-left override reverses what follows
                raise where.error(self.name, value, f"{self.expected} without invisible format characters "
                                                    f"(it holds {format_character(invisible)})")
            from .names import visible

            if not visible(value).strip():  # only fillers and joiners (U+3164...): a name that shows nothing
                raise where.error(self.name, value, f"{self.expected} that shows something (it holds only "
                                                    f"invisible characters such as {format_character(value[0])})")
        elif self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise bad
        elif self.kind == "str_list":
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise bad
            if not all(isinstance(v, str) for v in value):
                raise bad
            if self.choices and any(v not in self.choices for v in value):
                raise bad
            if not self.min_items <= len(value) <= self.max_items:
                raise bad
            value = tuple(value)
        elif self.kind == "table":
            if not isinstance(value, Mapping):
                raise bad
        else:  # pragma: no cover - a schema bug, not user input
            raise AssertionError(f"unknown field kind {self.kind!r}")
        return value

    def parse_text(self, text: str, where: Where = Where()) -> Any:
        """Parse a value written as text (a CSV cell or the right side of ``--set``)."""
        return self.parse(text_to_value(self, text), where)

    def _check_range(self, value: float, bad: Exception) -> None:
        if self.lo is not None and value < self.lo:
            raise bad
        if self.hi is not None and value > self.hi:
            raise bad


@dataclass(frozen=True)
class StateField:
    """A situational state of one side in one fight (not a unit field).

    Parameters
    ----------
    field : Field
        Type, range and doc of the state.
    sides : tuple of str
        Sides that may have it: ``("attacker",)``, ``("defender",)`` or both.
    defaults : mapping of str to object
        Default per side.
    """

    field: Field
    sides: tuple[str, ...] = ("attacker", "defender")
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.field.name

    def default_for(self, side: str) -> Any:
        return self.defaults.get(side, self.field.default)


def format_character(c: str) -> str:
    """``U+200B ZERO WIDTH SPACE``: a character's code point and name, for a message."""
    return f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"


def text_to_value(f: Field, text: str) -> Any:
    """Turn text into the typed value ``f`` expects; leave it as text when it does not convert.

    Unconvertible text is returned unchanged so that :meth:`Field.parse` reports it
    with the field's expectation.
    """
    t = text.strip()
    if f.optional and t.lower() in _NONE:
        return None
    # ASCII digits only: Python's int() and float() also take "2_0" and other scripts' digits ("٣")
    if f.kind == "int":
        return int(t) if _INT_TEXT.fullmatch(t) else t
    if f.kind == "number":
        if _INT_TEXT.fullmatch(t):
            return int(t)
        return float(t) if _FLOAT_TEXT.fullmatch(t) else t
    if f.kind == "bool":
        if t.lower() in _TRUE:
            return True
        if t.lower() in _FALSE:
            return False
        return t
    if f.kind == "str_list":
        if not t:
            return []
        sep = ";" if ";" in t else ","
        return [p.strip() for p in t.split(sep) if p.strip()]
    return t


def parse_fields(
    fields: Iterable[Field],
    mapping: Mapping[str, Any],
    where: Where,
    *,
    from_text: bool = False,
    extra_allowed: Iterable[str] = (),
) -> dict[str, Any]:
    """Validate ``mapping`` against ``fields``: no unknown, no missing, all typed.

    Parameters
    ----------
    fields : iterable of Field
    mapping : mapping of str to object
    where : Where
        Names the file and unit in errors.
    from_text : bool
        Values are text (CSV cells); empty cells count as absent.
    extra_allowed : iterable of str
        Keys the caller handles itself (they are passed through untouched).

    Returns
    -------
    dict
        Every field, with defaults filled in.
    """
    fields = tuple(fields)
    by_name = {f.name: f for f in fields}
    extra = set(extra_allowed)
    out: dict[str, Any] = {}
    for key in mapping:
        if key not in by_name and key not in extra:
            known = ", ".join(sorted(by_name))
            raise InputError(where.describe(key, f"unknown field (value {mapping[key]!r}; known fields: {known})"))
    for f in fields:
        if f.name in mapping and not (from_text and str(mapping[f.name]).strip() == "" and not f.required):
            raw = mapping[f.name]
            if from_text and isinstance(raw, str):
                out[f.name] = f.parse_text(raw, where)
            else:
                out[f.name] = f.parse(raw, where)
        elif f.required:
            raise where.error(f.name, None, f"{f.expected} (the field is required)")
        else:
            out[f.name] = f.default
    for key in extra & set(mapping):
        out[key] = mapping[key]
    return out


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _is_integral_numpy(value: Any) -> bool:
    import numpy as np

    return isinstance(value, np.integer)


def _is_numpy_number(value: Any) -> bool:
    import numpy as np

    return isinstance(value, (np.integer, np.floating))


def points_field(doc: str = "points cost") -> Field:
    """The ``points`` field every ruleset shares: optional, from ``POINTS_MIN`` to ``POINTS_MAX``.

    Positive (equal-points fights divide a budget by it, and efficiency divides by
    it) and bounded (plots and sums stay finite).
    """
    from .limits import POINTS_MAX, POINTS_MIN

    return Field("points", "number", doc, lo=POINTS_MIN, hi=POINTS_MAX, default=None, optional=True)
