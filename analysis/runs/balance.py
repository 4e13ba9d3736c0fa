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
from ..stats.expected import DEFAULT_TOLERANCE
from ..stats.fair_prices import FAIR_PRICE_DEFINITION
from ..stats.summary import BalanceSummary, summarise
from .expected_curves import expected_fair_points
from .advice import advise
from .pricing import complete_curves

__all__ = ["balance_summary", "BalanceSummary"]


def balance_summary(matrix: Any, *, seed: Any = None, progress: Any = None, curves: Any = None,
                    tolerance: float = DEFAULT_TOLERANCE, advice: dict[str, Any] | None = None) -> BalanceSummary:
    """Every balance metric for ``matrix`` (a MatchupMatrix or its long frame).

    Parameters
    ----------
    matrix : MatchupMatrix or pandas.DataFrame
        With a budget and its run context, the fair prices come from equal-points
        fights at neighbouring copy counts (fought here); otherwise from the
        calibration model.
    seed : int, SeedSequence or None
        Seed of the resampling behind the intervals (default: derived from the matrix's own seed).
    progress : callable, optional
        ``progress(cells_done, cells_total)`` for the copy-count fights.
    curves : dict, optional
        Copy curves already completed (nothing is fought).
    tolerance : float
        The advice's tolerance (0.02: the fewest price changes after which every unit
        points can balance scores within 2 pp of 50%; nothing changes while no unit's
        95% interval lies wholly outside it).
    advice : dict, optional
        Further arguments of :func:`analysis.runs.advice.advise` (``lock``, ``max_change``,
        ``round_to``, ``log``).

    Returns
    -------
    BalanceSummary
    """
    if seed is None:
        root = getattr(getattr(matrix, "context", None), "root", None)
        seed = int(root.entropy) % (1 << 63) if root is not None else 0
    elif hasattr(seed, "entropy"):  # a SeedSequence
        seed = int(seed.entropy) % (1 << 63)
    else:
        seed = check_seed(seed) % (1 << 63)
    check_callable(progress, "progress")
    if curves is not None and not isinstance(curves, dict):
        raise InputError(f"curves: got {type(curves).__name__}, expected a dict of copy curves or None")
    if not (isinstance(tolerance, (int, float)) and not isinstance(tolerance, bool) and 0 < tolerance <= 0.25):
        raise InputError(f"tolerance: got {tolerance!r}, expected a score tolerance in (0, 0.25] (0.02 = 2 pp)")
    if getattr(matrix, "fielding", "whole") == "expected" and getattr(matrix, "bank", None) is not None:
        fair = expected_fair_points(matrix, seed=seed, tolerance=tolerance, progress=progress, curves=curves)
        fair.attrs.update(definition=FAIR_PRICE_DEFINITION,
                          note=f"budget {matrix.budget:g} points, expected fielding; tolerance "
                               f"{100 * tolerance:g} pp")
        return summarise(matrix, seed=seed, fair=fair, tolerance=tolerance,
                         advice=advise(matrix, fair, tolerance=tolerance, **(advice or {})))
    if curves is None:
        curves = complete_curves(matrix, progress)
    return summarise(matrix, seed=seed, curves=curves, tolerance=tolerance)
