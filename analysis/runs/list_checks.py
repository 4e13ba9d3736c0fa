"""The checks of the list runs' arguments: one line naming the argument, before any fight.

:func:`~analysis.runs.lists.list_matrix`, :func:`~analysis.runs.meta.meta` and
:func:`~analysis.runs.unit_value.unit_values` take their numbers, callbacks and
paths from a person at a prompt or in a notebook. What they cannot use is
refused here, as :func:`~analysis.runs.matrix.matchup_matrix` and
:func:`~analysis.runs.rebalance.rebalance` refuse theirs: an
:class:`~sim.errors.InputError` naming the argument, never a ``TypeError`` from
``float()`` in :func:`sim.exact.choose_method` or a ``ValueError`` from NumPy
when an array is compared with a number.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.errors import InputError, shown
from sim.limits import check_trials, check_workers

__all__ = ["check_half_width", "check_list_run", "check_meta_arguments", "check_unit_values_arguments",
           "META_LIMITS", "MAX_DRAWS"]

#: ``meta``'s search settings: name -> (lowest, highest, whole number).
META_LIMITS = {"tolerance": (0.0, 0.5, False), "screen_trials": (64, 10**9, True),
               "max_iterations": (1, 1000, True), "starts": (1, 100, True), "batch": (1, 10_000, True)}

#: Most redraws of ``unit_values``' intervals (five arrays of this many floats per unit and list).
MAX_DRAWS = 1_000_000


def check_half_width(value: Any, name: str = "half_width") -> float | None:
    """A 95% half-width strictly between 0 and 0.5, or None (run ``max_trials`` in every cell).

    Parameters
    ----------
    value : object
    name : str
        The argument, for the message.

    Returns
    -------
    float or None

    Raises
    ------
    sim.errors.InputError
        Not a real number in (0, 0.5) (a bool, a string, an array, NaN...), naming ``name``.
    """
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0 < value < 0.5:
        raise InputError(f"{name}: got {shown(value)}, expected a number between 0 and 0.5 (0.01 = 1 pp) or None")
    return float(value)


def check_list_run(*, half_width: Any, max_trials: Any, seed: Any, workers: Any, executor: Any,
                   lists_file: Any) -> None:
    """The arguments that :func:`list_matrix` and :func:`meta` share besides those of
    :func:`~analysis.runs.fielding.check_run_arguments` and the run settings.

    Raises
    ------
    sim.errors.InputError
        One line naming the first wrong argument.
    """
    from sim.executor import check_executor
    from sim.rng import root_sequence

    check_half_width(half_width)
    check_trials(max_trials, "max_trials")
    root_sequence(seed)  # an InputError naming the seed
    check_workers(workers)
    check_executor(executor)
    check_lists_file(lists_file)


def check_lists_file(value: Any, name: str = "lists_file") -> Any:
    """A lists file's path (``str`` or ``os.PathLike``), or None; its content is checked when it is read."""
    import os

    if value is not None and (not isinstance(value, (str, os.PathLike)) or not str(value).strip()):
        raise InputError(f"{name}: got {shown(value)}, expected the path of a lists file (TOML) or None")
    return value


def check_meta_arguments(**settings: Any) -> None:
    """``meta``'s search settings (:data:`META_LIMITS`: ``tolerance``, ``screen_trials``, ``max_iterations``,
    ``starts``, ``batch``), each a real number in its range (whole where it counts something).

    Raises
    ------
    sim.errors.InputError
        One line naming the first wrong setting and its range.
    """
    for name, value in settings.items():
        lo, hi, whole = META_LIMITS[name]
        ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.integer, np.floating))
        ok = ok and math.isfinite(value) and lo <= value <= hi and (not whole or float(value).is_integer())
        if not ok:
            kind = "a whole number" if whole else "a number"
            raise InputError(f"{name}: got {shown(value)}, expected {kind} in {lo:g}..{hi:g}")


def check_unit_values_arguments(matrix: Any, *, progress: Any, draws: Any, seed: Any, half_width: Any,
                                max_trials: Any) -> None:
    """The arguments of :func:`~analysis.runs.unit_value.unit_values`: a list matrix (from
    :func:`~analysis.runs.lists.list_matrix`, with the context its variants are fought in), a callback,
    the redraws of its intervals, their seed and the variants' precision.

    Raises
    ------
    sim.errors.InputError
        One line naming the first wrong argument.
    """
    from sim.limits import check_int

    from ..stats.checks import check_callable, check_seed
    from .matrix import MatchupMatrix

    if not isinstance(matrix, MatchupMatrix) or matrix.context is None or \
            not isinstance(matrix.settings.get("lists"), dict):
        raise InputError(f"matrix: got {shown(matrix)}, expected a list matrix (analysis.list_matrix's result)")
    check_callable(progress, "progress")
    check_int(draws, "draws", 1, MAX_DRAWS)
    check_seed(seed)
    check_half_width(half_width)
    if max_trials is not None:
        check_trials(max_trials, "max_trials")
