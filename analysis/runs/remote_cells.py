"""Cells built and fought by the workers: a task builds the plans of a few cells and runs each to its end.

A large matrix spends more CPU building its cells' plans (a warband matchup's
tables: 10-30 ms) than fighting them once each cell needs only its share of a
score target (a few hundred fights, :mod:`analysis.runs.allocation`). Building
every plan in this process left the workers idle for most of the run, and
sending each plan to a worker cost as much again in pickling. Here a task gets
the *recipe* of a few consecutive cells (the units and copies:
:meth:`analysis.runs.fielding.RunContext.build`'s arguments), builds each plan,
runs the cell to its end step by step on its addressed stream (the stopping rule
checked in step order, as every runner does: :func:`analysis.runs.jobs._run_one`)
and returns the tally, never the plan. Consecutive cells of a matrix are the
copy counts of one pair of units, so one task builds that pair's tables once
(each worker keeps its ruleset's table caches).

A cell's numbers depend only on the root seed, its stream and its settings, so
they are the same as when built here and fought in steps spread over tasks.
The results store is read before (the caller takes the stored cells first) and
written here, in this process, as the cells come back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sim.errors import MatchupError

from .jobs import CellJob, JobResult, _exact, _run_one

__all__ = ["Remote", "GROUP_CELLS", "REMOTE_CELLS", "build_and_fight", "build_and_fight_packed", "fight_remotely"]

#: Cells of one task (consecutive: a pair's copy counts share their tables).
GROUP_CELLS = 8
#: Tasks in flight per worker slot (the plans and tallies in flight stay bounded).
TASKS_PER_SLOT = 3
#: Batches of fewer cells are built here and fought in steps (one task per few steps keeps every core busy).
REMOTE_CELLS = 64


@dataclass(frozen=True)
class Remote:
    """How the caller's cells are built and fought by the workers.

    Attributes
    ----------
    recipe : callable
        ``recipe(cell) -> args`` of :meth:`~analysis.runs.fielding.RunContext.build` (picklable).
    stream : callable
        ``stream(cell) -> tuple``: the cell's stream address.
    label : callable
        ``label(cell) -> str``: its name in an error.
    remember : callable
        ``remember(cell, matchup)``: called here with each cell's matchup as it comes back.
    """

    recipe: Callable[[Hashable], tuple]
    stream: Callable[[Hashable], tuple]
    label: Callable[[Hashable], str]
    remember: Callable[[Hashable, Any], None]


def build_and_fight(context: Any, items: Sequence[tuple[tuple, tuple, str]]) -> list[tuple]:
    """Worker task: build each cell's plan and run it to its end.

    Parameters
    ----------
    context : analysis.runs.fielding.RunContext
        Without executor or store.
    items : sequence of (args, stream, label)

    Returns
    -------
    list
        Per cell ``(why,)`` when its plan was refused, else ``(matchup, job, result, seconds_to_build)``
        with the job's plan dropped.
    """
    rs = context.rs
    out: list[tuple] = []
    for args, stream, label in items:
        t0 = time.process_time()
        try:
            matchup, plan = context.build(*args)
        except MatchupError as e:
            out.append((str(e),))
            continue
        took = time.process_time() - t0
        job = context.job(None, plan, stream, label, identity=matchup, built_in=took)
        if job.method == "exact":
            res = _exact(rs, context.root, job, context.rounds, context.max_rounds, None)
        else:
            res = _run_one(rs, context.root, job, context.rounds, context.max_rounds)
        out.append((matchup, dataclasses.replace(job, plan=None), res, took))
    return out


#: Contexts a worker has unpickled, by the digest of their bytes (a few: one run's batches share one).
_CONTEXTS: dict[str, Any] = {}
_CONTEXTS_MOST = 4


def build_and_fight_packed(digest: str, packed: bytes, items: Sequence[tuple[tuple, tuple, str]]) -> list[tuple]:
    """:func:`build_and_fight` with its context pickled once per batch: a worker unpickles it once (a 100-unit
    roster's context took 2 ms to unpickle, a quarter of a task's cells' plans)."""
    context = _CONTEXTS.get(digest)
    if context is None:
        context = pickle.loads(packed)
        if len(_CONTEXTS) >= _CONTEXTS_MOST:
            _CONTEXTS.pop(next(iter(_CONTEXTS)))
        _CONTEXTS[digest] = context
    return build_and_fight(context, items)


def fight_remotely(pool: Any, context: Any, cells: Sequence[Hashable], remote: Remote
                   ) -> Iterator[tuple[Hashable, tuple]]:
    """Each of ``cells`` with what :func:`build_and_fight` returned for it, in order, from ``pool`` (local
    workers or a Dask client), a few tasks ahead; each result is stored as it comes back."""
    from sim.executor import executor_slots

    light = dataclasses.replace(context, executor=None, store=None)  # what a worker needs
    packed = pickle.dumps(light, protocol=pickle.HIGHEST_PROTOCOL)
    digest = hashlib.sha256(packed).hexdigest()
    groups = (list(cells[i:i + GROUP_CELLS]) for i in range(0, len(cells), GROUP_CELLS))

    def submit(group: list[Hashable]) -> tuple[list[Hashable], Any]:
        items = [(remote.recipe(c), tuple(remote.stream(c)), remote.label(c)) for c in group]
        return group, pool.submit(build_and_fight_packed, digest, packed, items)

    ahead: deque = deque()
    window = TASKS_PER_SLOT * executor_slots(pool)
    for group in groups:
        ahead.append(submit(group))
        if len(ahead) >= window:
            break
    while ahead:
        group, future = ahead.popleft()
        outs = future.result()
        nxt = next(groups, None)
        if nxt is not None:
            ahead.append(submit(nxt))
        for c, out in zip(group, outs):
            if len(out) > 1:
                _store(context, c, out[1], out[2], out[3])
            yield c, out


def _store(context: Any, cell: Hashable, job: CellJob, res: JobResult, took: float) -> None:
    """Save a cell fought by a worker to the results store, as :func:`~analysis.runs.jobs.run_jobs` would."""
    store = context.store
    res.key = cell
    if store is None:
        return
    job = dataclasses.replace(job, key=cell)
    if res.exact is not None:
        if job.asked != "mc" and callable(getattr(store, "put_exact", None)):
            key = store.key(context.rs, context.root, context.rounds, context.max_rounds, job)
            if key:
                store.put_exact(key, res.exact, label=repr(cell), seconds=took + res.seconds)
        return
    key = store.key(context.rs, context.root, context.rounds, context.max_rounds, job)
    if key:
        store.put(key, res.tally, res.blocks, label=repr(cell), seconds=took + res.seconds)
