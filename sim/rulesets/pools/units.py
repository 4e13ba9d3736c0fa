"""``pools`` units: a block of bases, and how many bases a side may field."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PoolsUnit", "MAX_FIELDED_BASES"]


#: Bases a side may field in an equal-points fight (copies merge into one block).
MAX_FIELDED_BASES = 400


@dataclass(frozen=True, slots=True)
class PoolsUnit:
    """A block of bases."""

    name: str
    bases: int
    attack: int
    courage: int
    move: float
    save: int | None = None
    wounds: int = 1
    vehicle: bool = False
    points: float | None = None
