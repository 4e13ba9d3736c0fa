"""Copy curves under expected fielding: the whole copy counts each class needs to bracket its 50% crossing.

A class of identical units (:func:`analysis.stats.pooling.twin_classes`: same
profile, same price) has its score against the roster at the whole copies its
matrix cells already fought (``k`` and ``k + 1`` for ``k + f`` expected
copies). :func:`complete_expected_curves` fights further whole copy counts, in
batches of every class's next count, until each crossing lies between two
adjacent counts (or the ruleset's per-side limit, or one copy, stops the search).
The cells are the matrix's :class:`~analysis.runs.cells.CellBank`: a cell fought
once is never fought again, in this run or, through the results store, another.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from sim.errors import MatchupError

from ..stats.expected import DEFAULT_TOLERANCE, ExpectedCurve, expected_frame, linear_crossing, price_curve
from ..stats.pooling import twin_classes
from .cells import CellBank
from .fielding import copy_mixture

__all__ = ["expected_curves", "complete_expected_curves", "expected_fair_points", "MAX_SEARCH_ROUNDS",
           "price_rng"]

#: Batches of further copy counts before the search settles for an extrapolation.
MAX_SEARCH_ROUNDS = 10


def price_rng(seed: Any, label: str) -> np.random.Generator:
    """The bootstrap stream of one class's price: derived from the run's seed and the class, never from a default."""
    entropy = int(getattr(seed, "entropy", seed) or 0) % (1 << 63)
    return np.random.default_rng([entropy, int.from_bytes(label.encode("utf-8")[:8].ljust(8, b"\0"), "little")])


def expected_curves(bank: CellBank, classes: Mapping[str, list[str]], copies: Mapping[str, float],
                    roster: Sequence[str]) -> dict[str, ExpectedCurve]:
    """One empty curve per class (its representative names it): every other class an opponent, through its
    representative, weighted by its size (the roster's units each count once)."""
    return {rep: ExpectedCurve(list(members), [o for o in classes if o != rep], len(roster),
                               weights=np.array([len(classes[o]) for o in classes if o != rep], float))
            for rep, members in classes.items()}


def _fill(bank: CellBank, rep: str, curve: ExpectedCurve, k: int, copies: Mapping[str, float]) -> None:
    rows = [bank.side_averaged(rep, k, o, copies[o]) for o in curve.opponents]
    curve.scores[k] = (np.array([r[0] for r in rows], float), np.array([r[1] for r in rows], float))


def _fieldable(bank: CellBank, rep: str, k: int) -> bool:
    try:
        bank.context.rs.copies(bank.unit(rep), k)
        return True
    except MatchupError:
        return False


def _most_fieldable(bank: CellBank, rep: str, below: int, at_least: int) -> int:
    """The most copies a side can field, between ``at_least`` (fieldable) and ``below`` (not): bisection."""
    lo, hi = at_least, below
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _fieldable(bank, rep, mid) else (lo, mid)
    return lo


def _next_copies(curve: ExpectedCurve) -> int | None:
    """The next whole copy count to fight, or None once 50% lies between adjacent counts (or cannot be reached)."""
    ks, m = curve.means()
    if not len(ks):
        return None
    kk = ks.astype(int)
    above = np.flatnonzero(m >= 0.5)
    if len(above) and above[0] > 0:
        lo, hi = kk[above[0] - 1], kk[above[0]]
        if hi - lo <= 1:
            return None
        guess = linear_crossing(ks, m)
        return int(min(max(math.floor(guess), lo + 1), hi - 1)) if math.isfinite(guess) else (lo + hi) // 2
    if len(above):  # even the fewest copies tried reach 50%: fewer
        low = int(kk[0])
        if low <= 1:  # worth more than the budget: a second count gives the slope the crossing is extrapolated on
            return 2 if len(kk) == 1 and (curve.limit is None or curve.limit >= 2) else None
        guess = linear_crossing(ks, m) if len(ks) > 1 else math.nan
        k = math.floor(guess) if math.isfinite(guess) and guess >= 1 else low - max(1, low // 4)
        return int(min(max(k, 1, low // 2), low - 1))
    high = int(kk[-1])  # every count tried stays below 50%: more
    if curve.limit is not None and high >= curve.limit:
        # the side's limit: a count below gives the slope the crossing is extrapolated along
        return high - 1 if len(kk) == 1 and high > 1 else None
    guess = linear_crossing(ks, m) if len(ks) > 1 else math.nan
    k = math.ceil(guess) if math.isfinite(guess) else high + max(1, high // 4)
    k = int(max(min(k, 2 * high), high + 1))
    return k if curve.limit is None else min(k, curve.limit)


def complete_expected_curves(bank: CellBank, curves: dict[str, ExpectedCurve], copies: Mapping[str, float],
                             progress: Callable[[int, int], None] | None = None,
                             rounds_cap: int = MAX_SEARCH_ROUNDS) -> int:
    """Fill every curve at the matrix's copies, then fight further counts until each crossing is bracketed.

    Returns the number of whole-copy cells fought for the search (cells already
    in the bank cost nothing).
    """
    before = bank.fought
    for rep, curve in curves.items():
        for k, _ in copy_mixture(copies[rep]):
            bank.fight([c for o in curve.opponents for c in bank.cells_for(rep, k, o, copies[o])], progress)
            _fill(bank, rep, curve, k, copies)
    for _ in range(rounds_cap):
        wanted: dict[str, int] = {}
        for rep, curve in curves.items():
            k = _next_copies(curve) if curve.usable() else None
            if k is not None and k not in curve.scores and not _fieldable(bank, rep, k):
                # the side's per-side limit caps the search: the most copies that still fit
                curve.limit = _most_fieldable(bank, rep, k, max(kk for kk in curve.scores if kk < k))
                k = _next_copies(curve)
            if k is not None and k not in curve.scores:
                wanted[rep] = k
        if not wanted:
            break
        bank.fight([c for rep, k in wanted.items() for o in curves[rep].opponents
                    for c in bank.cells_for(rep, k, o, copies[o])], progress)
        for rep, k in wanted.items():
            _fill(bank, rep, curves[rep], k, copies)
    return bank.fought - before


def expected_fair_points(matrix: Any, *, seed: Any = 0, tolerance: float = DEFAULT_TOLERANCE,
                         progress: Callable[[int, int], None] | None = None,
                         curves: dict[str, ExpectedCurve] | None = None) -> Any:
    """Fair prices of a matrix under expected fielding (:mod:`analysis.stats.expected`), fighting what they need.

    Returns
    -------
    pandas.DataFrame
        :data:`analysis.stats.expected.EXPECTED_COLUMNS`, one row per unit;
        ``.attrs["curves"]`` the completed curves.
    """
    bank, budget = matrix.bank, float(matrix.budget)
    classes = twin_classes(matrix, list(matrix.units))
    if curves is None:
        curves = expected_curves(bank, classes, matrix.copies, list(matrix.units))
        complete_expected_curves(bank, curves, matrix.copies, progress)
    points = {u: float(getattr(matrix.context.roster.unit(u), "points", math.nan) or math.nan)
              for u in matrix.units}
    rows, replicates = [], {}
    for rep, members in classes.items():
        est = price_curve(curves[rep], budget, points[rep], tolerance=tolerance, rng=price_rng(seed, rep))
        replicates[rep] = est["replicates"]
        for u in members:
            rows.append({"unit": u, "points": points[u], "copies": matrix.copies[u],
                         "fielded": matrix.copies[u] * points[u], "ratio": est["fair_points"] / points[u],
                         "method": "expected", "beyond": "" if est["fieldable"] else est["note"],
                         "tolerance": tolerance, **{k: v for k, v in est.items() if k not in ("replicates", "k_star")}})
    order = {u: i for i, u in enumerate(matrix.units)}
    rows.sort(key=lambda r: order[r["unit"]])
    out = expected_frame(rows, budget, tolerance)
    out.attrs.update(curves=curves, replicates=replicates)
    return out
