"""Each unit's one score at any table of prices, from whole-copy cells: the model the advice searches.

Under expected fielding a unit's score against the roster
(:data:`analysis.stats.expected.SCORE_DEFINITION`) at a table of prices is a
sum, over the other classes, of one side-averaged value per pair: the mixture
of the whole-copy cells at both classes' expected copies
(:mod:`analysis.runs.cells`). :class:`TableScorer` answers it for any table,
fighting the whole-copy cells it lacks (once: the bank keeps them, the results
store across runs) and keeping each pair value, so a table that moves one class
costs only that class's pairs. :meth:`TableScorer.crossings` gives where each
class alone would score 50% at a table (its copy curve against that table,
:mod:`analysis.runs.expected_curves`), and :func:`price_ranges` the prices a
class may take at a budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sim.errors import MatchupError

from ..stats.advice import Crossing
from ..stats.expected import ExpectedCurve, linear_crossing
from .cells import CellBank, WholeCell
from .expected_curves import complete_expected_curves
from .fielding import copy_mixture

__all__ = ["TableScorer", "price_ranges", "most_copies"]


def _key(x: float) -> float:
    return round(float(x), 9)


class TableScorer:
    """Scores of every class at any table of prices, on one bank of whole-copy cells.

    Parameters
    ----------
    bank : CellBank
        The run's cells (fights what a table needs).
    budget : float
    classes : mapping
        Representative -> member units (one profile and one price each).
    """

    def __init__(self, bank: CellBank, budget: float, classes: Mapping[str, Sequence[str]]) -> None:
        self.bank = bank
        self.budget = float(budget)
        self.classes = {r: list(m) for r, m in classes.items()}
        self.size = sum(len(m) for m in self.classes.values())
        self._pairs: dict[tuple[str, float, str, float], tuple[float, float]] = {}
        #: Whole-copy cells asked of the bank already (known to it: fought, twinned, stored or refused).
        self._asked: set[tuple[str, int, str, int]] = set()

    def _copies(self, prices: Mapping[str, float]) -> dict[str, float]:
        return {r: self.budget / float(prices[r]) for r in self.classes}

    def pair(self, rep: str, copies: float, other: str, other_copies: float) -> tuple[float, float]:
        """Side-averaged score of ``rep`` at ``copies`` against ``other`` at ``other_copies``, and its variance."""
        key = (rep, _key(copies), other, _key(other_copies))
        if key not in self._pairs:
            s = v = 0.0
            for k, w in copy_mixture(copies):
                si, vi = self.bank.side_averaged(rep, k, other, other_copies)
                s += w * si
                v += w * w * vi
            self._pairs[key] = (s, v)
            back = (other, _key(other_copies), rep, _key(copies))
            self._pairs[back] = (1.0 - s, v)  # the same cells seen from the other side: zero-sum
        return self._pairs[key]

    def fight_for(self, tables: Sequence[Mapping[str, float]]) -> None:
        """Fight, in one batch, every whole-copy cell the tables need that no pair value holds yet."""
        # as (attacker, copies, defender, copies) tuples, in the order of CellBank.cells_for: a refinement step
        # that moves every price asks again for a roster's square of cells it mostly has (making each a
        # WholeCell to find it known was a minute of a 100-unit report)
        wanted: dict[tuple[str, int, str, int], None] = {}
        for prices in tables:
            c = self._copies(prices)
            mix = {r: copy_mixture(c[r]) for r in self.classes}
            keys = {r: _key(c[r]) for r in self.classes}
            for r in self.classes:
                for o in self.classes:
                    if o == r or (r, keys[r], o, keys[o]) in self._pairs:
                        continue
                    for k, _ in mix[r]:
                        for ko, _ in mix[o]:
                            wanted[(r, k, o, ko)] = None
                            wanted[(o, ko, r, k)] = None
        if not wanted:
            return
        todo = [WholeCell(*t) for t in wanted if t not in self._asked]
        self.bank.reused += len(wanted) - len(todo)  # what CellBank.fight counts for a cell it knows already
        if todo:
            self.bank.fight(todo)
        self._asked.update(wanted)

    def prepare(self, tables: Sequence[Mapping[str, float]]) -> None:
        """Fight every table's cells in one batch and keep their pair values (the scores of each table then
        cost no fight): what the advice's linear model asks for, one table per class."""
        self.fight_for(tables)
        for prices in tables:
            c = self._copies(prices)
            for r in self.classes:
                for o in self.classes:
                    if o != r:
                        self.pair(r, c[r], o, c[o])

    def scores(self, prices: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
        """Each class's score against the whole roster at ``prices`` (class -> price), and its standard error."""
        self.fight_for([prices])
        c = self._copies(prices)
        out, se = {}, {}
        for r, members in self.classes.items():
            total, var = 0.5 * len(members), 0.0
            for o, theirs in self.classes.items():
                if o == r:
                    continue
                s, v = self.pair(r, c[r], o, c[o])
                total += len(theirs) * s
                var += len(theirs) ** 2 * v
            out[r] = total / self.size
            se[r] = math.sqrt(max(var, 0.0)) / self.size if math.isfinite(var) else math.nan
        return out, se

    def curves(self, prices: Mapping[str, float], reps: Sequence[str]) -> dict[str, ExpectedCurve]:
        """Each class's copy curve against the table ``prices``, bracketing its 50% crossing (fights what it needs)."""
        copies = self._copies(prices)
        curves = {r: ExpectedCurve(list(self.classes[r]), [o for o in self.classes if o != r], self.size,
                                   weights=np.array([len(self.classes[o]) for o in self.classes if o != r], float))
                  for r in reps}
        complete_expected_curves(self.bank, curves, copies)
        return curves

    def crossings(self, prices: Mapping[str, float], reps: Sequence[str],
                  most: Mapping[str, int | None] | None = None) -> dict[str, Crossing]:
        """Where each class alone scores 50% at the table ``prices`` (the others' prices as they are)."""
        out = {}
        for r, curve in self.curves(prices, reps).items():
            out[r] = crossing_of(curve, self.budget, (most or {}).get(r, curve.limit))
        return out


def crossing_of(curve: ExpectedCurve, budget: float, most: int | None) -> Crossing:
    """The price at which the curve's class scores 50%, and why a side cannot field it there (if so)."""
    if not curve.usable():
        return Crossing(math.nan, "no opponent could be fought")
    ks, m = curve.means()
    k = linear_crossing(ks, m)
    most = most if most is not None else curve.limit
    if math.isnan(k):
        return Crossing(math.nan, "too few copies fought to place 50%")
    if k == math.inf:
        return Crossing(0.0, "more copies do not raise its score to 50%")
    if k <= 0:
        return Crossing(math.inf, "scores above 50% even with one copy: worth more than the whole budget")
    price = budget / k
    if most is not None and k > most + 1e-9:
        return Crossing(price, f"needs {k:.3g} copies, more than a side can field ({most})")
    if k < 1 - 1e-9:
        return Crossing(price, "scores above 50% even with one copy: worth more than the whole budget")
    return Crossing(price)


def most_copies(rs: Any, unit: Any, start: int = 1, cap: int = 100_000) -> int:
    """The most copies of ``unit`` one side can field (the ruleset's per-side limits), by doubling and bisection."""
    def fits(k: int) -> bool:
        try:
            rs.copies(unit, k)
            return True
        except MatchupError:
            return False

    lo = max(1, int(start))
    if not fits(lo):
        lo = 1
    hi = max(2, 2 * lo)
    while fits(hi):
        lo, hi = hi, 2 * hi
        if hi > cap:
            return cap
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def price_ranges(rs: Any, units: Mapping[str, Any], listed: Mapping[str, float], budget: float, *,
                 locked: Sequence[str] = (), max_change: float | None = None
                 ) -> tuple[dict[str, tuple[float, float]], dict[str, int]]:
    """Each class's price range (cheapest fieldable to one copy, within ``max_change`` of its listed price; a
    locked class at its listed price), and the most copies a side fields of it."""
    ranges, most = {}, {}
    for r, unit in units.items():
        p0 = float(listed[r])
        k = most_copies(rs, unit, math.ceil(budget / p0 - 1e-9))
        most[r] = k
        lo, hi = budget / k, float(budget)
        if max_change is not None:
            lo, hi = max(lo, p0 * (1 - max_change)), min(hi, p0 * (1 + max_change))
        if r in locked:
            lo = hi = p0
        ranges[r] = (min(lo, p0), max(hi, p0)) if lo <= hi else (p0, p0)
    return ranges, most
