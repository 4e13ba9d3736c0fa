"""Errors that are the user's to fix: the CLI prints them as one line and exits 2."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["MeleelabError", "InputError", "MatchupError", "TooLargeError", "OutputError", "Where"]


class MeleelabError(ValueError):
    """Bad input: a message meant for a person, printed as one line."""


class InputError(MeleelabError):
    """A roster, unit, field, state or option failed validation."""


class MatchupError(MeleelabError):
    """Two valid units that cannot fight each other as asked (e.g. a flier in ``mecha``)."""


class OutputError(MeleelabError):
    """An output file, folder or results store that cannot be written or read (one line for a person)."""


@dataclass(frozen=True)
class Where:
    """Where a value came from, so an error can say which file, unit and field.

    Parameters
    ----------
    source : str or None
        File name (or ``"--set"``, ``"API"``...).
    unit : str or None
        Unit name, when known.
    """

    source: str | None = None
    unit: str | None = None

    def at(self, unit: str | None) -> "Where":
        return Where(self.source, unit)

    def error(self, field: str | None, value: Any, expected: str) -> InputError:
        """An :class:`InputError` naming the source, unit, field, value and what was expected."""
        return InputError(self.describe(field, f"got {value!r}, expected {expected}"))

    def describe(self, field: str | None, text: str) -> str:
        parts = []
        if self.source:
            parts.append(str(self.source))
        if self.unit is not None:
            parts.append(f"unit {self.unit!r}")
        if field is not None:
            parts.append(f"field {field!r}")
        parts.append(text)
        return ": ".join(parts)


class TooLargeError(MatchupError):
    """A matchup whose tables and block of fights would not fit the memory limit (see :mod:`sim.limits`)."""
