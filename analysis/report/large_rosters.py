"""The figures of a large roster: what they leave out, and at what size they are drawn.

A roster of at most :data:`NUMBERED_UNITS` units (20: the rosters whose cells are
each fought to the cell half-width, :data:`analysis.runs.allocation.CELL_PRECISION_UNITS`,
so that a cell's number is worth reading) gets its figures as it always did.
Past it, drawing everything cost more than it showed: a 100-unit report spent
80 s on its figures, most of it laying out the 10,000 numbers of each of its three
heatmaps on 73 x 62 inch canvases, and its rounds plot drew 100 curves whose legend
ran off the bottom of the figure. So, over :data:`NUMBERED_UNITS` units:

* **A heatmap shows colours only**: no number in its cells (they are in the
  report's CSV files: ``matrix.csv``, ``side_averaged.csv``, ``one_for_one_long.csv``),
  :data:`CELL_INCHES` a cell (at least :data:`MIN_SIDE` inches of axes), each name
  on one line beside its row and under its column, and at most :data:`NAMED_UNITS`
  names a side (past that, every k-th name, and the axes stop growing).
* **A rounds plot draws at most** :data:`ROUNDS_CURVES` **curves**: past that, the
  featured opponent, the mirror match and the :data:`EXTREMES` opponents fought to a
  result quickest and slowest (by mean rounds), over a grey band, the range of every
  opponent's curve.
* **The win / draw / loss bars** take a sixth of an inch a unit (the figure grows past
  14 inches), each name on one line: nothing is left out.

What a figure leaves out is said in its title (and legend), and in the report's
caption beside it (:func:`heatmap_caption`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..runs.allocation import CELL_PRECISION_UNITS

__all__ = ["NUMBERED_UNITS", "CELL_INCHES", "MIN_SIDE", "NAMED_UNITS", "NAME_POINTS", "ROUNDS_CURVES", "EXTREMES",
           "numbered", "heatmap_size", "name_step", "heatmap_note", "heatmap_caption", "rounds_subset"]

#: Heatmaps of at most this many rows and columns print each cell's number (the report's rosters of at most
#: this many units: their cells are each fought to the cell half-width).
NUMBERED_UNITS = CELL_PRECISION_UNITS
#: Inches a cell of a heatmap without numbers (a name at :data:`NAME_POINTS` needs about 0.13).
CELL_INCHES = 0.2
#: The axes of a heatmap without numbers are at least this many inches a side (room for a two-line title).
MIN_SIDE = 6.0
#: At most this many names along each side of a heatmap (and cells of :data:`CELL_INCHES`): past it, every k-th.
NAMED_UNITS = 200
#: Font size (points) of the names of a heatmap without numbers.
NAME_POINTS = 7
#: A rounds plot draws every curve up to this many (its legend then still fits beside a 4.8-inch plot).
ROUNDS_CURVES = 20
#: Past :data:`ROUNDS_CURVES`, the opponents fought to a result quickest and slowest drawn, this many of each.
EXTREMES = 3


def numbered(shape: Sequence[int]) -> bool:
    """Whether a heatmap of ``shape`` (rows, columns) prints its numbers in the cells (at most 20 of each)."""
    return max(shape, default=0) <= NUMBERED_UNITS


def name_step(count: int) -> int:
    """Every how many rows (or columns) a heatmap without numbers names one: 1 up to :data:`NAMED_UNITS`."""
    return max(1, math.ceil(count / NAMED_UNITS))


def heatmap_size(rows: int, cols: int, longest: int = 24) -> tuple[float, float]:
    """Figure size (inches) of a heatmap without numbers: cells, one-line names of ``longest`` characters, bar.

    The axes are :data:`CELL_INCHES` a cell, at least :data:`MIN_SIDE` and at most
    ``NAMED_UNITS * CELL_INCHES`` (40) inches a side; the names take about 0.06 inch a
    character at :data:`NAME_POINTS` points; the colour bar, its label, the axis labels and a
    two-line title take the rest.
    """
    def side(k: int) -> float:
        return max(MIN_SIDE, CELL_INCHES * min(k, NAMED_UNITS))

    names = 0.4 + 0.06 * max(longest, 4)
    return round(side(cols) + names + 1.9, 2), round(side(rows) + names + 1.2, 2)


def heatmap_note(shape: Sequence[int], *, chosen: bool = False) -> str:
    """The title's note of a heatmap without numbers: what it leaves out (``chosen``: the caller asked for it)."""
    why = "" if chosen else f" over {NUMBERED_UNITS} rows or columns"
    step = name_step(max(shape, default=0))
    names = f"; one name in {step} shown" if step > 1 else ""
    return f"colours only: the numbers in the cells are left out{why}{names}"


def heatmap_caption(units: int, csv: str) -> dict[str, str] | None:
    """What the report says beside a heatmap of ``units`` units without numbers; None when it has them.

    ``{"text": ..., "file": csv, "tail": ...}``: the template links ``file`` between the two texts.
    """
    if numbered((units, units)):
        return None
    step = name_step(units)
    return {"text": f"Over {NUMBERED_UNITS} units this heatmap shows colours only: the numbers of its "
                    f"{units * units:,} cells are left out of the figure, and are in",
            "file": csv,
            "tail": "." + (f" One unit name in {step} is shown along each side." if step > 1 else "")}


def _mean_rounds(result: Any) -> float:
    return float(result.mean_rounds[0])


def rounds_subset(curves: Sequence[Any], attacker: str, featured: str | None = None
                  ) -> tuple[list[Any], list[str], str]:
    """The curves of a rounds plot drawn as lines, their legend labels, and the title's note.

    Parameters
    ----------
    curves : sequence of FightResult
        One per opponent of ``attacker`` (``defender`` names it), in the roster's order.
    attacker : str
    featured : str, optional
        The featured matchup's defender (always drawn).

    Returns
    -------
    drawn, labels, note
        Up to :data:`ROUNDS_CURVES` curves: all of them, labelled ``"vs X"`` (the mirror
        ``"vs itself (mirror match)"``), and no note. Past it: the featured opponent, the
        mirror match, and the :data:`EXTREMES` quickest and slowest to a result (mean
        rounds; the first listed first among equals), in the roster's order, each label
        saying why it is drawn; the note says how many are drawn out of how many.
    """
    def label(r: Any) -> str:
        return "vs itself (mirror match)" if r.defender == attacker else f"vs {r.defender}"

    if len(curves) <= ROUNDS_CURVES:
        return list(curves), [label(r) for r in curves], ""
    order = sorted(range(len(curves)), key=lambda i: (_mean_rounds(curves[i]), i))
    why: dict[int, str] = {}
    for i in reversed(order[-EXTREMES:]):
        why[i] = "slowest"
    for i in order[:EXTREMES]:
        why[i] = "quickest"
    for i, r in enumerate(curves):
        if r.defender == attacker:
            why[i] = "mirror match"
        elif featured is not None and r.defender == featured:
            why[i] = "featured"
    keep = sorted(why)
    labels = [label(curves[i]) if why[i] == "mirror match" else f"{label(curves[i])} ({why[i]})" for i in keep]
    chosen = [w for w in ("featured", "mirror match") if w in why.values()]
    note = (f"{len(keep)} of its {len(curves)} opponents drawn ({', '.join(chosen + [''])}the {EXTREMES} quickest "
            f"and {EXTREMES} slowest to a result); grey: the range of all {len(curves)}")
    return [curves[i] for i in keep], labels, note
