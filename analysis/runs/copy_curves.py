"""Fights at neighbouring copy counts: what a copy curve needs to bracket its 50% crossing.

Fights at ``k`` copies run on the matrix cell's stream of the profile's first
unit extended by ``(key("copies"), k)``, with the matrix's seed and precision.
The curves themselves (their points, the crossing and the next count to try)
are :mod:`analysis.stats.copy_curves`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from sim.errors import MatchupError
from sim.rng import stable_key
from sim.ruleset import SIDES

from ..stats.copy_curves import CopyCurve, next_copies, score_and_var
from .jobs import result_row, run_jobs
from .matrix import cell_stream

__all__ = ["extend_curves", "MAX_SEARCH_ROUNDS"]

#: Rounds of extra fights the search may run before it settles for an extrapolation.
MAX_SEARCH_ROUNDS = 8
_COPIES_TAG = stable_key("copies")


def extend_curves(curves: dict[str, CopyCurve], context: Any, matrix_copies: dict[str, int],
                  progress: Callable[[int, int], None] | None = None,
                  rounds_cap: int = MAX_SEARCH_ROUNDS) -> int:
    """Fight the neighbouring copy counts each curve needs until its crossing is bracketed.

    Returns the number of cells run. Each round batches every curve's next copy
    count into one :func:`analysis.runs.jobs.run_jobs` call.
    """
    rs = context.rs
    cells_run = 0
    for _ in range(rounds_cap):
        jobs, wanted = [], {}
        for key, curve in curves.items():
            if not curve.opponents:
                continue
            k = next_copies(curve)
            if k is None or k in curve.scores:
                continue
            rep = curve.who
            try:
                rs.copies(context.roster.unit(rep) if isinstance(rep, str) else rep, k)
            except MatchupError:
                curve.limit_reached = True
                continue
            wanted[key] = k
            for o in curve.opponents:
                for role in SIDES:
                    a, d = (rep, o) if role == "attacker" else (o, rep)
                    names = (curve.stream_of, o) if role == "attacker" else (o, curve.stream_of)
                    copies = {"attacker": k, "defender": matrix_copies[o]} if role == "attacker" else \
                        {"attacker": matrix_copies[o], "defender": k}
                    try:
                        _, plan = context.build(a, d, copies)
                    except MatchupError:
                        continue
                    stream = cell_stream(*names) + (_COPIES_TAG, k)
                    jobs.append(context.job((key, o, role), plan, stream, f"{names[0]} v {names[1]} at {k} copies"))
        if not jobs:
            break
        done = run_jobs(rs, context.root, jobs, rounds=context.rounds, max_rounds=context.max_rounds,
                        workers=context.workers, progress=progress, executor=context.executor, store=context.store)
        cells_run += len(jobs)
        for key, k in wanted.items():
            curve = curves[key]
            row_s, row_v = [], []
            for o in curve.opponents:
                parts = []
                for role in SIDES:
                    res = done.get((key, o, role))
                    if res is None:
                        continue
                    row = result_row(res)
                    n = math.inf if row["method"] == "exact" else row["trials"]  # exact: no Monte Carlo variance
                    parts.append(score_and_var(row["p_attacker" if role == "attacker" else "p_defender"],
                                               row["p_draw"], n))
                if parts:
                    row_s.append(sum(p[0] for p in parts) / len(parts))
                    row_v.append(sum(p[1] for p in parts) / len(parts) ** 2)
                else:
                    row_s.append(math.nan)
                    row_v.append(math.nan)
            curve.scores[k] = (np.array(row_s), np.array(row_v))
    return cells_run
