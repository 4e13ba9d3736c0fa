"""Values to try for a field: valid ones (written as ``--set`` text) and ones the schema must refuse."""

from __future__ import annotations

import math
from typing import Any

from ..schema import Field

__all__ = ["to_text", "valid_values", "invalid_texts"]


def to_text(value: Any) -> str:
    """How a person writes ``value`` on the right of ``--set KEY=VALUE``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else repr(value)
    return str(value)


def valid_values(f: Field, default: Any) -> list[Any]:
    """Representative valid values: both booleans, every choice, the ends and a middle of a range.

    ``str`` fields try their default only (any text may be valid, or none but
    a few); ``table`` fields are not settable as text and give nothing.
    """
    out: list[Any] = []
    if f.kind == "bool":
        out = [False, True]
    elif f.kind == "choice":
        out = list(f.choices)
    elif f.kind in ("int", "number"):
        lo = f.lo if f.lo is not None else (default if isinstance(default, (int, float)) else 0) - 2
        hi = f.hi if f.hi is not None else (default if isinstance(default, (int, float)) else 0) + 2
        if f.kind == "int":
            lo, hi = math.ceil(lo), math.floor(hi)
            out = [lo, min(lo + 1, hi), hi]
        else:
            out = [lo, (lo + hi) / 2, hi]
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            out.append(default)
    elif f.kind == "str_list":
        out = [tuple(f.choices[: max(f.min_items, 1)])] if f.choices else []
        if f.min_items == 0:
            out.append(())
    elif f.kind == "str" and isinstance(default, str):
        out = [default]
    if f.optional:
        out.append(None)
    seen: list[Any] = []
    for v in out:
        if not any(v == s and type(v) is type(s) for s in seen):
            seen.append(v)
    return seen


def invalid_texts(f: Field) -> list[str]:
    """``--set`` texts the field's schema refuses, whatever the ruleset."""
    out: list[str] = []
    if f.kind == "int":
        out = ["abc", "1.5"]
        out += [str(math.ceil(f.lo) - 1)] if f.lo is not None else []
        out += [str(math.floor(f.hi) + 1)] if f.hi is not None else []
    elif f.kind == "number":
        out = ["abc", "nan", "inf"]
        out += [to_text(f.lo - 1)] if f.lo is not None else []
        out += [to_text(f.hi + 1)] if f.hi is not None else []
    elif f.kind == "bool":
        out = ["maybe"]
    elif f.kind == "choice":
        out = ["no-such-choice"]
    elif f.kind == "str_list" and f.choices:
        out = ["no-such-item"]
    elif f.kind == "str" and not f.optional:
        out = [" "]
    elif f.kind == "table":
        out = ["not-a-table"]
    if not f.optional and f.kind in ("int", "number", "bool", "choice") and "none" not in f.choices:
        out.append("none")
    return out
