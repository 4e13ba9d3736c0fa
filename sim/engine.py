"""Run N trials of one matchup in blocks, optionally across processes.

Each block draws from its own addressed stream (:func:`sim.rng.block_rng`) and is
folded into an integer :class:`~sim.tally.Tally`; tallies merge exactly, so the
result is identical for any worker count, task grouping or completion order.
Peak memory is one block per worker, whatever the number of trials: blocks are
generated lazily and only a few tasks are in flight at a time, and a plan whose
block would not fit the memory limit is refused (:func:`sim.limits.check_working_set`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .executor import TaskQueue, check_executor, executor_slots, local_pool, tune_malloc
from .limits import check_trials, check_working_set, check_workers, iter_block_sizes
from .rng import BLOCK_TRIALS, block_rng
from .ruleset import Rounds, Ruleset
from .rulesets import get_ruleset
from .tally import Tally

__all__ = ["run_tally", "ProgressCallback"]

#: Called with (trials done, trials in total) after each block or task.
ProgressCallback = Callable[[int, int], None]


def _run_blocks(
    ruleset: str | Ruleset,
    plan: Any,
    root: np.random.SeedSequence,
    stream: tuple[int, ...],
    blocks: Sequence[tuple[int, int]],
    rounds: Rounds,
    max_rounds: int,
) -> Tally:
    tune_malloc()
    rs = get_ruleset(ruleset)
    tally = Tally(len(rs.outcome_categories), tuple(e.name for e in rs.extras))
    for index, size in blocks:
        rng = block_rng(root, *stream, index)
        tally.add(rs.simulate(plan, size, rng, rounds, max_rounds))
    return tally


def run_tally(
    ruleset: Ruleset,
    plan: Any,
    trials: int,
    root: np.random.SeedSequence,
    *,
    rounds: Rounds,
    max_rounds: int,
    stream: tuple[int, ...] = (),
    workers: int = 1,
    progress: ProgressCallback | None = None,
    blocks_per_task: int | None = None,
    block_order: Sequence[int] | None = None,
    executor: Any = None,
) -> Tally:
    """Tally ``trials`` fights of a prepared matchup.

    Parameters
    ----------
    ruleset : Ruleset
    plan : object
        ``ruleset.prepare(matchup)``.
    trials : int
    root : numpy.random.SeedSequence
    rounds : int or "end"
    max_rounds : int
    stream : tuple of int
        Stream address prefix (e.g. a matrix cell); blocks add their index.
    workers : int
        Local processes; 1 runs in this process. ``0`` or negative means all cores;
        more than the cores are clamped to the cores.
    progress : callable, optional
        ``progress(done, total)``.
    blocks_per_task : int, optional
        Blocks per worker task (a scheduling knob; results do not depend on it).
    block_order : sequence of int, optional
        Order in which blocks run (for tests: results do not depend on it).
    executor : object, optional
        Where tasks run instead of local processes: a ``dask.distributed.Client``
        or anything with its ``submit`` shape (:mod:`sim.executor`); ``workers``
        is then ignored. Results do not depend on it.

    Returns
    -------
    Tally
    """
    trials = check_trials(trials)
    executor = check_executor(executor)
    check_working_set(ruleset, plan, min(trials, BLOCK_TRIALS))
    if block_order is not None:  # tests only: a permutation of the block indices, materialised
        sizes = dict(iter_block_sizes(trials, BLOCK_TRIALS))
        order = list(block_order)
        if sorted(order) != list(range(len(sizes))):
            raise ValueError("block_order must be a permutation of the block indices")
        blocks: Iterator[tuple[int, int]] = iter([(i, sizes[i]) for i in order])
    else:
        blocks = iter_block_sizes(trials, BLOCK_TRIALS)  # lazy: flat memory whatever the trial count
    n_blocks = -(-trials // BLOCK_TRIALS)
    if executor is None:
        workers = min(check_workers(workers), n_blocks)
    else:
        workers = executor_slots(executor)
    parallel = executor is not None or workers > 1
    # about four tasks per worker, at most 64 blocks each (a task's list of blocks stays small)
    per_task = blocks_per_task or (min(64, max(1, n_blocks // (4 * workers))) if parallel else 1)
    tasks = _batched(blocks, per_task)
    total = Tally(len(ruleset.outcome_categories), tuple(e.name for e in ruleset.extras))
    done = 0
    if not parallel:
        for task in tasks:
            total = total.merge(_run_blocks(ruleset, plan, root, stream, task, rounds, max_rounds))
            done += sum(s for _, s in task)
            if progress:
                progress(done, trials)
        return total
    # The ruleset travels pickled (by class reference, so any importable ruleset works in
    # a worker, registered or not: a plugin under test before it is installed). A bounded
    # window of tasks is in flight: never one future per block up front.
    pool = local_pool(workers) if executor is None else None
    pending = TaskQueue(executor if executor is not None else pool)
    try:
        while True:
            while len(pending) < 2 * workers:
                task = next(tasks, None)
                if task is None:
                    break
                pending.submit(sum(s for _, s in task), _run_blocks, ruleset, plan, root, stream, task, rounds,
                               max_rounds)
            if not len(pending):
                break
            size, tally = pending.next()
            total = total.merge(tally)
            done += size
            if progress:
                progress(done, trials)
    finally:
        pending.cancel_all()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return total


def _batched(blocks: Iterator[tuple[int, int]], size: int) -> Iterator[list[tuple[int, int]]]:
    """Consecutive groups of ``size`` blocks, lazily."""
    while True:
        task = list(itertools.islice(blocks, size))
        if not task:
            return
        yield task
