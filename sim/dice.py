"""Dice: the scalar streams the reference resolvers read, and vectorised primitives.

Scalar references (``resolve_one``) never touch a generator directly: they call
``dice.d6()``. A :class:`RandomDice` wraps a generator; a :class:`ScriptedDice`
replays dice written down in a rules text, so worked examples become tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DiceStream",
    "RandomDice",
    "ScriptedDice",
    "DiceScriptError",
    "roll_d6",
    "max_of_d6",
    "p_at_least",
]


class DiceStream(Protocol):
    """Anything that rolls one die at a time: all a scalar reference may read.

    ``d6()`` rolls a six-sided die; ``d(sides)`` any die with ``sides >= 2``
    faces numbered 1..sides (``d(6)`` is ``d6()``). A reference reads every die
    it needs through these two methods and nothing else, so tests can script
    the dice (:class:`ScriptedDice`) and the conformance kit can record and
    replay them (:mod:`sim.testing`).
    """

    def d6(self) -> int: ...

    def d(self, sides: int) -> int: ...


class RandomDice:
    """Dice from a :class:`numpy.random.Generator`, buffered for speed (one buffer per die size)."""

    def __init__(self, rng: np.random.Generator, buffer: int = 4096) -> None:
        self._rng = rng
        self._size = buffer
        self._buf: list[int] = []
        self._other: dict[int, list[int]] = {}

    def d6(self) -> int:
        if not self._buf:
            self._buf = self._rng.integers(1, 7, size=self._size).tolist()
        return self._buf.pop()

    def d(self, sides: int) -> int:
        if sides == 6:
            return self.d6()
        buf = self._other.get(sides)
        if not buf:
            if isinstance(sides, bool) or not isinstance(sides, (int, np.integer)) or sides < 2:
                raise ValueError(f"a die has at least 2 sides, got {sides!r}")
            buf = self._other[sides] = self._rng.integers(1, int(sides) + 1, size=self._size).tolist()
        return buf.pop()


class DiceScriptError(AssertionError):
    """A scripted test supplied too few (or too many) dice."""


class ScriptedDice:
    """Dice read from a list, in order: ``ScriptedDice([6, 2]).d6() == 6``.

    Parameters
    ----------
    values : iterable of int
        The dice, in the order the procedure rolls them.
    """

    def __init__(self, values: Iterable[int]) -> None:
        self._values = [int(v) for v in values]
        self._pos = 0

    def d6(self) -> int:
        return self.d(6)

    def d(self, sides: int) -> int:
        if self._pos >= len(self._values):
            raise DiceScriptError(f"the script ran out after {self._pos} dice")
        v = self._values[self._pos]
        if not 1 <= v <= sides:
            raise DiceScriptError(f"scripted die {v} is not a d{sides} result")
        self._pos += 1
        return v

    @property
    def used(self) -> int:
        """How many dice have been read."""
        return self._pos

    @property
    def remaining(self) -> int:
        return len(self._values) - self._pos

    def assert_exhausted(self) -> None:
        """Fail if the procedure read fewer dice than the script holds."""
        if self.remaining:
            raise DiceScriptError(f"{self.remaining} scripted dice were not used")


def roll_d6(rng: np.random.Generator, size: int | tuple[int, ...]) -> NDArray[np.int8]:
    """Roll d6 as ``int8`` (the cheapest way NumPy draws them)."""
    return rng.integers(1, 7, size=size, dtype=np.int8)


def max_of_d6(rng: np.random.Generator, n_dice: NDArray[np.integer]) -> NDArray[np.int8]:
    """Highest of ``n_dice`` d6 per trial, drawn by inverse CDF: one uniform per trial.

    ``P(max <= k) = (k/6)**n``, so the highest die is ``1 +`` the number of
    ``k = 1..5`` with ``U > (k/6)**n``. The thresholds are exact integer ratios
    rounded once (not ``U ** (1/n)``: NumPy's and the C library's ``pow`` give
    other last bits on other CPUs, which could move a draw). Entries with
    ``n_dice == 0`` return 0.
    """
    n = np.asarray(n_dice)
    u = rng.random(n.shape)
    top = int(n.max(initial=0))
    cdf = _max_cdf_table(max(top, 1))                    # (top + 1, 5): P(max <= k), k = 1..5
    out = np.ones(n.shape, np.int8)
    rows = np.maximum(n, 1)
    for k in range(5):
        out += u > cdf[rows, k]
    out[n <= 0] = 0
    return out


@lru_cache(maxsize=64)
def _max_cdf_table(top: int) -> NDArray[np.float64]:
    """``T[n, k - 1]`` = (k/6)**n for n = 0..top, k = 1..5, each an exact ratio rounded once (read-only)."""
    table = np.array([[k ** n / 6 ** n for k in range(1, 6)] for n in range(top + 1)])
    table.flags.writeable = False
    return table


def p_at_least(target: int) -> float:
    """Probability that one d6 scores ``target`` or more (0 above 6, 1 below 2)."""
    return min(max(7 - target, 0), 6) / 6
