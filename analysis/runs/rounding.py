"""Rounding a rebalanced table: each changed price down or up, chosen for the whole table at once.

A whole point is several per cent of a cheap unit's price: rounding it moves
that unit's score by a point or more, and moves every other unit's score a
little through the copies it fields against them. Rounding each price alone
(to whichever neighbour scores nearer 50% on its own curve) ignores the second
effect, and the residues add up on a large roster. :func:`round_jointly` starts
from that rounding and changes one unit's direction at a time while the table's
largest ``|score - 50%|`` (then the sum of squares) falls. Every score is the
exact expected-fielding mixture of whole-copy cells in the search's
:class:`~analysis.runs.cells.CellBank`; a copy count not fought yet is fought
once. Units with one profile (twins, and clones listed at another price) always
round alike, so they keep one price.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .cells import CellBank
from .fielding import copy_mixture, profile_key, unfieldable

__all__ = ["round_jointly", "table_scores", "MAX_PASSES"]

#: Sweeps over the units at most (each sweep tries every unit's other direction once).
MAX_PASSES = 4


def _as_points(p: float) -> float:
    return float(int(p)) if float(p).is_integer() else float(p)


def table_scores(bank: CellBank, prices: Mapping[str, float], budget: float, units: Sequence[str],
                 excluded: Sequence[str], profile_of: Mapping[str, str]) -> dict[str, float]:
    """Each balanceable unit's score against the balanceable roster at ``prices`` (expected fielding).

    Units with one profile and one price fight alike: they are one class, whose
    own units count 1/2 each, as in :class:`~analysis.stats.expected.ExpectedCurve`.
    """
    copies = {u: budget / prices[u] for u in units}
    kept = [u for u in units if u not in excluded]
    classes: dict[tuple[str, float], list[str]] = {}
    for u in kept:
        classes.setdefault((profile_of[u], round(float(prices[u]), 9)), []).append(u)
    plans = []
    for members in classes.values():
        rep, opponents = members[0], [o for o in kept if o not in members]
        plans.append((rep, members, opponents))
    bank.fight([c for rep, _, opponents in plans for k, _ in copy_mixture(copies[rep]) for o in opponents
                for c in bank.cells_for(rep, k, o, copies[o])])
    out = {}
    for rep, members, opponents in plans:
        total = 0.0
        for k, w in copy_mixture(copies[rep]):
            total += w * sum(bank.side_averaged(rep, k, o, copies[o])[0] for o in opponents)
        score = (0.5 * len(members) + total) / len(kept)
        for u in members:
            out[u] = score
    return out


def _badness(scores: Mapping[str, float]) -> tuple[float, float]:
    devs = [abs(s - 0.5) for s in scores.values()]
    if not devs or not all(math.isfinite(d) for d in devs):
        return math.inf, math.inf
    return round(max(devs), 12), round(sum(d * d for d in devs), 12)


def round_jointly(bank: CellBank, rs: Any, roster: Any, prices: Mapping[str, float], start: Mapping[str, float],
                  fixed: Sequence[str], excluded: Sequence[str], step: float, budget: float,
                  log: Callable[[str], None] | None = None) -> dict[str, float]:
    """The rounded table: ``start`` (each price rounded alone) improved one direction at a time.

    Parameters
    ----------
    bank : CellBank
        The search's cells (fights any copy count the candidates need).
    rs, roster
        The ruleset and the roster (profiles, per-side limits).
    prices : mapping
        The search's unrounded prices.
    start : mapping
        Every unit's price rounded alone, a multiple of ``step`` (fixed units at their price).
    fixed : sequence of str
        Units whose price does not move (locked, or kept at their listed price).
    excluded : sequence of str
        Units points cannot balance: they are not held to 50% and leave the others' roster.
    step : float
        ``--round-to``.
    budget : float
        The budget in force.

    Returns
    -------
    dict
        unit -> rounded price; units with one profile share one price.
    """
    units = list(roster.names)
    profile_of = {u: profile_key(rs, roster.unit(u)) for u in units}
    groups: dict[str, list[str]] = {}
    for u in units:
        if u not in fixed and u not in excluded:
            groups.setdefault(profile_of[u], []).append(u)
    options: dict[str, tuple[float, ...]] = {}
    for key, members in groups.items():
        p = sum(float(prices[u]) for u in members) / len(members)
        lo, hi = max(step, step * math.floor(p / step)), max(step, step * math.ceil(p / step))
        fits = tuple(_as_points(q) for q in dict.fromkeys((lo, hi))
                     if unfieldable(rs, dataclasses.replace(roster.unit(members[0]), points=q), budget) is None)
        if fits:
            options[key] = fits
    table = dict(start)
    for key, members in groups.items():  # one profile, one price: the option nearest the start's first member
        if key in options:
            choice = min(options[key], key=lambda q: abs(q - float(start[members[0]])))
            table.update({u: choice for u in members})
    best = _badness(table_scores(bank, table, budget, units, excluded, profile_of))
    first = best
    for _ in range(MAX_PASSES):
        improved = False
        for key, opts in options.items():
            members = groups[key]
            for q in opts:
                if q == table[members[0]]:
                    continue
                trial = {**table, **{u: q for u in members}}
                score = _badness(table_scores(bank, trial, budget, units, excluded, profile_of))
                if score < best:
                    table, best, improved = trial, score, True
        if not improved:
            break
    if log is not None and best < first:
        log(f"rounding chosen for the whole table: largest gap {100 * first[0]:.2f} -> {100 * best[0]:.2f} pp "
            "on the search's cells")
    return table
