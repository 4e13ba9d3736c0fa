"""What a report's matrix cells cost and how precise they are: counts, trials, exact cells, shortfalls."""

from __future__ import annotations

from typing import Any

from ..stats.estimates import fought_rows, is_exact

__all__ = ["cell_stats", "report_shortfall", "exact_sentence", "method_note"]


def method_note(long: Any) -> str:
    """A caption's tail: ``"; every cell exact"``, ``"; 12 of 64 cells exact"``, or empty (no exact cell)."""
    if "method" not in long:
        return ""
    fought = fought_rows(long)
    k = int(is_exact(fought).sum())
    if not k:
        return ""
    return "; every cell exact" if k == len(fought) else f"; {k} of {len(fought)} cells exact"


def cell_stats(long: Any, method: str | None = None) -> dict[str, Any]:
    """Trials per Monte Carlo cell, the widest interval achieved, and how many cells are exact.

    Exact cells (``method == "exact"``) sampled nothing: they count in ``cells_fought`` and
    ``cells_exact``, not in the trial statistics (which are over the Monte Carlo cells; 0 without any).
    """
    fought = fought_rows(long)
    exact = is_exact(fought)
    mc = fought[~exact]
    # every fight behind a cell (a mixed cell's whole-copy cells), not its effective number
    fights = mc["fights"] if "fights" in mc else mc["trials"]
    half = ((fought["p_attacker_hi"] - fought["p_attacker_lo"]) / 2).max() if len(fought) else float("nan")
    some = len(fights) > 0
    return {"cells": int(len(long)), "cells_fought": int(len(fought)),
            "cells_exact": int(exact.sum()), "cells_mc": int(len(mc)), "method": method,
            "trials_total": int(fights.sum()), "trials_min": int(fights.min()) if some else 0,
            "trials_median": float(fights.median()) if some else 0.0,
            "trials_max": int(fights.max()) if some else 0,
            "widest_half_width": float(half),
            "not_fought": [f"{a} vs {d}: {n}" for a, d, n in
                           zip(long["attacker"], long["defender"], long["note"]) if n]}


def exact_sentence(long: Any) -> str:
    """One plain sentence: how many of the matrix's cells are exact (empty when the frame has no methods)."""
    if "method" not in long:
        return ""
    fought = fought_rows(long)
    k, n = int(is_exact(fought).sum()), len(fought)
    if k == n:
        return (f"All {n} cells are exact: computed from each matchup's Markov chain, with no Monte Carlo "
                "noise (their intervals have zero width).")
    if k == 0:
        return f"All {n} cells are Monte Carlo estimates (no exact chain was cheaper for any of them)."
    return (f"{k} of {n} cells are exact (computed from the matchup's Markov chain, no noise; marked "
            f"\"exact\"); the other {n - k} are Monte Carlo estimates.")


def report_shortfall(report: Any) -> dict[str, Any]:
    """The matrix cells (headline and one a side) the trial cap stopped short of the target half-width
    (exact cells have no tally and never fall short)."""
    from ..runs.jobs import merge_shortfalls, shortfall

    from .score_target import cell_half_width

    hw = cell_half_width(report)  # None: fought for the scores, no cell falls short of a cell target
    parts = [shortfall(((f"{a} vs {d}", r.tally) for (a, d), r in report.matrix.results.items()), hw)]
    if report.one_for_one is not None:
        parts.append(shortfall(((f"{a} vs {d} (one a side)", r.tally)
                                for (a, d), r in report.one_for_one.results.items()), hw))
    gap = merge_shortfalls(parts)
    from .score_target import score_shortfall, score_target_settings

    target = score_target_settings(report)
    score = {} if target is None else {
        "score_target": target["text"],
        "units_short_of_score_target": [{"unit": u, "score_half_width": hw} for u, hw in score_shortfall(report)]}
    return {**score, "half_width_cells": gap["cells"], "cells_short_of_half_width": gap["cells_short_of_half_width"],
            "widest_half_width": gap["widest_half_width"], "short_of_half_width": gap["short_of_half_width"]}
