"""Run cell jobs on an executor, step range by step range, with the numbers of a sequential run.

The unit of work is a *step range of one cell*: a task holds one or more items
``(cell, first step, last step + 1)``, so one big cell spreads over every
worker as well as a big matrix does. A step is a block of a fixed-trial cell
and a sub-block of an adaptive one (:func:`analysis.runs.jobs.job_steps`); step
``g`` of a cell always draws from its own addressed stream and tallies merge
exactly, so a cell's numbers depend neither on the executor, nor on how steps
are grouped, nor on the order tasks finish.

Adaptive cells (a stopping rule checked after every step) are folded in step
order: the coordinator merges the contiguous prefix of steps it has and checks
the rule at each step boundary, exactly as :func:`analysis.runs.jobs.run_jobs`
does in one process, so it stops at the same sub-block. To keep workers busy it
dispatches steps ahead of the decision (up to a normal-approximation estimate
of the steps needed, and speculatively beyond it when workers would otherwise
idle); steps past the stopping point are cancelled or discarded.

Task size follows measured cost: each item reports its run time and tasks are
filled with ``max(TASK_SECONDS, 20 * workers * SCHEDULER_SECONDS)`` of estimated
work, so the scheduler, which spends about :data:`SCHEDULER_SECONDS` per task,
costs under 5% however many workers there are (``docs/scale.md``); but never
more than half of a worker's share of the work known to be left, so a small job
still spreads over every worker.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.executor import TaskQueue, executor_slots, tune_malloc
from sim.ruleset import Rounds, Ruleset
from sim.rulesets import get_ruleset
from sim.stats import Z95
from sim.tally import Tally

from .jobs import Steps, job_steps

__all__ = ["run_cells", "TASK_SECONDS", "local_workers"]

#: Least estimated seconds of simulation per task.
TASK_SECONDS = 0.25

#: Scheduler cost per task assumed when sizing tasks: the no-op round trip measured on a
#: 2-worker LocalCluster here was 1.7 ms (client, scheduler and workers on two cores).
SCHEDULER_SECONDS = 0.002

#: Most steps in one item, and most items in one task (bounds the size of a result).
MAX_TASK_BLOCKS = 4096
MAX_TASK_ITEMS = 256

Item = tuple[int, Any, tuple[int, ...], Steps, int, int, bool]


def _start_worker(parent_pid: int) -> None:
    """Initializer of a local worker: die with the parent, and leave Ctrl-C to it.

    A terminal sends SIGINT to every process of the command. A worker waiting
    for its next task would print a ``KeyboardInterrupt`` traceback; ignoring it
    leaves the stopping to ``meleelab`` (which keeps the finished cells and exits
    with one line), as the ``local:N`` Dask workers do.
    """
    import signal

    from sim.executor import die_with_parent

    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_workers(workers: int) -> Any:
    """``workers`` local processes for cell jobs, which die with this process and ignore Ctrl-C."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers, initializer=_start_worker, initargs=(os.getpid(),))


def _new_tally(rs: Ruleset) -> Tally:
    return Tally(len(rs.outcome_categories), tuple(e.name for e in rs.extras))


def run_items(ruleset_id: str, root: np.random.SeedSequence, rounds: Rounds, max_rounds: int,
              items: Sequence[Item]) -> list[tuple[int, int, int, Any, float, float]]:
    """Worker task: run step ranges of cells.

    Parameters
    ----------
    items : sequence of (cell, plan, stream, steps, start, stop, per_step)

    Returns
    -------
    list of (cell, start, stop, result, seconds, cpu_seconds)
        ``result`` is the list of per-step tallies when ``per_step``, else their merge; ``seconds`` the
        elapsed time, ``cpu_seconds`` this process's CPU time.
    """
    tune_malloc()
    rs = get_ruleset(ruleset_id)
    out = []
    for cell, plan, stream, steps, start, stop, per_step in items:
        t0, c0 = time.perf_counter(), time.process_time()
        tallies = []
        for g in range(start, stop):
            t = _new_tally(rs)
            t.add(rs.simulate(plan, steps.size(g), steps.rng(root, stream, g), rounds, max_rounds))
            tallies.append(t)
        if per_step:
            result: Any = tallies
        else:
            result = tallies[0]
            for t in tallies[1:]:
                result = result.merge(t)
        out.append((cell, start, stop, result, time.perf_counter() - t0, time.process_time() - c0))
    return out


@dataclass(eq=False)
class _Cell:
    index: int
    job: Any
    steps: Steps
    adaptive: bool
    total: Tally
    blocks: list[Tally] | None
    dispatched: int = 0   # steps [0, dispatched) have been submitted
    merged: int = 0       # steps folded into total (in order when per_step)
    want: int = 1         # steps believed needed: submitted without speculation
    finished: bool = False
    waiting: dict[int, Tally] = field(default_factory=dict)   # per-step results beyond the prefix
    seconds: float = 0.0  # CPU time of every step range run for it (what a stored result saves)
    tasks: set[int] = field(default_factory=set)   # tasks in flight holding blocks of this cell
    seconds_per_trial: float | None = None

    @property
    def n_blocks(self) -> int:
        """Steps up to the cap (named blocks for history: a step is a block or a sub-block)."""
        return self.steps.count

    @property
    def step_trials(self) -> int:
        return self.steps.trials

    @property
    def per_step(self) -> bool:
        return self.adaptive or self.blocks is not None


class _Cost:
    """Seconds per trial, per cell once measured, else the latest measurement of any cell."""

    def __init__(self) -> None:
        self.overall: float | None = None

    def observe(self, cell: _Cell, trials: int, seconds: float) -> None:
        if trials > 0:
            cell.seconds_per_trial = seconds / trials
            self.overall = cell.seconds_per_trial

    def blocks_for(self, cell: _Cell, seconds: float) -> int:
        rate = cell.seconds_per_trial or self.overall
        if not rate:
            return 1
        return max(1, min(MAX_TASK_BLOCKS, int(seconds / (rate * cell.step_trials))))


def _blocks_needed(cell: _Cell) -> int:
    """Steps the stopping rule will probably need (the normal approximation of the Wilson half-width)."""
    t, job = cell.total, cell.job
    half = getattr(job, "half_width", None)
    target = getattr(job, "score_variance", None)
    if not t.trials:
        return 1
    if half is None and target is None:
        return min(cell.n_blocks, 2 * cell.merged)
    p = t.wins / t.trials  # draw, attacker, defender: the stopping rule holds all three
    trials = 0.0
    if half is not None:
        trials = Z95 * Z95 * float(np.max(p * (1 - p))) / (half * half)
    if target is not None:  # a side's score x (1, 1/2 or 0 a fight) has variance E[x^2] - E[x]^2
        side = max(p[k] + p[0] / 4 - (p[k] + p[0] / 2) ** 2 for k in (1, 2))
        trials = max(trials, float(side) / target)
    return min(cell.n_blocks, max(cell.merged + 1, math.ceil(trials / cell.step_trials)))


def run_cells(
    ruleset: Ruleset,
    root: np.random.SeedSequence,
    jobs: Sequence[Any],
    *,
    rounds: Rounds,
    max_rounds: int,
    executor: Any,
    stop: Callable[[Any, Tally], bool],
    on_done: Callable[[int, Tally, list[Tally] | None, float], None],
    task_seconds: float = TASK_SECONDS,
) -> None:
    """Run ``jobs`` (:class:`analysis.runs.jobs.CellJob`) on ``executor``.

    Parameters
    ----------
    stop : callable
        ``stop(job, total)``: the adaptive stopping rule, checked after each step in
        step order (only for adaptive jobs: a ``half_width`` or a ``score_variance``).
    on_done : callable
        ``on_done(job_index, tally, blocks, seconds)`` as each job finishes (in the calling thread);
        ``seconds``: the CPU time of its step ranges, summed over the workers.
    task_seconds : float
        Least estimated work per task (see the module docstring).
    """
    cells = []
    for i, job in enumerate(jobs):
        adaptive = job.adaptive
        c = _Cell(i, job, job_steps(job), adaptive, _new_tally(ruleset), [] if job.keep_blocks else None)
        c.want = 1 if adaptive else c.n_blocks  # counted, not listed: flat in the trial count
        cells.append(c)
    ready = deque(cells)          # cells with blocks to submit below their ``want``
    active: list[_Cell] = []      # started, unfinished adaptive cells (for speculation)
    cost = _Cost()
    slots = executor_slots(executor)
    pending = TaskQueue(executor)
    task_cells: dict[int, list[_Cell]] = {}
    task_futures: dict[int, Any] = {}
    left = len(cells)
    required = sum(c.want * c.step_trials for c in cells)  # trials known to be needed, not yet submitted
    scheduler_bound = max(task_seconds, 20 * slots * SCHEDULER_SECONDS)

    def task_budget() -> float:
        if not cost.overall:
            return task_seconds
        share = required * cost.overall / (2 * slots)
        return max(task_seconds, min(scheduler_bound, share))

    def need(c: _Cell) -> int:
        return max(0, c.want - c.dispatched) * c.step_trials

    def next_task() -> list[Item]:
        items: list[Item] = []
        budget = task_budget()
        while ready and budget > 0 and len(items) < MAX_TASK_ITEMS:
            c = ready[0]
            if c.finished or c.dispatched >= c.want:
                ready.popleft()
                continue
            k = min(c.want - c.dispatched, cost.blocks_for(c, budget),
                    max(1, math.ceil(c.n_blocks / slots)))
            items.append(_item(c, k))
            budget -= k * c.step_trials * (c.seconds_per_trial or cost.overall or math.inf)
        if not items and len(pending) < slots:
            # nothing known to be needed: run ahead on the started adaptive cell with the least in flight
            spec = [c for c in active if not c.finished and c.dispatched < c.n_blocks]
            if spec:
                c = min(spec, key=lambda c: (c.dispatched - c.want, c.index))
                items.append(_item(c, min(c.n_blocks - c.dispatched, cost.blocks_for(c, task_seconds))))
        return items

    def _item(c: _Cell, k: int) -> Item:
        nonlocal required
        start = c.dispatched
        before = need(c)
        c.dispatched += k
        required -= before - need(c)
        if c.adaptive and start == 0:
            active.append(c)
        j = c.job
        return (c.index, j.plan, tuple(j.stream), c.steps, start, start + k, c.per_step)

    def finish(c: _Cell) -> None:
        nonlocal left, required
        required -= need(c)
        c.finished = True
        left -= 1
        if c in active:
            active.remove(c)
        c.waiting.clear()
        for tag in list(c.tasks):
            if all(o.finished for o in task_cells[tag]):  # nothing in that task is wanted any more
                pending.cancel(task_futures.pop(tag))
                for o in task_cells.pop(tag):
                    o.tasks.discard(tag)
        on_done(c.index, c.total, c.blocks, c.seconds)

    def fold(c: _Cell, start: int, stop_: int, result: Any) -> None:
        nonlocal required
        if not c.per_step:
            c.total = c.total.merge(result)
            c.merged += stop_ - start
            if c.merged == c.n_blocks:
                finish(c)
            return
        for b, t in zip(range(start, stop_), result):
            c.waiting[b] = t
        while c.merged in c.waiting:
            t = c.waiting.pop(c.merged)
            c.total = c.total.merge(t)
            c.merged += 1
            if c.blocks is not None:
                c.blocks.append(t)
            if (c.adaptive and stop(c.job, c.total)) or c.merged == c.n_blocks:
                finish(c)
                return
        if c.adaptive:
            want = _blocks_needed(c)
            if want > c.want:
                before = need(c)
                c.want = want
                required += need(c) - before
                if c.dispatched < c.want:
                    ready.appendleft(c)  # finish started cells first

    tags = iter(range(1 << 62))
    try:
        while left:
            while len(pending) < 2 * slots:
                items = next_task()
                if not items:
                    break
                tag = next(tags)
                task_futures[tag] = pending.submit(tag, run_items, ruleset.id, root, rounds, max_rounds, items)
                task_cells[tag] = [cells[it[0]] for it in items]
                for c in task_cells[tag]:
                    c.tasks.add(tag)
            if not len(pending):
                raise RuntimeError("runner: cells left but nothing to run")  # pragma: no cover - a bug
            tag, results = pending.next()
            del task_futures[tag]
            for c in task_cells.pop(tag):
                c.tasks.discard(tag)
            for index, start, stop_, result, seconds, cpu in results:
                c = cells[index]
                cost.observe(c, min(stop_ * c.step_trials, c.steps.cap) - start * c.step_trials, seconds)
                c.seconds += cpu
                if not c.finished:
                    fold(c, start, stop_, result)
    finally:
        pending.cancel_all()
