"""Fights for the answer: a precision target on each unit's score, shared out over the matrix's cells.

A designer acts on each unit's *score* (win + draw / 2 against the roster,
:func:`analysis.stats.expected.unit_scores`), a weighted mean of the unit's cells.
Fighting every cell to +-1 pp makes the fights grow with the square of the
roster, while the score of a unit among ``N`` needs each of its cells only to
about ``+-h * sqrt(N)``. :func:`score_target` turns a target half-width ``h`` on
every unit's score into one bound on each cell's score variance:

* the score's variance is ``sum_c beta_c**2 * v_c`` over the unit's cells, with
  ``beta_c`` the cell's weight in the score (``w_o / (2 n)`` against a class of
  ``w_o`` twins among ``n`` units, times the copy mixture's weight);
* a cell fought until ``v_c <= tau`` for both of its sides therefore gives every
  unit a variance of at most ``tau * B``, ``B = max_u sum beta**2``; so
  ``tau = SAFETY * (h / 1.96)**2 / B``.

Each cell's stopping rule (:class:`analysis.runs.jobs.CellJob` ``score_variance``)
then spends fights by the cell's own share of the variance: a lopsided cell
(variance near 0) stops after one step, an even one (variance 1/4 a fight) runs
longest. The rule is checked after each step of :data:`SCORE_STEP_TRIALS`
fights, in step order, on block-addressed streams, so the result is the same for
any worker count, scheduler, chunking or order.

Rosters of at most :data:`CELL_PRECISION_UNITS` units keep each cell at the
report's own cell half-width as well (their heatmap is read cell by cell); larger
rosters fight each cell only for the scores. Every report says which.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sim.errors import InputError, shown
from sim.stats import Z95

__all__ = ["DEFAULT_SCORE_HALF_WIDTH", "MAX_SCORE_HALF_WIDTH", "CELL_PRECISION_UNITS", "SCORE_STEP_TRIALS", "SAFETY",
           "ScoreTarget", "check_score_half_width", "score_target", "short_of_score_target",
           "with_score_target", "score_classes", "matrix_scores", "targeted"]

#: Default 95% half-width of every unit's score (0.005 = +-0.5 percentage points).
DEFAULT_SCORE_HALF_WIDTH = 0.005
#: Loosest target accepted (a score is a probability: +-25 pp says nothing finer).
MAX_SCORE_HALF_WIDTH = 0.25
#: Rosters of at most this many units also keep every cell at its own half-width (``--half-width``).
CELL_PRECISION_UNITS = 20
#: Fights per step of a cell fought for the scores alone: a 100-unit roster's cells need a few hundred.
SCORE_STEP_TRIALS = 256
#: Share of the target's variance the cells may use: the copy mixture and the pseudo-fights of the score's
#: variance (:func:`analysis.stats.estimates.score_variance`) add a little on top of the cells' own.
SAFETY = 0.9


def check_score_half_width(value: Any, what: str = "--score-half-width") -> float:
    """``value`` as a score half-width in (0, :data:`MAX_SCORE_HALF_WIDTH`], or one line naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)) \
            or not 0 < float(value) <= MAX_SCORE_HALF_WIDTH:
        raise InputError(f"{what}: got {shown(value)}, expected a number in (0, {MAX_SCORE_HALF_WIDTH:g}] "
                         f"(0.005 = +-0.5 percentage points on every unit's score)")
    return float(value)


@dataclass(frozen=True)
class ScoreTarget:
    """A precision target on every unit's score and what it asks of each cell.

    Attributes
    ----------
    half_width : float
        95% half-width of every unit's score.
    units : int
        Units in the matrix (twins counted one by one).
    cell_variance : float or None
        Each cell is fought until both sides' cell-score variance is at most this (None: every unit is a twin
        of every other, so every score is 1/2 exactly and no cell needs fights for it).
    keeps_cells : bool
        The roster is small (at most :data:`CELL_PRECISION_UNITS` units): every cell is also fought to its
        own half-width, as without a score target.
    """

    half_width: float
    units: int
    cell_variance: float | None
    keeps_cells: bool

    @property
    def cell_half_width(self) -> float | None:
        """The 95% half-width of a cell's score that :attr:`cell_variance` means (for people)."""
        return None if self.cell_variance is None else Z95 * math.sqrt(self.cell_variance)

    def describe(self) -> str:
        """One sentence: the target and what each cell is fought to."""
        text = f"every unit's score to +-{100 * self.half_width:.2g} pp (95%)"
        if self.cell_half_width is not None:
            text += f": each cell until its score is within +-{100 * self.cell_half_width:.2g} pp"
        if self.keeps_cells:
            text += (f", and every cell to its own half-width too (rosters of at most {CELL_PRECISION_UNITS} units "
                     "keep their cells' precision)")
        else:
            text += (f"; cells are not fought to their own half-width (over {CELL_PRECISION_UNITS} units, "
                     "each cell's interval is as wide as its fights make it)")
        return text

    def settings(self) -> dict[str, Any]:
        """The target's entries in a run's settings (``metadata.json``)."""
        return {"score_half_width": self.half_width, "cell_score_variance": self.cell_variance,
                "cell_score_half_width": self.cell_half_width, "cells_keep_half_width": self.keeps_cells,
                "score_step_trials": SCORE_STEP_TRIALS if not self.keeps_cells else None}


def score_target(half_width: float, classes: Iterable[tuple[int, float]]) -> ScoreTarget:
    """The cell bound that puts every unit's score within ``half_width`` (see the module docstring).

    Parameters
    ----------
    half_width : float
        The score's 95% half-width (checked: :func:`check_score_half_width`).
    classes : iterable of (int, float)
        One entry per class of twins (same profile and price: they score once): its units, and the sum of
        its copy mixture's squared weights (1 for whole copies, 1/2 for ``k + 1/2`` copies; see
        :func:`analysis.runs.fielding.copy_mixture`), which scales how much its cells' noise reaches a score.

    Returns
    -------
    ScoreTarget
    """
    h = check_score_half_width(half_width, "score_half_width")
    parts = [(int(w), float(q)) for w, q in classes]
    if not parts or min(w for w, _ in parts) < 1 or not all(0 < q <= 1 for _, q in parts):
        raise InputError(f"classes: got {shown(parts)}, expected (units, mixture weight) for each class of twins")
    n = sum(w for w, _ in parts)
    total = sum(w * w * q for w, q in parts)
    # B_u = q_u * sum over other classes o of w_o**2 q_o / (2 n**2): a whole-copy cell of u against o weighs
    # w_o / (2 n) times the two mixtures' weights in u's score (its own class is a mirror, 1/2 exactly)
    weight = max(q * (total - w * w * q) for w, q in parts) / (2 * n * n)
    variance = None if weight <= 0 else SAFETY * (h / Z95) ** 2 / weight
    return ScoreTarget(h, n, variance, n <= CELL_PRECISION_UNITS)


def matrix_scores(matrix: Any) -> Any:
    """Every unit's score of ``matrix`` (:func:`analysis.stats.expected.unit_scores`, twins as one class)."""
    from ..stats.expected import unit_scores

    classes: dict[str, list[str]] = {}
    by_key: dict[str, str] = {}
    for u, key in matrix.twins().items():
        classes.setdefault(by_key.setdefault(key, u), []).append(u)
    return unit_scores(matrix.long, classes)


def short_of_score_target(scores: Any, half_width: float) -> list[tuple[str, float]]:
    """The units whose score interval is wider than ``half_width`` (the trial cap stopped their cells first).

    Parameters
    ----------
    scores : pandas.DataFrame
        :func:`analysis.stats.expected.unit_scores` (``unit, score_lo, score_hi``).
    half_width : float

    Returns
    -------
    list of (unit, half-width)
        Widest first.
    """
    out = []
    for row in scores.itertuples(index=False):
        hw = (float(row.score_hi) - float(row.score_lo)) / 2
        if math.isfinite(hw) and hw > half_width * (1 + 1e-9):
            out.append((str(row.unit), hw))
    return sorted(out, key=lambda kv: -kv[1])


def with_score_target(context: Any, target: ScoreTarget) -> Any:
    """``context`` (:class:`~analysis.runs.fielding.RunContext`) fighting its cells for ``target``: each cell's
    score variance bounded, and a large roster's cells no longer fought to their own half-width (in steps of
    :data:`SCORE_STEP_TRIALS` fights)."""
    from dataclasses import replace

    from sim.rng import SUB_BLOCK_TRIALS

    if target.cell_variance is None:
        return context
    if target.keeps_cells:
        return replace(context, score_variance=target.cell_variance, step_trials=SUB_BLOCK_TRIALS)
    return replace(context, half_width=None, score_variance=target.cell_variance, step_trials=SCORE_STEP_TRIALS)


def targeted(context: Any, score_half_width: float | None, names: Iterable[str],
             copies: Mapping[str, float] | None) -> tuple[Any, ScoreTarget | None]:
    """``context`` fighting for a score target over the units ``names`` (at expected ``copies``; None: one a
    side or whole copies), and the target; ``context`` unchanged without one (``score_half_width`` None, or
    fixed trials: ``context.half_width`` None)."""
    from .fielding import profile_key

    if score_half_width is None or context.half_width is None:
        return context, None
    rs, names = context.rs, list(names)
    profiles = {u: profile_key(rs, context.roster.unit(u)) for u in names}
    target = score_target(score_half_width, score_classes(names, profiles, copies))
    return with_score_target(context, target), target


def score_classes(names: Iterable[str], profiles: Mapping[str, str],
                  copies: Mapping[str, float] | None) -> list[tuple[int, float]]:
    """The classes of twins among ``names`` for :func:`score_target`, as the scores count them (same profile
    and copies, :meth:`analysis.runs.matrix.MatchupMatrix.twins`): (units, sum of the squared weights of
    their copy mixture). ``profiles``: name -> profile key; ``copies``: expected copies (None: one a side)."""
    from .fielding import copy_mixture

    counts: dict[tuple[str, float], int] = {}
    for n in names:
        key = (profiles[n], round(float(copies[n]), 9) if copies is not None else 1.0)
        counts[key] = counts.get(key, 0) + 1
    return [(w, 1.0 if copies is None else sum(m * m for _, m in copy_mixture(k)))
            for (_, k), w in counts.items()]
