"""Cell jobs: one matchup run block by block on an addressed stream, and the runner of many.

A :class:`CellJob` draws block ``b`` from ``sim.rng.block_rng(root, *stream, b)``,
so its numbers depend only on the root seed, its stream and its settings. Jobs
run adaptively (until the Wilson 95% half-widths of P(attacker), P(defender) and
P(draw) are at most ``half_width``) or for a fixed number of trials.
:func:`run_jobs` runs them in this process, across worker processes or on a Dask
cluster (:mod:`analysis.runs.runner`), reusing and filling a results store
(:mod:`analysis.runs.store`). Shared by matrices, copy curves, sweeps, compares
and the solver.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.limits import check_workers, iter_block_sizes
from sim.rng import BLOCK_TRIALS, block_rng
from sim.ruleset import Rounds, Ruleset
from sim.tally import Tally

from ..stats.estimates import wilson_half_width

__all__ = ["CellJob", "JobResult", "run_jobs", "ProgressCallback"]

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class CellJob:
    """One matchup to run block by block on an addressed stream.

    Attributes
    ----------
    key : hashable
        The caller's name for the job (returned with the result).
    plan : object
        ``ruleset.prepare(matchup)`` (picklable).
    stream : tuple of int
        Stream address; block ``b`` draws from ``block_rng(root, *stream, b)``.
    max_trials : int
        Trial cap (the exact number of trials when ``half_width`` is None).
    half_width : float or None
        Stop once the Wilson 95% half-widths of p_attacker, p_defender and p_draw are at most this.
    keep_blocks : bool
        Also return each block's own tally (for batch-means standard errors of paired differences).
    batch_trials : int
        Trials per block; :data:`sim.rng.BLOCK_TRIALS` keeps the engine's addressing.
    identity : object, optional
        What the job simulates beyond its plan, for the results store
        (:mod:`analysis.runs.store`), e.g. the :class:`~sim.ruleset.Matchup`; the
        runner never reads it. ``None`` keeps the job out of the store.
    """

    key: Any
    plan: Any
    stream: tuple[int, ...]
    max_trials: int
    half_width: float | None = None
    keep_blocks: bool = False
    batch_trials: int = BLOCK_TRIALS
    identity: Any = None


@dataclass
class JobResult:
    """The merged tally of a job, and its per-block tallies when asked for."""

    key: Any
    tally: Tally
    blocks: list[Tally] | None = None
    #: Taken from the results store instead of simulated.
    from_store: bool = False


def _new_tally(rs: Ruleset) -> Tally:
    return Tally(len(rs.outcome_categories), tuple(e.name for e in rs.extras))


def _run_one(rs: Ruleset, root: np.random.SeedSequence, job: CellJob, rounds: Rounds, max_rounds: int) -> JobResult:
    total = _new_tally(rs)
    blocks: list[Tally] | None = [] if job.keep_blocks else None
    for index, size in iter_block_sizes(job.max_trials, job.batch_trials):  # lazy: flat in the trial count
        block = _new_tally(rs)
        block.add(rs.simulate(job.plan, size, block_rng(root, *job.stream, index), rounds, max_rounds))
        total = total.merge(block)
        if blocks is not None:
            blocks.append(block)
        if _stops(job, total):
            break
    return JobResult(job.key, total, blocks)


def _stops(job: CellJob, total: Tally) -> bool:
    """The adaptive stopping rule, checked after every block in block order (by every runner)."""
    return job.half_width is not None and _narrow_enough(total, job.half_width)


def _narrow_enough(t: Tally, half_width: float) -> bool:
    """Every outcome probability (attacker win, defender win, draw) is within ``half_width``."""
    return max(wilson_half_width(int(t.wins[k]), t.trials) for k in (0, 1, 2)) <= half_width


def run_jobs(ruleset: Ruleset, root: np.random.SeedSequence, jobs: Sequence[CellJob], *, rounds: Rounds,
             max_rounds: int, workers: int = 1, progress: ProgressCallback | None = None, executor: Any = None,
             store: Any = None) -> dict[Any, JobResult]:
    """Run every job, in this process, across ``workers`` processes or on ``executor``.

    Each job's numbers depend only on ``root``, its stream and its settings,
    never on the worker count, the executor, the grouping of blocks into tasks
    or their order (:mod:`analysis.runs.runner`).

    Parameters
    ----------
    ruleset : Ruleset
    root : numpy.random.SeedSequence
    jobs : sequence of CellJob
    rounds : int or "end"
    max_rounds : int
    workers : int
        Local processes; ``<= 0`` means all cores. Ignored with ``executor``.
    progress : callable, optional
        ``progress(jobs_done, jobs_total)`` as jobs finish.
    executor : object, optional
        A ``dask.distributed.Client`` or anything with its ``submit`` shape.
    store : analysis.runs.store.ResultsStore, optional
        Finished jobs are taken from it and saved to it as they finish (jobs with
        an ``identity``); see :attr:`JobResult.from_store`.

    Returns
    -------
    dict
        Job key to :class:`JobResult`, in job order.
    """
    from sim.executor import check_executor

    executor = check_executor(executor)
    jobs = list(jobs)
    out: dict[Any, JobResult] = {}
    keys: dict[int, str | None] = {}
    todo = jobs
    if store is not None:
        todo = []
        for i, job in enumerate(jobs):
            keys[i] = store.key(ruleset, root, rounds, max_rounds, job)
            hit = store.get(keys[i]) if keys[i] else None
            if hit is None:
                todo.append(job)
            else:
                out[job.key] = JobResult(job.key, hit[0], hit[1], from_store=True)
        if progress and out:
            progress(len(out), len(jobs))
    index = {id(job): i for i, job in enumerate(jobs)}

    def finished(job: CellJob, tally: Tally, blocks: list[Tally] | None) -> None:
        out[job.key] = JobResult(job.key, tally, blocks)
        k = keys.get(index[id(job)])
        if k:
            store.put(k, tally, blocks, label=repr(job.key))
        if progress:
            progress(len(out), len(jobs))

    workers = max(1, min(check_workers(workers), sum(-(-j.max_trials // j.batch_trials) for j in todo) or 1))
    if executor is None and workers == 1:
        for job in todo:
            res = _run_one(ruleset, root, job, rounds, max_rounds)
            finished(job, res.tally, res.blocks)
    elif todo:
        from sim.executor import local_pool

        from .runner import run_cells

        pool = local_pool(workers) if executor is None else None
        try:
            run_cells(ruleset, root, todo, rounds=rounds, max_rounds=max_rounds,
                      executor=executor if executor is not None else pool, stop=_stops,
                      on_done=lambda i, tally, blocks: finished(todo[i], tally, blocks))
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
    return {job.key: out[job.key] for job in jobs}
