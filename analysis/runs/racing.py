"""Racing: more fights where a unit's verdict is still in doubt.

A score target (:mod:`analysis.runs.allocation`) puts every unit's score within
``+-h``. What a designer acts on is whether a score lies outside ``50% +-
tolerance`` (:func:`analysis.stats.expected.verdict_of`: its 95% interval wholly
beyond a bound). A unit whose interval holds one of the two bounds could be
called either way by the noise of its cells, while every other unit's verdict is
already settled. So the fights that decide verdicts go to those units, as in
racing or successive halving: each round

1. scores every unit from the matrix's cells (:func:`analysis.stats.expected.unit_scores`,
   the one score of every table);
2. takes the units whose interval, widened :data:`RACE_MARGIN` times about its score,
   holds ``50% - tolerance`` or ``50% + tolerance``;
3. fights their cells (both roles, against every opponent, at the matrix's copies) on
   until each cell's score variance is a :data:`RACE_FACTOR`-th of the bound before,
   which halves those units' half-widths.

After :data:`RACE_ROUNDS` rounds, or once no unit is near a bound, it stops; the
units whose own 95% interval still holds a bound are named (in doubt).

Why the margin: a unit whose true score sits on a bound has an interval that holds
the bound exactly when it covers the score, so racing only those units leaves the
5% that missed it unraced, and its coverage falls to about 91% (simulated: one
round, a unit on the bound; 95% again far from it). Racing every unit within 1.5
half-widths of a bound catches nearly all of them: the worst coverage near a
bound is then about 93%, and the average over a roster stays at 95% (far from a
bound nothing changes). A cell fought on continues its own stream
(:meth:`analysis.runs.cells.CellBank.race`), so the rounds, and every number, are
the same for any worker count, order or scheduler, and a rerun takes the raced
cells from the results store like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sim.stats import Z95

from ..stats.expected import unit_scores
from .cells import CellBank, Cell, WholeCell, mixed_numbers, pair_mixtures

__all__ = ["RACE_ROUNDS", "RACE_FACTOR", "RACE_MARGIN", "Race", "starting_variance", "in_doubt", "race"]

#: Rounds of racing at most: two rounds quarter a unit's score half-width (sixteen times its cells' fights).
RACE_ROUNDS = 2
#: Each round divides the raced cells' score-variance bound by this (halving the raced units' half-widths).
RACE_FACTOR = 4
#: A unit is raced when its 95% interval widened this many times about its score holds a bound.
RACE_MARGIN = 1.5


@dataclass(frozen=True)
class Race:
    """What racing did.

    Attributes
    ----------
    tolerance : float
        The verdict bounds are ``50% +- tolerance``.
    rounds : tuple of tuple of str
        The units raced in each round (in roster order).
    cell_variance : tuple of float
        The cells' score-variance bound of each round.
    cells : int
        Whole-copy cells answered anew (:meth:`~analysis.runs.cells.CellBank.race`: a twin's cell, the same
        fight, counts too).
    in_doubt : tuple of str
        Units whose 95% interval still holds a bound after the last round.
    """

    tolerance: float
    rounds: tuple[tuple[str, ...], ...]
    cell_variance: tuple[float, ...]
    cells: int
    in_doubt: tuple[str, ...]

    def describe(self) -> str:
        """One sentence for the settings: what racing fought, or that no verdict was in doubt."""
        bounds = f"{100 * (0.5 - self.tolerance):g}% or {100 * (0.5 + self.tolerance):g}%"
        near = f"within {RACE_MARGIN:g} half-widths of a verdict bound ({bounds})"
        if not self.rounds:
            return f"racing: no unit's score was {near}, so no cell was fought on"
        raced = sorted({u for r in self.rounds for u in r})
        named = ", ".join(raced[:6]) + (f" and {len(raced) - 6} more" if len(raced) > 6 else "")
        text = (f"racing: {len(raced)} unit(s) whose score was {near} had their cells fought on, "
                f"{len(self.rounds)} round(s), {self.cells:,} cells ({named})")
        if self.in_doubt:
            text += f"; still in doubt: {', '.join(self.in_doubt)}"
        return text

    def settings(self) -> dict[str, Any]:
        """The entries of ``metadata.json`` (under ``score_target.racing``)."""
        return {"tolerance": self.tolerance, "rounds": [list(r) for r in self.rounds],
                "cell_score_variance": list(self.cell_variance), "cells": self.cells,
                "in_doubt": list(self.in_doubt), "max_rounds": RACE_ROUNDS, "factor": RACE_FACTOR,
                "margin": RACE_MARGIN}


def starting_variance(cell_variance: float, half_width: float | None) -> float:
    """The cells' score-variance bound racing starts from: the score target's, or, where the cells are also
    fought to their own Wilson ``half_width`` (a small roster), the variance that half-width means if lower
    (an even cell's ``p (1 - p) / n``): the first round must ask more than the cells already have."""
    if half_width is None:
        return float(cell_variance)
    return min(float(cell_variance), (float(half_width) / Z95) ** 2)


def in_doubt(scores: pd.DataFrame, tolerance: float, margin: float = 1.0) -> list[str]:
    """The units of ``scores`` (:func:`~analysis.stats.expected.unit_scores`) whose 95% interval, widened
    ``margin`` times about the score, holds ``50% - tolerance`` or ``50% + tolerance`` (``margin`` 1: their
    verdict depends on their cells' noise; :data:`RACE_MARGIN`: the units racing fights for)."""
    out = []
    for row in scores.itertuples(index=False):
        s = float(row.score)
        lo, hi = s - margin * (s - float(row.score_lo)), s + margin * (float(row.score_hi) - s)
        if any(lo <= bound <= hi for bound in (0.5 - tolerance, 0.5 + tolerance)):
            out.append(str(row.unit))
    return out


def _classes(names: Sequence[str], twins: Mapping[str, str]) -> dict[str, list[str]]:
    classes: dict[str, list[str]] = {}
    first: dict[str, str] = {}
    for u in names:
        classes.setdefault(first.setdefault(twins[u], u), []).append(u)
    return classes


def _scores(cells: Mapping[tuple[str, str], Cell], classes: Mapping[str, list[str]]) -> pd.DataFrame:
    long = pd.DataFrame([{"attacker": a, "defender": d, **c.numbers} for (a, d), c in cells.items()])
    return unit_scores(long, classes)


def race(bank: CellBank, names: Sequence[str], copies: Mapping[str, float], twins: Mapping[str, str],
         cells: dict[tuple[str, str], Cell], cell_variance: float, tolerance: float, progress: Any = None,
         rounds: int = RACE_ROUNDS) -> tuple[dict[tuple[str, str], Cell], Race]:
    """Race the units in doubt (see the module docstring); return the matrix's cells after it, and what it did.

    Parameters
    ----------
    bank : CellBank
        The matrix's whole-copy cells (the raced ones are answered anew in it).
    names : sequence of str
        The matrix's units (every pair of them fought or refused).
    copies : mapping
        Expected copies of each unit.
    twins : mapping
        Unit -> twin key (:meth:`analysis.runs.matrix.MatchupMatrix.twins`): twins score once.
    cells : dict
        The matrix's cells (:func:`analysis.runs.cells.mixed_cells`).
    cell_variance : float
        The cells' score-variance bound so far (:func:`starting_variance`).
    tolerance : float
        Verdict bounds ``50% +- tolerance``.
    """
    classes = _classes(names, twins)
    done: list[tuple[str, ...]] = []
    bounds: list[float] = []
    fought = 0
    variance = float(cell_variance)
    scores = _scores(cells, classes)
    doubt = in_doubt(scores, tolerance, RACE_MARGIN)
    for _ in range(int(rounds)):
        if not doubt:
            break
        variance /= RACE_FACTOR
        pairs = list(dict.fromkeys(p for u in doubt for o in names for p in ((u, o), (o, u))))
        mixes = pair_mixtures(names, copies, pairs)
        whole = [WholeCell(a, ka, d, kd) for (a, d), mix in mixes.items() for ka, kd, _ in mix]
        fought += bank.race(whole, variance, progress)
        redone, _ = mixed_numbers(bank, mixes)
        cells = {**cells, **redone}
        done.append(tuple(doubt))
        bounds.append(variance)
        scores = _scores(cells, classes)
        doubt = in_doubt(scores, tolerance, RACE_MARGIN)
    still = tuple(in_doubt(scores, tolerance)) if done else ()  # unraced units' intervals hold no bound
    return cells, Race(float(tolerance), tuple(done), tuple(bounds), fought, still)
