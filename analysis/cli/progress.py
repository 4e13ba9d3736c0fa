"""What a long run shows while it runs: a tqdm bar on a terminal, a plain line now and then in a pipe, nothing
with ``--quiet``.

Every step that counts (cells fought, through the ``progress(done, total)``
callback of the runs; matchups built, through :func:`analysis.runs.progress.phase`)
is shown the same way:

* on a terminal, a tqdm bar with its total and the time left (it appears after
  half a second, so a short run shows nothing);
* in a pipe or a file (a log, a CI job), a plain line ``meleelab: WHAT: DONE of
  TOTAL UNIT (P%), S so far, about T left`` once the step has run
  :data:`SPEAK_SECONDS`, then at most every :data:`PLAIN_EVERY` seconds, and a
  last line when it ends, so a long run is never silent and a log never fills
  with bar redraws;
* nothing with ``--quiet``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

__all__ = ["SPEAK_SECONDS", "PLAIN_EVERY", "PlainLines", "counter", "phase_display", "stderr_is_terminal"]

#: A run says something within this many seconds (an estimate, or its first plain progress line).
SPEAK_SECONDS = 2.0
#: Plain progress lines in a pipe: at most one every this many seconds.
PLAIN_EVERY = 10.0


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _duration(seconds: float) -> str:
    from ..runs.cost import human_seconds

    return f"{seconds:.0f} s" if seconds < 120 else human_seconds(seconds)


class PlainLines:
    """Progress of one step as plain lines on stderr (see the module docstring).

    ``update(done, total)`` as the step advances; a count going back or a new total
    starts a new batch (the next matrix of a report), with its own clock.
    """

    def __init__(self, desc: str, unit: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.desc, self.unit, self.clock = desc, unit, clock
        self.start: float | None = None
        self.last: float | None = None
        self.done = 0
        self.total = 0

    def update(self, done: int, total: int) -> None:
        now = self.clock()
        if self.start is None or total != self.total or done < self.done:
            self._finish()
            self.start, self.last, self.total = now, None, total
        self.done = done
        elapsed = now - self.start
        if done >= total:
            self._finish()  # said once, when it ends (if it said anything before)
        elif elapsed >= SPEAK_SECONDS and (self.last is None or now - self.last >= PLAIN_EVERY):
            self.last = now
            self._say(elapsed)

    def _say(self, elapsed: float) -> None:
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        left = ""
        if 0 < self.done < self.total:
            left = f", about {_duration(elapsed * (self.total - self.done) / self.done)} left"
        click.echo(f"meleelab: {self.desc}: {self.done:,} of {self.total:,} {self.unit}{pct}, "
                   f"{_duration(elapsed)} so far{left}", err=True)

    def _finish(self) -> None:
        """The last line of a batch that said something (a batch that never spoke stays silent)."""
        if self.start is not None and self.last is not None:
            took = _duration(self.clock() - self.start)
            end = (f"{self.done:,} of {self.total:,} {self.unit} in {took}" if self.done >= self.total else
                   f"stopped at {self.done:,} of {self.total:,} {self.unit} after {took}")
            click.echo(f"meleelab: {self.desc}: {end}", err=True)
        self.last = None

    def close(self) -> None:
        self._finish()
        self.start = None


def counter(quiet: bool, desc: str, unit: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """``(update, close)``: a tqdm bar on a terminal, :class:`PlainLines` in a pipe, ``(None, no-op)`` quiet."""
    if quiet:
        return None, lambda: None
    if not stderr_is_terminal():
        lines = PlainLines(desc, unit)
        return lines.update, lines.close
    from tqdm import tqdm

    bar = tqdm(total=None, desc=desc, unit=unit, file=sys.stderr, delay=0.5, leave=False)

    def update(done: int, total: int) -> None:
        if bar.total != total or done < bar.n:
            bar.reset(total=total)
        bar.update(done - bar.n)

    return update, bar.close


def phase_display(quiet: bool) -> Callable[[Any], None]:
    """A listener of :func:`analysis.runs.progress.progress_listener`: each counted step (building the
    matchups...) shown like the cells (:func:`counter`), one display per step, closed when it ends."""
    shown: dict[str, tuple[Callable[[int, int], None] | None, Callable[[], None]]] = {}

    def show(p: Any) -> None:
        if quiet or not p.total:
            return
        if p.what not in shown:
            shown[p.what] = counter(False, p.what, p.unit)
        update, close = shown[p.what]
        if update is not None:
            update(p.done, p.total)
        if p.finished:
            close()
            del shown[p.what]

    return show
