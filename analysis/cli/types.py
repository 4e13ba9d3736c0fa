"""Click parameter types for the CLI's numbers: ASCII digits, documented ranges, one-line errors.

Click's own ``int`` and ``float`` accept whatever Python does (``1_000``, other
scripts' digits, ``nan``); these accept plain decimal numbers only and check the
limits of :mod:`sim.limits` before anything runs.
"""

from __future__ import annotations

import math
import re
from typing import Any

import click

from sim.errors import MeleelabError, Where
from sim.limits import MAX_ROUNDS, MAX_SEED, MAX_TRIALS, cpu_count

__all__ = ["NOTES", "Count", "Number", "ROUNDS", "TRIALS", "SEED", "MAX_ROUNDS_TYPE", "WORKERS", "unit_names"]

_INT = re.compile(r"[+-]?[0-9]+")

#: Notes for stderr, printed by :func:`analysis.cli.main` once the command has succeeded
#: (a failing command prints its one error line only).
NOTES: list[str] = []
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


class Count(click.ParamType):
    """An integer written in ASCII digits, in ``lo..hi``."""

    name = "integer"

    def __init__(self, lo: int, hi: int, hi_text: str | None = None) -> None:
        self.lo, self.hi, self.hi_text = lo, hi, hi_text or f"{hi:,}"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            if not _INT.fullmatch(text) or len(text) > 60:
                self.fail(f"{_short(value)} is not an integer (digits 0-9)", param, ctx)
            number = int(text)
        if not self.lo <= number <= self.hi:
            self.fail(f"{_short(value)} is not in {self.lo:,}..{self.hi_text}", param, ctx)
        return number


class Number(click.ParamType):
    """A finite decimal number in ``(lo, hi]`` (``lo`` excluded when ``lo_open``)."""

    name = "number"

    def __init__(self, lo: float, hi: float, *, lo_open: bool = True, hi_open: bool = False) -> None:
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        else:
            text = str(value).strip()
            if not _FLOAT.fullmatch(text) or len(text) > 60:
                self.fail(f"{_short(value)} is not a number", param, ctx)
            number = float(text)
        above = number > self.lo if self.lo_open else number >= self.lo
        below = number < self.hi if self.hi_open else number <= self.hi
        if not (math.isfinite(number) and above and below):
            lo_b, hi_b = ("(" if self.lo_open else "["), (")" if self.hi_open else "]")
            self.fail(f"{_short(value)} is not in {lo_b}{self.lo:g}, {self.hi:g}{hi_b}", param, ctx)
        return number


class _Rounds(click.ParamType):
    name = "rounds"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        from sim.ruleset import parse_rounds  # here: sim.ruleset needs NumPy, and --help does not

        try:
            return parse_rounds(value, Where("--rounds"))
        except MeleelabError as e:
            self.fail(str(e).removeprefix("--rounds: field 'rounds': "), param, ctx)


class _Workers(click.ParamType):
    """Processes: ``<= 0`` is every core; more than the cores is clamped, with a note on stderr."""

    name = "integer"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        number = Count(-(10**6), 10**9).convert(value, param, ctx)
        cores = cpu_count()
        if number > cores:
            NOTES.append(f"--workers {number} is more than the {cores} cores here; used {cores}")
            return cores
        return number


TRIALS = Count(1, MAX_TRIALS, "10**15")
SEED = Count(0, MAX_SEED, "2**128-1")
MAX_ROUNDS_TYPE = Count(1, MAX_ROUNDS)
ROUNDS = _Rounds()
WORKERS = _Workers()


def unit_names(units: str | None, unit: tuple[str, ...] = ()) -> list[str] | None:
    """Unit names from ``--units A,B,...`` (CSV quoting: ``A,"B, the second"``) and repeated ``--unit NAME``.

    Returns None when neither was given (every unit of the roster).
    """
    import csv

    names = list(unit)
    if units is not None:
        try:
            rows = list(csv.reader([units], skipinitialspace=True))
        except csv.Error as e:
            raise click.BadParameter(f"{_short(units)}: {e}", param_hint="'--units'") from None
        names += [s.strip() for row in rows for s in row if s.strip()]
    return names if (units is not None or unit) else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
