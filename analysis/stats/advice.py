"""The fewest price changes that balance a roster, on any score model.

A designer asks "which prices do I change, and to what?". One mispriced unit
moves every other unit's score a little (a roster's scores always average 50%),
so pricing each unit alone, every other price fixed, blames correct units for
another's mistake. :func:`fewest_changes` answers the question jointly:

1. **Is anything wrong?** A *held* class (one whose own price can bring it to
   50% within its price range) is *off* when the 95% interval of its score lies
   wholly outside 50% ± the tolerance. With no class off, nothing changes.
2. **Which sets could fix it?** A linear model of every score in every class's
   price (one secant per class, from its listed price to the price at which it
   alone scores 50%: exact for a change of that class alone) predicts, for each
   set of classes, the prices that bring the set's held classes to 50%, and every
   other class's score. Every set is scored up to :data:`EXHAUSTIVE` movable
   classes; beyond, a beam search grows the best sets one class at a time.
3. **Does it hold on the rules?** By size (fewest units changed first), the
   predicted sets nearest the tolerance are refined on the real model, their
   held classes moved to their joint 50% prices by Broyden steps, and a set
   is kept when every held class then scores within the tolerance: the first
   that holds, in that order, is the answer. Otherwise the next sets, then the
   next size; as a last resort every movable class changes.

A class that cannot reach 50% within its range (points cannot balance it at
this budget, or it needs more than ``max_change``) is *exempt*: not held to the
tolerance, still an opponent of every other class, and, when its own score is
surely off, moved as far as its range allows (the cap, or the nearest price a
side can field) before the others are balanced against it. Exemption is judged
again at the solution: a class the repriced roster lets reach 50% is held from
then on.

Nothing here fights: ``scores`` and ``fair`` are the model
(:mod:`analysis.runs.advice` answers them from the fights; the tests from
payoff models with known solutions).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Crossing", "Solution", "fewest_changes", "surely_off", "EXHAUSTIVE", "Z"]

#: Up to this many movable classes, every set is scored by the linear model; beyond, a beam search.
EXHAUSTIVE = 16
#: Sets kept per size by the beam search.
BEAM = 48
#: Predicted sets refined per size (those predicted within PREDICTED_SLACK x the tolerance).
PER_SIZE = 3
PREDICTED_SLACK = 1.1
#: Refinements of candidate sets in all, before every movable class changes.
MAX_REFINEMENTS = 12
#: Broyden steps of one refinement (each one table of scores).
STEPS = 8
#: The most a Broyden step moves a price, relative.
STEP_CAP = 0.15
#: The normal quantile of a 95% interval.
Z = 1.96


@dataclass(frozen=True)
class Crossing:
    """Where one class alone scores 50% at a table: its ``price``, and why a side cannot field it there.

    ``price`` is ``inf`` when no price is high enough (it scores above 50% however few copies it fields),
    ``0`` when none is low enough (more copies never bring it to 50%), NaN when unknown; ``note`` says why a
    side cannot field that price, if so (empty when it can).
    """

    price: float
    note: str = ""


@dataclass(frozen=True)
class Solution:
    """The fewest changes: the proposed price of every class and what the model says of it.

    Attributes
    ----------
    prices : dict
        Class -> proposed price (unrounded; unchanged classes at their listed price).
    changed : tuple of str
        Classes whose price changes, in the classes' order.
    held : tuple of str
        Classes held to the tolerance (the others are exempt).
    exempt : dict
        Class -> why it is not held (points cannot balance it, or it needs more than the cap).
    off : tuple of str
        Held classes whose score at the listed prices is surely outside the tolerance.
    before, after : dict
        Class -> score at the listed prices and at the proposed ones.
    before_se, after_se : dict
        Their standard errors.
    balanced : bool
        Every held class within the tolerance at the proposed prices (point estimates).
    worst : float
        The largest ``|score - 50%|`` of a held class at the proposed prices.
    needs : dict
        Exempt class -> the price at which it alone would score 50% (``nan`` / ``inf`` / ``0`` as in
        :class:`Crossing`).
    tried : int
        Candidate sets refined on the model.
    fallback : bool
        No smaller set held: every movable class changed.
    """

    prices: dict[str, float]
    changed: tuple[str, ...]
    held: tuple[str, ...]
    exempt: dict[str, str]
    off: tuple[str, ...]
    before: dict[str, float]
    after: dict[str, float]
    before_se: dict[str, float]
    after_se: dict[str, float]
    balanced: bool
    worst: float
    needs: dict[str, float] = field(default_factory=dict)
    tried: int = 0
    fallback: bool = False


def surely_off(score: float, se: float, tolerance: float, z: float = Z) -> bool:
    """The 95% interval of ``score`` lies wholly outside ``50% +- tolerance``."""
    if not math.isfinite(score):
        return False
    half = z * (se if math.isfinite(se) else 0.0)
    return score - half > 0.5 + tolerance or score + half < 0.5 - tolerance


ScoresFn = Callable[[Mapping[str, float]], tuple[Mapping[str, float], Mapping[str, float]]]
FairFn = Callable[[Mapping[str, float], Sequence[str]], Mapping[str, Crossing]]


def _clip(p: float, lo: float, hi: float) -> float:
    return min(max(p, lo), hi)


def _judge(cross: Mapping[str, Crossing], ranges: Mapping[str, tuple[float, float]], listed: Mapping[str, float],
           fixed_exempt: Mapping[str, str], max_change: float | None) -> tuple[dict[str, str], dict[str, float]]:
    """Exempt classes (with why) and the price each exempt class moves to (the nearest of its range)."""
    exempt, target = {}, {}
    for r, c in cross.items():
        lo, hi = ranges[r]
        if r in fixed_exempt:
            exempt[r] = fixed_exempt[r]
            target[r] = listed[r]
            continue
        p = c.price
        if lo == hi == listed[r] or (math.isfinite(p) and lo * (1 - 1e-9) <= p <= hi * (1 + 1e-9)):
            continue  # held: its own price reaches 50% (a locked class is held where it stands)
        if math.isnan(p):
            exempt[r], target[r] = c.note or "no price could be placed", listed[r]
            continue
        target[r] = _clip(p, lo, hi) if math.isfinite(p) else (hi if p == math.inf else lo)
        if c.note:
            exempt[r] = c.note
        elif max_change is not None and math.isfinite(p) and p > 0:
            exempt[r] = (f"needs {100 * (p / listed[r] - 1):+.0f}% to score 50%, more than the cap of "
                         f"{100 * max_change:g}%")
        else:
            exempt[r] = "its price cannot reach 50% within the prices this budget can field"
    return exempt, target


@dataclass
class _Model:
    """The linear model: ``score = s0 + A @ (prices - p0)`` over classes, and what each class may do."""

    reps: list[str]
    s0: np.ndarray
    A: np.ndarray
    p0: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    held: np.ndarray
    target: np.ndarray
    weight: np.ndarray

    def solve(self, sets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For sets (M x s class indices): their price moves, predicted largest gap and total relative change."""
        m, s = sets.shape
        held = self.held[sets]
        rows = self.A[sets[:, :, None], sets[:, None, :]]
        eye = np.broadcast_to(np.eye(s), rows.shape)
        system = np.where(held[:, :, None], rows, eye)
        rhs = np.where(held, 0.5 - self.s0[sets], self.target[sets] - self.p0[sets])
        x = _solve_each(system, rhs)
        x = np.clip(x, self.lo[sets] - self.p0[sets], self.hi[sets] - self.p0[sets])
        predicted = self.s0[None, :] + np.einsum("mnj,mj->mn", self.A[:, sets].transpose(1, 0, 2), x)
        gap = np.abs(predicted - 0.5)
        worst = np.where(self.held[None, :], gap, 0.0).max(axis=1)
        change = (self.weight[sets] * np.abs(x) / self.p0[sets]).sum(axis=1)
        return x, np.round(worst, 9), np.round(change, 9)  # last bits differ between machines: ties stay ties


def _solve_each(system: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``pinv(system[m]) @ rhs[m]`` for every m. Beyond :data:`EXHAUSTIVE` classes, an LU solve (the beam's sets
    reach the roster's size, and a batch of SVDs of 100 x 100 systems took a minute); a batch with a singular
    system falls back to the pseudo-inverse, so the answer is the same wherever both exist."""
    if system.shape[-1] > EXHAUSTIVE:
        try:
            return np.linalg.solve(system, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            pass
    return np.einsum("mij,mj->mi", np.linalg.pinv(system), rhs)


def _sets_by_size(model: _Model, movable: list[int], tolerance: float) -> Iterator[tuple[np.ndarray, np.ndarray,
                                                                                        np.ndarray, np.ndarray]]:
    """(sets, moves, predicted worst gap, change) for each size: every set, or a beam beyond :data:`EXHAUSTIVE`."""
    n = len(movable)
    if n <= EXHAUSTIVE:
        for s in range(1, n + 1):
            sets = np.array(list(itertools.combinations(movable, s)), dtype=int)
            yield (sets, *model.solve(sets))
        return
    frontier = [()]
    for s in range(1, n + 1):
        grown = sorted({tuple(sorted((*f, u))) for f in frontier for u in movable if u not in f})
        sets = np.array(grown, dtype=int)
        x, worst, change = model.solve(sets)
        yield sets, x, worst, change
        order = np.lexsort((change, worst))[:BEAM]
        frontier = [tuple(sets[i]) for i in order]


def fewest_changes(classes: Mapping[str, Sequence[str]], listed: Mapping[str, float], scores: ScoresFn,
                   fair: FairFn, *, tolerance: float, ranges: Mapping[str, tuple[float, float]],
                   exempt: Mapping[str, str] | None = None, max_change: float | None = None, z: float = Z,
                   log: Callable[[str], Any] | None = None,
                   prefetch: Callable[[list[dict[str, float]]], Any] | None = None) -> Solution:
    """The fewest price changes under which every held class scores within ``tolerance`` of 50%.

    Parameters
    ----------
    classes : mapping
        Class -> its member units (units of one class share one price and one score).
    listed : mapping
        Class -> its listed price.
    scores : callable
        ``scores(prices) -> (score, se)``, each a mapping class -> value, against the whole
        roster at that table of prices.
    fair : callable
        ``fair(prices, classes) -> {class: Crossing}``: where each class alone scores 50% at that table.
    tolerance : float
        A held class is balanced within ``50% +- tolerance`` (0.02 = 2 pp).
    ranges : mapping
        Class -> (lowest, highest) price it may take (a locked class: its price twice).
    exempt : mapping, optional
        Classes never held, with why (a unit that cannot be harmed, or cannot harm).
    max_change : float, optional
        The cap on a relative change already in ``ranges``; named in an exempt class's reason.
    z : float
        Quantile of the interval that decides whether a class is off.
    log : callable, optional
        ``log(line)`` as the search goes.
    prefetch : callable, optional
        ``prefetch(tables)``: get ready to score these tables (fight their cells in one batch); the linear
        model's columns, one table each, are asked for together first.

    Returns
    -------
    Solution
    """
    reps = list(classes)
    say = log or (lambda line: None)
    p0 = {r: float(listed[r]) for r in reps}
    s0, se0 = (dict(d) for d in scores(p0))
    cross = dict(fair(p0, reps))
    fixed_exempt = dict(exempt or {})
    ex, target = _judge(cross, ranges, p0, fixed_exempt, max_change)

    def finish(prices: dict[str, float], ex: dict[str, str], tried: int, fallback: bool = False) -> Solution:
        s, se = (dict(d) for d in scores(prices))
        held = tuple(r for r in reps if r not in ex)
        worst = max((abs(s[r] - 0.5) for r in held if math.isfinite(s[r])), default=0.0)
        changed = tuple(r for r in reps if not math.isclose(prices[r], p0[r], rel_tol=1e-12))
        off = tuple(r for r in held if surely_off(s0[r], se0[r], tolerance, z))
        needs = {r: cross[r].price for r in ex if r in cross}
        return Solution(dict(prices), changed, held, dict(ex), off, s0, s, se0, se, worst <= tolerance + 1e-12,
                        worst, needs, tried, fallback)

    columns: dict[str, tuple[float, np.ndarray]] = {}
    s0_vec = np.array([s0[r] for r in reps], float)

    def column(r: str, move: float) -> np.ndarray:
        """The secant of every class's score in ``r``'s price, from the listed table to ``r`` at ``move``: one
        table of scores, kept for the next pass (the secants are the model; the refinement corrects them)."""
        if r not in columns or not math.isclose(columns[r][0], move):
            moved, _ = scores({**p0, r: float(move)})
            columns[r] = (move, (np.array([moved[q] for q in reps], float) - s0_vec) / (move - p0[r]))
        return columns[r][1]

    def warm(moves: Mapping[str, float]) -> None:
        """The tables of these columns not kept yet, to ``prefetch`` at once (a roster of 100 classes fought
        them in 100 batches of a few hundred cells, each too small to keep the workers busy)."""
        tables = [{**p0, r: float(m)} for r, m in moves.items()
                  if r not in columns or not math.isclose(columns[r][0], m)]
        if prefetch is not None and tables:
            prefetch(tables)

    prices: dict[str, float] | None = dict(p0)
    tried, fallback = 0, False
    for attempt in range(3):  # the exempt classes are judged again at the solution
        held = [r for r in reps if r not in ex]
        # an exempt class surely off moves as far as its range allows (the cap, the nearest fieldable price)
        forced = {r: float(target[r]) for r in ex if r not in fixed_exempt and surely_off(s0[r], se0[r], tolerance, z)
                  and not math.isclose(target[r], p0[r])}
        if not forced and not any(surely_off(s0[r], se0[r], tolerance, z) for r in held):
            return finish(dict(p0), ex, 0)
        base = {**p0, **forced}
        if forced:
            say(f"moved as far as their range allows: {', '.join(forced)}")
            s_base = dict(scores(base)[0])
        else:
            s_base = s0
        returning: list[str] = []

        def rejudge(predicted: dict[str, float]) -> bool:
            """Would an exempt class be held at the predicted fallback table? (its crossing there, fought)"""
            candidates = [r for r in ex if r not in fixed_exempt]
            if not candidates:
                return False
            now = fair(predicted, candidates)
            ex2, _ = _judge({**cross, **now}, ranges, p0, fixed_exempt, max_change)
            returning.extend(r for r in candidates if r not in ex2)
            return bool(returning)

        if all(abs(s_base[r] - 0.5) <= tolerance for r in held):
            prices, tried, fallback = base, 0, False
        else:
            prices, tried, fallback = _search(reps, classes, base, s_base, cross, scores, column, warm, tolerance,
                                              ranges, ex, target, say, rejudge if attempt < 2 else None)
        if prices is None:  # an exempt class comes back once the others move: search again with it held
            say(f"held again once the others are repriced: {', '.join(returning)}")
            ex = {r: w for r, w in ex.items() if r not in returning}
            target = {r: t for r, t in target.items() if r not in returning}
            continue
        again = [r for r in ex if r not in fixed_exempt]
        if not again:
            return finish(prices, ex, tried, fallback)
        now = fair(prices, again)
        ex2, _ = _judge({**cross, **now}, ranges, p0, fixed_exempt, max_change)
        returning = [r for r in again if r not in ex2]
        if not returning:
            return finish(prices, ex, tried, fallback)
        say(f"held again once the others are repriced: {', '.join(returning)}")
        cross.update(now)
        ex = {r: w for r, w in ex.items() if r not in returning}
        target = {r: t for r, t in target.items() if r not in returning}
    return finish(prices, ex, tried, fallback)


def _search(reps: list[str], classes: Mapping[str, Sequence[str]], p0: dict[str, float], s0: dict[str, float],
            cross: Mapping[str, Crossing], scores: ScoresFn, column: Callable[[str, float], np.ndarray],
            warm: Callable[[Mapping[str, float]], Any], tolerance: float,
            ranges: Mapping[str, tuple[float, float]], ex: Mapping[str, str], target: Mapping[str, float],
            say: Callable[[str], Any], rejudge: Callable[[dict[str, float]], bool] | None = None
            ) -> tuple[dict[str, float] | None, int, bool]:
    """The proposed prices (the smallest set that holds on the model), refinements tried, whether it fell back.

    Before falling back to every class, ``rejudge(predicted prices)`` may say that an exempt class would be
    held at the table the linear model predicts for that fallback: the search then returns ``None`` prices
    (restart with it held) instead of refining a fallback that would be thrown away.
    """
    held = np.array([r not in ex for r in reps])
    lo = np.array([ranges[r][0] for r in reps], float)
    hi = np.array([ranges[r][1] for r in reps], float)
    p = np.array([p0[r] for r in reps], float)
    tgt = np.array([target.get(r, p0[r]) for r in reps], float)
    movable = [i for i, r in enumerate(reps) if lo[i] < hi[i] and (held[i] or not math.isclose(tgt[i], p[i]))]
    if not movable:
        return dict(p0), 0, True
    A = np.zeros((len(reps), len(reps)))
    base = np.array([s0[r] for r in reps], float)
    moves: dict[int, float] = {}
    for i in movable:
        r = reps[i]
        move = tgt[i] if not held[i] else _clip(cross[r].price, lo[i], hi[i]) if math.isfinite(cross[r].price) \
            else p[i]
        if abs(move - p[i]) < 0.02 * p[i]:  # already near 50% alone: a 5% step gives the slope
            move = p[i] * 1.05 if p[i] * 1.05 <= hi[i] else p[i] * 0.95
            move = _clip(move, lo[i], hi[i])
        if not math.isclose(move, p[i]):
            moves[i] = float(move)
    warm({reps[i]: m for i, m in moves.items()})  # every column's table in one batch of fights
    for i, move in moves.items():
        A[:, i] = column(reps[i], move)
    weight = np.array([len(classes[r]) for r in reps], float)
    model = _Model(reps, base, A, p, lo, hi, held, tgt, weight)
    tried = 0
    for sets, x, worst, change in _sets_by_size(model, movable, tolerance):
        near = np.flatnonzero(worst <= PREDICTED_SLACK * tolerance)
        if not len(near):
            continue
        order = near[np.lexsort((change[near], worst[near] > tolerance))][:PER_SIZE]
        for i in order:  # predicted within the tolerance first, each by its total change: the first that holds wins
            chosen = [reps[j] for j in sets[i]]
            start = {reps[j]: float(p[j] + x[i][k]) for k, j in enumerate(sets[i])}
            if rejudge is not None and not tried and rejudge({**p0, **start}):
                return None, tried, False  # an exempt class is held at the table this set predicts: restart
            prices, gap = _refine(p0, chosen, start, scores, _jacobian(A, sets[i], held), tolerance, ranges, ex,
                                  target)
            tried += 1
            say(f"tried {', '.join(chosen)}: largest gap {100 * gap:.2f} pp (predicted {100 * worst[i]:.2f})")
            if gap <= tolerance:
                return prices, tried, False
        if tried >= MAX_REFINEMENTS:
            break
    everyone = [reps[i] for i in movable]
    if rejudge is not None:
        x, _, _ = model.solve(np.array([movable]))
        if rejudge({**p0, **{reps[j]: float(p[j] + x[0][k]) for k, j in enumerate(movable)}}):
            return None, tried, False
    say(f"no smaller set of changes holds: every movable unit changes ({len(everyone)})")
    level = all(reps[i] in everyone for i in range(len(reps)) if held[i])
    if level:  # no set reaches 50% for all: the held classes are balanced with each other, from where they stand
        start = dict(p0)
    else:
        x, _, _ = model.solve(np.array([movable]))
        start = {reps[j]: float(p[j] + x[0][k]) for k, j in enumerate(movable)}
    prices, _ = _refine(p0, everyone, start, scores, _jacobian(A, np.array(movable), held), tolerance, ranges, ex,
                        target, steps=2 * STEPS, level=level)
    return prices, tried + 1, True


def _jacobian(A: np.ndarray, chosen: np.ndarray, held: np.ndarray) -> np.ndarray:
    """The linear model's block for the held classes of ``chosen`` (their scores in their own prices)."""
    h = [int(j) for j in chosen if held[j]]
    return A[np.ix_(h, h)]


def _refine(p0: Mapping[str, float], chosen: Sequence[str], start: Mapping[str, float], scores: ScoresFn,
            jacobian: np.ndarray, tolerance: float, ranges: Mapping[str, tuple[float, float]], ex: Mapping[str, str],
            target: Mapping[str, float], steps: int = STEPS, level: bool = False) -> tuple[dict[str, float], float]:
    """The chosen classes moved to their joint 50% prices (exempt ones to their target); the largest held gap.

    Broyden's method on ``score - 50%`` of the held chosen classes, from the linear
    model's prices and its Jacobian (``jacobian``: rows and columns in ``chosen``'s
    held order); each step costs one table of scores (the fights its copies need),
    and a step that makes things worse is halved. With ``level`` (every held class
    moving) the target is their mean score instead of 50%: when exempt classes
    pull the roster's mean away from 50%, the held ones are balanced with each
    other, which is the smallest largest gap points can reach.
    """
    table = dict(p0)
    for r in chosen:
        lo, hi = ranges[r]
        table[r] = float(target[r]) if r in ex else _clip(float(start[r]), lo, hi)
    moving = [r for r in chosen if r not in ex]
    lo = np.array([ranges[r][0] for r in moving], float)
    hi = np.array([ranges[r][1] for r in moving], float)

    def residual(x: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
        table.update({r: float(v) for r, v in zip(moving, x)})
        s, _ = scores(table)
        v = np.array([s[r] for r in moving], float)
        return v - (v.mean() if level and len(v) else 0.5), dict(s)

    x = np.array([table[r] for r in moving], float)
    J = np.array(jacobian, float)
    if level and len(J):  # the residual is each score less their mean: so is its Jacobian
        J = J - J.mean(axis=0, keepdims=True)
    f, s = residual(x)
    for _ in range(steps):
        if not moving or np.abs(f).max() <= tolerance / 40:
            break
        dx = -np.linalg.pinv(J) @ f
        # a step moves no price by more than STEP_CAP: far from the answer the model is only a guide, and a long
        # step passes through copy counts (fights) the answer never needs
        scale = min(1.0, float(np.min(STEP_CAP * x / np.maximum(np.abs(dx), 1e-12))))
        for _ in range(3):
            x_new = np.clip(x + scale * dx, lo, hi)
            f_new, s_new = residual(x_new)
            if np.linalg.norm(f_new) < np.linalg.norm(f) or scale < 0.2 * STEP_CAP:
                break
            scale /= 2
        d, y = x_new - x, f_new - f
        if float(d @ d) > 0:
            J = J + np.outer(y - J @ d, d) / float(d @ d)
        x, f, s = x_new, f_new, s_new
    table.update({r: float(v) for r, v in zip(moving, x)})
    gap = max((abs(v - 0.5) for r, v in s.items() if r not in ex and math.isfinite(v)), default=0.0)
    return table, gap
