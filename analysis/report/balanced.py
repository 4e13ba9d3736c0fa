"""The report's advice in words, and its "Balanced table" section: the advised table, and its proof when asked.

Every report computes one answer (:func:`analysis.runs.advice.advise`): the
fewest price changes under which every unit points can balance scores within
the tolerance of 50% against the repriced roster. The verdicts come from it,
and the "Balanced table" section shows it as one table (every unit's price now
and advised, its score now and at the advised prices on the report's own
fights). ``report --rebalance`` (:func:`with_rebalance`) also runs
:func:`analysis.runs.rebalance.rebalance` at the report's settings: the same
advice, written to ``rebalance/rebalanced.toml`` and proved on that file by a
fresh run, whose scores the section then shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from . import tables as rt

__all__ = ["with_rebalance", "advice_text", "balanced_table_text", "balanced_lines", "balanced_table",
           "balanced_columns", "rebalance_command", "SECTION_COLUMNS", "ADVISED_COLUMNS"]

#: The proof's columns in the report (every column is in rebalance/verification.csv).
SECTION_COLUMNS = (
    rt.Column("unit", "Unit"),
    rt.Column("points_before", "Points now", "points"),
    rt.Column("points_after", "Balanced points", "points"),
    rt.Column("score_before", "Score now", "pct", ("score_before_lo", "score_before_hi")),
    rt.Column("score_after", "Score at the balanced points (fresh seed)", "pct", ("score_after_lo", "score_after_hi")),
    rt.Column("verdict_after", "Verdict at the balanced points (fresh seed)"),
)
#: The advised table's columns, without a proof (every column is in verdicts.csv).
ADVISED_COLUMNS = (
    rt.Column("unit", "Unit"),
    rt.Column("points", "Points now", "points"),
    rt.Column("advised_points", "Advised points", "points"),
    rt.Column("score", "Score now", "pct", ("score_lo", "score_hi")),
    rt.Column("score_advised", "Score at the advised points (this report's fights)", "pct",
              ("score_advised_lo", "score_advised_hi")),
    rt.Column("verdict", "Verdict"),
)


def with_rebalance(rep: Any, units: Sequence[str] | None, run: Mapping[str, Any]) -> Any:
    """The report with its balanced table proved, or with the reason points alone cannot balance its roster."""
    from sim.errors import InputError
    from sim.roster import Roster

    from ..runs.rebalance import rebalance

    ros = rep.roster
    if units:  # the units in the report, alone (the written roster lists them field by field)
        ros = Roster(ros.ruleset, {u: ros.unit(u) for u in rep.matrix.units}, ros.options,
                     f"{ros.source} (units: {', '.join(rep.matrix.units)})", ros.description, ros.budget)
    keys = ("half_width", "max_trials", "rounds", "max_rounds", "states", "overrides", "options", "workers",
            "from_text", "executor", "store", "rules_defaults", "method", "score_half_width")
    settings = {**rep.settings, "rebalance": True}
    try:
        result = rebalance(rep.ruleset, ros, budget=rep.matrix.budget, seed=int(rep.settings["seed"]),
                           robustness=run.get("robustness", False), **{k: run[k] for k in keys if k in run})
    except InputError as e:  # e.g. fewer than two units that points can balance: the section says why
        return dataclasses.replace(rep, rebalance_note=str(e), settings=settings)
    return dataclasses.replace(rep, rebalance=result, settings=settings)


def rebalance_command(rep: Any) -> str:
    """``meleelab rebalance`` at the report's settings (what the section's table came from)."""
    from .html import rerun_command

    return rerun_command(rep).replace("meleelab report", "meleelab rebalance", 1)


def advice_text(rep: Any) -> str:
    """What the verdicts are: the one answer, how it was found, in a paragraph."""
    adv = getattr(rep.balance, "advice", None)
    if adv is None:
        return ""
    tol = f"{100 * adv.tolerance:g} pp"
    if adv.method != "joint":
        return (f"The advice, {adv.note}: a unit whose price lies outside its fair price's 95% interval is told its "
                "fair price, every other unit is fair.")
    return ("One answer for the whole roster: the fewest price changes under which every unit that points can "
            f"balance scores within {tol} of 50% against the repriced roster (fewest units changed first, then the "
            "smallest total change), found on this report's own fights. Nothing changes while no unit's score is "
            f"surely outside 50% ± {tol} (its 95% interval wholly beyond it). Only a unit whose price the advice "
            "changes is under- or overpriced; every other unit keeps its price, and where it is fair only once "
            "the others change, its verdict says so. A unit that points cannot balance (it would need more copies "
            "than a side can field, or fewer than one, or more copies never help) is not held to the tolerance and "
            "stays in the roster as an opponent. Its score is the one in every table: win + draw/2 against the "
            "roster as listed, both roles averaged, its own mirror match counting 1/2.")


def balanced_table_text(rep: Any) -> str:
    """The section's opening paragraph ("" for a report without copies or budget, unless a proof was asked for:
    then why this roster cannot be rebalanced)."""
    rb, note = getattr(rep, "rebalance", None), getattr(rep, "rebalance_note", "")
    if rep.matrix.budget is None or not getattr(rep.ruleset, "fields_copies", False):
        return (f"A balanced table was asked for (--rebalance), but this roster cannot be rebalanced: {note}"
                if note and rb is None else "")
    rid = rep.ruleset.id
    if rb is not None:
        return ("The advice above, written as a roster (rebalance/rebalanced.toml: every unit, at the price "
                f"written) and fought again at a fresh seed ({rb.verification_seed}, derived from the seed and the "
                "table) to prove it: the scores below are that run's, and so is the verdict at the balanced points. "
                "The proposal, with changes.csv and verification.csv, is in the rebalance/ folder; "
                f"`{rebalance_command(rep)}` repeats it on its own"
                + (" (on a roster of the report's units alone)." if rep.settings.get("units") else "."))
    if note:
        return f"A proof of the balanced table was asked for (--rebalance), but it could not be made: {note}"
    return ("The advice as one points table: every unit's price now and advised, and its score now and at the "
            f"advised prices on this report's own fights. `meleelab rebalance {rid}` (or `meleelab report "
            f"{rid} --rebalance`) writes it as a roster, rebalanced.toml, and proves it on that file with a fresh "
            "run: its own advice there should be to change nothing.")


def balanced_lines(rep: Any) -> list[str]:
    """The proof in plain sentences (empty without a rebalance)."""
    rb = getattr(rep, "rebalance", None)
    if rb is None:
        return []
    from .rebalance_page import headline

    return headline(rb)


def balanced_table(rep: Any) -> Any:
    """The proof's table with ``report --rebalance``, else the advised table (None without a budget)."""
    rb = getattr(rep, "rebalance", None)
    if rb is not None:
        return rb.verification
    adv = getattr(rep.balance, "advice", None)
    if rep.matrix.budget is None or adv is None or adv.method != "joint":
        return None
    return adv.table


def balanced_columns(rep: Any) -> tuple[Any, ...]:
    """The columns :func:`balanced_table` is shown with."""
    return SECTION_COLUMNS if getattr(rep, "rebalance", None) is not None else ADVISED_COLUMNS
