"""Tables for the terminal, drawn with rich: whole names, headers over their numbers, the terminal's width.

Every table the command line prints goes through :func:`table_text`. Text columns
are left-aligned and wrap (a name is never cut: a word longer than the column is
folded onto the next line); number columns are right-aligned and never wrap. A
table wider than the terminal is cut into blocks of columns, each repeating the
first (key) columns, instead of squeezing its numbers. The width is the
terminal's; when standard output is not a terminal it is ``COLUMNS`` or 120, and
the text is plain (no colour, ASCII rules), so pipes, files and tests get clean text.

Units (the same in every command and in ``docs/guide.md``): probabilities are
written from 0 to 1, never as percentages; four decimals in ``fight``, ``compare``
and ``sweep`` (one matchup, 10^5-10^6 fights: their intervals are about +-0.001),
three in ``matrix`` and ``balance`` (many cells, +-0.01 each by default).
Differences of probabilities carry a sign; an exact zero is written 0.
What each command prints is laid out in :mod:`analysis.cli.tables`.
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Column", "table_text", "rows_text", "output_width", "is_terminal", "prob", "signed", "interval",
           "number", "count", "cell"]

#: Width when standard output is not a terminal and ``COLUMNS`` is not set.
PIPE_WIDTH = 120
#: Narrowest layout: below this the terminal's width is ignored.
MIN_WIDTH = 40
#: Between two columns: one space of padding each side and a one-space divider.
GAP = 3
#: A text column is not widened past this for one long word; the word is folded instead.
MAX_WORD = 24


@dataclass(frozen=True)
class Column:
    """One column of a table: its header, and whether it holds numbers (right-aligned, never wrapped)."""

    header: str
    numeric: bool = False


def is_terminal() -> bool:
    """Whether standard output is a terminal (then colour and the terminal's width are used)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def output_width() -> int:
    """Columns to fill: ``COLUMNS`` if set, else the terminal's width, else :data:`PIPE_WIDTH`."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return max(int(env), MIN_WIDTH)
    if is_terminal():
        return max(shutil.get_terminal_size((PIPE_WIDTH, 24)).columns, MIN_WIDTH)
    return PIPE_WIDTH


# ------------------------------------------------------------------ numbers
def _missing(x: Any) -> bool:
    """None, a NaN of any float type, or pandas' NA (whose truth value raises)."""
    if x is None:
        return True
    try:
        return bool(x != x)
    except (TypeError, ValueError):
        return True


def prob(p: Any, digits: int = 4, *, exact_zero: bool = True) -> str:
    """A probability from 0 to 1 with ``digits`` decimals (an exact 0 is ``0`` unless not ``exact_zero``; missing
    is ``-``)."""
    if _missing(p):
        return "-"
    v = float(p)
    return "0" if v == 0 and exact_zero else f"{v:.{digits}f}"


def signed(d: Any, digits: int = 4, *, exact_zero: bool = True) -> str:
    """A difference with its sign (``+0.0123``, ``-0.0040``; an exact 0 is ``0``)."""
    if _missing(d):
        return "-"
    v = float(d)
    if v == 0:
        return "0" if exact_zero else f"{0.0:.{digits}f}"
    return f"{v:+.{digits}f}"


def number(x: Any, digits: int = 4, *, exact_zero: bool = True) -> str:
    """A real number with ``digits`` decimals and thousands separators (an exact 0 is ``0``)."""
    if _missing(x):
        return "-"
    v = float(x)
    return "0" if v == 0 and exact_zero else f"{v + 0.0:,.{digits}f}"


def count(n: Any) -> str:
    """An integer with thousands separators."""
    return "-" if _missing(n) else f"{int(n):,}"


def interval(lo: Any, hi: Any, fmt: Any = prob, *args: Any) -> str:
    """``[lo, hi]`` with both ends written by ``fmt`` with all their decimals (``-`` when either is missing)."""
    if _missing(lo) or _missing(hi):
        return "-"
    return f"[{fmt(lo, *args, exact_zero=False)}, {fmt(hi, *args, exact_zero=False)}]"


def cell(value: Any) -> str:
    """A roster-style cell: ``true``/``false``, ``-`` for none, integers as they are, reals without trailing zeros."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if _missing(value):
        return "-"
    if isinstance(value, float):
        return f"{int(value)}" if value.is_integer() else f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value)
    return str(value)


# ------------------------------------------------------------------- layout
def _cell_len(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _bounds(column: Column, cells: Sequence[str]) -> tuple[int, int]:
    """(narrowest, natural) width of a column."""
    longest = max((_cell_len(c) for c in cells), default=0)
    header_word = max((_cell_len(w) for w in column.header.split()), default=0)
    if column.numeric:
        return max(longest, header_word), max(longest, _cell_len(column.header))
    words = [_cell_len(w) for c in [*cells, column.header] for w in c.split()]
    narrow = min(max(words, default=1), MAX_WORD)
    return narrow, max(longest, _cell_len(column.header), narrow)


def _span(widths: Iterable[int]) -> int:
    w = list(widths)
    return sum(w) + GAP * max(len(w) - 1, 0)


def _allocate(columns: Sequence[Column], bounds: Sequence[tuple[int, int]], width: int) -> list[int]:
    """Widths that fit ``width`` when the narrowest do.

    Text columns grow first, evenly, towards their natural width (a wrapped name
    makes a row several lines tall); then number columns, so that their headers
    fit on one line (a wrapped header costs one line for the whole table).
    """
    widths = [lo for lo, _ in bounds]
    spare = width - _span(widths)
    while spare > 0:
        short = [j for j, col in enumerate(columns) if not col.numeric and widths[j] < bounds[j][1]]
        if not short:
            break
        for j in short[:spare]:
            widths[j] += 1
        spare -= min(len(short), spare)
    for j, col in enumerate(columns):
        if col.numeric and spare > 0:
            grow = min(bounds[j][1] - widths[j], spare)
            widths[j] += grow
            spare -= grow
    return widths


def _blocks(bounds: Sequence[tuple[int, int]], key: int, width: int) -> list[list[int]]:
    """Column indices of each block: the key columns, then as many of the others as fit."""
    keys = list(range(key))
    blocks: list[list[int]] = []
    current: list[int] = []
    for j in range(key, len(bounds)):
        if current and _span(bounds[i][0] for i in keys + current + [j]) > width:
            blocks.append(current)
            current = []
        current.append(j)
    if current or not blocks:
        blocks.append(current)
    return [keys + b for b in blocks]


def table_text(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, key: int = 1,
               width: int | None = None, empty: str = "(none)") -> str:
    """A table as text that fits ``width`` (default :func:`output_width`).

    Parameters
    ----------
    columns : sequence of Column
    rows : sequence of sequences of str
        The cells, already formatted (see :func:`prob`, :func:`count`...).
    key : int
        Leading columns repeated in every block when the table is cut to fit.
    width : int, optional
    empty : str
        What a table without rows prints.

    Returns
    -------
    str
        Lines without trailing spaces; blocks of a cut table separated by a blank line.
    """
    if not rows:
        return empty
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    width = width or output_width()
    key = min(key, len(columns))
    cells = [[str(c) for c in row] for row in rows]
    bounds = [_bounds(col, [row[j] for row in cells]) for j, col in enumerate(columns)]
    colour = is_terminal() and "NO_COLOR" not in os.environ
    unicode_ok = colour and (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "") == "utf8"
    rule = box.SIMPLE_HEAD if unicode_ok else _ascii_head()
    console = Console(file=io.StringIO(), width=width, force_terminal=colour, no_color=not colour,
                      color_system="standard" if colour else None, highlight=False, markup=False, emoji=False,
                      legacy_windows=False)
    for block in _blocks(bounds, key, width):
        widths = _allocate([columns[j] for j in block], [bounds[j] for j in block], width)
        table = Table(box=rule, show_edge=False, pad_edge=False, expand=False, safe_box=True,
                      header_style="bold" if colour else "")
        for j, w in zip(block, widths):
            table.add_column(Text(columns[j].header), justify="right" if columns[j].numeric else "left",
                             width=w, overflow="fold")
        for row in cells:
            table.add_row(*(Text(row[j]) for j in block))
        if console.file.tell():
            console.print()
        console.print(table)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))


def rows_text(rows: Sequence[dict[str, Any]], columns: Sequence[str], headers: dict[str, str] | None = None,
              numeric: Sequence[str] = (), **kwargs: Any) -> str:
    """A table of plain records (``units``, ``rulesets``, ``bench``).

    A column is numeric (right-aligned) when it is named in ``numeric`` or every value in it is a number.
    """
    headers = headers or {}
    cols = []
    for c in columns:
        values = [r.get(c) for r in rows if not _missing(r.get(c))]
        is_number = c in numeric or (bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                           for v in values))
        cols.append(Column(headers.get(c, c), is_number))
    return table_text(cols, [[cell(r.get(c)) for c in columns] for r in rows], **kwargs)


@functools.lru_cache(maxsize=1)
def _ascii_head() -> Any:
    """A rule of ``-`` under the header and nothing else (plain text for pipes and files)."""
    from rich.box import Box

    # Box rows: top, head, head rule, mid, row, foot rule, foot, bottom (each: left, fill, divider, right).
    return Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
