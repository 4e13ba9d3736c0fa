"""Dice streams that watch a scalar reference: it may read dice only through ``d6()`` and ``d(sides)``.

:class:`GuardedDice` hands out random dice and refuses every other attribute,
so a reference that reaches for the generator behind the stream fails loudly;
with ``record=True`` it writes each die down. :class:`ReplayDice` gives the
recorded dice back in order and checks that the reference asks for the same
kind of die each time: a reference that gives a different result on the same
dice uses randomness of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..dice import RandomDice

__all__ = ["DiceAccessError", "GuardedDice", "ReplayDice"]

_ALLOWED = frozenset({"d6", "d"})


class DiceAccessError(AssertionError):
    """The reference touched the dice stream other than through ``d6()`` / ``d(sides)``."""


class GuardedDice:
    """Random dice that allow ``d6()`` and ``d(sides)`` only.

    Parameters
    ----------
    rng : numpy.random.Generator
    record : bool
        Keep ``(sides, value)`` of every die in :attr:`log`.
    """

    __slots__ = ("_dice", "_log", "_sides")

    def __init__(self, rng: np.random.Generator, record: bool = False) -> None:
        object.__setattr__(self, "_dice", RandomDice(rng))
        object.__setattr__(self, "_log", [] if record else None)
        object.__setattr__(self, "_sides", set())

    def __getattribute__(self, name: str):  # noqa: ANN204 - any attribute
        if name in _ALLOWED or (name.startswith("__") and name.endswith("__")):
            return object.__getattribute__(self, name)
        raise DiceAccessError(f"the reference read dice.{name}: a reference may only call dice.d6() and dice.d(sides)")

    def __setattr__(self, name: str, value: object) -> None:
        raise DiceAccessError(f"the reference set dice.{name}: a reference may only call dice.d6() and dice.d(sides)")

    def d6(self) -> int:
        return _roll(self, 6)

    def d(self, sides: int) -> int:
        if isinstance(sides, bool) or not isinstance(sides, (int, np.integer)) or sides < 2:
            raise DiceAccessError(f"the reference asked for dice.d({sides!r}): sides must be an integer >= 2")
        return _roll(self, int(sides))

    @staticmethod
    def log_of(dice: "GuardedDice") -> list[tuple[int, int]] | None:
        """The recorded dice (or None when not recording)."""
        return object.__getattribute__(dice, "_log")

    @staticmethod
    def start_recording(dice: "GuardedDice") -> None:
        object.__setattr__(dice, "_log", [])

    @staticmethod
    def stop_recording(dice: "GuardedDice") -> list[tuple[int, int]]:
        log = object.__getattribute__(dice, "_log") or []
        object.__setattr__(dice, "_log", None)
        return log

    @staticmethod
    def sides_of(dice: "GuardedDice") -> set[int]:
        """Every die size the reference has asked for."""
        return set(object.__getattribute__(dice, "_sides"))


def _roll(dice: GuardedDice, sides: int) -> int:
    inner = object.__getattribute__(dice, "_dice")
    value = inner.d6() if sides == 6 else inner.d(sides)
    object.__getattribute__(dice, "_sides").add(sides)
    log = object.__getattribute__(dice, "_log")
    if log is not None:
        log.append((sides, value))
    return value


class ReplayDice:
    """The dice of one recorded fight, in order; asking for another kind of die, or one too many, fails."""

    __slots__ = ("_log", "_pos")

    def __init__(self, log: Sequence[tuple[int, int]]) -> None:
        self._log = list(log)
        self._pos = 0

    def d6(self) -> int:
        return self.d(6)

    def d(self, sides: int) -> int:
        if self._pos >= len(self._log):
            raise DiceAccessError(f"on replay the reference asked for more than the {len(self._log)} dice it rolled")
        want, value = self._log[self._pos]
        if int(sides) != want:
            raise DiceAccessError(f"on replay die {self._pos + 1} was asked as a d{sides}, first as a d{want}")
        self._pos += 1
        return value

    @property
    def remaining(self) -> int:
        return len(self._log) - self._pos
