"""The rebalancing fixed point: prices under which every unit's score against the roster is 50%, on any score model.

:func:`fixed_point_prices` knows nothing of fights: it is given ``evaluate``,
which says for a table of prices each unit's score against the roster at
those prices and its fair price (the price at which it alone would score 50%
with every other price as it is). That is the game of
:mod:`analysis.runs.rebalance` (fights under expected fielding), and the
hand-built payoff models of the tests, whose balanced prices are analytic.

Each step moves every unlocked unit further than ``tolerance / 2`` from 50%,
and at least half as far as the worst, to its fair price (the others keep
theirs: the fewest changes, and a unit off only because a worse one is in its
roster waits for that one to move), moves a unit that points cannot balance to
its nearest fieldable price and leaves it out of the others' roster (so the
rest can still all score 50%: a roster's scores average 50%, and a unit stuck
below would push the others above; it returns when the repriced roster makes
its fair price fieldable), and, with no unit locked, rescales the others'
prices so that the total stays: the scores of a roster
always average 50%, so the equations fix prices only up to a scale, which the
total (or the locked units) then fixes. It stops when every balanceable unit
is within ``tolerance / 2``, or at the noise floor (within three quarters of
the tolerance and no longer improving), or after ``max_iterations`` steps (late
steps are damped: geometric means of the old and new prices).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Estimate", "FixedPoint", "fixed_point_prices"]


@dataclass(frozen=True)
class Estimate:
    """One unit at one table of prices: its score, fair price, and whether points can balance it.

    ``nearest`` is the fieldable price closest to ``fair`` when ``fieldable`` is false.
    """

    score: float
    fair: float
    fieldable: bool = True
    nearest: float = math.nan
    note: str = ""


@dataclass
class FixedPoint:
    """The search's end: prices, the last estimates, steps taken and whether it settled."""

    prices: dict[str, float]
    estimates: dict[str, Estimate]
    steps: int
    converged: bool
    unbalanceable: dict[str, str] = field(default_factory=dict)
    history: list[float] = field(default_factory=list)


def _target(e: Estimate, price: float) -> float:
    return float(e.nearest) if math.isfinite(e.nearest) and e.nearest > 0 else price


def fixed_point_prices(evaluate: Callable[[Mapping[str, float], frozenset[str]], Mapping[str, Estimate]],
                       prices: Mapping[str, float], *, locked: Sequence[str] = (), tolerance: float = 0.02,
                       max_iterations: int = 8, log: Callable[[str], Any] | None = None,
                       adjust: Callable[[dict[str, float]], dict[str, float]] | None = None) -> FixedPoint:
    """Iterate fair prices until every balanceable unit scores within ``tolerance / 2`` of 50%.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(prices, excluded) -> {unit: Estimate}`` at that table of prices, each
        score against the roster without the ``excluded`` units (those points cannot balance).
    prices : mapping
        The starting (listed) prices.
    locked : sequence of str
        Units whose price never changes; with none, the total of the prices stays.
    tolerance : float
        Score tolerance (0.02 = 2 pp).
    max_iterations : int
    log : callable, optional
        ``log(line)`` after each step.
    adjust : callable, optional
        Applied to each new table (e.g. nudging prices a side cannot field).

    Returns
    -------
    FixedPoint
    """
    names = list(prices)
    current = {u: float(prices[u]) for u in names}
    total = sum(current.values())
    history: list[float] = []
    estimates: dict[str, Estimate] = {}
    unbalanceable: dict[str, str] = {}
    converged = False
    step = 0
    for step in range(1, max_iterations + 1):
        estimates = dict(evaluate(current, frozenset(unbalanceable)))
        # a unit points cannot balance at this table leaves the target (the others are balanced without it); it
        # comes back once the others' new prices make its fair price fieldable (a grimdark Swarm needing 32 copies
        # of a side's 25 at the listed prices needs 24 once the roster is repriced), so the verdict is the final one
        now = {u: e.note or "points cannot balance it" for u, e in estimates.items() if not e.fieldable}
        regrouped = set(now) != set(unbalanceable)
        unbalanceable = now
        off = {u: abs(e.score - 0.5) for u, e in estimates.items() if u not in unbalanceable}
        if len(off) < 2:
            break
        worst = max(off.values())
        if log:
            log(f"step {step}: largest |score - 50%| {100 * worst:.2f} pp"
                + (f"; points cannot balance {', '.join(unbalanceable)}" if unbalanceable else ""))
        settled = all(math.isclose(current[u], _target(estimates[u], current[u])) for u in unbalanceable
                      if u not in locked)
        if settled and not regrouped and (worst <= tolerance / 2 or
                        (history and worst <= 0.75 * tolerance and worst >= 0.9 * min(history))):
            converged = True
            break
        history.append(worst)
        if step == max_iterations:
            break  # the estimates stay those of the prices returned
        new = dict(current)
        # the worst first: a unit only a little off because a badly priced one is in its roster waits for it
        movable = [d for u, d in off.items() if u not in locked]
        bar = max(tolerance / 2, max(movable, default=0.0) / 2)
        for u, e in estimates.items():
            if u in locked:
                continue
            if u in unbalanceable:
                new[u] = _target(estimates[u], current[u])
            elif abs(e.score - 0.5) > bar and math.isfinite(e.fair) and e.fair > 0:
                new[u] = float(e.fair)
        # a unit points cannot balance sits at its nearest fieldable price: the rescale and the damping leave it
        # there, or it would never settle and the search would run to max_iterations
        pinned = {u for u in unbalanceable if u not in locked}
        if step > 4:  # damped before the rescale, so the total stays exactly
            new = {u: new[u] if u in pinned else math.sqrt(current[u] * new[u]) for u in names}
        if not locked:
            hold = pinned if sum(new[u] for u in pinned) < total and len(pinned) < len(names) else set()
            scale = (total - sum(new[u] for u in hold)) / sum(new[u] for u in names if u not in hold)
            new = {u: new[u] if u in hold else new[u] * scale for u in names}
        current = adjust(new) if adjust else new
    return FixedPoint(current, estimates, step, converged, unbalanceable, history)
