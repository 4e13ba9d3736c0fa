"""A matrix whose every pair fights at fixed copies (one unit a side, or ``fielding="whole"``): one cell a pair.

The cells the results store holds are taken before any plan is built, so a rerun
after a kill builds only the missing plans. The others are streamed
(:mod:`analysis.runs.streaming`): each plan is built when its fights are near and
dropped after them, with a progress count and an estimate
(:mod:`analysis.runs.progress`), so memory does not grow with the roster.

Pairs of twins (same profile and points) are one fight: cell ``(a, d)`` runs on
the stream ``cell_stream(a0, d0)`` of the first twins ``a0`` and ``d0`` of ``a``
and ``d`` in the roster (:func:`~analysis.runs.fielding.twin_representatives`),
and is fought once for all the pairs it stands for (each shows its numbers).
"""

from __future__ import annotations

from typing import Any

from sim.errors import MatchupError

from .cells import Cell
from .fielding import RunContext, profile_key, twin_representatives
from .jobs import JobResult, ProgressCallback, result_row, run_jobs
from .remote_cells import Remote
from .streaming import stream_cells
from .streams import cell_stream

__all__ = ["fixed_cells", "pair_stream"]


def pair_stream(representatives: dict[str, str], a: str, d: str) -> tuple[int, int]:
    """The stream of the pair ``(a, d)``: that of their first twins in the roster."""
    return cell_stream(representatives.get(a, a), representatives.get(d, d))


def fixed_cells(context: RunContext, names: list[str], progress: ProgressCallback | None
                ) -> tuple[dict[tuple[str, str], Cell], dict[tuple[str, str], str], int]:
    """Every pair fought once at the copies its budget (or one a side) fields, on the cell's stream.

    Cells in the results store are taken before any plan is built (a rerun after a
    kill builds the plans of the missing cells only); the others are streamed, one
    fight for all the pairs of the same profiles and copies.

    Returns
    -------
    (dict, dict, int)
        The cells that could be fought, why the others could not, and how many cells came from the store.
    """
    rs = context.rs
    reps = twin_representatives(rs, context.roster)
    units = {n: context.roster.unit(n) for n in names}
    profiles = {n: profile_key(rs, u) for n, u in units.items()}

    def fight_key(a: str, d: str) -> tuple:  # the stream names the twins: same stream, same profiles and points
        return pair_stream(reps, a, d), profiles[a], profiles[d]

    pairs = [(a, d) for a in names for d in names]
    matchups: dict[tuple[str, str], Any] = {}
    done: dict[tuple[str, str], JobResult] = {}
    notes: dict[tuple[str, str], str] = {}
    answered: dict[tuple, tuple[str, str]] = {}
    if context.store is not None:
        for a, d in pairs:
            try:
                matchup = context.matchup(a, d)
            except MatchupError:
                continue  # refused again, with its reason, when its plan is built
            hit = context.stored((a, d), matchup, pair_stream(reps, a, d))
            if hit is not None:
                matchups[(a, d)], done[(a, d)] = matchup, hit
                answered.setdefault(fight_key(a, d), (a, d))
    missing = [p for p in pairs if p not in done]
    fresh, seen = [], set(answered)
    for p in missing:  # the first pair of each fight not answered yet
        if (k := fight_key(*p)) not in seen:
            seen.add(k)
            fresh.append(p)

    def job(pair: tuple[str, str], matchup: Any, plan: Any, took: float) -> Any:
        matchups[pair] = matchup
        a, d = pair
        return context.job(pair, plan, pair_stream(reps, a, d), f"{a} v {d}", identity=matchup, built_in=took)

    remote = Remote(tuple, lambda p: pair_stream(reps, *p), lambda p: f"{p[0]} v {p[1]}", matchups.__setitem__)
    fought, refused = stream_cells(context, fresh, lambda p: context.build(*p), job, progress=progress,
                                   stored=len(done), runner=run_jobs, remote=remote)
    done.update(fought)
    notes.update(refused)
    for p in fresh:
        answered[fight_key(*p)] = p
    for p in missing:
        if p in done or p in notes:
            continue
        same = answered[fight_key(*p)]
        if same in notes:
            notes[p] = notes[same]
            continue
        try:
            matchups[p] = context.matchup(*p)
        except MatchupError as e:
            notes[p] = str(e)
            continue
        done[p] = done[same]
    cells = {}
    for a, d in pairs:
        if (a, d) not in done:
            continue
        matchup, res = matchups[(a, d)], done[(a, d)]
        row = result_row(res)
        cells[(a, d)] = Cell({**row, "fights": row["trials"]}, res.tally, matchup,
                             (matchup.copies["attacker"], matchup.copies["defender"]), pair_stream(reps, a, d),
                             res.exact)
    return cells, notes, sum(r.from_store for r in done.values())
