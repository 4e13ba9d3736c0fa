"""``mecha`` units: the suit's profile, the Armour Resistance Chart and its result codes.

A :class:`MechaUnit` reads its total under its armour letter in a :class:`Chart`:
``-`` no effect, ``M`` immobilised, ``D`` destroyed (:data:`RESULTS`, the severity
each result gives). The chart in the text is missing; :meth:`Chart.reconstructed`
is the spec's reconstruction, :meth:`Chart.wide` its alternative, and a roster's
``[chart]`` table or a chart file (:func:`load_chart_file`) replaces them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import Where
from ...files import parse_toml, read_input_text
from ...limits import MAX_ROSTER_BYTES

__all__ = ["MechaUnit", "Chart", "load_chart_file", "RESULTS", "UNHARMED", "IMMOBILISED", "DESTROYED"]

#: Chart result codes and their severity (the damage unit).
RESULTS = {"-": 0, "M": 1, "D": 2}
UNHARMED, IMMOBILISED, DESTROYED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class MechaUnit:
    """One armoured suit, walker or vehicle."""

    name: str
    defence: int
    physical: int
    armour: str
    engageable: bool = True
    points: float | None = None


@dataclass(frozen=True)
class Chart:
    """Armour Resistance Chart: per letter, the result for totals <=1, 2, 3, 4, 5, 6.

    Totals below 1 read the first column; totals of 7 or more are no effect.
    """

    rows: Mapping[str, tuple[str, ...]]
    name: str = "custom"

    def lookup(self, letter: str, total: int) -> str:
        """The result code a unit with armour ``letter`` takes on ``total``."""
        if total >= 7:
            return "-"
        return self.rows[letter][max(total, 1) - 1]

    def to_jsonable(self) -> dict[str, Any]:
        return {"name": self.name, "rows": {k: "".join(v) for k, v in self.rows.items()}}

    @staticmethod
    def reconstructed() -> "Chart":
        """The spec's default: letter index k (A=0): D if total <= 2+k, M if total = 3+k."""
        rows = {}
        for k, letter in enumerate("ABCDE"):
            rows[letter] = tuple("D" if t <= 2 + k else "M" if t == 3 + k else "-" for t in range(1, 7))
        return Chart(rows, "reconstructed")

    @staticmethod
    def wide() -> "Chart":
        """The spec's alternative: the M band is two totals wide (3+k..4+k)."""
        rows = {}
        for k, letter in enumerate("ABCDE"):
            rows[letter] = tuple("D" if t <= 2 + k else "M" if t <= 4 + k else "-" for t in range(1, 7))
        return Chart(rows, "wide")

    @staticmethod
    def from_table(table: Any, where: Where) -> "Chart":
        """Validate a ``[chart]`` table: ``A = ["D", "D", "M", "-", "-", "-"]`` (totals <=1..6)."""
        if not isinstance(table, Mapping) or not table:
            raise where.error("chart", table, "a table of armour letters, each a list of 6 results")
        rows = {}
        for letter, cells in table.items():
            if not (isinstance(letter, str) and len(letter) == 1 and letter.isupper()):
                raise where.error(f"chart.{letter}", cells, "an armour letter A..Z as the key")
            if isinstance(cells, str):
                cells = list(cells)
            if not isinstance(cells, list) or len(cells) != 6 or any(c not in RESULTS for c in cells):
                raise where.error(f"chart.{letter}", cells, 'six results for totals <=1..6, each "-", "M" or "D"')
            rows[letter] = tuple(cells)
        return Chart(rows, "custom")


def load_chart_file(path: str) -> Chart:
    """A chart from a TOML file holding a ``[chart]`` table (or the letters at top level).

    A regular file of at most :data:`~sim.limits.MAX_ROSTER_BYTES`, TOML nested at most
    :data:`~sim.limits.MAX_TOML_DEPTH` levels (see :mod:`sim.files`); anything else is one line.
    """
    text = read_input_text(path, "chart file", MAX_ROSTER_BYTES, encoding="utf-8")
    data = parse_toml(text, str(path), "chart file")
    return Chart.from_table(data.get("chart", data), Where(path))
