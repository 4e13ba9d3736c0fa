"""Setting values as a designer reads them in a report: ``yes``/``no``, ``none``, ``key: value`` lists.

A report's switches, states and unit overrides are Python values (``True``,
``{}``, nested dicts); their ``repr`` (``True``, ``{}``, ``{"attacker": ...}``)
is not for a reader. :func:`value_text` writes them in words. The CSV and JSON
files keep the values themselves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["value_text"]


def value_text(v: Any, empty: str = "none") -> str:
    """``v`` in words: booleans ``yes``/``no``; None, NaN and empty containers ``empty``; a mapping
    ``key: value, key: value`` (nested ones ``side: key value, ...; side: ...``); a sequence its items joined by
    commas; a whole float without its ``.0``; anything else ``str(v)``.

    Examples
    --------
    >>> value_text(True), value_text({}), value_text(None)
    ('yes', 'none', 'none')
    >>> value_text({"attacker": {"engaged": 10, "supporting": 10}, "defender": {"charging": True}})
    'attacker: engaged 10, supporting 10; defender: charging yes'
    >>> value_text(["keen", "parry"]), value_text(2.0)
    ('keen, parry', '2')
    """
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return empty
    if isinstance(v, Mapping):
        if not v:
            return empty
        nested = any(isinstance(x, Mapping) for x in v.values())
        if nested:
            return "; ".join(f"{k}: {value_text(x, empty)}" for k, x in v.items())
        return ", ".join(f"{k} {value_text(x, empty)}" for k, x in v.items()) if _in_side(v) else \
            ", ".join(f"{k}: {value_text(x, empty)}" for k, x in v.items())
    if isinstance(v, (list, tuple, set, frozenset)):
        return ", ".join(value_text(x, empty) for x in v) if v else empty
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _in_side(v: Mapping[Any, Any]) -> bool:
    """Whether a flat mapping reads best as ``key value`` (numbers and flags), not ``key: value`` (texts)."""
    return all(isinstance(x, (bool, int, float)) for x in v.values())
