"""What a report says about an analysis it was asked for and could not make at all.

``report --rebalance`` on a ruleset that cannot field copies (mecha), or on a
roster without a budget, still writes the report (issue 38, item 7): the
"Balanced table" section then says that this roster cannot be rebalanced and
why, where the section of a roster with copies and a budget says how its table
was made (:func:`analysis.report.balanced.balanced_table_text`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["balanced_section_text"]


def balanced_section_text(rep: Any) -> str:
    """The opening paragraph of the "Balanced table" section ("" for none).

    :func:`~analysis.report.balanced.balanced_table_text`, or, for a rebalance
    asked for but refused before any fight (``rep.rebalance_note`` without a
    budget or copies, where that function has no section), the reason.
    """
    from .balanced import balanced_table_text

    text = balanced_table_text(rep)
    note = getattr(rep, "rebalance_note", "")
    if text or not note or getattr(rep, "rebalance", None) is not None:
        return text
    return f"A balanced table was asked for (--rebalance), but this roster cannot be rebalanced: {note}"
