"""Equal-points matchups: each side fields as many whole copies of its unit as a budget buys.

With a budget of ``B`` points a unit costing ``p`` fields ``k = floor(B / p)``
copies (at least one), fighting together as one side; how copies combine is the
ruleset's :meth:`~sim.ruleset.Ruleset.copies` (grimdark repeats a squad's model
groups, warband and duel multiply ``count``, pools merges the blocks of bases;
mecha fights one suit against one suit and refuses). The points actually on the
table, ``k * p``, are the *fielded* points.

``budget`` values
-----------------
``None``
    The roster's own ``budget`` (a top-level key of a TOML roster), else one unit a side.
``"none"``
    One unit a side, whatever the roster says.
a positive number
    That budget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .errors import InputError

__all__ = ["NO_BUDGET", "Budget", "parse_budget", "resolve_budget", "copies_for", "check_copies", "unit_points"]

_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")

#: The text (``--budget none``) and API value that turn a roster's budget off.
NO_BUDGET = "none"

Budget = float | str | None


def parse_budget(value: Any, where: str = "--budget") -> float | str | None:
    """Validate a budget: ``None``, ``"none"`` or a positive finite number (text accepted)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text == NO_BUDGET:
            return NO_BUDGET
        # ASCII digits only: float() would also take "1_000" and other scripts' digits ("٣")
        if not _NUMBER_TEXT.fullmatch(text):
            raise InputError(f"{where}: got {value!r}, expected a number of points or \"none\"")
        value = float(text)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{where}: got {value!r}, expected a number of points or \"none\"")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: got {value:g}, expected a positive number of points")
    return value


def resolve_budget(given: Any, roster_budget: float | None) -> float | None:
    """The budget in force: the one given, else the roster's; ``None`` for one unit a side."""
    b = parse_budget(given)
    if b == NO_BUDGET:
        return None
    return roster_budget if b is None else b


def unit_points(unit: Any) -> float | None:
    """The unit's ``points`` (None when it has none)."""
    p = getattr(unit, "points", None)
    return None if p is None else float(p)


def copies_for(unit: Any, budget: float, where: str = "--budget") -> int:
    """Whole copies of ``unit`` a budget buys: ``floor(budget / points)``, at least one.

    A small tolerance keeps exact multiples exact (``300 / 15`` is 20 copies even
    when the division rounds just below).
    """
    p = unit_points(unit)
    if p is None or not math.isfinite(p) or p <= 0:
        shown = "no points" if p is None else f"points = {p:g}"
        raise InputError(f"{where} {budget:g}: unit {getattr(unit, 'name', '?')!r} has {shown}; "
                         "equal-points fights need a positive points cost for every unit")
    return max(1, math.floor(budget / p + 1e-9))


def check_copies(copies: Mapping[str, Any] | None) -> dict[str, int]:
    """Validate an explicit ``{"attacker": k, "defender": k}`` mapping (missing sides: 1)."""
    out = {"attacker": 1, "defender": 1}
    for side, k in (copies or {}).items():
        if side not in out:
            raise InputError(f"copies: side must be attacker or defender, got {side!r}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"copies: {side} got {k!r}, expected a positive integer")
        out[side] = int(k)
    return out
