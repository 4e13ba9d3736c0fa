"""A roster's balance tables: the matrix's metrics, with the fights its fair prices need.

:func:`balance_summary` completes the copy curves behind the fair prices
(fights at neighbouring copy counts, on the matrix's streams and settings) and
hands everything to :func:`analysis.stats.summary.summarise`, which computes the
tables without fighting.
"""

from __future__ import annotations

from typing import Any

from sim.errors import InputError

from ..stats.checks import check_callable, check_seed
from ..stats.summary import BalanceSummary, summarise
from .pricing import complete_curves

__all__ = ["balance_summary", "BalanceSummary"]


def balance_summary(matrix: Any, *, seed: int = 0, progress: Any = None, curves: Any = None) -> BalanceSummary:
    """Every balance metric for ``matrix`` (a MatchupMatrix or its long frame).

    Parameters
    ----------
    matrix : MatchupMatrix or pandas.DataFrame
        With a budget and its run context, the fair prices come from equal-points
        fights at neighbouring copy counts (fought here); otherwise from the
        calibration model.
    seed : int
        Seed of the resampling behind the intervals.
    progress : callable, optional
        ``progress(cells_done, cells_total)`` for the copy-count fights.
    curves : dict, optional
        Copy curves already completed (nothing is fought).

    Returns
    -------
    BalanceSummary
    """
    seed = check_seed(seed)
    check_callable(progress, "progress")
    if curves is not None and not isinstance(curves, dict):
        raise InputError(f"curves: got {type(curves).__name__}, expected a dict of copy curves or None")
    if curves is None:
        curves = complete_curves(matrix, progress)
    return summarise(matrix, seed=seed, curves=curves)
