"""The report's "Balanced table" section: the whole balanced points table, or how to get it.

Every fair price in a report assumes the other prices stay put. ``report
--rebalance`` (:func:`with_rebalance`) also runs :func:`analysis.runs.rebalance.rebalance`
at the report's settings, so the section shows the proposed table and its proof
and the folder gains ``rebalance/`` (the files of ``meleelab rebalance``). Without
it the section says how to get the table. The search reuses the report's
whole-copy cells through the results store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from . import tables as rt

__all__ = ["with_rebalance", "balanced_table_text", "balanced_lines", "balanced_table", "rebalance_command",
           "SECTION_COLUMNS"]

#: The proposal's columns in the report (every column is in rebalance/verification.csv).
SECTION_COLUMNS = (
    rt.Column("unit", "Unit"),
    rt.Column("points_before", "Points now", "points"),
    rt.Column("points_after", "Balanced points", "points"),
    rt.Column("score_before", "Score now", "pct", ("score_before_lo", "score_before_hi")),
    rt.Column("score_after", "Score at the balanced points (fresh seed)", "pct", ("score_after_lo", "score_after_hi")),
    rt.Column("verdict_after", "Verdict at the balanced points"),
)


def with_rebalance(rep: Any, units: Sequence[str] | None, run: Mapping[str, Any]) -> Any:
    """The report with its balanced table, or with the reason points alone cannot balance its roster."""
    from sim.errors import InputError
    from sim.roster import Roster

    from ..runs.rebalance import rebalance

    ros = rep.roster
    if units:  # the units in the report, alone (the written roster lists them field by field)
        ros = Roster(ros.ruleset, {u: ros.unit(u) for u in rep.matrix.units}, ros.options,
                     f"{ros.source} (units: {', '.join(rep.matrix.units)})", ros.description, ros.budget)
    keys = ("half_width", "max_trials", "rounds", "max_rounds", "states", "overrides", "options", "workers",
            "from_text", "executor", "store", "rules_defaults", "method")
    settings = {**rep.settings, "rebalance": True}
    try:
        result = rebalance(rep.ruleset, ros, budget=rep.matrix.budget, seed=int(rep.settings["seed"]),
                           **{k: run[k] for k in keys})
    except InputError as e:  # e.g. fewer than two units that points can balance: the section says why
        return dataclasses.replace(rep, rebalance_note=str(e), settings=settings)
    return dataclasses.replace(rep, rebalance=result, settings=settings)


def rebalance_command(rep: Any) -> str:
    """``meleelab rebalance`` at the report's settings (what the section's table came from)."""
    from .html import rerun_command

    return rerun_command(rep).replace("meleelab report", "meleelab rebalance", 1)


def balanced_table_text(rep: Any) -> str:
    """The section's opening paragraph ("" for a report without copies or budget)."""
    if rep.matrix.budget is None or not getattr(rep.ruleset, "fields_copies", False):
        return ""
    rid = rep.ruleset.id
    rb, note = getattr(rep, "rebalance", None), getattr(rep, "rebalance_note", "")
    if rb is not None:
        how = "at its own settings" if getattr(rep.matrix, "fielding", "") == "expected" else \
            "at its own settings but with expected fielding (a rebalance needs prices that act continuously)"
        return ("Every fair price above assumes the other prices stay put. This report also repriced the whole "
                f"roster at once, {how}, until every unit scored 50% (within "
                f"{100 * rb.tolerance:g} pp) against the repriced roster at equal points, then fought the proposed "
                f"table again at a fresh seed ({rb.verification_seed}) to prove it. The proposal, with "
                "rebalanced.toml (the roster with the new points), changes.csv and verification.csv, is in the "
                f"rebalance/ folder; `{rebalance_command(rep)}` repeats it on its own"
                + (" (on a roster of the report's units alone)." if rep.settings.get("units") else "."))
    if note:
        return f"A balanced table was asked for (--rebalance), but points alone cannot balance this roster: {note}"
    return (f"Every fair price above assumes the other prices stay put. `meleelab rebalance {rid}` reprices the "
            "whole roster at once, at these settings, until every unit scores 50% (within 2 pp) against the "
            "repriced roster at equal points; it then fights the proposed table again at a seed derived from "
            "--seed to prove it, names any unit that points alone cannot balance, and writes rebalanced.toml (the "
            "roster with the new points), changes.csv and verification.csv (the guide, section 9.2, gives its "
            "measured results and times on the shipped rosters). `meleelab report --rebalance` puts the table "
            "in the report.")


def balanced_lines(rep: Any) -> list[str]:
    """The proof in plain sentences (empty without a rebalance)."""
    rb = getattr(rep, "rebalance", None)
    if rb is None:
        return []
    from .rebalance_page import headline

    return headline(rb)


def balanced_table(rep: Any) -> Any:
    """The proposal (unit, points now and balanced, scores now and after), or None without a rebalance."""
    rb = getattr(rep, "rebalance", None)
    return None if rb is None else rb.verification
