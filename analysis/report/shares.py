"""Shares of a whole shown so that they add up: largest-remainder rounding for display.

A Nash mix of 13.04%, 35.33% and 51.63% rounds, each on its own, to 13.0 + 35.3 +
51.6 = 99.9%. A reader adding the column up should find the whole: each share
is rounded down to the shown decimals, and the units still missing to the total
go, one each, to the shares that lost the most in rounding (Hamilton's
largest-remainder method; ties to the first in order). Every shown share is then
within one last digit of its exact value and the column adds up to the rounded
total. Only what is displayed is rounded; CSV and JSON keep every digit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["rounded_shares", "share_texts", "with_shares"]


def _value(v: Any) -> float | None:
    if v is None or isinstance(v, (bool, str)):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def rounded_shares(values: Sequence[Any], decimals: int) -> list[float | None]:
    """``values`` rounded to ``decimals`` so that they add up to their rounded sum.

    Missing values (None, NaN) stay None and take no part; negative values are
    treated as themselves (the method assumes shares, but never fails on noise
    like ``-1e-17``).

    Examples
    --------
    >>> rounded_shares([0.1304, 0.3533, 0.5163], 3)
    [0.131, 0.353, 0.516]
    >>> rounded_shares([1 / 3, 1 / 3, 1 / 3], 2)
    [0.34, 0.33, 0.33]
    """
    scale = 10 ** decimals
    xs = [_value(v) for v in values]
    known = [(i, x * scale) for i, x in enumerate(xs) if x is not None]
    if not known:
        return [None] * len(xs)
    floors = {i: math.floor(q + 1e-9) for i, q in known}  # 1e-9: 0.3 * 10 is 2.9999999999999996
    total = round(sum(q for _, q in known))
    missing = total - sum(floors.values())
    order = sorted(known, key=lambda iq: -(iq[1] - floors[iq[0]]))  # largest remainder first (stable)
    for i, _ in order[:max(0, missing)]:
        floors[i] += 1
    return [None if x is None else floors[i] / scale for i, x in enumerate(xs)]


def share_texts(values: Sequence[Any], decimals: int = 1, missing: str = "–") -> list[str]:
    """Probabilities shown as percentages with ``decimals`` decimals that add up to 100% (``"13.1%"``); an exact
    0 is ``"0%"`` (a share that only rounds to 0 is ``"0.0%"``)."""
    shown = rounded_shares(values, decimals + 2)
    out = []
    for v, x in zip(values, shown):
        if x is None:
            out.append(missing)
        elif abs(_value(v) or 0.0) < 5e-7:  # zero (to the float noise of sums of probabilities)
            out.append("0%")
        else:
            out.append(f"{100 * x:.{decimals}f}%")
    return out


def with_shares(frame: pd.DataFrame, column: str, shown: str | None = None, decimals: int = 1) -> pd.DataFrame:
    """A copy of ``frame`` whose ``shown`` column (default: ``column`` itself) holds ``column``'s shares as texts
    that add up to 100% (:func:`share_texts`); a frame without ``column`` is returned as it is."""
    import pandas as pd

    if column not in frame.columns:
        return frame
    out = frame.copy()
    out[shown or column] = share_texts(list(pd.to_numeric(out[column], errors="coerce")), decimals)
    return out
