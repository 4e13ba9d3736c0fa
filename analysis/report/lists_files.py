"""The files of ``meleelab lists`` and ``meleelab meta``: tables, a Markdown report and plots, written atomically.

``lists`` writes the list matrix as a unit matrix is written (``matrix_long.csv``,
``matrix.csv``, ``matrix.json``, ``matrix.png``), then ``lists.csv`` (each list's
points, models and units), ``rankings.csv`` (each list's score against the field),
``nash.csv`` (the equilibrium mix over the lists), ``unit_value.csv`` (each unit's
value in each list that holds it), ``unit_ranking.csv`` (the units by their median
value), ``unit_value.png`` and ``report.md``. ``meta`` writes ``meta.csv``,
``meta_units.csv``, ``meta_lists.csv`` (every list the search fought, with its
weight), ``meta_log.csv``, ``meta.png`` and ``report.md``. Every cell of text is
escaped for spreadsheets (:mod:`.safe_csv`) and Markdown (:mod:`.safe_markdown`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from .io import atomic_write_bytes, atomic_write_text, to_json
from .render import figure_png
from .safe_csv import frame_to_csv
from .safe_markdown import md_cell, md_text
from .writers import write_matrix

__all__ = ["ListsReport", "write_lists", "write_meta", "lists_markdown", "meta_markdown", "unit_value_png",
           "meta_png", "nash_table", "with_lists", "LIST_FILES", "META_FILES"]

#: The files ``write_lists`` and ``write_meta`` write (the report's ``lists/`` and ``meta/`` folders).
LIST_FILES = ("matrix_long.csv", "matrix.csv", "matrix.json", "matrix.png", "lists.csv", "rankings.csv", "nash.csv",
              "unit_value.csv", "unit_ranking.csv", "unit_value.png", "report.md")
META_FILES = ("meta.csv", "meta_units.csv", "meta_lists.csv", "meta_log.csv", "meta.png", "meta.json", "report.md")


class ListsReport:
    """What ``meleelab lists`` found: the matrix, the lists, their scores and mix, and the units' values."""

    def __init__(self, matrix: Any, table: pd.DataFrame, scores: pd.DataFrame, nash: pd.DataFrame,
                 values: Any | None) -> None:
        self.matrix, self.table, self.scores, self.nash, self.values = matrix, table, scores, nash, values


def nash_table(m: Any) -> pd.DataFrame:
    """The equilibrium mix over a list matrix's lists: each weight, its range over every equilibrium, and its
    2.5%-97.5% range over payoff tables redrawn within their error (``list, weight, weight_min, weight_max,
    weight_lo, weight_hi, support_share``), heaviest first."""
    from ..stats.equilibrium import nash_equilibrium, nash_ranges, nash_spread

    pay = m.payoff_matrix()
    se = m.side_averaged().pivot(index="unit", columns="opponent", values="payoff_se").reindex(
        index=m.units, columns=m.units)
    w = nash_equilibrium(pay)
    ranges = nash_ranges(pay).set_index("unit")
    spread = nash_spread(pay, se).set_index("unit")
    rows = [{"list": n, "weight": float(w[n]), "weight_min": float(ranges.loc[n, "weight_min"]),
             "weight_max": float(ranges.loc[n, "weight_max"]), "weight_lo": float(spread.loc[n, "weight_lo"]),
             "weight_hi": float(spread.loc[n, "weight_hi"]), "support_share": float(spread.loc[n, "support_share"])}
            for n in m.units]
    out = pd.DataFrame(rows)
    return out.sort_values(["weight", "list"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


def with_lists(rep: Any, run: dict[str, Any], budget: Any = None) -> Any:
    """``rep`` (a :class:`analysis.report.build.Report`) with its roster's army lists fought at the report's
    settings (``lists``: a :class:`ListsReport`, unit values included) and the meta at the roster's budget
    (``meta``); unchanged for a ruleset without mixed sides or a roster without lists."""
    import dataclasses

    from ..runs.lists import list_matrix, list_scores, list_table
    from ..runs.meta import meta
    from ..runs.unit_value import unit_values

    rs, ros = rep.ruleset, rep.roster
    if not rs.fields_lists or not ros.lists:
        return rep
    keep = ("half_width", "max_trials", "seed", "rounds", "max_rounds", "states", "options", "workers", "from_text",
            "executor", "store", "rules_defaults", "method")
    kw = {k: run[k] for k in keep if k in run}
    m = list_matrix(rs, ros, budget=budget, **kw)
    lists = ListsReport(m, list_table(ros, m.units), list_scores(m), nash_table(m), unit_values(m))
    in_force = m.budget if m.budget is not None else ros.budget
    res = None
    if in_force is not None:
        kw.pop("from_text", None)
        res = meta(rs, ros, budget=in_force, **kw)
    return dataclasses.replace(rep, lists=lists, meta=res)


def _pct(x: float) -> str:
    return "" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{100 * x:.1f}%"


def _num(x: float, digits: int = 1) -> str:
    if not isinstance(x, (int, float)) or math.isnan(x):
        return ""
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return out


def lists_markdown(rep: ListsReport) -> str:
    """``report.md`` of ``meleelab lists``."""
    m = rep.matrix
    s = m.settings
    budget = f"{m.budget:g} points" if m.budget is not None else "no budget"
    lines = [f"# {md_text(m.ruleset)}: army lists against each other", "",
             f"{len(m.units)} lists of {md_cell(s.get('roster'))} ({budget}); every list attacks and defends against "
             f"every list, rounds = {md_cell(s.get('rounds'))}, target half-width ±{100 * (s.get('half_width') or 0):.2g}"
             f" pp, seed entropy {md_cell(m.provenance.get('seed_entropy'))}.", "",
             "## Lists", "", *_table(["list", "points", "models", "units"],
                                     [[r.list, _num(r.points, 0), r.models, r.units] for r in rep.table.itertuples()]),
             "", "## Rankings", "",
             "Score: win + draw / 2 against every list, both roles averaged (a list against itself scores 50%).", "",
             *_table(["rank", "list", "score", "± (95%)", "win rate", "points"],
                     [[r.rank, r.list, _pct(r.score), _pct(1.96 * r.score_se), _pct(r.win_rate), _num(r.points, 0)]
                      for r in rep.scores.itertuples()]),
             "", "## The Nash mix over lists", "",
             "The mix of lists no single list beats (the symmetric zero-sum game of P(win) - P(loss)); the range is "
             "each list's weight over every equilibrium, and over payoff tables redrawn within their error.", "",
             *_table(["list", "weight", "weight range", "redrawn 95%"],
                     [[r.list, _pct(r.weight), f"{_pct(r.weight_min)} to {_pct(r.weight_max)}",
                       f"{_pct(r.weight_lo)} to {_pct(r.weight_hi)}"] for r in rep.nash.itertuples()])]
    if rep.values is not None:
        lines += ["", "## What each unit adds to a list", "",
                  "A unit's value in a list is the points of the list's other units that add as much to its score "
                  "against the field as one of it does (one of it removed, and swapped for its price of the other "
                  "units). A value above the price: the list scores more with it than with those points spent on "
                  "the rest. Units by their median value over the lists that hold them:", "",
                  *_table(["unit", "price", "lists", "median value", "value range", "value / price", "verdict"],
                          [[r.unit, _num(r.price, 0), r.lists, _num(r.median_value), f"{_num(r.min_value)} to "
                            f"{_num(r.max_value)}", _num(r.median_ratio, 2), r.verdict]
                           for r in rep.values.ranking.itertuples()]),
                  "", "Every unit in every list (95% intervals):", "",
                  *_table(["unit", "list", "price", "value", "95% interval", "note"],
                          [[r.unit, r.list, _num(r.price, 0), _num(r.value), f"{_num(r.value_lo)} to "
                            f"{_num(r.value_hi)}", r.note] for r in rep.values.values.itertuples()])]
    return "\n".join(lines) + "\n"


def unit_value_png(values: pd.DataFrame, title: str) -> bytes:
    """Each unit's value in each list (points, 95% intervals) against its price (the black tick)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    v = values[pd.to_numeric(values["value"], errors="coerce").notna()].copy()
    units = list(dict.fromkeys(v["unit"]))
    fig = Figure(figsize=(8.0, 1.2 + 0.45 * max(len(units), 1)))
    ax = fig.add_subplot()
    for i, u in enumerate(units):
        g = v[v["unit"] == u]
        k = len(g)
        for j, r in enumerate(g.itertuples()):
            y = i + (j - (k - 1) / 2) * min(0.6 / max(k, 1), 0.2)
            lo = r.value_lo if math.isfinite(r.value_lo) else r.value
            hi = r.value_hi if math.isfinite(r.value_hi) else r.value
            ax.plot([lo, hi], [y, y], color="tab:blue", lw=1)
            ax.plot([r.value], [y], "o", color="tab:blue", ms=4)
        ax.plot([g["price"].iloc[0]] * 2, [i - 0.35, i + 0.35], color="black", lw=2)
    ax.set_yticks(range(len(units)), units)
    ax.invert_yaxis()
    ax.set_xlabel("value in the list (points); black: the unit's price")
    ax.set_title(title)
    fig.tight_layout()
    return figure_png(fig, dpi=110)


def write_lists(rep: ListsReport, out_dir: str | Path) -> list[Path]:
    """Every file of ``meleelab lists`` (see the module docstring), atomically and deterministically."""
    out = Path(out_dir)
    paths = write_matrix(rep.matrix, out)
    paths += [atomic_write_text(out / "lists.csv", frame_to_csv(rep.table)),
              atomic_write_text(out / "rankings.csv", frame_to_csv(rep.scores)),
              atomic_write_text(out / "nash.csv", frame_to_csv(rep.nash))]
    if rep.values is not None:
        paths += [atomic_write_text(out / "unit_value.csv", frame_to_csv(rep.values.values)),
                  atomic_write_text(out / "unit_ranking.csv", frame_to_csv(rep.values.ranking)),
                  atomic_write_bytes(out / "unit_value.png", unit_value_png(
                      rep.values.values, f"{rep.matrix.ruleset}: what each unit adds to each list"))]
    paths.append(atomic_write_text(out / "report.md", lists_markdown(rep)))
    return paths


def meta_markdown(res: Any) -> str:
    """``report.md`` of ``meleelab meta``."""
    used, left = res.units_used, res.units_left_out
    state = ("converged: no list the search found beats the mix by more than the tolerance" if res.converged
             else "stopped at the iteration limit before converging")
    lines = [f"# {md_text(res.ruleset)}: the meta at {res.budget:g} points", "",
             f"Double oracle over lists at the budget ({state}; {len(res.log)} iterations, "
             f"{res.settings.get('cells_fought', 0):,} cells fought, {res.seconds:.0f} s). "
             f"The meta's lists use {len(used)} of {len(used) + len(left)} units.", "",
             "## The meta's lists", "",
             *_table(["list", "weight", "points", "models", "units"],
                     [[r.list, _pct(r.weight), _num(r.points, 0), r.models, r.units] for r in res.lists.itertuples()]),
             "", "## Units in the meta", "", "Share: the meta's points spent on the unit (weighted by the mix).", "",
             *_table(["unit", "price", "share of points", "share of models", "meta lists holding it"],
                     [[r.unit, _num(r.price, 0), _pct(r.share), _pct(r.models_share), r.lists]
                      for r in res.units[res.units["in_meta"]].itertuples()]),
             "", "Units no meta list takes: " + (", ".join(md_text(u) for u in left) if left else "none") + ".", "",
             "## Iterations", "",
             *_table(["iteration", "lists", "best response", "its score against the mix", "added"],
                     [[r.iteration, r.lists, r.best_response, _pct(r.score_vs_mix), "yes" if r.added else "no"]
                      for r in res.log.itertuples()])]
    return "\n".join(lines) + "\n"


def meta_png(res: Any) -> bytes:
    """Each unit's share of the meta's points (units no meta list takes shown at zero)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    u = res.units
    fig = Figure(figsize=(7.5, 1.2 + 0.35 * max(len(u), 1)))
    ax = fig.add_subplot()
    ax.barh(range(len(u)), 100 * u["share"], color=["tab:blue" if x else "lightgray" for x in u["in_meta"]])
    ax.set_yticks(range(len(u)), list(u["unit"]))
    ax.invert_yaxis()
    ax.set_xlabel("share of the meta's points (%)")
    ax.set_title(f"{res.ruleset} meta at {res.budget:g} points: {len(res.units_used)} of {len(u)} units used")
    fig.tight_layout()
    return figure_png(fig, dpi=110)


def write_meta(res: Any, out_dir: str | Path, meta: dict[str, Any] | None = None) -> list[Path]:
    """Every file of ``meleelab meta`` (see the module docstring)."""
    out = Path(out_dir)
    units = res.units.copy()
    return [atomic_write_text(out / "meta.csv", frame_to_csv(res.lists)),
            atomic_write_text(out / "meta_units.csv", frame_to_csv(units)),
            atomic_write_text(out / "meta_lists.csv", frame_to_csv(res.pool)),
            atomic_write_text(out / "meta_log.csv", frame_to_csv(res.log)),
            atomic_write_bytes(out / "meta.png", meta_png(res)),
            atomic_write_text(out / "meta.json", to_json({"ruleset": res.ruleset, "budget": res.budget,
                                                          "converged": res.converged, "settings": res.settings,
                                                          "provenance": res.provenance,
                                                          "units_used": res.units_used,
                                                          "units_left_out": res.units_left_out}) + "\n"),
            atomic_write_text(out / "report.md", meta_markdown(res))]
