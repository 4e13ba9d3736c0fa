"""The checks of a rebalance that need no fight: every argument, and a ``round_to`` the prices can honour.

:func:`analysis.runs.rebalance.check_rebalance` calls these before any work, so
a wrong argument of :func:`~analysis.runs.rebalance.rebalance` is one line naming
it (an :class:`~sim.errors.InputError`), never a ``TypeError`` from deep in the
solver, and a ``--round-to`` that no fieldable price can be a multiple of is
refused instead of silently ignored (issue 38, item 5: ``--round-to 500`` at a
budget of 120 used to leave every price at 120 and exit 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sim.errors import InputError, MatchupError, shown
from sim.limits import check_workers
from sim.roster import Roster
from sim.ruleset import Ruleset

__all__ = ["check_run_arguments_of_rebalance", "check_round_to", "price_range", "most_copies"]

#: Copies probed at most when looking for a ruleset's per-side limit (none of the shipped rulesets reaches it).
COPIES_PROBED = 1 << 20


def check_run_arguments_of_rebalance(rs: Ruleset, *, lock: Any = (), max_iterations: Any = 8, progress: Any = None,
                                     half_width: Any = None, max_trials: Any = 1, rounds: Any = None,
                                     max_rounds: Any = None, states: Any = None, overrides: Any = None,
                                     options: Any = None, workers: Any = 1, from_text: Any = False,
                                     executor: Any = None, store: Any = None, rules_defaults: Any = False,
                                     method: Any = "auto") -> None:
    """Every argument of a rebalance besides the roster, budget, rounding, tolerance and seed: one line naming it.

    The run's own settings are checked as :func:`~analysis.runs.matrix.matchup_matrix`
    checks them (the same messages), before the first matrix is built.
    """
    from sim.executor import check_executor

    from ..stats.checks import check_callable, check_flag
    from .fielding import check_run_arguments
    from .matrix import check_run_settings
    from .settings import check_method

    if isinstance(lock, (str, bytes)) or not isinstance(lock, (Sequence, set, frozenset)) or \
            not all(isinstance(u, str) for u in lock):
        raise InputError(f"lock: got {shown(lock)}, expected a list of unit names")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1:
        raise InputError(f"max_iterations: got {shown(max_iterations)}, expected a whole number of solver steps >= 1")
    check_callable(progress, "progress")
    check_method(method)
    check_flag(rules_defaults, "rules_defaults")
    check_run_arguments(states=states, overrides=overrides, options=options, from_text=from_text, store=store)
    check_run_settings(rs, rounds, max_rounds, max_trials, "max_trials", states=states, rules_defaults=rules_defaults)
    if half_width is not None and (isinstance(half_width, bool) or not isinstance(half_width, (int, float))
                                   or not 0 < half_width < 0.5):
        raise InputError(f"half_width: got {shown(half_width)}, expected a number between 0 and 0.5 (0.005 = 0.5 pp) "
                         "or None")
    check_workers(workers)
    check_executor(executor)


def most_copies(rs: Ruleset, unit: Any) -> int | None:
    """The most copies of ``unit`` a side can field under the ruleset's per-side limits (None: no limit found)."""
    def fits(k: int) -> bool:
        try:
            rs.copies(unit, k)
        except MatchupError:
            return False
        return True

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while fits(hi):  # doubling, then bisection: a limit of thousands of copies costs a few dozen probes
        lo, hi = hi, hi * 2
        if hi > COPIES_PROBED:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def price_range(rs: Ruleset, unit: Any, budget: float) -> tuple[float, float]:
    """The prices at which a side can field ``unit`` at ``budget``: from ``budget / most copies`` (the larger
    whole copy count of expected fielding then stays within the limit) up to ``budget`` (one copy)."""
    most = most_copies(rs, unit)
    return (0.0 if most is None else budget / max(most, 1)), float(budget)


def check_round_to(rs: Ruleset, ros: Roster, budget: float, round_to: float, lock: Sequence[str] = ()) -> None:
    """Refuse a ``round_to`` that no fieldable price of some unit is a multiple of (one line naming the unit).

    A rounded price is a multiple of ``round_to``; a unit's fieldable prices are
    :func:`price_range`. With ``round_to`` over the budget no price is left at all;
    with a range that holds no multiple, the rounded table could only keep the
    unit at a price that is not a multiple (the old behaviour: every price at the
    budget, exit 0). Locked units keep their price and are not rounded.
    """
    step = float(round_to)
    if step > budget * (1 + 1e-9):
        raise InputError(f"--round-to {step:g}: larger than the budget of {budget:g} points, so no price can be a "
                         f"multiple of it; give a --round-to of at most {budget:g}")
    locked = set(lock)
    for name in ros.names:
        if name in locked:
            continue
        lo, hi = price_range(rs, ros.unit(name), budget)
        first = step * max(1, math.ceil(lo / step - 1e-9))
        if first > hi * (1 + 1e-9):
            raise InputError(f"--round-to {step:g}: {name} can be fielded at {budget:g} points only at prices from "
                             f"{lo:g} to {hi:g}, which hold no multiple of {step:g}; give a smaller --round-to")

