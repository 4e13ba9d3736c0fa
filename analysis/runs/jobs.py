"""Cell jobs: one matchup run step by step on an addressed stream, and the runner of many.

A :class:`CellJob` is cut into *steps* (:class:`Steps`): a fixed-trial job's step
``g`` is block ``g``, drawn from ``sim.rng.block_rng(root, *stream, g)`` (the
engine's addressing, so ``sim.fight`` on the same stream gives the same counts);
an adaptive job's step ``g`` is a sub-block of :data:`sim.rng.SUB_BLOCK_TRIALS`,
sub-block ``g % SUB_BLOCKS`` of block ``g // SUB_BLOCKS``, drawn from
``sim.rng.sub_block_rng``. Its numbers depend only on the root seed, its stream
and its settings. Adaptive jobs stop after the first step at which the Wilson
95% half-widths of P(attacker), P(defender) and P(draw) are all at most
``half_width`` (or at the trial cap); checking every few thousand fights instead
of every 65,536 is what lets a loose target stop early.

:func:`run_jobs` runs them in this process, across worker processes or on a Dask
cluster (:mod:`analysis.runs.runner`), reusing and filling a results store
(:mod:`analysis.runs.store`), with a cost estimate before a long run
(:mod:`analysis.runs.cost`). Shared by matrices, copy curves, sweeps, compares
and the solver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.limits import check_workers
from sim.rng import BLOCK_TRIALS, SUB_BLOCK_TAG, SUB_BLOCK_TRIALS, block_rng, sub_block_rng
from sim.ruleset import Rounds, Ruleset
from sim.tally import Tally

from ..stats.estimates import wilson_half_width

__all__ = ["CellJob", "JobResult", "Steps", "job_steps", "run_jobs", "ProgressCallback", "outcome_half_width",
           "short_of_target", "stored_result_fits", "shortfall", "merge_shortfalls", "pick_method", "result_row"]

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
        Stream address; step ``g`` draws from ``job_steps(job).rng(root, stream, g)``.
    max_trials : int
        Trial cap (the exact number of trials when ``half_width`` is None).
    half_width : float or None
        Stop once the Wilson 95% half-widths of p_attacker, p_defender and p_draw are at most this.
    keep_blocks : bool
        Also return each step's own tally (for batch-means standard errors of paired differences).
    batch_trials : int
        Trials per addressed block; :data:`sim.rng.BLOCK_TRIALS` keeps the engine's addressing.
        An adaptive job cuts each block into sub-blocks (:func:`job_steps`).
    identity : object, optional
        What the job simulates beyond its plan, for the results store
        (:mod:`analysis.runs.store`), e.g. the :class:`~sim.ruleset.Matchup`; the
        runner never reads it. ``None`` keeps the job out of the store.
    method : {"mc", "exact"}
        How the job is answered (:func:`pick_method` chooses): ``"exact"`` jobs are
        propagated in this process (:func:`sim.exact.exact_outcome`), never sampled,
        stopped, costed or sent to workers.
    asked : {"mc", "auto", "exact"}
        The method asked for when :func:`pick_method` chose ``method`` from the job's own plan
        (:meth:`analysis.runs.fielding.RunContext.job`); ``"mc"`` otherwise. It is in the
        results store's key instead of the plan: under ``"auto"`` a cell's plan decides
        whether it is sampled or answered exactly, always alike, so the store can hand out
        either result (a tally, or an exact outcome) before the plan is built. Exact
        outcomes are stored only for jobs asked ``"auto"`` or ``"exact"``.
    """

    key: Any
    plan: Any
    stream: tuple[int, ...]
    max_trials: int
    half_width: float | None = None
    keep_blocks: bool = False
    batch_trials: int = BLOCK_TRIALS
    identity: Any = None
    method: str = "mc"
    asked: str = "mc"
    #: Seconds its plan took to build (not in the store's key: recorded with its result, so a rerun that
    #: takes the result from the store can say roughly what it saved).
    built_in: float = 0.0
    #: Stop also (or only, without ``half_width``) once the variance of both sides' cell score (win + draw / 2,
    #: :func:`~analysis.stats.estimates.score_variance`) is at most this: a score target's share of a cell
    #: (:mod:`analysis.runs.allocation`).
    score_variance: float | None = None
    #: Fights per step of an adaptive job: the grain of its stopping rule. :data:`sim.rng.SUB_BLOCK_TRIALS`
    #: keeps the sub-block addressing; another size has addresses of its own (:func:`job_steps`).
    step_trials: int = SUB_BLOCK_TRIALS

    @property
    def adaptive(self) -> bool:
        """Whether the job stops by a rule (a half-width or a score variance) rather than at a fixed count."""
        return self.half_width is not None or self.score_variance is not None


@dataclass
class JobResult:
    """The merged tally of a job, and its per-step tallies when asked for; or its exact outcome."""

    key: Any
    tally: Tally | None
    blocks: list[Tally] | None = None
    #: Taken from the results store instead of simulated.
    from_store: bool = False
    #: The exact outcome distribution of an exact job (then ``tally`` is None).
    exact: Any = None
    #: CPU seconds its fights took (summed over workers).
    seconds: float = 0.0

    @property
    def method(self) -> str:
        return "exact" if self.exact is not None else "mc"


def result_row(res: JobResult) -> dict[str, Any]:
    """The long-frame row of a job's result (:func:`~analysis.stats.estimates.tally_row` or ``exact_row``)."""
    from ..stats.estimates import exact_row, tally_row

    return exact_row(res.exact) if res.exact is not None else tally_row(res.tally)


def pick_method(rs: Ruleset, plan: Any, rounds: Rounds, max_rounds: int, *, half_width: float | None,
                max_trials: int, method: str, label: str) -> str:
    """``"exact"`` or ``"mc"`` for one cell (:func:`sim.exact.choose_method` at the cell's precision).

    A cell with a ``half_width`` would make at most ``max_trials`` fights, as many
    as that half-width needs at p = 1/2; a fixed-trial cell makes ``max_trials``.
    ``method="exact"`` where the cell has no exact chain raises one line naming the
    cell (``label``) and why.
    """
    from sim.errors import MatchupError
    from sim.exact import choose_method

    try:
        if half_width is None:
            return choose_method(rs, plan, rounds, max_rounds, trials=max_trials, method=method)
        return choose_method(rs, plan, rounds, max_rounds, half_width=half_width, max_trials=max_trials,
                             method=method)
    except MatchupError as e:
        raise MatchupError(f"--method exact: {label}: {e}") from None


@dataclass(frozen=True)
class Steps:
    """How a job's trials are cut into addressed steps: the grain of its stopping rule and of its tasks.

    Attributes
    ----------
    trials : int
        Trials per step (the last step may be shorter, at the cap).
    per_block : int
        Steps per addressed block. ``0``: step ``g`` is block ``g`` itself, drawn from
        ``block_rng(root, *stream, g)``; otherwise step ``g`` is sub-block
        ``g % per_block`` of block ``g // per_block`` (:func:`sim.rng.sub_block_rng`).
    cap : int
        Trials in all steps together (the job's ``max_trials``).
    """

    trials: int
    per_block: int
    cap: int
    #: Steps of a size other than :data:`sim.rng.SUB_BLOCK_TRIALS` are addressed with their size
    #: (``key + (block, SUB_BLOCK_TAG, size, sub)``), so they never share a generator with a sub-block.
    sized: bool = False

    @property
    def count(self) -> int:
        """Number of steps up to the cap (counted, never listed: flat in the trial count)."""
        return -(-self.cap // self.trials)

    def size(self, g: int) -> int:
        """Trials of step ``g``."""
        return min(self.trials, self.cap - g * self.trials)

    def rng(self, root: np.random.SeedSequence, stream: Sequence[int], g: int) -> np.random.Generator:
        """The generator step ``g`` draws from."""
        if not self.per_block:
            return block_rng(root, *stream, g)
        if self.sized:
            return block_rng(root, *stream, g // self.per_block, SUB_BLOCK_TAG, self.trials, g % self.per_block)
        return sub_block_rng(root, *stream, block=g // self.per_block, sub=g % self.per_block)


def job_steps(job: CellJob) -> Steps:
    """The steps of ``job``: whole blocks for a fixed trial count, sub-blocks for an adaptive job.

    An adaptive job's blocks of ``batch_trials`` are cut into sub-blocks of
    :data:`sim.rng.SUB_BLOCK_TRIALS` when the block size is a multiple of it (the
    default :data:`~sim.rng.BLOCK_TRIALS` is), else each block is one sub-block.
    """
    batch = int(job.batch_trials)
    if not job.adaptive:
        return Steps(batch, 0, int(job.max_trials))
    step = int(job.step_trials)
    if step != SUB_BLOCK_TRIALS and batch % step == 0:
        return Steps(step, batch // step, int(job.max_trials), sized=True)
    per_block = batch // SUB_BLOCK_TRIALS if batch % SUB_BLOCK_TRIALS == 0 else 1
    return Steps(batch // per_block, per_block, int(job.max_trials))


def _new_tally(rs: Ruleset) -> Tally:
    return Tally(len(rs.outcome_categories), tuple(e.name for e in rs.extras))


def _exact(rs: Ruleset, root: np.random.SeedSequence, job: CellJob, rounds: Rounds, max_rounds: int,
           store: Any) -> JobResult:
    """An exact job's outcome: from the store, or propagated (and stored).

    Only jobs whose own plan chose the exact method (``asked`` ``"auto"`` or ``"exact"``)
    are stored: their key says so, as a sampled job's key says it was sampled.
    """
    import time

    from sim.exact import exact_outcome

    key = None
    if store is not None and job.asked != "mc" and callable(getattr(store, "put_exact", None)):
        key = store.key(rs, root, rounds, max_rounds, job)
        hit = store.get_exact(key, len(rs.outcome_categories), tuple(e.name for e in rs.extras)) if key else None
        if hit is not None:
            return JobResult(job.key, None, exact=hit, from_store=True)
    start = time.process_time()
    outcome = exact_outcome(rs, job.plan, rounds, max_rounds)
    seconds = time.process_time() - start
    if key:
        store.put_exact(key, outcome, label=repr(job.key), seconds=job.built_in + seconds)
    return JobResult(job.key, None, exact=outcome, seconds=seconds)


def _run_one(rs: Ruleset, root: np.random.SeedSequence, job: CellJob, rounds: Rounds, max_rounds: int) -> JobResult:
    import time

    start = time.process_time()
    total = _new_tally(rs)
    blocks: list[Tally] | None = [] if job.keep_blocks else None
    steps = job_steps(job)
    for g in range(steps.count):  # lazy: flat in the trial count
        step = _new_tally(rs)
        step.add(rs.simulate(job.plan, steps.size(g), steps.rng(root, job.stream, g), rounds, max_rounds))
        total = total.merge(step)
        if blocks is not None:
            blocks.append(step)
        if _stops(job, total):
            break
    return JobResult(job.key, total, blocks, seconds=time.process_time() - start)


def _stops(job: CellJob, total: Tally) -> bool:
    """The adaptive stopping rule, checked after every step in step order (by every runner): every target the
    job has is met."""
    if not job.adaptive:
        return False
    if job.half_width is not None and not _narrow_enough(total, job.half_width):
        return False
    return job.score_variance is None or cell_score_variance(total) <= job.score_variance


def _narrow_enough(t: Tally, half_width: float) -> bool:
    """Every outcome probability (attacker win, defender win, draw) is within ``half_width``."""
    return outcome_half_width(t) <= half_width


def cell_score_variance(t: Tally) -> float:
    """The larger of the two sides' cell-score variances (win + draw / 2, with the pseudo-fights of
    :func:`~analysis.stats.estimates.score_variance`; ``inf`` without trials)."""
    from ..stats.estimates import score_variance

    n = t.trials
    if not n:
        return float("inf")
    draw = int(t.wins[0]) / n
    return max(score_variance(int(t.wins[k]) / n, draw, n) for k in (1, 2))


def outcome_half_width(t: Tally) -> float:
    """The widest Wilson 95% half-width of P(attacker), P(defender) and P(draw) (``inf`` without trials)."""
    return max(wilson_half_width(int(t.wins[k]), t.trials) for k in (0, 1, 2))


def short_of_target(tallies: Iterable[tuple[Any, Tally]], half_width: float | None) -> list[tuple[Any, float]]:
    """The cells whose widest outcome half-width is over ``half_width`` (they stopped at the trial cap).

    Parameters
    ----------
    tallies : iterable of (key, Tally)
        Cells without trials are skipped (they were not fought).
    half_width : float or None
        The target; ``None`` (fixed trials) has no target, so nothing falls short.

    Returns
    -------
    list of (key, half_width)
        Widest first.
    """
    if half_width is None:
        return []
    short = []
    for key, t in tallies:
        if t is not None and t.trials:
            hw = outcome_half_width(t)
            if hw > half_width * (1 + 1e-9):
                short.append((key, hw))
    return sorted(short, key=lambda kv: -kv[1])


def shortfall(cells: Iterable[tuple[str, Tally]], half_width: float | None) -> dict[str, Any]:
    """How far a run fell short of its target half-width, for ``metadata.json`` and the command's note.

    Parameters
    ----------
    cells : iterable of (label, Tally or None)
        Every fought cell (``"A vs B"`` labels); cells without trials, and exact
        cells (``None``: nothing sampled, no half-width to fall short of), are skipped.
    half_width : float or None

    Returns
    -------
    dict
        ``cells`` (fought), ``cells_short_of_half_width``, ``widest_half_width`` (the
        widest win, loss or draw half-width of any cell; None without cells) and
        ``short_of_half_width``: each short cell's label, half-width and trials, widest first.
    """
    cells = [(label, t) for label, t in cells if t is not None and t.trials]  # exact cells (no tally) have no noise
    short = short_of_target(cells, half_width)
    trials = dict(cells)
    widest = max((outcome_half_width(t) for _, t in cells), default=None)
    return {"cells": len(cells), "cells_short_of_half_width": len(short), "widest_half_width": widest,
            "short_of_half_width": [{"cell": label, "half_width": hw, "trials": int(trials[label].trials)}
                                    for label, hw in short]}


def merge_shortfalls(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Several :func:`shortfall` summaries as one (``report --all``, a report's two matrices)."""
    parts = list(parts)
    widths = [p["widest_half_width"] for p in parts if p["widest_half_width"] is not None]
    return {"cells": sum(p["cells"] for p in parts),
            "cells_short_of_half_width": sum(p["cells_short_of_half_width"] for p in parts),
            "widest_half_width": max(widths, default=None),
            "short_of_half_width": sorted((c for p in parts for c in p["short_of_half_width"]),
                                          key=lambda c: -c["half_width"])}


def stored_result_fits(job: CellJob, rs: Ruleset, tally: Tally, blocks: list[Tally] | None) -> bool:
    """Whether a result read from the store is one that running ``job`` could have produced.

    The store checks each row on its own (types, ranges, sums, signature); this
    checks it against the job the key was computed from: the ruleset's outcome
    categories and extras, the trial cap, the steps (every kept step full but the
    last), and the stopping rule (a job stops at the first narrow-enough step, so
    a result short of its cap must meet the target).
    """
    steps = job_steps(job)
    if tally.n_categories != len(rs.outcome_categories) or \
            tally.extra_names != tuple(e.name for e in rs.extras):
        return False
    if not 0 < tally.trials <= steps.cap:
        return False
    if not job.adaptive:
        if tally.trials != steps.cap:
            return False
    elif tally.trials != steps.cap and (tally.trials % steps.trials or not _stops(job, tally)):
        return False
    if (blocks is None) != (not job.keep_blocks):
        return False
    if blocks is not None:
        if len(blocks) != -(-tally.trials // steps.trials):
            return False
        if any(b.trials != steps.size(g) for g, b in enumerate(blocks)):
            return False
        merged = _new_tally(rs)
        for b in blocks:
            merged = merged.merge(b)
        if not merged.same_as(tally):
            return False
    return True


def run_jobs(ruleset: Ruleset, root: np.random.SeedSequence, jobs: Sequence[CellJob], *, rounds: Rounds,
             max_rounds: int, workers: int = 1, progress: ProgressCallback | None = None, executor: Any = None,
             store: Any = None, announce_for: int | None = None) -> dict[Any, JobResult]:
    """Run every job, in this process, across ``workers`` processes or on ``executor``.

    Each job's numbers depend only on ``root``, its stream and its settings,
    never on the worker count, the executor, the grouping of steps into tasks
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
        ``progress(jobs_done, jobs_total)``: once before any job runs (the total is
        known from the start, so a progress bar can show an ETA), then as jobs finish.
    executor : object, optional
        A ``dask.distributed.Client`` or anything with its ``submit`` shape.
    store : analysis.runs.store.ResultsStore, optional
        Finished jobs are taken from it and saved to it as they finish (jobs with
        an ``identity``); see :attr:`JobResult.from_store`. A stored row is used
        only if the store vouches for it (signed with this user's key, every
        count consistent) and it fits its job (:func:`stored_result_fits`);
        otherwise the job runs again and the store counts the row as ignored.
    announce_for : int, optional
        The jobs are a chunk of a streamed batch (:mod:`analysis.runs.streaming`):
        the cost estimate is the chunk's scaled to this many cells; ``0`` announces
        nothing (a later chunk). Default: the jobs themselves.

    Returns
    -------
    dict
        Job key to :class:`JobResult`, in job order.
    """
    from sim.executor import check_executor, executor_slots

    from .cost import announce_cost

    executor = check_executor(executor)
    jobs = list(jobs)
    out: dict[Any, JobResult] = {}
    keys: dict[int, str | None] = {}
    for job in jobs:  # exact: the chain propagated here, in job order (deterministic, cheaper than a task)
        if job.method == "exact":
            out[job.key] = _exact(ruleset, root, job, rounds, max_rounds, store)
    todo = [job for job in jobs if job.method != "exact"]
    if store is not None:
        todo = []
        for i, job in enumerate(jobs):
            if job.method == "exact":
                continue
            keys[i] = store.key(ruleset, root, rounds, max_rounds, job)
            hit = store.get(keys[i]) if keys[i] else None
            if hit is not None and not stored_result_fits(job, ruleset, *hit):
                store.reject(keys[i])
                hit = None
            if hit is None:
                todo.append(job)
            else:
                out[job.key] = JobResult(job.key, hit[0], hit[1], from_store=True)
    workers = max(1, min(check_workers(workers), sum(job_steps(j).count for j in todo) or 1))
    if todo and announce_for != 0:  # the estimate first, then the progress
        announce_cost(ruleset, root, todo, rounds=rounds, max_rounds=max_rounds,
                      slots=executor_slots(executor) if executor is not None else workers,
                      cells=announce_for and max(len(todo), announce_for - (len(jobs) - len(todo))))
    if progress:
        progress(len(out), len(jobs))
    index = {id(job): i for i, job in enumerate(jobs)}

    def finished(job: CellJob, tally: Tally, blocks: list[Tally] | None, seconds: float = 0.0) -> None:
        out[job.key] = JobResult(job.key, tally, blocks, seconds=seconds)
        k = keys.get(index[id(job)])
        if k:
            store.put(k, tally, blocks, label=repr(job.key), seconds=job.built_in + seconds)
        if progress:
            progress(len(out), len(jobs))

    if executor is None and workers == 1:
        for job in todo:
            res = _run_one(ruleset, root, job, rounds, max_rounds)
            finished(job, res.tally, res.blocks, res.seconds)
    elif todo:
        from .runner import local_workers, run_cells

        pool = local_workers(workers) if executor is None else None
        try:
            run_cells(ruleset, root, todo, rounds=rounds, max_rounds=max_rounds,
                      executor=executor if executor is not None else pool, stop=_stops,
                      on_done=lambda i, tally, blocks, seconds: finished(todo[i], tally, blocks, seconds))
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
    return {job.key: out[job.key] for job in jobs}
