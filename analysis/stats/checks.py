"""Checks of the arguments of the public analysis functions: a wrong type or a missing column is one line.

The public names of :mod:`analysis` take frames, numbers and paths from a
person at a prompt or in a notebook. What they cannot use raises
:class:`sim.errors.InputError` (a :class:`sim.MeleelabError`) naming the
argument, before any work, instead of a ``KeyError``, ``TypeError`` or
``AttributeError`` from deep inside pandas.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sim.errors import InputError, shown
from sim.limits import MAX_SEED

__all__ = ["check_number", "check_flag", "check_seed", "check_frame", "check_path", "check_callable",
           "check_choice"]


def check_number(value: Any, name: str, *, lo: float | None = None, hi: float | None = None,
                 optional: bool = False) -> float | None:
    """A finite real number in ``[lo, hi]`` (None too when ``optional``)."""
    if value is None and optional:
        return None
    ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.integer, np.floating))
    if ok:
        number = float(value)
        ok = math.isfinite(number) and (lo is None or number >= lo) and (hi is None or number <= hi)
    if not ok:
        span = f" in {lo:g}..{hi:g}" if lo is not None and hi is not None else f" >= {lo:g}" if lo is not None else ""
        raise InputError(f"{name}: got {shown(value)}, expected a finite number{span}"
                         + (" or None" if optional else ""))
    return number


def check_flag(value: Any, name: str) -> bool:
    """``True`` or ``False`` (not 1, "yes" or an array)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name}: got {shown(value)}, expected True or False")
    return bool(value)


def check_seed(value: Any, name: str = "seed") -> int:
    """An integer seed in 0 .. 2**128 - 1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value <= MAX_SEED:
        raise InputError(f"{name}: got {shown(value)}, expected an integer in 0..2**128-1")
    return int(value)


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """One of ``choices`` (strings)."""
    options = list(choices)
    if not isinstance(value, str) or value not in options:
        raise InputError(f"{name}: got {shown(value)}, expected one of {', '.join(options)}")
    return value


def check_callable(value: Any, name: str) -> Any:
    """A callable, or None."""
    if value is not None and not callable(value):
        raise InputError(f"{name}: got {shown(value)}, expected a function or None")
    return value


def check_path(value: Any, name: str, *, optional: bool = False) -> Path | None:
    """A file-system path given as ``str`` or ``os.PathLike`` (None too when ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, (bool, bytes)) or not isinstance(value, (str, os.PathLike)) or \
            (isinstance(value, str) and not value.strip()):
        raise InputError(f"{name}: got {shown(value)}, expected a folder path (str or pathlib.Path)"
                         + (" or None" if optional else ""))
    try:
        return Path(value)
    except TypeError:  # an os.PathLike whose __fspath__ returns bytes
        raise InputError(f"{name}: got {shown(value)}, expected a folder path (str or pathlib.Path)") from None


def check_frame(value: Any, name: str, what: str, columns: Iterable[str], numeric: Iterable[str] = ()) -> pd.DataFrame:
    """``value`` as a DataFrame with ``columns``, its ``numeric`` columns (those present) as float.

    Parameters
    ----------
    value : object
    name : str
        The argument, for the message.
    what : str
        What the frame should be (``"a sweep() result"``).
    columns : iterable of str
        Columns that must be there.
    numeric : iterable of str
        Columns that must hold numbers (or be empty); text such as ``"0.5"`` is read as a number.

    Raises
    ------
    sim.errors.InputError
        Not a DataFrame, a column missing, or a cell that is not a number.
    """
    if not isinstance(value, pd.DataFrame):
        raise InputError(f"{name}: got {type(value).__name__}, expected {what} (a pandas DataFrame)")
    missing = [c for c in columns if c not in value.columns]
    if missing:
        raise InputError(f"{name}: not {what}: no column {', '.join(repr(c) for c in missing)}")
    out = value
    for col in numeric:
        if col not in value.columns:
            continue
        raw = value[col]
        if isinstance(raw, pd.DataFrame):  # the column name appears twice
            raise InputError(f"{name}: column {col!r} appears more than once")
        if raw.dtype.kind in "iufb" and raw.dtype.kind != "b":
            continue
        converted = pd.to_numeric(raw, errors="coerce")
        bad = converted.isna() & raw.notna()
        if converted.dtype.kind == "c":  # complex numbers: not the real numbers a table of results holds
            bad = bad | pd.Series(np.imag(converted.to_numpy()) != 0, index=raw.index)
            converted = pd.Series(np.real(converted.to_numpy()), index=raw.index)
        if bad.any():
            raise InputError(f"{name}: column {col!r} holds {shown(raw[bad].iloc[0])}, expected numbers")
        if out is value:
            out = value.copy()
        out[col] = converted.astype(float)
    return out
