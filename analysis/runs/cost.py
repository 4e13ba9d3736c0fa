"""What a batch of cell jobs will cost, estimated before it starts, so a long run is announced.

A 100-unit matrix is 10,000 cells; of 20-strong warband units it takes days of
CPU. :func:`announce_cost` estimates a batch before it runs,

    CPU seconds = sum over jobs (steps x seconds per kernel call + fights x seconds per fight)

with the fights an adaptive job needs at worst (p = 0.5 for its target, capped
by ``max_trials``) and the two costs measured by a timed probe of a few
representative cells (the largest, middle and smallest plan tables): a few
hundred fights each, on a stream of their own, so the probe never changes a
number. The estimate goes to the listeners registered with
:func:`cost_listener` (the command line prints it when it is over
:data:`ANNOUNCE_SECONDS`); without a listener nothing is probed.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from sim.limits import table_bytes
from sim.rng import block_rng, stable_key
from sim.ruleset import Rounds, Ruleset
from sim.stats import Z95

from .jobs import CellJob, job_steps

__all__ = ["CostEstimate", "cost_listener", "announce_cost", "expected_trials", "human_seconds",
           "ANNOUNCE_SECONDS"]

#: Runs estimated to take longer than this (CPU seconds) are announced on the command line.
ANNOUNCE_SECONDS = 60.0
#: A batch whose first, coarse probe bounds it under this many CPU seconds is not probed further (the
#: command line announces runs of more than two seconds, :mod:`analysis.cli.scale`).
PROBE_ENOUGH = 2.0
#: Fights of the two timed probes of a cell (their difference separates the cost per fight
#: from the fixed cost of a kernel call), after a small untimed call that compiles and warms up.
PROBE_FIGHTS = (64, 512)
WARM_UP_FIGHTS = 16
#: Cells probed at most.
PROBE_CELLS = 3
#: The probe's stream tag: its fights are thrown away and draw from no stream a result uses.
_PROBE_TAG = stable_key("meleelab cost probe")

_listeners: list[Callable[[CostEstimate], None]] = []


@dataclass(frozen=True)
class CostEstimate:
    """The estimated cost of one batch of jobs.

    Attributes
    ----------
    ruleset : str
    cells : int
        Jobs to run (those not taken from a results store).
    fights : int
        Fights they need at most (adaptive cells at p = 0.5, capped).
    most_per_cell : int
        The most fights one cell may need.
    seconds_per_fight : float
        Measured by the probe (with the cost of a kernel call spread over a step).
    cpu_seconds : float
    slots : int
        Workers running the batch.
    """

    ruleset: str
    cells: int
    fights: int
    most_per_cell: int
    seconds_per_fight: float
    cpu_seconds: float
    slots: int

    @property
    def wall_seconds(self) -> float:
        """Elapsed time with every worker busy."""
        return self.cpu_seconds / max(1, self.slots)

    def text(self) -> str:
        """One line for people."""
        per = _duration(self.seconds_per_fight * 1000, "ms") if self.seconds_per_fight >= 1e-4 else \
            f"{self.seconds_per_fight * 1e6:.2g} µs"
        workers = f"{self.slots} workers" if self.slots != 1 else "1 worker"
        return (f"{self.ruleset}: {self.cells:,} cells of up to {self.most_per_cell:,} fights "
                f"({self.fights:,} fights) at about {per} a fight: up to {_human(self.cpu_seconds)} of CPU, "
                f"{_human(self.wall_seconds)} on {workers}")


def _duration(value: float, unit: str) -> str:
    return f"{value:.2g} {unit}"


def human_seconds(seconds: float) -> str:
    """``42 s``, ``12 min``, ``3 h``, ``12 days``."""
    return _human(seconds)


def _human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:,.0f} h" if seconds < 10 * 86400 else f"{seconds / 86400:,.0f} days"


@contextlib.contextmanager
def cost_listener(callback: Callable[[CostEstimate], None]) -> Iterator[None]:
    """Call ``callback(estimate)`` before every batch of jobs run inside the ``with`` block."""
    _listeners.append(callback)
    try:
        yield
    finally:
        _listeners.remove(callback)


def expected_trials(job: CellJob) -> int:
    """Fights ``job`` needs at most: its cap, or for an adaptive job what p = 0.5 needs, in whole steps."""
    steps = job_steps(job)
    if not job.adaptive:
        return steps.cap
    worst = 0.0
    if job.half_width is not None:
        worst = Z95 * Z95 * 0.25 / (job.half_width * job.half_width)
    if job.score_variance is not None:  # a cell score's variance is at most 1/4 a fight
        worst = max(worst, 0.25 / job.score_variance)
    return min(steps.cap, math.ceil(worst / steps.trials) * steps.trials)


def _probe(ruleset: Ruleset, root: np.random.SeedSequence, job: CellJob, rounds: Rounds, max_rounds: int,
           fights: int) -> float:
    """Seconds for one kernel call of ``fights`` fights of ``job`` (on the probe's own stream)."""
    rng = block_rng(root, *job.stream, _PROBE_TAG, fights)
    t0 = time.perf_counter()
    ruleset.simulate(job.plan, fights, rng, rounds, max_rounds)
    return time.perf_counter() - t0


#: Jobs whose plan tables are measured to pick the probed cells (evenly spread over the batch).
SIZED_CELLS = 64


def _sample(jobs: Sequence[CellJob]) -> list[CellJob]:
    """The jobs with the largest, middle and smallest plan tables (cost grows with the models fielded),
    among :data:`SIZED_CELLS` spread over the batch (measuring every plan of a big matrix takes seconds)."""
    if len(jobs) <= PROBE_CELLS:
        return list(jobs)
    spread = sorted(set(range(0, len(jobs), max(1, len(jobs) // SIZED_CELLS))))
    by_size = sorted(spread, key=lambda i: (-table_bytes(jobs[i].plan), i))
    picks = dict.fromkeys([by_size[0], by_size[len(by_size) // 2], by_size[-1]])
    return [jobs[i] for i in picks]


def estimate_cost(ruleset: Ruleset, root: np.random.SeedSequence, jobs: Sequence[CellJob], *, rounds: Rounds,
                  max_rounds: int, slots: int, enough: float = ANNOUNCE_SECONDS) -> CostEstimate:
    """Estimate the batch by probing; stops probing as soon as even a pessimistic bound is under ``enough``.

    The first probe (the largest cell, :data:`PROBE_FIGHTS` ``[0]`` fights, its call cost
    included in the cost per fight) overestimates cheap rulesets, so a batch it
    puts under ``enough`` needs no finer probe.
    """
    fights = sum(expected_trials(j) for j in jobs)
    steps = sum(-(-expected_trials(j) // job_steps(j).trials) for j in jobs)
    most = max(expected_trials(j) for j in jobs)
    sample = _sample(jobs)
    small, large = PROBE_FIGHTS
    _probe(ruleset, root, sample[0], rounds, max_rounds, WARM_UP_FIGHTS)  # compiles and warms up: not timed
    first = _probe(ruleset, root, sample[0], rounds, max_rounds, small)
    bound = first / small * fights
    if bound <= enough:
        return CostEstimate(ruleset.id, len(jobs), fights, most, first / small, bound, slots)
    per_fight, per_call = [], []
    for i, job in enumerate(sample):
        if i:
            _probe(ruleset, root, job, rounds, max_rounds, WARM_UP_FIGHTS)
        t_small = _probe(ruleset, root, job, rounds, max_rounds, small)
        t_large = _probe(ruleset, root, job, rounds, max_rounds, large)
        fight = max((t_large - t_small) / (large - small), t_large / large / 4)  # noise cannot make it free
        per_fight.append(fight)
        per_call.append(max(0.0, t_small - small * fight))
    fight, call = float(np.mean(per_fight)), float(np.mean(per_call))
    cpu = steps * call + fights * fight
    return CostEstimate(ruleset.id, len(jobs), fights, most, cpu / fights if fights else fight, cpu, slots)


def announce_cost(ruleset: Ruleset, root: np.random.SeedSequence, jobs: Sequence[CellJob], *, rounds: Rounds,
                  max_rounds: int, slots: int, cells: int | None = None) -> CostEstimate | None:
    """Estimate ``jobs`` and hand the estimate to the listeners (nothing is probed without one).

    ``cells``: the jobs are the first chunk of a streamed batch of that many cells
    (:mod:`analysis.runs.streaming`); the estimate is the chunk's, scaled to the batch.
    """
    if not _listeners or not jobs:
        return None
    factor = max(1.0, cells / len(jobs)) if cells else 1.0
    estimate = estimate_cost(ruleset, root, jobs, rounds=rounds, max_rounds=max_rounds, slots=slots,
                             enough=PROBE_ENOUGH / factor)
    if factor > 1:
        estimate = CostEstimate(estimate.ruleset, int(cells), round(estimate.fights * factor),
                                estimate.most_per_cell, estimate.seconds_per_fight, estimate.cpu_seconds * factor,
                                estimate.slots)
    for callback in list(_listeners):
        callback(estimate)
    return estimate
