"""Errors that are the user's to fix: the CLI prints them as one line and exits 2."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["MeleelabError", "InputError", "MatchupError", "TooLargeError", "OutputError", "Where"]


class MeleelabError(ValueError):
    """Bad input: a message meant for a person, printed as one line.

    A message holding line breaks (a value's ``repr`` such as a DataFrame's) is
    joined into one line here, so that every raise site gives one line.
    """

    def __init__(self, *args: Any) -> None:
        if args and isinstance(args[0], str) and ("\n" in args[0] or "\r" in args[0]):
            args = (" ".join(part.strip() for part in args[0].splitlines() if part.strip()), *args[1:])
        super().__init__(*args)


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
        """An :class:`InputError` naming the source, unit, field, value and what was expected (a value
        whose text is long is cut to :data:`SHOWN_VALUE` characters: the message stays one readable line)."""
        return InputError(self.describe(field, f"got {shown(value)}, expected {expected}"))

    def describe(self, field: str | None, text: str) -> str:
        parts = []
        if self.source:
            parts.append(str(self.source))
        if self.unit is not None:
            parts.append(f"unit {shown(self.unit)}")
        if field is not None:
            parts.append(f"field {field!r}")
        parts.append(text)
        return ": ".join(parts)


#: Longest text of a value quoted in an error message (a 1 MB unit name is shown by its start).
SHOWN_VALUE = 120


def shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`SHOWN_VALUE` characters with ``...`` (never recursing without end)."""
    try:
        text = repr(value)
    except RecursionError:  # a structure nested thousands deep (sim.files refuses those first)
        text = f"<{type(value).__name__} nested too deeply to show>"
    if "\n" in text:  # a DataFrame, an array: one line
        text = " ".join(text.split())
    return text if len(text) <= SHOWN_VALUE else text[: SHOWN_VALUE - 3] + "..."


class TooLargeError(MatchupError):
    """A matchup whose tables and block of fights would not fit the memory limit (see :mod:`sim.limits`)."""
