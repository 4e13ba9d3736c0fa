"""The advice of a report: the fewest price changes that balance the roster, found on the fights themselves.

:func:`advise` answers :func:`analysis.stats.advice.fewest_changes` with the
matrix's own cells: every score at a table of prices is the expected-fielding
mixture of whole-copy cells (:class:`~analysis.runs.scoring.TableScorer`), so
the listed table costs nothing more than the matrix, a table that moves one
class needs only that class's copy counts (its copy curve has most of them),
and whatever a candidate needs is fought once (the results store keeps it for
the next run). The proposed prices are rounded for the whole table at once
(:func:`analysis.runs.rounding.round_jointly`) and scored again on the same
cells: that is the advised table the report shows and ``rebalance`` writes and
proves.

Where prices do not enter the fights (one unit a side: the calibration model)
or a price change within one step of copies changes nothing (``--fielding
whole``), a unit's fair price does not move with the others', and the advice
is each unit outside the tolerance moved to its own fair price (``method``
``"per unit"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from sim.errors import InputError

from ..stats.advice import fewest_changes
from ..stats.expected import DEFAULT_TOLERANCE
from ..stats.pooling import twin_classes
from ..stats.verdicts import Advice, advice_table, harmless_or_invulnerable, per_unit_advice
from .rounding import round_jointly
from .scoring import TableScorer, price_ranges

__all__ = ["advise", "check_advice_arguments", "score_frame"]


def check_advice_arguments(tolerance: Any, round_to: Any, max_change: Any) -> None:
    """One clear line for a tolerance, a rounding step or a cap that cannot be used."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance <= 0.25:
        raise InputError(f"tolerance: got {tolerance!r}, expected a score tolerance in (0, 0.25] (0.02 = 2 pp)")
    if isinstance(round_to, bool) or not isinstance(round_to, (int, float)) or not math.isfinite(round_to) \
            or round_to <= 0:
        raise InputError(f"round_to: got {round_to!r}, expected a positive number of points (1 rounds to whole points)")
    if max_change is not None and (isinstance(max_change, bool) or not isinstance(max_change, (int, float))
                                   or not 0 < max_change < 10):
        raise InputError(f"max_change: got {max_change!r}, expected a relative change in (0, 10) (0.15 = 15%), "
                         "or None for no cap")


def score_frame(scores: Mapping[str, float], se: Mapping[str, float], classes: Mapping[str, Sequence[str]]
                ) -> pd.DataFrame:
    """``unit, score, score_se, score_lo, score_hi`` from class scores (every member the class's)."""
    rows = []
    for r, members in classes.items():
        s, e = float(scores[r]), float(se[r])
        for u in members:
            rows.append({"unit": u, "score": s, "score_se": e, "score_lo": s - 1.96 * e, "score_hi": s + 1.96 * e})
    return pd.DataFrame(rows, columns=["unit", "score", "score_se", "score_lo", "score_hi"])


def advise(matrix: Any, fair: pd.DataFrame | None = None, *, tolerance: float = DEFAULT_TOLERANCE,
           lock: Sequence[str] = (), max_change: float | None = None, round_to: float = 1.0,
           log: Callable[[str], Any] | None = None, units: Sequence[str] | None = None) -> Advice:
    """The fewest price changes under which every unit points can balance scores within ``tolerance`` of 50%.

    Parameters
    ----------
    matrix : MatchupMatrix
        Under expected fielding with its cells (a report's or a rebalance's headline matrix), for the
        joint solution; otherwise the per-unit model.
    fair : DataFrame, optional
        The matrix's fair-price table (needed for the per-unit model; the joint search prices
        each class itself, on the same cells).
    tolerance : float
        A unit is balanced within ``50% +- tolerance`` (0.02 = 2 pp).
    lock : sequence of str
        Units whose price stays.
    max_change : float, optional
        The most any price may change, relative (0.15 = 15%); a unit that needs more is named with
        what it needs and moved as far as the cap allows.
    round_to : float
        Advised prices are multiples of this (whole points by default).
    log : callable, optional
        ``log(line)`` as the search goes.
    units : sequence of str, optional
        The roster to balance, a subset of the matrix's units (default: all of them).

    Returns
    -------
    Advice
    """
    check_advice_arguments(tolerance, round_to, max_change)
    units = list(matrix.units) if units is None else [u for u in matrix.units if u in set(units)]
    classes = twin_classes(matrix, units)
    long = matrix.long[matrix.long["attacker"].isin(units) & matrix.long["defender"].isin(units)]
    special = harmless_or_invulnerable(long, units)
    roster = matrix.context.roster if getattr(matrix, "context", None) is not None else None
    listed = {u: float(getattr(roster.unit(u), "points", math.nan) or math.nan) if roster is not None
              else float(_points_of(matrix.long, u)) for u in units}
    if getattr(matrix, "fielding", "whole") != "expected" or getattr(matrix, "bank", None) is None \
            or matrix.budget is None:
        return per_unit_advice(long, classes, units, listed, fair, tolerance=tolerance, budget=matrix.budget,
                               round_to=round_to, lock=lock)
    rs = matrix.context.rs
    budget = float(matrix.budget)
    scorer = TableScorer(matrix.bank, budget, classes)
    locked_reps = [r for r, m in classes.items() if any(u in lock for u in m)]
    ranges, most = price_ranges(rs, {r: roster.unit(r) for r in classes}, {r: listed[r] for r in classes}, budget,
                                locked=locked_reps, max_change=max_change)
    special_reps = {r: special[r] for r in classes if r in special}
    solution = fewest_changes(classes, {r: listed[r] for r in classes}, scorer.scores,
                              lambda prices, reps: scorer.crossings(prices, reps, most),
                              tolerance=tolerance, ranges=ranges, exempt=special_reps, max_change=max_change, log=log,
                              prefetch=scorer.prepare)
    profile_of = {r: getattr(matrix, "profiles", {}).get(r, r) for r in classes}
    rounded = round_jointly(scorer, solution.prices, solution.changed, solution.held, float(round_to), ranges,
                            profile_of, log) if solution.changed else dict(solution.prices)
    before = score_frame(solution.before, solution.before_se, classes)
    s_after, se_after = scorer.scores(rounded)
    after = score_frame(s_after, se_after, classes)
    worst = max((abs(s_after[r] - 0.5) for r in solution.held), default=0.0)
    member_of = {u: r for r, m in classes.items() for u in m}
    exempt = {u: solution.exempt[member_of[u]] for u in units if member_of[u] in solution.exempt}
    needs = {u: solution.needs[member_of[u]] for u in units if member_of[u] in solution.needs}
    advised = {u: float(rounded[member_of[u]]) for u in units}
    table = advice_table(units, listed, advised, before, after, tolerance=tolerance, exempt=exempt,
                         special=special, locked=[u for u in units if member_of[u] in locked_reps], needs=needs,
                         max_change=max_change)
    n_changed = int((table["advised_points"] != table["points"]).sum())
    note = (f"joint: {'nothing to change' if not n_changed else f'{n_changed} of {len(units)} prices change'}"
            f"; every other price stays; found on this run's fights ({solution.tried} candidate sets refined)")
    return Advice(table, tolerance, "joint", worst <= tolerance + 1e-12, worst, float(round_to), max_change,
                  tuple(u for u in units if member_of[u] in locked_reps), solution.tried, solution.fallback, note,
                  {"classes": classes, "ranges": ranges, "most": most, "unrounded": solution.prices,
                   "solution": solution})


def _points_of(long: pd.DataFrame, unit: str) -> float:
    rows = long[long["attacker"] == unit]
    return float(rows["points_attacker"].iloc[0]) if "points_attacker" in long and len(rows) else math.nan
