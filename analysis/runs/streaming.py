"""Streamed cells: each cell's plan is built when its fights are near, and dropped once they are done.

A matrix of ``N`` units has ``N**2`` cells (up to four times as many whole-copy
cells under expected fielding). Building every plan before the first fight held
them all at once: memory grew with the square of the roster (a 52-unit warband
roster was refused for its 5.5 GiB of tables). :func:`stream_cells` runs a batch
of cells in *chunks* instead:

1. build plans, in batch order, until their tables reach
   :data:`sim.limits.STREAM_PLAN_BYTES` (or :data:`STREAM_MAX_CELLS` cells; a
   chunk holds at least one cell);
2. run the chunk's jobs (:func:`analysis.runs.jobs.run_jobs`, with the results
   store and, for every chunk of the batch, the same pool of local workers or the
   caller's executor);
3. drop the chunk's plans, and build the next.

The memory held is that of one chunk of plans (plus the workers' share of it),
whatever the batch's size. Each cell's numbers depend only on the root seed, its
stream and its settings (:mod:`analysis.runs.jobs`), so the chunking, the worker
count and the order never change a number.

The progress of a batch is that of its two phases: ``building matchups`` counts
every plan built (:func:`~analysis.runs.progress.phase`, timed by
:class:`~analysis.runs.progress.BuildTimer` for the estimate of the building),
and the ``progress(done, total)`` callback counts the batch's cells as their
fights finish, over all chunks. The cost of the fights is estimated once, on the
first chunk, scaled to the batch (:func:`~analysis.runs.cost.announce_cost`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from sim.errors import MatchupError
from sim.limits import table_bytes

from .jobs import CellJob, JobResult, ProgressCallback, run_jobs
from .progress import BuildTimer, phase
from .remote_cells import REMOTE_CELLS, Remote, fight_remotely

__all__ = ["stream_cells", "STREAM_MAX_CELLS", "chunk_bytes"]

#: Most cells in one chunk, however small their plans (bounds the jobs and tasks in flight).
STREAM_MAX_CELLS = 1024


def chunk_bytes() -> int:
    """The tables a chunk's plans may reach (:data:`sim.limits.STREAM_PLAN_BYTES`, read when a batch starts)."""
    import sim.limits

    return int(sim.limits.STREAM_PLAN_BYTES)


@contextlib.contextmanager
def _shared_pool(context: Any) -> Iterator[Any]:
    """The caller's executor, or local workers kept for every chunk of a batch (None: in this process)."""
    from sim.limits import check_workers

    if context.executor is not None or check_workers(context.workers) <= 1:
        yield context.executor
        return
    from .runner import local_workers

    pool = local_workers(check_workers(context.workers))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def stream_cells(context: Any, cells: Sequence[Hashable], build: Callable[[Hashable], tuple[Any, Any]],
                 job: Callable[[Hashable, Any, Any, float], CellJob], *, progress: ProgressCallback | None = None,
                 stored: int = 0, max_bytes: int | None = None, max_cells: int | None = None,
                 runner: Callable[..., dict[Any, JobResult]] | None = None, remote: Remote | None = None
                 ) -> tuple[dict[Hashable, JobResult], dict[Hashable, str]]:
    """Build, fight and drop the plans of ``cells``, chunk by chunk (see the module docstring).

    Parameters
    ----------
    context : analysis.runs.fielding.RunContext
        Root seed, run length, workers, executor and results store of every cell.
    cells : sequence
        The cells to fight, in order (distinct keys).
    build : callable
        ``build(cell) -> (matchup, plan)``; a :class:`~sim.errors.MatchupError` refuses
        the cell (its message is returned).
    job : callable
        ``job(cell, matchup, plan, seconds_to_build) -> CellJob``, whose key is ``cell``.
    progress : callable, optional
        ``progress(done, total)`` over the whole batch (refused cells count as done).
    stored : int
        Cells of the batch taken from the results store already (for the building estimate).
    max_bytes, max_cells : int, optional
        A chunk's limits (default :func:`chunk_bytes` and :data:`STREAM_MAX_CELLS`).
    runner : callable, optional
        Runs a chunk's jobs (default :func:`~analysis.runs.jobs.run_jobs`).
    remote : Remote, optional
        How the workers build and fight the cells themselves (:mod:`analysis.runs.remote_cells`): with
        local workers or an executor and at least :data:`~analysis.runs.remote_cells.REMOTE_CELLS` cells,
        the cells after the spread are sent as recipes, never built here (``build`` and ``job`` still
        serve the spread, which times the building and the fights for the estimates).

    Returns
    -------
    (dict, dict)
        Cell -> :class:`~analysis.runs.jobs.JobResult`, in ``cells`` order, and cell -> why it was refused.
    """
    rs = context.rs
    runner = run_jobs if runner is None else runner
    limit = chunk_bytes() if max_bytes is None else int(max_bytes)
    most = STREAM_MAX_CELLS if max_cells is None else int(max_cells)
    cells = list(cells)
    total = len(cells)
    done: dict[Hashable, JobResult] = {}
    refused: dict[Hashable, str] = {}
    said = [-1]
    first = True

    def told(n: int, _: int) -> None:
        now = len(done) + len(refused) + n
        if progress and total and now != said[0]:
            said[0] = now
            progress(now, total)

    def run(chunk: list[CellJob], executor: Any) -> None:
        nonlocal first
        left = total - len(done) - len(refused)
        out = runner(rs, context.root, chunk, rounds=context.rounds, max_rounds=context.max_rounds,
                     workers=context.workers, progress=told if progress else None, executor=executor,
                     store=context.store, announce_for=left if first else 0)
        first = False
        done.update(out)

    def built(c: Hashable, make: Callable[[], tuple[Any, Any]]) -> tuple[CellJob | None, float]:
        """The job of ``c`` (None: refused) and the CPU seconds its plan took."""
        t0 = time.process_time()  # CPU time: what a rerun that needs no plan saves, however loaded the machine
        try:
            matchup, plan = make()
        except MatchupError as e:
            refused[c] = str(e)
            told(0, total)
            return None, time.process_time() - t0
        took = time.process_time() - t0
        return job(c, matchup, plan, took), took

    # a spread of the batch first: it times the building (a unit against itself is cheaper to build than
    # against others) and its jobs open the first chunk
    head: list[CellJob] = []
    count, seconds = 0, 0.0
    sample = _spread(cells)
    if sample:
        with phase("sizing the matchups (a spread of them)", len(sample), "matchups") as sizing:
            for c in sample:
                one, took = built(c, lambda: build(c))
                count, seconds = count + 1, seconds + took
                sizing.advance()
                if one is not None:
                    head.append(one)
                if seconds > SPREAD_SECONDS:
                    break
    taken = {j.key for j in head} | set(refused)
    rest = [c for c in cells if c not in taken]
    from sim.limits import check_workers

    pooled = context.executor is not None or check_workers(context.workers) > 1
    by_workers = remote is not None and pooled and len(rest) >= REMOTE_CELLS
    # built by the workers, a pair's copy counts share their tables: the spread (one cell of each of 16
    # pairs, every one built from nothing) would overstate the building several times, so the estimate
    # waits for the workers' first builds
    timer = BuildTimer(rs.id, len(rest), stored, (0, 0.0) if by_workers else (count, seconds))

    def chunks() -> Iterator[tuple[list[CellJob], bool]]:
        """Each chunk of jobs, and whether cells are left after it."""
        chunk = head[:]
        head.clear()
        held = sum(table_bytes(j.plan) for j in chunk)
        if chunk and held >= limit and rest:  # the spread is a chunk of its own
            yield chunk, True
            chunk, held = [], 0
        for i, c in enumerate(rest):
            try:
                one, _ = built(c, lambda: timer.timed(lambda: build(c)))
            finally:
                building.advance()
            if one is None:
                continue
            chunk.append(one)
            held += table_bytes(one.plan)
            if held >= limit or len(chunk) >= most:
                yield chunk, i + 1 < len(rest)
                chunk, held = [], 0
        if chunk:
            yield chunk, False

    if by_workers:
        with phase("building and fighting matchups", len(rest), "matchups") as building, \
                _shared_pool(context) as executor:
            if head:
                run(head[:], executor)  # the spread: the fights' estimate for the batch
                head.clear()
            for c, out in fight_remotely(executor, context, rest, remote):
                building.advance()
                if len(out) == 1:
                    refused[c] = out[0]
                else:
                    timer.observe(out[3])
                    remote.remember(c, out[0])
                    done[c] = out[2]
                told(0, total)
        told(0, total)
        return {c: done[c] for c in cells if c in done}, refused

    with phase("building matchups", len(rest), "matchups") as building:
        parts = chunks()
        first_part = next(parts, None)
        if first_part is not None and not first_part[1]:  # one chunk: run as any batch (its own workers)
            run(first_part[0], context.executor)
        elif first_part is not None:
            with _shared_pool(context) as executor:
                part: tuple[list[CellJob], bool] | None = first_part
                first_part = None
                while part is not None:
                    chunk = part[0]
                    part = None  # the chunk's plans are dropped once it has run
                    run(chunk, executor)
                    del chunk
                    part = next(parts, None)
    told(0, total)
    return {c: done[c] for c in cells if c in done}, refused


#: Cells of a batch built first, spread over it, to time its building; and the seconds spent on them at most.
SPREAD_CELLS = 16
SPREAD_SECONDS = 1.0


def _spread(cells: Sequence[Hashable]) -> list[Hashable]:
    """Up to :data:`SPREAD_CELLS` of ``cells``, evenly spread (a small batch: its first
    :data:`~analysis.runs.progress.TIMED_BUILDS`)."""
    from . import progress as timing

    n = len(cells)
    if n > SPREAD_CELLS:
        return list(cells[::n // SPREAD_CELLS][:SPREAD_CELLS])
    return list(cells[:min(n, timing.TIMED_BUILDS)])
