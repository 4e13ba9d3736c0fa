"""A matrix whose every pair fights at fixed copies (one unit a side, or ``fielding="whole"``): one cell a pair.

The cells the results store holds are taken before any plan is built, so a rerun
after a kill builds only the missing plans; the plans are built with a progress
count and an estimate (:mod:`analysis.runs.progress`), the mirror matches first,
to size the whole matrix before the rest is built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sim.errors import MatchupError
from sim.limits import PlanBudget

from .cells import Cell
from .fielding import RunContext
from .jobs import JobResult, ProgressCallback, result_row, run_jobs
from .progress import BuildTimer, phase
from .streams import cell_stream

__all__ = ["fixed_cells"]


def _estimated_tables(pairs: Sequence[tuple[str, str]], plans: Mapping[tuple[str, str], tuple[Any, Any]]) -> float:
    """The tables of the pairs, from the mirror matches: pair ``(a, d)`` as the mean of ``(a, a)`` and
    ``(d, d)`` (a plan's tables are each side's attacks against the other's). A unit whose mirror match
    could not be built counts as the mean of the others."""
    from sim.limits import table_bytes

    sizes = {a: table_bytes(plan) for (a, d), (_, plan) in plans.items() if a == d}
    if not sizes:
        return 0.0
    mean = sum(sizes.values()) / len(sizes)
    return sum((sizes.get(a, mean) + sizes.get(d, mean)) / 2 for a, d in pairs)


def fixed_cells(context: RunContext, names: list[str], progress: ProgressCallback | None
                 ) -> tuple[dict[tuple[str, str], Cell], dict[tuple[str, str], str], int]:
    """Every pair fought once at the copies its budget (or one a side) fields, on the cell's own stream.

    Cells in the results store are taken before any plan is built (a rerun after a
    kill builds the plans of the missing cells only); the plans are built with a
    progress count and an estimate (:mod:`analysis.runs.progress`).
    """
    rs = context.rs
    plan_budget = PlanBudget("matrix")
    plans: dict[tuple[str, str], tuple[Any, Any]] = {}
    took: dict[tuple[str, str], float] = {}
    notes: dict[tuple[str, str], str] = {}
    stored: dict[tuple[str, str], tuple[Any, JobResult]] = {}
    if context.store is not None:
        for a in names:
            for d in names:
                try:
                    matchup = context.matchup(a, d)
                except MatchupError:
                    continue  # refused again, with its reason, when its plan is built
                hit = context.stored((a, d), matchup, cell_stream(a, d))
                if hit is not None:
                    stored[(a, d)] = (matchup, hit)
    missing = [(a, d) for a in names for d in names if (a, d) not in stored]
    timer = BuildTimer(rs.id, len(missing), len(stored))

    def build(a: str, d: str) -> None:
        try:
            plans[(a, d)] = timer.timed(lambda: context.build(a, d))
            took[(a, d)] = timer.last
            plan_budget.add(rs, plans[(a, d)][1])
        except MatchupError as e:
            notes[(a, d)] = str(e)
        building.advance()

    with phase("building matchups", len(missing), "matchups") as building:
        mirrors = [a for a in names if (a, a) not in stored]
        for a in mirrors:  # the mirror matches first: they size the whole matrix before it is built
            build(a, a)
        plan_budget.check_estimate(_estimated_tables(missing, plans), len(missing),
                                   "estimated from each unit's mirror match")
        for a, d in missing:
            if (a, d) not in plans and (a, d) not in notes:
                build(a, d)
    jobs = [context.job((a, d), plan, cell_stream(a, d), f"{a} v {d}", identity=matchup, built_in=took[(a, d)])
            for (a, d), (matchup, plan) in plans.items()]
    done = run_jobs(rs, context.root, jobs, rounds=context.rounds, max_rounds=context.max_rounds,
                    workers=context.workers, progress=progress, executor=context.executor, store=context.store)
    done.update({pair: hit for pair, (_, hit) in stored.items()})
    matchups = {pair: m for pair, (m, _) in plans.items()} | {pair: m for pair, (m, _) in stored.items()}
    cells = {}
    for a in names:
        for d in names:
            if (a, d) not in matchups:
                continue
            matchup, res = matchups[(a, d)], done[(a, d)]
            row = result_row(res)
            cells[(a, d)] = Cell({**row, "fights": row["trials"]}, res.tally, matchup,
                                 (matchup.copies["attacker"], matchup.copies["defender"]), cell_stream(a, d),
                                 res.exact)
    return cells, notes, sum(r.from_store for r in done.values())
