"""Rounding a rebalanced table: each changed price down or up, chosen for the whole table at once.

A whole point is several per cent of a cheap unit's price: rounding it moves
that unit's score by a point or more, and moves every other unit's score a
little through the copies it fields against them. Rounding each price alone
(to whichever neighbour scores nearer 50% on its own curve) ignores the second
effect, and the residues add up on a large roster. :func:`round_jointly`
chooses down or up for every changed unit together: the table with the smallest
largest ``|score - 50%|`` (then sum of squares). Each unit's score is a sum over
its opponents of one cell value per pair of choices, so every table of up to
:data:`MAX_EXHAUSTIVE` choosing units is scored at once (2^16 tables in blocks);
beyond that, flips of one or two units from the rounding alone run while they
help. The cell values are the exact expected-fielding mixtures of whole-copy
cells in the search's :class:`~analysis.runs.cells.CellBank`; a copy count not
fought yet is fought once. Units with one profile (twins, and clones listed at
another price) always round alike, so they keep one price.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .cells import CellBank
from .fielding import copy_mixture, profile_key, unfieldable

__all__ = ["round_jointly", "table_scores", "MAX_EXHAUSTIVE", "MAX_PASSES"]

#: Up to this many units with a choice, every table is scored (2^16 tables); beyond, flips from the start.
MAX_EXHAUSTIVE = 16

#: Rounds of one- and two-unit flips at most, beyond :data:`MAX_EXHAUSTIVE`.
MAX_PASSES = 50

#: Pair values gathered at once while tables are scored (32 MiB of float64).
TABLE_CELLS = 1 << 22


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


def _pair_scores(bank: CellBank, kept: Sequence[str], price_options: Mapping[str, Sequence[float]],
                 profile_of: Mapping[str, str], budget: float) -> np.ndarray:
    """``C[i, a, o, b]``: unit i at its option a against unit o at its option b (twins at one price: 1/2).

    A table's scores are then ``(1/2 + sum over o != i of C[i, a_i, o, a_o]) / n``,
    exactly :func:`table_scores`; every copy count any option needs is fought first.
    """
    copies = {u: [budget / p for p in price_options[u]] for u in kept}
    bank.fight([c for i in kept for ci in copies[i] for k, _ in copy_mixture(ci) for o in kept if o != i
                for co in copies[o] for c in bank.cells_for(i, k, o, co)])
    n = len(kept)
    pair = np.zeros((n, 2, n, 2))
    for x, i in enumerate(kept):
        for a, ci in enumerate(copies[i]):
            for y, o in enumerate(kept):
                if o == i:
                    continue
                for b, co in enumerate(copies[o]):
                    if profile_of[i] == profile_of[o] and price_options[i][a] == price_options[o][b]:
                        pair[x, a, y, b] = 0.5  # one class: its members count 1/2 against each other
                    else:
                        pair[x, a, y, b] = sum(w * bank.side_averaged(i, k, o, co)[0] for k, w in copy_mixture(ci))
                if len(copies[o]) == 1:
                    pair[x, a, y, 1] = pair[x, a, y, 0]
        if len(copies[i]) == 1:
            pair[x, 1] = pair[x, 0]
    return pair


def _badness(pair: np.ndarray, choices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Largest |score - 50%| and the sum of squares of each table (``choices``: tables x units, 0 or 1)."""
    n = pair.shape[0]
    idx = np.arange(n)
    got = pair[idx[None, :, None], choices[:, :, None], idx[None, None, :], choices[:, None, :]]
    dev = np.abs((0.5 + got.sum(axis=2)) / n - 0.5)
    return np.round(dev.max(axis=1), 12), np.round((dev ** 2).sum(axis=1), 12)


def _per_unit(groups: np.ndarray, unit_group: np.ndarray) -> np.ndarray:
    """Tables of group choices -> tables of unit choices (a unit without a choice reads the zero column)."""
    padded = np.hstack([groups, np.zeros((len(groups), 1), dtype=groups.dtype)])
    return padded[:, unit_group]


def _best(pair: np.ndarray, tables: np.ndarray, unit_group: np.ndarray) -> tuple[int, tuple[float, float]]:
    """The index of the group-choice table with the smallest largest gap (then sum of squares), and those two."""
    n = pair.shape[0]
    block = max(1, TABLE_CELLS // (n * n))  # memory stays flat: tables x units x units values per block
    worst, squares = np.concatenate([np.stack(_badness(pair, _per_unit(tables[b:b + block], unit_group)))
                                     for b in range(0, len(tables), block)], axis=1)
    i = int(np.lexsort((squares, worst))[0])
    return i, (float(worst[i]), float(squares[i]))


def _search(pair: np.ndarray, unit_group: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The group choices (0 floor, 1 ceiling) with the smallest largest gap: every table when there are at most
    2^:data:`MAX_EXHAUSTIVE` of them, else flips of one or two groups from ``start`` while they help."""
    n_groups = len(start)
    if n_groups <= MAX_EXHAUSTIVE:
        grid = ((np.arange(2 ** n_groups)[:, None] >> np.arange(n_groups)[None, :]) & 1).astype(np.int8)
        return grid[_best(pair, grid, unit_group)[0]]
    eye = np.eye(n_groups, dtype=np.int8)
    flips = np.array([eye[g] for g in range(n_groups)]
                     + [eye[g] + eye[h] for g in range(n_groups) for h in range(g + 1, n_groups)])
    current = start.astype(np.int8)
    _, score = _best(pair, current[None, :], unit_group)
    for _ in range(MAX_PASSES):
        tables = current[None, :] ^ flips
        i, trial = _best(pair, tables, unit_group)
        if trial >= score:
            break
        current, score = tables[i], trial
    return current


def round_jointly(bank: CellBank, rs: Any, roster: Any, prices: Mapping[str, float], start: Mapping[str, float],
                  fixed: Sequence[str], excluded: Sequence[str], step: float, budget: float,
                  log: Callable[[str], None] | None = None) -> dict[str, float]:
    """The rounded table: each changed price's floor or ceiling, chosen for the whole table.

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
    kept = [u for u in units if u not in excluded]
    profile_of = {u: profile_key(rs, roster.unit(u)) for u in units}
    groups: dict[str, list[str]] = {}
    for u in kept:
        if u not in fixed:
            groups.setdefault(profile_of[u], []).append(u)
    price_options: dict[str, tuple[float, ...]] = {u: (float(start[u]),) for u in kept}
    choosing: list[list[str]] = []
    for members in groups.values():
        p = sum(float(prices[u]) for u in members) / len(members)
        lo, hi = max(step, step * math.floor(p / step)), max(step, step * math.ceil(p / step))
        fits = tuple(float(q) for q in dict.fromkeys((lo, hi))
                     if unfieldable(rs, dataclasses.replace(roster.unit(members[0]), points=q), budget) is None)
        if len(fits) == 2:
            choosing.append(members)
            price_options.update({u: fits for u in members})
        elif fits:
            price_options.update({u: fits for u in members})
    if not choosing or len(kept) < 2:
        return {**start, **{u: price_options[u][0] for u in kept}}
    pair = _pair_scores(bank, kept, price_options, profile_of, budget)
    group_of = {u: g for g, members in enumerate(choosing) for u in members}
    unit_group = np.array([group_of.get(u, len(choosing)) for u in kept])
    begin = np.array([price_options[m[0]].index(min(price_options[m[0]], key=lambda q: abs(q - float(start[m[0]]))))
                      for m in choosing])
    chosen = _search(pair, unit_group, begin)
    table = {**start, **{u: price_options[u][chosen[group_of[u]]] if u in group_of else price_options[u][0]
                         for u in kept}}
    if log is not None:
        first = _best(pair, begin[None, :], unit_group)[1][0]
        last = _best(pair, chosen[None, :], unit_group)[1][0]
        if last < first:
            log(f"rounding chosen for the whole table: largest gap {100 * first:.2f} -> {100 * last:.2f} pp "
                "on the search's cells")
    return table
