"""Exact or Monte Carlo for runs whose cells are read together (a compare's base and variant, a sweep's values).

A compare measures a change on common random numbers and a sweep measures each
value against the first on shared batches: a difference of two cells is honest
only if both are answered alike. So such a *group* of jobs is exact when every
job in it can be (the difference is then exact: zero error), and Monte Carlo
otherwise (all of it, on its shared streams). ``method="exact"`` where a job has
no chain raises one line naming it (:func:`analysis.runs.jobs.pick_method`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Any

from sim.exact import ExactOutcome
from sim.ruleset import Rounds, Ruleset

from .jobs import CellJob, pick_method

__all__ = ["grouped_methods", "exact_side"]


def grouped_methods(rs: Ruleset, jobs: Sequence[CellJob], group: Any, labels: Any, *, rounds: Rounds,
                    max_rounds: int, method: str) -> list[CellJob]:
    """``jobs`` with their ``method`` set: ``"exact"`` for every job of a group that is exact throughout.

    Parameters
    ----------
    jobs : sequence of CellJob
        Fixed-trial jobs (``max_trials`` fights each).
    group : callable
        ``group(job)``: the key of the group the job belongs to.
    labels : callable
        ``labels(job)``: the job's matchup in words (for the one-line error of ``method="exact"``).
    """
    chosen = {id(j): pick_method(rs, j.plan, rounds, max_rounds, half_width=None, max_trials=int(j.max_trials),
                                 method=method, label=labels(j)) for j in jobs}
    mixed: set[Hashable] = {group(j) for j in jobs if chosen[id(j)] != "exact"}
    return [dataclasses.replace(j, method="mc" if group(j) in mixed else "exact") for j in jobs]


def exact_side(outcome: ExactOutcome, role: str) -> tuple[float, float, float, float, float]:
    """``(p_win, p_loss, p_draw, damage_dealt, damage_taken)`` of the unit playing ``role`` in an exact outcome."""
    w = outcome.win
    to_att = ExactOutcome.mean(outcome.damage_to_attacker)
    to_def = ExactOutcome.mean(outcome.damage_to_defender)
    if role == "attacker":
        return float(w[1]), float(w[2]), float(w[0]), to_def, to_att
    return float(w[2]), float(w[1]), float(w[0]), to_att, to_def
