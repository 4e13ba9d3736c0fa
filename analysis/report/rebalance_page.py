"""The files of ``meleelab rebalance``: the rebalanced roster, the changes, the proof, and a page that reads them.

* ``rebalanced.toml``: the roster with the proposed points, each unit's old price
  kept as a comment; it loads as it is (``meleelab report RULESET --roster
  rebalanced.toml``). A TOML roster keeps its own layout and comments (tomlkit);
  any other roster is written out field by field.
* ``changes.csv``: unit, old points, new points, change in %, the new price's
  95% interval, whether it changed.
* ``verification.csv``: every unit's score against the roster before and after
  (the proposed table fought again at the verification seed), with 95%
  intervals, Nash weights and verdicts.
* ``report.html`` and ``summary.md``: the same, side by side, in plain words.
* ``metadata.json``: seeds, settings, matrix runs and cells.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sim

from . import tables as rt
from .io import atomic_write_bytes, atomic_write_text, to_json
from .safe_csv import to_csv
from .safe_markdown import md_cell, md_text

__all__ = ["write_rebalance", "rebalanced_toml", "rebalance_markdown", "rebalance_html", "headline", "FILES",
           "ROBUSTNESS_FILES", "files_of", "robustness_sentence"]

#: Every file ``write_rebalance`` writes.
FILES = ("rebalanced.toml", "changes.csv", "verification.csv", "summary.md", "report.html", "metadata.json")
#: Written with ``robustness``.
ROBUSTNESS_FILES = ("robustness.csv", "robustness.png")

CHANGES = (
    rt.Column("unit", "Unit"),
    rt.Column("old_points", "Old points", "points"),
    rt.Column("new_points", "New points", "points", ("new_lo", "new_hi"),
              help="the price written; beside it, the prices between which the unit stays within the tolerance, "
                   "every other price as written (its copy curve in the proof)"),
    rt.Column("change_pct", "Change %", "pp", help="change of the price, in per cent of the old price"),
    rt.Column("changed", "Changed", "bool"),
    rt.Column("locked", "Locked", "bool"),
    rt.Column("note", "Why it is not held to 50%"),
)
VERIFICATION = (
    rt.Column("unit", "Unit"),
    rt.Column("points_before", "Points before", "points"),
    rt.Column("score_before", "Score before", "pct", ("score_before_lo", "score_before_hi"),
              help="win + draw/2 against the roster at equal points, both roles averaged"),
    rt.Column("verdict_before", "Verdict before"),
    rt.Column("points_after", "Points after", "points"),
    rt.Column("score_after", "Score after", "pct", ("score_after_lo", "score_after_hi"),
              help="the proposed table fought again at the verification seed"),
    rt.Column("verdict_after", "Verdict after"),
    rt.Column("nash_before", "Nash weight before", "pct"),
    rt.Column("nash_after", "Nash weight after", "pct"),
    rt.Column("nash_max_after", "Most weight within the tolerance, after", "pct",
              help="the most weight the unit takes in a mix of the balanceable units that none of them beats by "
                   "more than the tolerance"),
)


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def rebalanced_toml(result: Any) -> str:
    """The roster with the proposed points (old prices as comments); loads with :func:`sim.load_roster`."""
    import tomlkit

    prices = result.prices
    header = (f"Rebalanced by meleelab rebalance: budget {result.budget:g}, tolerance {100 * result.tolerance:g} pp, "
              f"seed {result.seed}; this file was proved at seed {result.verification_seed}"
              + (" (the advice there: nothing to change)." if not result.still_flagged else
                 f" (the advice there would still change {', '.join(result.still_flagged)}).")
              + (f" Left out: {', '.join(result.dropped)}." if getattr(result, "dropped", None) else ""))
    src = Path(str(result.roster.source))
    doc = None
    if src.suffix.lower() == ".toml" and src.is_file():
        try:
            doc = tomlkit.parse(src.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomlkit.exceptions.TOMLKitError):
            doc = None
    if doc is None:
        from sim.rulesets import get_ruleset

        rs = get_ruleset(result.ruleset)
        doc = tomlkit.document()
        doc["ruleset"] = result.ruleset
        if result.roster.budget is not None:
            doc["budget"] = _num(result.roster.budget)
        if result.roster.description:
            doc["description"] = result.roster.description
        units = tomlkit.aot()
        for name in result.rebalanced.names:
            t = tomlkit.table()
            for k, v in rs.unit_to_dict(result.roster.unit(name)).items():
                if v is not None:
                    t[k] = v
            units.append(t)
        doc["unit"] = units
    kept = set(result.rebalanced.names)
    if getattr(result, "dropped", None) and "unit" in doc:
        units = doc["unit"]
        for k in reversed(range(len(units))):  # the dropped units leave the file: it is exactly the table proved
            if str(units[k].get("name")) not in kept:
                del units[k]
    for t in doc.get("unit", []):
        name = str(t.get("name"))
        if name in prices and name in kept:
            old = result.roster.unit(name).points
            t["points"] = _num(prices[name])
            t["points"].comment(f"was {old:g}")
    return f"# {header}\n" + tomlkit.dumps(doc)


def headline(result: Any) -> list[str]:
    """The proof in plain sentences (the page's first section and the command's output)."""
    v = result.verification
    bal = v[v["balanceable"].astype(bool)]
    inside = int(((bal["score_after"] - 0.5).abs() <= result.tolerance).sum())
    support_before = int((bal["nash_before"] > 1e-9).sum())
    support_after = int((bal["nash_after"] > 1e-9).sum())
    share = 1 / max(len(bal), 1) - 1e-6  # an equal share of the balanceable units (any unit enters a near mix a little)
    near_before = int((bal["nash_max_before"] >= share).sum())
    near_after = int((bal["nash_max_after"] >= share).sum())
    changed = result.changes[result.changes["changed"].astype(bool)]
    diff = result.total_after - result.total_before
    lines = [f"{len(changed)} of {len(result.changes)} prices change, the fewest that balance the roster; the "
             f"roster's total goes from {result.total_before:g} to {result.total_after:g} points ({diff:+g})"
             + (", without the units left out of the file." if result.dropped else "."),
             f"The proof is about the file written: rebalanced.toml fought again at a fresh seed "
             f"({result.verification_seed}, derived from the seed and the table). {inside} of {len(bal)} units that "
             f"points can balance score within {100 * result.tolerance:g} pp of 50% (largest gap "
             f"{100 * result.max_deviation:.1f} pp), and the advice there is "
             + ("to change nothing." if not result.still_flagged else
                f"still to change {', '.join(result.still_flagged)}."),
             f"The equilibrium mix (Nash) uses {support_before} of {len(bal)} balanceable units before and "
             f"{support_after} after; {near_before} before and {near_after} after can take an equal share "
             f"(1/{len(bal)}) of a mix that no unit beats by more than {100 * result.tolerance:g} pp.",
             f"It took {result.matrix_runs} tables fought and {result.cells_fought:,} whole-copy cells "
             f"({result.cells_reused:,} more uses of cells already fought)."]
    for u, why in result.excluded.items():
        price = result.prices.get(u)
        lines.append(f"Points alone cannot balance {u}: {why}. It stays in the roster at {price:g} points, an "
                     "opponent in the proof but not held to 50% (change its profile, or leave it out with "
                     "--drop-unbalanceable).")
    for u, why in result.dropped.items():
        lines.append(f"Left out of the file (--drop-unbalanceable): {u} ({why}).")
    if result.settings.get("drop_unbalanceable") and not result.dropped:
        lines.append("--drop-unbalanceable: points can balance every unit, so none is left out.")
    if result.robustness is not None and len(result.robustness):
        lines.append(robustness_sentence(result))
    elif result.settings.get("robustness_note"):
        lines.append(result.settings["robustness_note"])
    return lines


def robustness_sentence(result: Any) -> str:
    """How far the proposed table's scores move across budgets and seeds (the robustness section's summary)."""
    r = result.robustness
    held = set(result.verification.loc[result.verification["balanceable"].astype(bool), "unit"])
    out = []
    for ratio in sorted(r["budget_ratio"].unique()):
        part = r[(r["table"] == "proposed") & (r["budget_ratio"] == ratio) & r["unit"].isin(held)]
        part = part[part["score"].notna()]
        if not len(part):
            out.append(f"at {ratio:g}x the budget no unit can be fielded")
            continue
        worst = float((part["score"] - 0.5).abs().max())
        out.append(f"{ratio:g}x the budget: largest gap {100 * worst:.1f} pp")
    return ("Beyond one budget and one seed (robustness.csv, three seeds): " + "; ".join(out) + ".")


def rebalance_markdown(result: Any) -> str:
    rs = sim.get_ruleset(result.ruleset)
    lines = [f"# {md_text(rs.title)} ({md_text(result.ruleset)}): rebalanced points", "",
             f"Roster: {md_cell(str(result.roster.source))}; budget {result.budget:g} points, expected fielding.",
             "", "## What changes, and the proof", ""]
    lines += [f"- {md_text(line)}" for line in headline(result)]
    lines += ["", "## New points", "", rt.markdown_table(result.changes, CHANGES), "",
              "## Verification: before and after", "", rt.markdown_table(result.verification, VERIFICATION), "",
              "Expected fielding: a unit that a budget buys k + f copies of fields k + 1 copies in a fraction f of "
              "its fights and k in the rest, so every side puts the whole budget on the table on average.", ""]
    if getattr(result, "robustness", None) is not None and len(result.robustness):
        lines += ["## Beyond one budget", "", md_text(robustness_sentence(result)), "",
                  "![every unit's score at 0.5x, 1x and 2x the budget](robustness.png)", ""]
    return "\n".join(lines)


def rebalance_html(result: Any, robustness_png: bytes | None = None) -> str:
    import base64

    from .html import environment

    rs = sim.get_ruleset(result.ruleset)
    settings = [("budget", f"{result.budget:g} points (expected fielding)"),
                ("tolerance", f"±{100 * result.tolerance:g} pp"), ("rounded to", f"{result.round_to:g} points"),
                ("locked", ", ".join(result.locked) or "none"),
                ("most change", "none" if result.max_change is None else f"{100 * result.max_change:g}%"),
                ("seed (search)", str(result.seed)), ("seed (verification)", str(result.verification_seed)),
                ("rounds", str(result.settings.get("rounds"))), ("round cap", str(result.settings.get("max_rounds"))),
                ("states", str(result.settings.get("states") or "defaults")),
                ("half-width target", str(result.settings.get("half_width"))),
                ("trial cap", str(result.settings.get("max_trials")))]
    context = {"title": f"{rs.title} ({result.ruleset}): rebalanced points", "version": getattr(sim, "__version__", ""),
               "nav": [("proof", "Proof"), ("changes", "New points"), ("verification", "Before and after"),
                       ("settings", "Settings")],
               "roster": str(result.roster.source), "headline": headline(result),
               "changes": rt.table_view(result.changes, CHANGES, drop_blank=True),
               "verification": rt.table_view(result.verification, VERIFICATION), "settings": settings,
               "robustness": None if robustness_png is None else
               "data:image/png;base64," + base64.b64encode(robustness_png).decode("ascii")}
    return environment().get_template("rebalance.html").render(**context)


def write_rebalance(result: Any, out_dir: str | Path) -> list[Path]:
    """Write every file of :data:`FILES` into ``out_dir`` (atomic and deterministic)."""
    out = Path(out_dir)
    meta = {"command": "rebalance", "ruleset": result.ruleset, "roster": str(result.roster.source),
            "budget": result.budget, "settings": result.settings, "matrix_runs": result.matrix_runs,
            "cells_fought": result.cells_fought, "cells_reused": result.cells_reused,
            "cells_from_store": result.cells_from_store, "converged": result.converged,
            "max_deviation": result.max_deviation, "still_flagged": list(result.still_flagged),
            "excluded": dict(result.excluded), "dropped": dict(getattr(result, "dropped", {}) or {}),
            "proved": not result.still_flagged, "total_before": result.total_before,
            "total_after": result.total_after, "versions": {"meleelab": getattr(sim, "__version__", "")}}
    paths = [atomic_write_text(out / "rebalanced.toml", rebalanced_toml(result)),
             atomic_write_text(out / "changes.csv", to_csv(result.changes)),
             atomic_write_text(out / "verification.csv", to_csv(result.verification))]
    png = _robustness_png(result)
    if png is not None:
        paths += [atomic_write_text(out / "robustness.csv", to_csv(result.robustness)),
                  atomic_write_bytes(out / "robustness.png", png)]
    return paths + [atomic_write_text(out / "summary.md", rebalance_markdown(result)),
                    atomic_write_text(out / "report.html", rebalance_html(result, png)),
                    atomic_write_text(out / "metadata.json", to_json(meta) + "\n")]


def _robustness_png(result: Any) -> bytes | None:
    r = getattr(result, "robustness", None)
    if r is None or not len(r):
        return None
    from .robustness_plot import chart_png

    return chart_png(r, result.tolerance)


def files_of(result: Any) -> list[str]:
    """The names :func:`write_rebalance` writes for ``result``."""
    extra = list(ROBUSTNESS_FILES) if getattr(result, "robustness", None) is not None and len(result.robustness) else []
    return [*FILES[:3], *extra, *FILES[3:]]
