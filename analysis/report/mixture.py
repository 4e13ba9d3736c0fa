"""A featured cell under expected fielding: the whole-copy fights it mixes, each with its weight.

Under expected fielding (:mod:`analysis.runs.fielding`) a matrix cell is not one
fight: a side that the budget buys ``k + f`` copies of fields ``k + 1`` copies in
a fraction ``f`` of its fights and ``k`` in the rest, so the cell is the weighted
mean of up to four whole-copy fights (:func:`analysis.runs.cells.mixed_cells`).
The featured sections show one of them in detail (the heaviest, the one the
matrix keeps with its tallies); the caption's score is the mixture's. So that every
number agrees with its caption, the section first shows the mixture itself: each
whole-copy fight with its weight and results, then the weighted mean, which is
the matrix cell and the caption's number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..runs.cells import WholeCell
from ..runs.fielding import copy_mixture
from . import tables as rt
from .shares import share_texts

__all__ = ["Part", "mixture_parts", "mixture_table", "fielded_text", "MIXTURE"]


@dataclass(frozen=True)
class Part:
    """One whole-copy fight of a mixed cell: the copies each side fields, its weight and its numbers."""

    attacker_copies: int
    defender_copies: int
    weight: float
    #: :func:`analysis.stats.estimates.tally_row` or ``exact_row`` of the fight.
    numbers: dict[str, Any]

    @property
    def score(self) -> float:
        """The attacker's score, win + draw/2."""
        return float(self.numbers["p_attacker"]) + float(self.numbers["p_draw"]) / 2


def mixture_parts(matrix: Any, pair: tuple[str, str]) -> list[Part]:
    """The whole-copy fights behind the cell ``pair`` of ``matrix``, heaviest first.

    Empty when the cell is a single fight (whole fielding, no budget, whole copies
    on both sides) or when the matrix kept no whole-copy cells (no ``bank``), or a
    part was not answered.
    """
    bank = getattr(matrix, "bank", None)
    if bank is None or getattr(matrix, "fielding", "whole") != "expected" or matrix.budget is None:
        return []
    a, d = pair
    mix = [(ka, kd, wa * wd) for ka, wa in copy_mixture(matrix.copies[a]) for kd, wd in copy_mixture(matrix.copies[d])]
    if len(mix) < 2:
        return []
    parts = []
    for ka, kd, w in mix:
        row = bank.row(WholeCell(a, ka, d, kd))
        if row is None:
            return []
        parts.append(Part(ka, kd, w, row))
    # heaviest first; among equal weights fewer copies first (the part the matrix keeps in detail comes first)
    return sorted(parts, key=lambda p: (-p.weight, p.attacker_copies, p.defender_copies))


def _points(matrix: Any, unit: str) -> float | None:
    long = matrix.long
    rows = long.loc[long["attacker"] == unit, "points_attacker"]
    v = rt._number(rows.iloc[0]) if len(rows) else None
    return v


def fielded_text(matrix: Any, unit: str, copies: float) -> str:
    """``10 × Veteran squad (1,000 points)``; expected copies to two decimals (``2.5 × Terminators``)."""
    pts = _points(matrix, unit)
    text = f"{rt.fmt(copies, 'copies')} × {unit}"
    return text + (f" ({copies * pts:,.0f} points)" if pts is not None else "")


#: The mixture table's columns.
MIXTURE = (
    rt.Column("fight", "Fight"),
    rt.Column("weight", "Weight", "pct", help="the share of the cell's fights fielded this way"),
    rt.Column("fights", "Fights", "num"),
    rt.Column("p_attacker", "Attacker wins", "pct"),
    rt.Column("p_draw", "Draw", "pct"),
    rt.Column("p_defender", "Defender wins", "pct"),
    rt.Column("score", "Attacker's score", "pct", help="win + draw/2"),
)


def mixture_frame(matrix: Any, pair: tuple[str, str], parts: Sequence[Part]) -> pd.DataFrame:
    """One row per whole-copy fight, then the weighted mean (the matrix cell)."""
    a, d = pair
    rows = []
    for p in parts:
        n = p.numbers
        rows.append({"fight": f"{fielded_text(matrix, a, p.attacker_copies)} against "
                              f"{fielded_text(matrix, d, p.defender_copies)}",
                     "weight": p.weight, "fights": "exact" if n.get("method") == "exact" else f"{int(n['trials']):,}",
                     "p_attacker": n["p_attacker"], "p_draw": n["p_draw"], "p_defender": n["p_defender"],
                     "score": p.score})
    long = matrix.long
    cell = long[(long["attacker"] == a) & (long["defender"] == d)].iloc[0]
    exact = str(cell.get("method", "mc")) == "exact"
    rows.append({"fight": "expected fielding (the weighted mean: the matrix cell)", "weight": sum(p.weight for p in parts),
                 "fights": "exact" if exact else f"{int(cell['fights']):,}",
                 "p_attacker": cell["p_attacker"], "p_draw": cell["p_draw"], "p_defender": cell["p_defender"],
                 "score": float(cell["p_attacker"]) + float(cell["p_draw"]) / 2})
    frame = pd.DataFrame(rows)
    frame["weight"] = share_texts(list(frame["weight"].iloc[:-1]), 1) + ["100%"]  # the shown weights add up
    return frame


def mixture_table(matrix: Any, pair: tuple[str, str]) -> tuple[rt.TableView, str] | None:
    """The mixture of the cell ``pair`` as a report table, and the heaviest fight's weight as the table shows it;
    None when the cell is one fight."""
    parts = mixture_parts(matrix, pair)
    if not parts:
        return None
    frame = mixture_frame(matrix, pair, parts)
    view = rt.table_view(frame, MIXTURE,
                         caption="expected fielding: the cell is the weighted mean of these whole-copy fights")
    return view, str(frame["weight"].iloc[0])
