"""CSV text that a spreadsheet opens as data, never as formulas.

Spreadsheets run a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula
(and some also after a leading tab or carriage return, or after invisible
characters that they drop on import: a byte-order mark, a combining grapheme
joiner, a Hangul filler, any default-ignorable code point), so a unit named
``=HYPERLINK("http://evil", "click")`` in a roster would become a live link in
every table we write. Every CSV writer goes through :func:`csv_text`, which
prefixes such *text* cells with a single quote ``'`` (the usual neutralisation:
spreadsheets show the text as written). Numbers are written as numbers, so a
negative value stays ``-0.25``. :func:`restore_cell` undoes the prefix when we read
our own files back (``balance --from-matrix``).
"""

from __future__ import annotations

import io
import unicodedata
from typing import Any

import numpy as np
import pandas as pd

from sim.names import is_default_ignorable

__all__ = ["FORMULA_START", "neutralise_cell", "restore_cell", "neutralise_frame", "csv_text", "frame_to_csv",
           "to_csv"]

#: Characters that make a spreadsheet treat a cell as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _formula(text: str) -> bool:
    """``text`` starts a formula, after any invisible format characters (a byte-order mark, a zero-width
    space: some spreadsheets drop them on import and then run what follows)."""
    return _skip_format(text).startswith(FORMULA_START)


def _skip_format(text: str) -> str:
    """``text`` after its leading invisible characters: format characters (Cf) and every other default-ignorable
    code point (:func:`sim.names.is_default_ignorable`: a combining grapheme joiner U+034F, Hangul fillers,
    variation selectors), which show nothing and which a spreadsheet may drop before it reads the cell."""
    i = 0
    while i < len(text) and (unicodedata.category(text[i]) == "Cf" or is_default_ignorable(text[i])):
        i += 1
    return text[i:]


def _quoted_formula(text: str) -> bool:
    """``text`` is quotes followed by a formula start (``'=x``, ``''+y``, ``'\ufeff=x``): what
    :func:`restore_cell` unquotes."""
    rest = text.lstrip("'")
    return len(rest) < len(text) and _formula(rest)


def neutralise_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula.

    Text that already looks neutralised (``'=x``) gets one more quote, so that
    :func:`restore_cell` gives back exactly what was written.
    """
    if isinstance(value, str) and (_formula(value) or _quoted_formula(value)):
        return "'" + value
    return value


def restore_cell(value: Any) -> Any:
    """Undo :func:`neutralise_cell` (``"'=x"`` -> ``"=x"``); anything else is returned unchanged."""
    if isinstance(value, str) and _quoted_formula(value):
        return value[1:]
    return value


def _text_like(series: pd.Series) -> bool:
    return series.dtype == object or isinstance(series.dtype, pd.StringDtype)


def _neutralise_index(index: pd.Index) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        return index.set_levels([_neutralise_index(level) for level in index.levels])
    if index.dtype == object or isinstance(index.dtype, pd.StringDtype):
        return pd.Index([neutralise_cell(v) for v in index], name=neutralise_cell(index.name), dtype=object)
    return index.rename(neutralise_cell(index.name))


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every text cell, column name and index label neutralised."""
    out = frame.copy()
    for col in out.columns:
        if _text_like(out[col]):
            out[col] = out[col].map(neutralise_cell, na_action="ignore")
    out.columns = _neutralise_index(out.columns)
    out.index = _neutralise_index(out.index)
    return out


def csv_text(frame: pd.DataFrame, *, index: bool = False) -> str:
    """Deterministic, spreadsheet-safe CSV text.

    Fixed float format (:data:`analysis.stats.estimates.CSV_FLOAT_FORMAT`), ``\\n`` line
    ends, empty cells for NaN, text cells neutralised (:func:`neutralise_frame`).
    The one function every CSV the tool writes goes through.
    """
    from ..stats.estimates import CSV_FLOAT_FORMAT

    buf = io.StringIO()
    neutralise_frame(frame).to_csv(buf, index=index, float_format=CSV_FLOAT_FORMAT, lineterminator="\n")
    return buf.getvalue()


def frame_to_csv(frame: pd.DataFrame, index: bool = False) -> str:
    """Deterministic CSV text: fixed float format, ``\\n`` line ends, empty cells for NaN, formulas neutralised."""
    return csv_text(frame, index=index)


def to_csv(frame: pd.DataFrame) -> str:
    """:func:`frame_to_csv` without the index, and zero for float noise (the balance tables)."""
    clean = frame.copy()
    for c in clean.columns:
        if clean[c].dtype.kind == "f":
            v = clean[c].to_numpy(float, copy=True)
            v[np.abs(v) < 5e-7] = 0.0  # 6.7e-16 is zero, and "-0.000000" is not a number a designer wants
            clean[c] = v
    return csv_text(clean)
