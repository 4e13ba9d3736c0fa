"""What a report says about its precision target: each cell's, or every unit's score (:mod:`analysis.runs.allocation`).

A roster of more than :data:`~analysis.runs.allocation.CELL_PRECISION_UNITS`
units is fought for its scores: its cells are not each fought to the cell
half-width, so a cell "wider than the target" is no news there, while a unit
whose score missed its target is. These helpers give the report, its summary,
its findings and ``metadata.json`` the same reading.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .findings import Finding

__all__ = ["cell_half_width", "score_target_settings", "cell_rule", "score_shortfall", "score_finding"]


def cell_half_width(rep: Any) -> float | None:
    """The half-width every cell was fought to (None: the cells were fought for the scores alone)."""
    st = getattr(rep.matrix, "settings", None) or {}  # a matrix read back from an older matrix.json has none
    return st["cell_half_width"] if "cell_half_width" in st else rep.settings.get("half_width")


def score_target_settings(rep: Any) -> dict[str, Any] | None:
    """The score target of the headline matrix (``matrix.json``'s ``score_target``), None without one."""
    return (getattr(rep.matrix, "settings", None) or {}).get("score_target")


def cell_rule(rep: Any) -> str:
    """One sentence: what each cell of the heatmap was fought to (and which cells racing fought on)."""
    target = score_target_settings(rep)
    hw = cell_half_width(rep)
    if target is None:
        return "Each cell ran until its Wilson 95% half-width reached the target or the trial cap."
    if hw is None:
        rule = (f"Each cell ran until its score was within ±{100 * target['cell_score_half_width']:.2g} pp, its "
                f"share of every unit's score target (±{100 * target['score_half_width']:.2g} pp), or the trial "
                "cap: a lopsided cell stops early, and each cell's own interval is as wide as its fights make it.")
    else:
        rule = ("Each cell ran until its Wilson 95% half-width reached the target and its score its share of every "
                f"unit's score target (±{100 * target['score_half_width']:.2g} pp), or the trial cap.")
    raced = sorted({u for r in (target.get("racing") or {}).get("rounds", []) for u in r})
    if raced:
        named = ", ".join(raced[:6]) + (f" and {len(raced) - 6} more" if len(raced) > 6 else "")
        rule += (f" The cells of {named} (near a verdict bound) were fought further by racing; see the settings.")
    return rule


def score_shortfall(rep: Any) -> list[tuple[str, float]]:
    """The units whose score interval is wider than the score target (the trial cap stopped their cells)."""
    from ..runs.allocation import matrix_scores, short_of_score_target

    target = score_target_settings(rep)
    if target is None:
        return []
    return short_of_score_target(matrix_scores(rep.matrix), float(target["score_half_width"]))


def score_finding(rep: Any) -> Finding | None:
    """A finding naming the units whose score missed its target; None when every one met it."""
    from .findings import Code, Finding, Link

    short = score_shortfall(rep)
    if not short:
        return None
    target = score_target_settings(rep)
    named = ", ".join(f"{u} (±{100 * hw:.2f} pp)" for u, hw in short[:8])
    more = f" and {len(short) - 8} more" if len(short) > 8 else ""
    return Finding("Score precision", (Link(str(len(short)), "settings", "settings"),
                                       f" unit score(s) missed the ±{100 * target['score_half_width']:.2g} pp target "
                                       f"at the trial cap: {named}{more}; raise ", Code("--max-trials"), "."))
