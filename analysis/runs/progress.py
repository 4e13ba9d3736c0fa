"""Progress of the long steps of a run that are not fights: building the matchups' plans.

A run reports its cells through the ``progress(done, total)`` callback of
:func:`~analysis.runs.jobs.run_jobs`; before that, a large roster's matchups are
built one by one (a duel between groups builds its exact chain: a tenth of a second
each, over a minute for a hundred units). :func:`phase` counts such a step, and
every listener registered with :func:`progress_listener` (the command line's bar,
:mod:`analysis.cli.progress`) sees each count; without a listener it costs nothing.
:class:`BuildTimer` times the first plans of a batch and hands the listeners of
:func:`build_listener` an estimate of the rest (:class:`BuildEstimate`) before it goes on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Progress", "Phase", "phase", "progress_listener", "BuildEstimate", "BuildTimer", "build_listener"]


@dataclass(frozen=True)
class Progress:
    """Where a step stands: ``done`` of ``total`` ``unit`` of ``what``, ``seconds`` after it began."""

    what: str
    unit: str
    done: int
    total: int
    seconds: float
    finished: bool = False


_listeners: list[Callable[[Progress], None]] = []


@contextlib.contextmanager
def progress_listener(callback: Callable[[Progress], None]) -> Iterator[None]:
    """Call ``callback(progress)`` as each step counted inside the ``with`` block advances."""
    _listeners.append(callback)
    try:
        yield
    finally:
        _listeners.remove(callback)


class Phase:
    """A counted step (see :func:`phase`)."""

    def __init__(self, what: str, total: int, unit: str) -> None:
        self.what, self.total, self.unit = what, int(total), unit
        self.done = 0
        self.start = time.perf_counter()
        self._tell(False)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if _listeners:
            self._tell(False)

    def close(self) -> None:
        self._tell(True)

    def _tell(self, finished: bool) -> None:
        if not _listeners:
            return
        p = Progress(self.what, self.unit, self.done, self.total, time.perf_counter() - self.start, finished)
        for callback in list(_listeners):
            callback(p)


@contextlib.contextmanager
def phase(what: str, total: int, unit: str) -> Iterator[Phase]:
    """Count ``total`` steps of ``what`` (``unit`` each); the listeners see every ``advance`` and the end."""
    p = Phase(what, total, unit)
    try:
        yield p
    finally:
        p.close()


@dataclass(frozen=True)
class BuildEstimate:
    """The estimated time to build a batch of matchups' plans, measured on the first ones built.

    Attributes
    ----------
    ruleset : str
    builds : int
        Plans still to build (the cells found in a results store need none).
    measured : int
        Plans timed so far.
    seconds_each : float
    stored : int
        Cells of the batch taken from the results store (no plan, no fight).
    """

    ruleset: str
    builds: int
    measured: int
    seconds_each: float
    stored: int = 0

    @property
    def cpu_seconds(self) -> float:
        return self.builds * self.seconds_each

    @property
    def wall_seconds(self) -> float:
        return self.cpu_seconds  # plans are built in this process

    def text(self) -> str:
        from .cost import human_seconds

        stored = f" ({self.stored:,} more cells come from the results store)" if self.stored else ""
        return (f"{self.ruleset}: building {self.builds:,} matchups' plans before their fights{stored}: about "
                f"{human_seconds(self.cpu_seconds)} of CPU at {1000 * self.seconds_each:.2g} ms each (measured on "
                f"{self.measured}); the fights are estimated once they are built")


#: Plans timed before the building is estimated, at most (or fewer, once they took this many seconds).
TIMED_BUILDS = 8
TIMED_SECONDS = 0.5


class BuildTimer:
    """Times the first plans of a batch and announces the estimate of the rest once (:class:`BuildEstimate`)."""

    def __init__(self, ruleset: str, total: int, stored: int = 0, sample: tuple[int, float] = (0, 0.0)) -> None:
        """``total`` plans to build; ``sample``: plans of the same kind built just before, and their seconds
        (the mirror matches that sized the batch), which count towards the estimate and may make it now."""
        self.ruleset, self.total, self.stored = ruleset, total, stored
        self.count = 0
        self.seconds = 0.0
        self.last = 0.0
        self.told = False
        self.sample = sample
        if sample[0] and (sample[0] >= TIMED_BUILDS or sample[1] >= TIMED_SECONDS):
            self.tell()

    def timed(self, build: Callable[[], Any]) -> Any:
        """``build()``, timed (:attr:`last`: its seconds)."""
        t0 = time.process_time()  # CPU time: what a rerun that needs no plan saves, however loaded the machine
        try:
            return build()
        finally:
            self.observe(time.process_time() - t0)

    def observe(self, seconds: float) -> None:
        """Count one plan built in ``seconds`` of CPU (here, or by a worker)."""
        self.last = seconds
        self.seconds += seconds
        self.count += 1
        n, secs = self.count + self.sample[0], self.seconds + self.sample[1]
        if not self.told and (n >= TIMED_BUILDS or secs >= TIMED_SECONDS):
            self.tell()

    def tell(self) -> None:
        self.told = True
        left = self.total - self.count
        n, secs = self.count + self.sample[0], self.seconds + self.sample[1]
        if left > 0 and n and _build_listeners:
            estimate = BuildEstimate(self.ruleset, left, n, secs / n, self.stored)
            for callback in list(_build_listeners):
                callback(estimate)


_build_listeners: list[Callable[[BuildEstimate], None]] = []


@contextlib.contextmanager
def build_listener(callback: Callable[[BuildEstimate], None]) -> Iterator[None]:
    """Call ``callback(estimate)`` once the first plans of each batch built inside the ``with`` block are timed."""
    _build_listeners.append(callback)
    try:
        yield
    finally:
        _build_listeners.remove(callback)
