"""Does a points table hold beyond one budget and one seed? Every unit's score at 0.5x, 1x and 2x the budget.

A table balanced at one budget may not be at another: copies grow with the
budget, and what many copies do together is not what a few do. For each table
(the listed one and the proposed one), each budget in :data:`BUDGETS` (times
the table's) and each of three seeds, :func:`robustness` scores every unit
against the roster (the one score, :data:`analysis.stats.expected.SCORE_DEFINITION`)
on a bank of whole-copy cells at that seed and budget: both tables share the
bank, so a cell they both need is fought once. A unit a side cannot field at a
budget (it costs more than the budget, or needs more copies than a side can
hold) is left out of that roster, with the reason.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from sim.rng import root_sequence

from ..stats.pooling import twin_classes
from .cells import CellBank
from .fielding import unfieldable
from .scoring import TableScorer

__all__ = ["robustness", "robustness_seeds", "BUDGETS", "ROBUSTNESS_COLUMNS"]

#: The budgets a table is checked at, as multiples of its own.
BUDGETS = (0.5, 1.0, 2.0)

ROBUSTNESS_COLUMNS = ["table", "unit", "points", "budget", "budget_ratio", "seed", "score", "score_se", "score_lo",
                      "score_hi", "note"]


def robustness_seeds(seed: int, n: int = 3) -> list[int]:
    """``seed`` and ``n - 1`` seeds derived from it (63 bits of blake2b of ``"<seed>:robustness:<i>"``)."""
    out = [int(seed)]
    for i in range(1, n):
        digest = hashlib.blake2b(f"{int(seed)}:robustness:{i}".encode("ascii"), digest_size=8).digest()
        out.append(int.from_bytes(digest, "big") >> 1)
    return out


class _Classes:
    """The twin classes of a table (same profile and price), for :func:`analysis.stats.pooling.twin_classes`."""

    def __init__(self, units: Sequence[str], profiles: Mapping[str, str], prices: Mapping[str, float]) -> None:
        self.units = list(units)
        self.profiles = {u: profiles[u] for u in units}
        self._prices = prices

    def twins(self) -> dict[str, str]:
        return {u: f"{self.profiles[u]}@{round(float(self._prices[u]), 9)}" for u in self.units}


def robustness(context: Any, tables: Mapping[str, Mapping[str, float]], profiles: Mapping[str, str], *,
               seeds: Sequence[int], budgets: Sequence[float] = BUDGETS,
               progress: Callable[[str], Any] | None = None,
               banks: Mapping[tuple[float, int], CellBank] | None = None) -> pd.DataFrame:
    """Every unit's score in every table at each budget multiple and seed (:data:`ROBUSTNESS_COLUMNS`).

    Parameters
    ----------
    context : RunContext
        The settings of the run (its budget is the 1x budget); the seed and budget are replaced.
    tables : mapping
        Table name (``"listed"``, ``"proposed"``) -> unit -> price.
    profiles : mapping
        Unit -> fighting profile (units with one profile and one price are twins).
    seeds : sequence of int
    budgets : sequence of float
        Multiples of the context's budget.
    progress : callable, optional
        ``progress(line)`` before each budget and seed.
    banks : mapping, optional
        ``(budget multiple, seed) -> CellBank`` already fought at that budget and seed (the run's own).
    """
    rs = context.rs
    rows = []
    for ratio in budgets:
        budget = float(context.budget) * ratio
        for seed in seeds:
            ctx = dataclasses.replace(context, root=root_sequence(int(seed)), budget=budget)
            bank = (banks or {}).get((ratio, int(seed))) or CellBank(ctx)
            if progress:
                progress(f"robustness: {ratio:g}x the budget ({budget:g} points), seed {seed}")
            for name, prices in tables.items():
                why = {u: unfieldable(rs, dataclasses.replace(ctx.roster.unit(u), points=float(p)), budget)
                       for u, p in prices.items()}
                kept = [u for u in prices if why[u] is None]
                scores: dict[str, tuple[float, float]] = {}
                if len(kept) >= 2:
                    classes = twin_classes(_Classes(kept, profiles, prices), kept)
                    scorer = TableScorer(bank, budget, classes)
                    s, se = scorer.scores({r: float(prices[r]) for r in classes})
                    scores = {u: (s[r], se[r]) for r, members in classes.items() for u in members}
                for u, p in prices.items():
                    sc, e = scores.get(u, (math.nan, math.nan))
                    note = f"not fielded: {why[u]}" if why[u] else "" if u in scores else "fewer than two units fielded"
                    rows.append({"table": name, "unit": u, "points": float(p), "budget": budget, "budget_ratio": ratio,
                                 "seed": int(seed), "score": sc, "score_se": e, "score_lo": sc - 1.96 * e,
                                 "score_hi": sc + 1.96 * e, "note": note})
    return pd.DataFrame(rows, columns=ROBUSTNESS_COLUMNS)
