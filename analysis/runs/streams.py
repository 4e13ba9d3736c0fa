"""Stream addresses of cells: a matchup's random numbers depend on its names (and copies), never on the run around it.

Block ``b`` of a cell draws from ``sim.rng.block_rng(root, *address, b)``. A
matrix cell's address is ``(key(attacker), key(defender))`` (:func:`cell_stream`),
so a cell's numbers depend neither on the roster order, nor on the other cells,
nor on the worker count. A whole-copy cell (expected fielding,
:mod:`analysis.runs.cells`) adds its copies: ``(..., key("whole copies"), ka, kd)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.rng import stable_key

__all__ = ["cell_stream", "whole_stream", "WHOLE_TAG"]

#: Stream tag of whole-copy cells (their copies follow it in the stream address).
WHOLE_TAG = stable_key("whole copies")


def cell_stream(attacker: str, defender: str) -> tuple[int, int]:
    """The stream address of the cell ``attacker`` vs ``defender`` (stable across runs and processes)."""
    return stable_key(attacker), stable_key(defender)


def whole_stream(attacker: str, attacker_copies: int, defender: str, defender_copies: int,
                 stream_names: Mapping[str, Any] | None = None) -> tuple[int, ...]:
    """The stream address of ``attacker`` x ``attacker_copies`` against ``defender`` x ``defender_copies``.

    ``stream_names`` maps a label to the name whose streams it borrows (a sweep's
    variant fights on its base's streams: common random numbers).
    """
    names = stream_names or {}
    a, d = names.get(attacker, attacker), names.get(defender, defender)
    return cell_stream(a, d) + (WHOLE_TAG, int(attacker_copies), int(defender_copies))
