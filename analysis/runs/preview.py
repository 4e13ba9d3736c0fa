"""What a rebalance will cost, estimated before it starts (issue 38, item 4: it used to run a minute in silence).

A rebalance fights its roster as listed (the first matrix: every pair's whole-copy
cells, :mod:`analysis.runs.cells`), then once per solver step the cells the new
prices need that it has not fought yet, then the proposed table at a fresh seed.
Only the first matrix is known before the search runs, so the estimate is of it,
measured on a sample of its cells (their plans built and timed, a few hundred
fights of the largest probed, :func:`analysis.runs.cost.estimate_cost`), with the
bound of the whole search: at most ``max_iterations + 1`` further rosters, each
costing at most as much (it fights only the cells it has not fought yet).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sim.errors import MatchupError
from sim.limits import table_bytes
from sim.rng import root_sequence

from .allocation import targeted
from .cells import WholeCell, _unpriced
from .cost import estimate_cost, human_seconds
from .fielding import RunContext, copy_mixture
from .matrix import check_run_settings
from .streams import whole_stream

__all__ = ["RebalancePreview", "rebalance_preview", "SAMPLE_CELLS", "SAMPLE_SECONDS"]

#: Cells of the first matrix built and timed at most, and the CPU seconds spent on them at most.
SAMPLE_CELLS = 16
SAMPLE_SECONDS = 1.0


@dataclass(frozen=True)
class RebalancePreview:
    """The estimated cost of a rebalance's first matrix, and the bound of the whole search.

    Attributes
    ----------
    ruleset : str
    units : int
    budget : float
    cells : int
        Whole-copy cells of the first matrix.
    stored : int
        Of them, in the results store (no plan, no fight).
    sampled : int
        Cells whose plans were built and timed.
    exact_share : float
        Share of the sampled cells answered exactly (no fights).
    build_seconds, fight_seconds : float
        CPU seconds to build the plans of the cells not stored, and their fights at most (p = 0.5).
    table_bytes : float
        Their plans' tables, held at once while the matrix runs.
    steps : int
        ``max_iterations``.
    slots : int
        Processes fighting.
    """

    ruleset: str
    units: int
    budget: float
    cells: int
    stored: int
    sampled: int
    exact_share: float
    build_seconds: float
    fight_seconds: float
    table_bytes: float
    steps: int
    slots: int = 1

    @property
    def cpu_seconds(self) -> float:
        """The first matrix."""
        return self.build_seconds + self.fight_seconds

    @property
    def wall_seconds(self) -> float:
        return self.build_seconds + self.fight_seconds / max(1, self.slots)

    def text(self) -> str:
        from sim.limits import human_bytes

        stored = f", {self.stored:,} of them in the results store" if self.stored else ""
        exact = f"; {self.exact_share:.0%} answered exactly, without fights" if self.exact_share else ""
        return (f"rebalance {self.ruleset}: {self.units} units at {self.budget:g} points; its first matrix is "
                f"{self.cells:,} whole-copy cells{stored}: about {human_seconds(self.build_seconds)} of CPU to "
                f"build their plans and up to {human_seconds(self.fight_seconds)} of fights{exact}, tables of "
                f"about {human_bytes(self.table_bytes)} (measured on {self.sampled}); the search then fights at "
                f"most {self.steps} repriced rosters and the proposed table, only their cells not fought yet: "
                f"at most {self.steps + 1} times as much again")


def _first_matrix(ros: Any, budget: float) -> list[WholeCell]:
    copies = {u: budget / float(ros.unit(u).points) for u in ros.names}
    return list(dict.fromkeys(WholeCell(a, ka, d, kd) for a in ros.names for d in ros.names
                              for ka, _ in copy_mixture(copies[a]) for kd, _ in copy_mixture(copies[d])))


def rebalance_preview(rs: Any, ros: Any, budget: float, *, seed: Any, half_width: Any, max_trials: Any,
                      rounds: Any = None, max_rounds: Any = None, states: Any = None, overrides: Any = None,
                      options: Any = None, from_text: bool = False, rules_defaults: bool = False,
                      method: str = "auto", workers: int = 1, store: Any = None, max_iterations: int = 8,
                      sample_seconds: float = SAMPLE_SECONDS, score_half_width: Any = None) -> RebalancePreview:
    """Estimate a rebalance's first matrix from a sample of its cells (the arguments are
    :func:`~analysis.runs.rebalance.rebalance`'s, checked already by ``check_rebalance``)."""
    from sim.limits import check_workers

    run = check_run_settings(rs, rounds, max_rounds, max_trials, "max_trials", states=states,
                             rules_defaults=rules_defaults)
    root = root_sequence(seed)
    ctx = RunContext(rs.id, ros, root, run.rounds, int(run.max_rounds), dict(run.states or {}),
                     dict(overrides or {}), dict(options or {}), half_width, int(max_trials), workers, from_text,
                     budget, None, store, method=method)
    copies = {u: budget / float(ros.unit(u).points) for u in ros.names}
    ctx, _ = targeted(ctx, score_half_width, ros.names, copies)  # the cells as the first matrix fights them
    cells = _first_matrix(ros, budget)

    def matchup(c: WholeCell) -> Any:
        return ctx.matchup(_unpriced(ros.unit(c.attacker)), _unpriced(ros.unit(c.defender)),
                           {"attacker": c.attacker_copies, "defender": c.defender_copies})

    stored = 0
    if store is not None and method != "exact":
        for c in cells:
            try:
                found = ctx.stored(c, matchup(c), whole_stream(c.attacker, c.attacker_copies, c.defender,
                                                               c.defender_copies, {}))
            except MatchupError:
                continue
            stored += found is not None
    missing = len(cells) - stored
    jobs, spent, tables = [], 0.0, []
    for c in cells[::max(1, len(cells) // SAMPLE_CELLS)][:SAMPLE_CELLS]:
        t0 = time.process_time()
        try:
            m, plan = ctx.build(_unpriced(ros.unit(c.attacker)), _unpriced(ros.unit(c.defender)),
                                {"attacker": c.attacker_copies, "defender": c.defender_copies})
            stream = whole_stream(c.attacker, c.attacker_copies, c.defender, c.defender_copies, {})
            jobs.append(ctx.job(c, plan, stream, f"{c}", identity=m))
            tables.append(table_bytes(plan))
        except MatchupError:
            pass
        spent += time.process_time() - t0
        if spent > sample_seconds:
            break
    sampled = len(jobs)
    mc = [j for j in jobs if j.method != "exact"]
    share = 1 - len(mc) / sampled if sampled else 0.0
    fight = 0.0
    if mc:
        est = estimate_cost(rs, root, mc, rounds=run.rounds, max_rounds=int(run.max_rounds), slots=1, enough=0.0)
        fight = est.cpu_seconds / len(mc) * missing * (1 - share)
    build = spent / max(1, sampled) * missing
    table = (sum(tables) / len(tables) * missing) if tables else 0.0
    return RebalancePreview(rs.id, len(ros.names), float(budget), len(cells), stored, sampled, share, build, fight,
                            table, int(max_iterations), check_workers(workers))
