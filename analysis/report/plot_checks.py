"""Checks of the arguments of the exported plot functions (:mod:`analysis.report.plots`, ``analysis.plots``).

They are called from notebooks with whatever is at hand; what they cannot draw is
one :class:`sim.errors.InputError` naming the argument, before anything is drawn,
instead of an ``AttributeError`` from matplotlib or a ``KeyError`` from pandas
(issue 38, item 9).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sim.errors import InputError, shown

from ..stats.checks import check_frame

__all__ = ["check_ax", "check_text", "check_axis", "check_span", "check_count", "plot_frame", "check_result",
           "check_results", "check_labels", "check_column", "check_names", "check_bool", "probability_table",
           "wdl_data"]

#: Most curves or styles one plot draws (a legend of more could not be read anyway).
MAX_LINES = 10_000


def check_ax(ax: Any) -> Any:
    """A matplotlib ``Axes``, or None (a new figure)."""
    from matplotlib.axes import Axes

    if ax is not None and not isinstance(ax, Axes):
        raise InputError(f"ax: got {shown(ax)}, expected a matplotlib Axes or None")
    return ax


def check_axis(axis: Any, name: str = "axis") -> Any:
    """A matplotlib ``Axis`` (``ax.xaxis``, ``ax.yaxis``)."""
    from matplotlib.axis import Axis

    if not isinstance(axis, Axis):
        raise InputError(f"{name}: got {shown(axis)}, expected a matplotlib Axis (ax.xaxis or ax.yaxis)")
    return axis


def check_text(value: Any, name: str, *, optional: bool = True) -> str | None:
    """Text (a title, a label, a column name), or None when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InputError(f"{name}: got {shown(value)}, expected text" + (" or None" if optional else ""))
    return value


def check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name}: got {shown(value)}, expected True or False")
    return bool(value)


def check_count(value: Any, name: str, lo: int = 0, hi: int = MAX_LINES) -> int:
    """A whole number in ``lo..hi``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise InputError(f"{name}: got {shown(value)}, expected a whole number in {lo:,}..{hi:,}")
    return int(value)


def check_span(span: Any, name: str = "span") -> tuple[float, float] | None:
    """None, or ``(lo, hi)``: two finite numbers (axis limits)."""
    if span is None:
        return None
    ok = isinstance(span, (tuple, list)) and len(span) == 2 and all(
        not isinstance(v, (bool, np.bool_)) and isinstance(v, (int, float, np.integer, np.floating))
        and math.isfinite(float(v)) for v in span)
    if not ok:
        raise InputError(f"{name}: got {shown(span)}, expected (low, high): two finite numbers, or None")
    return float(span[0]), float(span[1])


def plot_frame(value: Any, name: str, what: str, columns: Iterable[str] = (),
               numeric: Iterable[str] = ()) -> pd.DataFrame:
    """``value`` as a DataFrame (a frame, or records a DataFrame can be made of) with ``columns`` and
    ``numeric`` columns holding numbers (:func:`analysis.stats.checks.check_frame`)."""
    frame = value
    if not isinstance(value, pd.DataFrame):
        if not isinstance(value, (dict, list, tuple)) or isinstance(value, str):
            raise InputError(f"{name}: got {shown(value)}, expected {what} (a pandas DataFrame)")
        try:
            frame = pd.DataFrame(value)
        except (ValueError, TypeError):
            raise InputError(f"{name}: got {shown(value)}, expected {what} (a pandas DataFrame)") from None
    return check_frame(frame, name, what, list(columns), list(numeric))


def check_column(frame: pd.DataFrame, column: Any, name: str, frame_name: str) -> str:
    """``column``: text naming a column of ``frame``."""
    check_text(column, name, optional=False)
    if column not in frame.columns:
        raise InputError(f"{name}: {frame_name} has no column {column!r} (columns: "
                         f"{', '.join(map(str, frame.columns[:12]))})")
    return column


def check_result(value: Any, name: str, needs: Sequence[str] = ()) -> Any:
    """A :class:`sim.FightResult`, or an object with the attributes ``needs`` the plot reads."""
    from sim.results import FightResult

    if isinstance(value, FightResult) or (needs and all(hasattr(value, a) for a in needs)):
        return value
    raise InputError(f"{name}: got {shown(value)}, expected a sim.FightResult (from sim.fight)")


def check_results(value: Any, name: str, needs: Sequence[str] = ()) -> list[Any]:
    """One :class:`sim.FightResult` or a sequence of them (or of objects with the attributes ``needs``)."""
    from sim.results import FightResult

    if isinstance(value, FightResult):
        return [value]
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InputError(f"{name}: got {shown(value)}, expected a sim.FightResult or a list of them")
    for r in value:
        check_result(r, name, needs)
    return list(value)


def check_names(value: Any, name: str, *, optional: bool = True) -> list[str] | None:
    """A sequence of texts (not one text), or None when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or \
            not all(isinstance(v, str) for v in value):
        raise InputError(f"{name}: got {shown(value)}, expected a list of texts" + (" or None" if optional else ""))
    return list(value)


def check_labels(labels: Any, count: int) -> list[str] | None:
    """Legend entries: None, or one text per curve."""
    out = check_names(labels, "labels")
    if out is not None and len(out) != count:
        raise InputError(f"labels: got {len(out)} labels for {count} results, expected one per result")
    return out


def probability_table(value: Any, name: str) -> pd.DataFrame:
    """A non-empty table of numbers (rows x columns of probabilities): a frame, or a mapping or records made
    into one, every column checked to hold numbers (``{"attacker": {"x": []}}`` is one line, not pandas'
    "setting an array element with a sequence")."""
    what = "a table of probabilities (MatchupMatrix.wide())"
    frame = plot_frame(value, name, what)
    frame = check_frame(frame, name, what, (), numeric=list(frame.columns))
    if not frame.shape[0] or not frame.shape[1]:
        raise InputError(f"{name}: an empty table ({frame.shape[0]} rows, {frame.shape[1]} columns): nothing to draw")
    return frame


def wdl_data(data: Any) -> Any:
    """What :func:`~analysis.report.plots.wdl_bars` draws: a result, or a rankings or long frame with numbers."""
    if hasattr(data, "tally") and hasattr(data, "ci95"):
        return check_result(data, "data", ("attacker", "defender", "win", "ci95", "trials"))
    frame = plot_frame(data, "data", "a FightResult, a rankings frame or a matrix's long frame")
    rates = ["unit", "win_rate", "draw_rate", "loss_rate"]
    cells = ["attacker", "defender", "p_attacker", "p_defender", "p_draw"]
    return plot_frame(frame, "data", "a rankings frame (unit, win_rate, draw_rate, loss_rate) or a matrix's long "
                      "frame (attacker, defender, p_attacker, p_defender, p_draw)",
                      rates if "win_rate" in frame else cells,
                      [c for c in frame.columns
                       if isinstance(c, str) and (c.endswith(("rate", "_lo", "_hi")) or c.startswith("p_"))])
