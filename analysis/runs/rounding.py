"""Rounding a proposed table: each changed price down or up, chosen for the whole table at once.

A whole point is several per cent of a cheap unit's price: rounding it moves
that unit's score by a point or more, and every other unit's score a little
through the copies it fields against them. :func:`round_jointly` chooses down
or up for every changed class together: the table whose largest
``|score - 50%|`` over the held classes is smallest (then the sum of squares).
A class's score is a sum over the other classes of one pair value per pair of
choices (:class:`~analysis.runs.scoring.TableScorer`), so every table of up to
:data:`MAX_EXHAUSTIVE` choosing groups is scored at once (2^16 tables, in
blocks); beyond that, flips of one or two groups run while they help. Classes
with one profile (a clone listed at another price) round alike, so they keep
one price.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .scoring import TableScorer

__all__ = ["round_jointly", "MAX_EXHAUSTIVE", "MAX_PASSES"]

#: Up to this many groups with a choice, every table is scored (2^16 tables); beyond, flips from the start.
MAX_EXHAUSTIVE = 16

#: Rounds of one- and two-group flips at most, beyond :data:`MAX_EXHAUSTIVE`.
MAX_PASSES = 50

#: Pair values gathered at once while tables are scored (32 MiB of float64).
TABLE_CELLS = 1 << 22


def _pair_scores(scorer: TableScorer, reps: Sequence[str], options: Mapping[str, Sequence[float]]) -> np.ndarray:
    """``C[i, a, o, b]``: class i at its option a against class o at its option b, weighted by o's size.

    A table's scores are then ``(|i| / 2 + sum over o != i of C[i, a_i, o, a_o]) / N``, exactly
    :meth:`TableScorer.scores`; every copy count an option needs is fought first.
    """
    b = scorer.budget
    scorer.fight_for([{r: options[r][a if a < len(options[r]) else 0] for r in reps} for a in (0, 1)]
                     + [{**{r: options[r][0] for r in reps}, q: options[q][-1]} for q in reps])
    n = len(reps)
    pair = np.zeros((n, 2, n, 2))
    for x, i in enumerate(reps):
        for a in range(2):
            pi = options[i][min(a, len(options[i]) - 1)]
            for y, o in enumerate(reps):
                if o == i:
                    continue
                for bb in range(2):
                    po = options[o][min(bb, len(options[o]) - 1)]
                    pair[x, a, y, bb] = len(scorer.classes[o]) * scorer.pair(i, b / pi, o, b / po)[0]
    return pair


def _badness(pair: np.ndarray, choices: np.ndarray, own: np.ndarray, size: int, held: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Largest |score - 50%| over the held classes and the sum of squares of each table (``choices``: 0 or 1)."""
    n = pair.shape[0]
    idx = np.arange(n)
    got = pair[idx[None, :, None], choices[:, :, None], idx[None, None, :], choices[:, None, :]]
    dev = np.abs((0.5 * own[None, :] + got.sum(axis=2)) / size - 0.5) * held[None, :]
    return np.round(dev.max(axis=1), 12), np.round((dev ** 2).sum(axis=1), 12)


def _per_class(groups: np.ndarray, class_group: np.ndarray) -> np.ndarray:
    """Tables of group choices -> tables of class choices (a class without a choice reads the zero column)."""
    padded = np.hstack([groups, np.zeros((len(groups), 1), dtype=groups.dtype)])
    return padded[:, class_group]


def _best(pair: np.ndarray, tables: np.ndarray, class_group: np.ndarray, own: np.ndarray, size: int,
          held: np.ndarray) -> tuple[int, tuple[float, float]]:
    """The index of the group-choice table with the smallest largest gap (then sum of squares), and those two."""
    n = pair.shape[0]
    block = max(1, TABLE_CELLS // (n * n))  # memory stays flat: tables x classes x classes values per block
    worst, squares = np.concatenate([np.stack(_badness(pair, _per_class(tables[b:b + block], class_group), own,
                                                       size, held))
                                     for b in range(0, len(tables), block)], axis=1)
    i = int(np.lexsort((squares, worst))[0])
    return i, (float(worst[i]), float(squares[i]))


def _search(score: Callable[[np.ndarray], tuple[int, tuple[float, float]]], start: np.ndarray) -> np.ndarray:
    """The group choices (0 floor, 1 ceiling) with the smallest largest gap: every table when there are at most
    2^:data:`MAX_EXHAUSTIVE` of them, else flips of one or two groups from ``start`` while they help."""
    n_groups = len(start)
    if n_groups <= MAX_EXHAUSTIVE:
        grid = ((np.arange(2 ** n_groups)[:, None] >> np.arange(n_groups)[None, :]) & 1).astype(np.int8)
        return grid[score(grid)[0]]
    eye = np.eye(n_groups, dtype=np.int8)
    flips = np.array([eye[g] for g in range(n_groups)]
                     + [eye[g] + eye[h] for g in range(n_groups) for h in range(g + 1, n_groups)])
    current = start.astype(np.int8)
    _, best = score(current[None, :])
    for _ in range(MAX_PASSES):
        tables = current[None, :] ^ flips
        i, trial = score(tables)
        if trial >= best:
            break
        current, best = tables[i], trial
    return current


def round_jointly(scorer: TableScorer, prices: Mapping[str, float], changed: Sequence[str], held: Sequence[str],
                  step: float, ranges: Mapping[str, tuple[float, float]], profile_of: Mapping[str, str],
                  log: Callable[[str], None] | None = None) -> dict[str, float]:
    """The rounded table: each changed class's price at a multiple of ``step`` below or above, chosen for the
    whole table.

    Parameters
    ----------
    scorer : TableScorer
        The search's scores (fights any copy count the candidates need).
    prices : mapping
        Class -> proposed (unrounded) price; the unchanged classes keep theirs exactly.
    changed : sequence of str
        Classes whose price changed.
    held : sequence of str
        Classes held to 50% (the others are opponents only).
    step : float
        The rounding step (``--round-to``).
    ranges : mapping
        Class -> (lowest, highest) price it may take; a multiple outside is not a choice.
    profile_of : mapping
        Class -> its fighting profile: classes with one profile round alike.

    Returns
    -------
    dict
        Class -> price.
    """
    reps = list(scorer.classes)
    options: dict[str, tuple[float, ...]] = {r: (float(prices[r]),) for r in reps}
    groups: dict[str, list[str]] = {}
    for r in changed:
        p = float(prices[r])
        lo, hi = ranges[r]
        near = [q for q in (step * math.floor(p / step), step * math.ceil(p / step)) if q > 0]
        fits = tuple(dict.fromkeys(float(q) for q in near if lo * (1 - 1e-9) <= q <= hi * (1 + 1e-9)))
        if not fits:  # no multiple in its range: the one nearest the range
            candidates = [step * max(1, math.ceil(lo / step)), step * max(1, math.floor(hi / step))]
            fits = (float(min(candidates, key=lambda q: abs(q - p))),)
        options[r] = fits
        if len(fits) == 2:
            groups.setdefault(profile_of[r], []).append(r)
    choosing = [g for g in groups.values() if all(len(options[r]) == 2 for r in g)]
    table = {r: options[r][0] if len(options[r]) == 1 else min(options[r], key=lambda q: abs(q - prices[r]))
             for r in reps}
    if not choosing:
        return table
    own = np.array([len(scorer.classes[r]) for r in reps], float)
    held_mask = np.array([r in set(held) for r in reps], float)
    group_of = {r: g for g, members in enumerate(choosing) for r in members}
    class_group = np.array([group_of.get(r, len(choosing)) for r in reps])
    for r in reps:  # a class without a choice reads column 0: its one option there
        if r not in group_of and len(options[r]) == 2:
            options[r] = (table[r],)
    pair = _pair_scores(scorer, reps, options)

    def score(tables: np.ndarray) -> tuple[int, tuple[float, float]]:
        return _best(pair, tables, class_group, own, scorer.size, held_mask)

    begin = np.array([options[g[0]].index(table[g[0]]) for g in choosing], dtype=np.int8)
    chosen = _search(score, begin)
    out = {**table, **{r: options[r][chosen[group_of[r]]] for r in group_of}}
    if log is not None:
        first, last = score(begin[None, :])[1][0], score(chosen[None, :])[1][0]
        if last < first:
            log(f"rounding chosen for the whole table: largest gap {100 * first:.2f} -> {100 * last:.2f} pp "
                "on the search's cells")
    return out
