"""Reading a saved ``matrix_long.csv`` back (``meleelab balance --from-matrix``), validated like a roster.

A matrix file may have been edited by hand or by a spreadsheet, so every cell is
checked before any metric is computed, and the first problem is one line naming
the file, the line, the column, the value and what was expected:

* the columns ``attacker``, ``defender``, ``p_attacker``, ``p_defender``, ``p_draw``
  are required, a column appears once;
* numbers are plain decimals (ASCII digits), probabilities and their interval
  ends and standard errors lie in 0..1, and a fought cell's three outcome
  probabilities sum to 1 (to the file's 6 decimals);
* ``trials`` (when present) is an integer 0..10**15; a cell with 0 trials was
  not fought and has empty probabilities;
* the matrix is complete: every unit attacks every unit (mirror matches included)
  exactly once;
* points, when given, are in the roster range and the same for a unit in every row.

Cells neutralised for spreadsheets (``'=name``, :mod:`analysis.report.safe_csv`) are read
back as written by the roster.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sim.errors import InputError
from sim.files import read_input_text
from sim.limits import MAX_MATRIX_BYTES, MAX_MATRIX_UNITS, MAX_ROUNDS, MAX_TRIALS, POINTS_MAX, POINTS_MIN
from sim.schema import MAX_TEXT

from .safe_csv import restore_cell

__all__ = ["read_matrix_long", "REQUIRED_COLUMNS"]

REQUIRED_COLUMNS = ("attacker", "defender", "p_attacker", "p_defender", "p_draw")
_PROBABILITY = ("p_attacker", "p_defender", "p_draw")
_UNIT_INTERVAL = tuple(f"{p}_{s}" for p in _PROBABILITY for s in ("lo", "hi", "se")) + ("capped",)
_NON_NEGATIVE = ("damage_to_attacker", "damage_to_attacker_se", "damage_to_defender", "damage_to_defender_se",
                 "mean_rounds_se")
_POINTS = ("points_attacker", "points_defender")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
#: Two probabilities written with 6 decimals each sum to 1 within this.
_SUM_TOLERANCE = 1e-5


class _Cells:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, line: int, column: str | None, value: Any, expected: str) -> InputError:
        where = f"{self.source}: line {line}" + (f": column {column!r}" if column else "")
        text = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        return InputError(f"{where}: got {text}, expected {expected}")

    def number(self, line: int, column: str, text: str, lo: float, hi: float, what: str) -> float:
        t = text.strip()
        if not t:
            return math.nan
        if not _NUMBER.fullmatch(t):
            raise self.fail(line, column, text, what)
        value = float(t)
        if not (math.isfinite(value) and lo <= value <= hi):
            raise self.fail(line, column, text, what)
        return value


def read_matrix_long(path: str | Path) -> pd.DataFrame:
    """Validate and load a ``matrix_long.csv``.

    Returns
    -------
    pandas.DataFrame
        The rows, with numeric columns as floats (``trials`` as int64 when present).

    Raises
    ------
    sim.errors.InputError
        One line: file, line, column, value and what was expected.
    """
    path = Path(path)
    cells = _Cells(str(path))
    text = read_input_text(path, "matrix file", MAX_MATRIX_BYTES)  # a regular file, bounded (sim.files)
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        if not header:
            raise InputError(f"{path}: empty matrix file (expected a matrix_long.csv header)")
        header = [restore_cell(h.strip()) for h in header]
        for k, name in enumerate(header):
            if name in header[:k]:
                raise cells.fail(1, name, name, "each column once (it appears twice in the header)")
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise InputError(f"{path}: not a matrix_long.csv: no column {', '.join(missing)} "
                             f"(needs {', '.join(REQUIRED_COLUMNS)})")
        rows: list[dict[str, Any]] = []
        for raw in reader:
            line = reader.line_num
            if not raw or all(not c.strip() for c in raw):
                continue
            if len(raw) != len(header):
                raise cells.fail(line, None, f"{len(raw)} cells", f"{len(header)} cells, one per header column")
            rows.append(_row(cells, line, dict(zip(header, raw))))
    except csv.Error as e:
        raise InputError(f"{path}: line {reader.line_num + 1}: not valid CSV ({e})") from None
    _check_complete(cells, rows)
    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "_line"} for r in rows], columns=header)
    numeric = set(_PROBABILITY + _UNIT_INTERVAL + _NON_NEGATIVE + _POINTS) | {"mean_rounds"}
    for col in header:
        if col in numeric:
            frame[col] = frame[col].astype(float)
    if "trials" in frame:
        frame["trials"] = frame["trials"].astype(np.int64)
    return frame


def _row(cells: _Cells, line: int, raw: dict[str, str]) -> dict[str, Any]:
    row: dict[str, Any] = {"_line": line}
    for side in ("attacker", "defender"):
        name = restore_cell(raw[side].strip())
        if not name or len(name) > MAX_TEXT or any(ord(c) < 32 or ord(c) == 127 for c in name):
            raise cells.fail(line, side, raw[side], f"a unit name (1..{MAX_TEXT} characters)")
        row[side] = name
    trials: float | None = None
    if "trials" in raw:
        t = raw["trials"].strip()
        if not (t.isascii() and t.isdigit() and int(t) <= MAX_TRIALS):
            raise cells.fail(line, "trials", raw["trials"], f"an integer 0..{MAX_TRIALS:,}")
        trials = int(t)
        row["trials"] = trials
    for col, text in raw.items():
        if col in ("attacker", "defender", "trials"):
            continue
        if col in _PROBABILITY or col in _UNIT_INTERVAL:
            row[col] = cells.number(line, col, text, 0.0, 1.0, "a probability 0..1 or empty")
        elif col in _NON_NEGATIVE:
            row[col] = cells.number(line, col, text, 0.0, 1e12, "a number >= 0 or empty")
        elif col == "mean_rounds":
            row[col] = cells.number(line, col, text, 0.0, MAX_ROUNDS, f"a number 0..{MAX_ROUNDS} or empty")
        elif col in _POINTS:
            row[col] = cells.number(line, col, text, POINTS_MIN, POINTS_MAX,
                                    f"points {POINTS_MIN}..{POINTS_MAX:g} or empty")
        elif col == "method":
            row[col] = text.strip() or "mc"
            if row[col] not in ("exact", "mc"):
                raise cells.fail(line, col, text, "'exact', 'mc' or empty")
        else:
            row[col] = restore_cell(text)
    # an exact cell sampled nothing (0 trials) but has its probabilities
    fought = (trials > 0 or row.get("method") == "exact") if trials is not None else not math.isnan(row["p_attacker"])
    probs = [row[c] for c in _PROBABILITY]
    if fought:
        for c, p in zip(_PROBABILITY, probs):
            if math.isnan(p):
                raise cells.fail(line, c, raw[c], "a probability 0..1 (the cell was fought)")
        if abs(sum(probs) - 1.0) > _SUM_TOLERANCE:
            raise cells.fail(line, "p_draw", raw["p_draw"],
                             f"p_attacker + p_defender + p_draw = 1 (they sum to {sum(probs):.6f})")
    else:
        for c, p in zip(_PROBABILITY, probs):
            if not math.isnan(p):
                raise cells.fail(line, c, raw[c], "an empty cell (0 trials and not exact: the pair was not fought)")
    return row


def _check_complete(cells: _Cells, rows: list[dict[str, Any]]) -> None:
    if not rows:
        raise InputError(f"{cells.source}: no matchup rows")
    units: list[str] = []
    for r in rows:
        for side in ("attacker", "defender"):
            if r[side] not in units:
                units.append(r[side])
    if len(units) > MAX_MATRIX_UNITS:
        raise InputError(f"{cells.source}: {len(units)} units, a matrix takes at most {MAX_MATRIX_UNITS}")
    from sim.errors import Where
    from sim.roster import check_lookalikes

    check_lookalikes(units, Where(cells.source))  # two units that print alike, as a roster refuses them
    seen: dict[tuple[str, str], int] = {}
    points: dict[str, tuple[float, int]] = {}
    for r in rows:
        pair = (r["attacker"], r["defender"])
        if pair in seen:
            raise cells.fail(r["_line"], None, f"{pair[0]} vs {pair[1]}",
                             f"each attacker-defender pair once (also on line {seen[pair]})")
        seen[pair] = r["_line"]
        for col, side in (("points_attacker", "attacker"), ("points_defender", "defender")):
            value = r.get(col, math.nan)
            if isinstance(value, float) and not math.isnan(value):
                first = points.setdefault(r[side], (value, r["_line"]))
                if first[0] != value:
                    raise cells.fail(r["_line"], col, value,
                                     f"{first[0]:g}, the points of {r[side]!r} on line {first[1]}")
    for a in units:
        for d in units:
            if (a, d) not in seen:
                raise InputError(f"{cells.source}: incomplete matrix: no row for attacker {a!r} against "
                                 f"defender {d!r} (every unit must attack every unit, mirror matches included)")
    if not any((r.get("trials", 1) > 0 or r.get("method") == "exact") and not math.isnan(r["p_attacker"])
               for r in rows):
        raise InputError(f"{cells.source}: no pair was fought (every row has 0 trials)")
