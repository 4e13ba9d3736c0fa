"""Run N trials of one matchup in blocks, optionally across processes.

Each block draws from its own addressed stream (:func:`sim.rng.block_rng`) and is
folded into an integer :class:`~sim.tally.Tally`; tallies merge exactly, so the
result is identical for any worker count, task grouping or completion order.
Peak memory is one block per worker, whatever the number of trials.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .executor import TaskQueue, executor_slots, local_pool, tune_malloc
from .rng import BLOCK_TRIALS, block_rng, block_sizes
from .ruleset import Rounds, Ruleset
from .rulesets import get_ruleset
from .tally import Tally

__all__ = ["run_tally", "ProgressCallback"]

#: Called with (trials done, trials in total) after each block or task.
ProgressCallback = Callable[[int, int], None]


def _run_blocks(
    ruleset_id: str,
    plan: Any,
    root: np.random.SeedSequence,
    stream: tuple[int, ...],
    blocks: Sequence[tuple[int, int]],
    rounds: Rounds,
    max_rounds: int,
) -> Tally:
    tune_malloc()
    rs = get_ruleset(ruleset_id)
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
        Local processes; 1 runs in this process. ``0`` or negative means all cores.
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
    sizes = block_sizes(trials, BLOCK_TRIALS)
    order = list(block_order) if block_order is not None else list(range(len(sizes)))
    if sorted(order) != list(range(len(sizes))):
        raise ValueError("block_order must be a permutation of the block indices")
    blocks = [(i, sizes[i]) for i in order]
    if executor is None:
        if workers <= 0:
            workers = os.cpu_count() or 1
        workers = min(workers, len(blocks))
    else:
        workers = executor_slots(executor)
    parallel = executor is not None or workers > 1
    per_task = blocks_per_task or (max(1, len(blocks) // (4 * workers)) if parallel else 1)
    tasks = [blocks[k : k + per_task] for k in range(0, len(blocks), per_task)]
    total = Tally(len(ruleset.outcome_categories), tuple(e.name for e in ruleset.extras))
    done = 0
    if not parallel:
        for task in tasks:
            total = total.merge(_run_blocks(ruleset.id, plan, root, stream, task, rounds, max_rounds))
            done += sum(s for _, s in task)
            if progress:
                progress(done, trials)
        return total
    pool = local_pool(workers) if executor is None else None
    pending = TaskQueue(executor if executor is not None else pool)
    try:
        for task in tasks:
            pending.submit(sum(s for _, s in task), _run_blocks, ruleset.id, plan, root, stream, task, rounds,
                           max_rounds)
        while len(pending):
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
