"""Fights stopped by the round cap: the cells where a draw is mostly "nobody won in time".

With ``--rounds end`` a fight runs until one side is destroyed, but no longer
than ``--max-rounds`` rounds; a fight still going then is a draw (``capped`` in
``matrix_long.csv`` is the share of a cell's fights that ended so). A few capped
fights change nothing; when many of a cell's fights reach the cap, its draws are
mostly the cap's, and a longer cap (or other rules) could give another answer.
:func:`capped_cells` lists the cells above a threshold (10% by default),
:func:`capped_finding` says so as a report finding (the lead's findings call it)
and :func:`capped_sentence` as one line of the report's Settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from .tables import fmt

if TYPE_CHECKING:
    from .findings import Finding

__all__ = ["CAPPED_SHARE", "capped_cells", "capped_finding", "capped_sentence"]

#: A cell is named when more than this share of its fights reached the round cap.
CAPPED_SHARE = 0.10
#: At most this many cells are named (the most capped first); the rest are counted.
NAMED = 6


def capped_cells(matrix: Any, threshold: float = CAPPED_SHARE) -> pd.DataFrame:
    """The cells of ``matrix`` (or its long frame) where more than ``threshold`` of the fights reached the cap:
    ``attacker, defender, capped``, the most capped first (roster order among equals)."""
    long = matrix.long if hasattr(matrix, "long") else matrix
    if "capped" not in long:
        return pd.DataFrame(columns=["attacker", "defender", "capped"])
    share = pd.to_numeric(long["capped"], errors="coerce")
    out = long.loc[share > threshold, ["attacker", "defender"]].assign(capped=share[share > threshold])
    return out.sort_values("capped", ascending=False, kind="mergesort").reset_index(drop=True)


def _max_rounds(matrix: Any) -> Any:
    return (getattr(matrix, "settings", None) or {}).get("max_rounds")


def _cell(a: str, d: str) -> str:
    return f"{a} against itself" if a == d else f"{a} vs {d}"


def capped_finding(matrix: Any, threshold: float = CAPPED_SHARE) -> Finding | None:
    """A finding naming the cells where more than ``threshold`` of the fights reached the round cap, with each
    share (None when there is none)::

        Round cap: in 2 cells more than 10% of the fights reached the 50-round cap and count as draws:
        Dwarf Clansman against itself 61.8%, Dwarf Clansman vs Swordsman 10.3%.
    """
    from .findings import Code, Finding, Link  # here: findings may import this module at its top

    cells = capped_cells(matrix, threshold)
    if not len(cells):
        return None
    cap = _max_rounds(matrix)
    cap_text = f"the {cap}-round cap" if cap is not None else "the round cap"
    parts: list[Any] = ["in ", Link(fmt(len(cells), "int"), "matrix", "matrix"),
                        " cell" if len(cells) == 1 else " cells", " more than ",
                        Link(fmt(threshold, "pct").replace(".0%", "%"), "settings", "settings"), " of the fights reached ",
                        Link(cap_text, "settings", "settings"), " and count as draws (",
                        Code("--max-rounds"), " raises it): "]
    for k, r in enumerate(cells.head(NAMED).itertuples(index=False)):
        parts += [", " if k else "", f"{_cell(r.attacker, r.defender)} ", Link(fmt(r.capped, "pct"), "matrix", "matrix")]
    if len(cells) > NAMED:
        parts.append(f" and {len(cells) - NAMED} more (the column capped of matrix_long.csv)")
    parts.append(".")
    return Finding("Round cap", tuple(parts))


def capped_sentence(matrix: Any, threshold: float = CAPPED_SHARE) -> str:
    """The finding as plain text for the Settings section ("" when no cell is above ``threshold``)."""
    f = capped_finding(matrix, threshold)
    if f is None:
        return ""
    text = "".join(getattr(p, "text", p) for p in f.parts)
    return text[:1].upper() + text[1:]
