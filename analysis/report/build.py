"""Balance reports: one matrix run, every balance metric, plots, tables and provenance in one folder.

:func:`build_report` runs the matchup matrix of a roster and the balance
metrics; :meth:`Report.write` writes

* ``report.html``: self-contained (plots embedded as base64 PNG, no external files),
* ``summary.md``: the headline tables in Markdown,
* every CSV: ``matrix_long.csv``, ``matrix.csv``, ``rankings.csv``, ``nash.csv``,
  ``dominated.csv``, ``cycles.csv``, ``fair_points.csv``, ``points_efficiency.csv``,
  ``side_averaged.csv``, ``payoff.csv``, ``units.csv``,
* ``metadata.json``: settings, seed, provenance, the rules simulated, the switches set,
* ``baseline_diff.csv`` with ``baseline=``: every number compared with an earlier report,

all atomically (:mod:`analysis.report.io`); the same seed and settings give byte-identical
CSV files, on any machine with the same versions (:mod:`sim.kernels.portable`). :func:`write_all`
does this for every registered ruleset plus an index.

The pages are rendered from jinja2 templates (:mod:`analysis.report.html`,
``analysis/report/templates/``) and Markdown (:mod:`analysis.report.markdown`); tables
are formatted for people by :mod:`analysis.report.tables` (the CSV files keep
their machine names and full precision) and the findings at the top of both come
from :mod:`analysis.report.findings`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sim.errors import InputError
from sim.results import FightResult
from sim.roster import Roster
from sim.ruleset import Ruleset
from sim.rulesets import get_ruleset

from ..runs.balance import balance_summary
from ..runs.allocation import DEFAULT_SCORE_HALF_WIDTH
from ..runs.defaults import DEFAULT_HALF_WIDTH, DEFAULT_MAX_TRIALS, DEFAULT_SEED
from ..runs.fights import to_the_end
from ..stats.summary import BalanceSummary
from .baseline import baseline_folder, compare_with_baseline
from .cell_stats import cell_stats, report_shortfall
from .featured import check_features, default_features, parse_features
from .one_a_side import one_a_side as one_a_side_matrix
from .io import atomic_write_bytes, atomic_write_text, plain_values, to_json
from .safe_csv import to_csv
from .writers import write_balance, write_matrix

__all__ = ["Report", "build_report", "write_all", "DEFAULT_SEED", "DEFAULT_HALF_WIDTH", "DEFAULT_MAX_TRIALS",
           "SECTIONS"]


#: Fights per curve of the time-to-resolution plot (fought to the end).
TO_THE_END_TRIALS = 8_192

#: Section ids of report.html, in order (tests check each one is there).
SECTIONS = ("findings", "overview", "baseline", "rules", "settings", "units", "matrix", "rankings", "outcomes", "nash",
            "dominance", "cycles", "fair-points", "one-for-one", "matchup", "provenance", "files")


@dataclass(frozen=True)
class Report:
    """A built report (nothing written yet).

    Attributes
    ----------
    ruleset : Ruleset
    roster : Roster
    matrix : analysis.runs.matrix.MatchupMatrix
    balance : BalanceSummary
    settings : dict
        The report's own settings (seed, half_width, max_trials, rounds...).
    featured : tuple of (str, str) pairs
        The matchups shown in detail: those asked for (``feature=``), else the most
        lopsided and the most even cell of the headline matrix.
    to_the_end : dict
        Featured attacker -> its fights against every unit with ``rounds="end"``
        (rounds-to-resolution curves).
    elapsed : float
        Seconds spent building (not written to files, which stay deterministic).
    one_for_one : MatchupMatrix or None
        With a budget, the same roster one unit a side (a section of its own; the
        headline matrix and every balance table are the equal-points ones).
    featured_why : tuple of str
        Why each featured matchup was chosen (one sentence each).
    baseline : analysis.report.diff.RunDiff or None
        With ``baseline=``: this report compared with the earlier one.
    baseline_note : str
        Why there is no comparison (``report --all`` with a baseline lacking this ruleset).
    rebalance : analysis.runs.rebalance.RebalanceResult or None
        With ``rebalance=True``: the whole balanced points table at the report's
        settings, proved by a fresh run (the "Balanced table" section and the
        ``rebalance/`` folder).
    rebalance_note : str
        Why a requested rebalance has no table (points alone cannot balance the roster).
    one_for_one_note : str
        Why a report with a budget has no one-unit-a-side matrix (:mod:`analysis.report.one_a_side`).
    lists, meta : optional
        With ``lists=True`` (warband, duel): the roster's army lists against each other with the units' values
        (:class:`analysis.report.lists_files.ListsReport`, the ``lists/`` folder) and the meta at the roster's
        budget (:class:`analysis.runs.meta.MetaResult`, the ``meta/`` folder).
    """

    ruleset: Ruleset
    roster: Roster
    matrix: Any
    balance: BalanceSummary
    settings: dict[str, Any]
    featured: tuple[tuple[str, str], ...] = ()
    #: Each featured attacker against each unit, fought to the end (time-to-kill curves).
    to_the_end: dict[str, list[FightResult]] = field(default_factory=dict)
    elapsed: float = 0.0
    one_for_one: Any = None
    featured_why: tuple[str, ...] = ()
    baseline: Any = None
    baseline_note: str = ""
    rebalance: Any = None
    rebalance_note: str = ""
    lists: Any = None
    one_for_one_note: str = ""
    meta: Any = None
    _png: dict[str, bytes] = field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- content
    @property
    def featured_result(self) -> FightResult | None:
        """The first featured matchup's result."""
        return self.matrix.results.get(self.featured[0]) if self.featured else None

    def sections(self) -> tuple[str, ...]:
        """Section ids of report.html, in order (:data:`SECTIONS`)."""
        return SECTIONS

    def options_table(self) -> pd.DataFrame:
        """Every switch/option: value used, default, and who set it (roster, command or default)."""
        used = self.matrix.settings.get("options", {})
        given = self.settings.get("options") or {}
        rows = []
        for f in self.ruleset.option_fields:
            value = used.get(f.name, f.default)
            by = "command" if f.name in given else "roster" if f.name in self.roster.options else "default"
            rows.append({"option": f.name, "value": plain_values(value), "default": plain_values(f.default),
                         "set_by": by, "description": f.doc})
        return pd.DataFrame(rows, columns=["option", "value", "default", "set_by", "description"])

    def units_table(self) -> pd.DataFrame:
        rows = []
        for name, unit in self.roster.units.items():
            for row in self.ruleset.unit_rows(unit):
                rows.append({k: plain_values(v) for k, v in row.items()})
        frame = pd.DataFrame(rows)
        for col in [c for c in frame.columns if c.endswith("abilities")]:
            # the rules carry abilities as data but no procedure reads them: a designer must not think they count
            frame[col] = [v if v is None or (isinstance(v, float) and v != v) or str(v) in ("", "[]", "()", "nan")
                          else f"{v} (not modelled)" for v in frame[col]]
        key = "name" if "name" in frame else "unit" if "unit" in frame else None
        if key:
            excluded = self.matrix.excluded
            frame["in_matrix"] = ["no: " + excluded[n] if n in excluded else "yes" if n in self.matrix.units else ""
                                  for n in frame[key]]
        return frame

    def cell_stats(self) -> dict[str, Any]:
        """Trials per Monte Carlo cell, the widest interval achieved, the exact cells (:mod:`.cell_stats`)."""
        return cell_stats(self.matrix.long, self.settings.get("method"))

    def metadata(self) -> dict[str, Any]:
        """Everything needed to understand and repeat the run (no timestamps: deterministic).

        ``resumed_cells`` counts the matrix cells taken from the results store
        (the only entry that differs between a resumed and an uninterrupted run).
        ``cells_short_of_half_width``, ``widest_half_width`` (win, loss or draw) and
        ``short_of_half_width`` (each such cell named) say which of the
        ``half_width_cells`` matrix cells the trial cap stopped short of the target.
        """
        import matplotlib

        rs = self.ruleset
        return {
            "ruleset": rs.describe(),
            "roster": {"source": self.roster.source, "description": self.roster.description,
                       "units": list(self.roster.names), "in_matrix": list(self.matrix.units),
                       "budget": self.roster.budget, "copies": dict(self.matrix.copies),
                       "excluded": dict(self.matrix.excluded), "options": plain_values(self.roster.options)},
            "settings": plain_values({**self.settings, "matrix": self.matrix.settings}),
            "switches": self.options_table().to_dict(orient="records"),
            "budget": self.matrix.budget,
            "fair_price_method": self.balance.fair_points.attrs.get("method"),
            "method": self.settings.get("method"),
            "cells": self.cell_stats(),
            "featured_matchup": list(self.featured[0]) if self.featured else None,
            "featured_matchups": [list(p) for p in self.featured],
            "attacker_advantage": self.balance.attacker_advantage,
            "balance_model": self.balance.model_text(),
            "provenance": plain_values({**self.matrix.provenance, "pandas": pd.__version__,
                                  "matplotlib": matplotlib.__version__}),
            "files": self.file_names(),
            "resumed_cells": int(getattr(self.matrix, "resumed_cells", 0)),
            **({"rebalance_note": self.rebalance_note} if self.rebalance_note else {}),
            **({"one_for_one_note": self.one_for_one_note} if self.one_for_one_note else {}),
            **self._shortfall(),
        }

    def _shortfall(self) -> dict[str, Any]:
        return report_shortfall(self)

    def file_names(self) -> list[str]:
        names = ["report.html", "summary.md", "metadata.json", "matrix_long.csv", "matrix.csv", "matrix.json",
                 "matrix.png", "units.csv", "switches.csv"]
        names += [f"{n}.csv" for n in self.balance.tables()] + ["balance_model.txt"]
        if self.one_for_one is not None:
            names += ["one_for_one_long.csv", "one_for_one.png"]
        if self.baseline is not None:
            names.append("baseline_diff.csv")
        if self.rebalance is not None:
            from .rebalance_page import files_of

            names += [f"rebalance/{n}" for n in files_of(self.rebalance)]
        from .lists_files import LIST_FILES, META_FILES

        names += [f"lists/{n}" for n in LIST_FILES] if self.lists is not None else []
        names += [f"meta/{n}" for n in META_FILES] if self.meta is not None else []
        return names

    # ---------------------------------------------------------------- figures
    def figures(self) -> dict[str, bytes]:
        """Name -> PNG bytes of every plot (drawn once, cached; :func:`analysis.report.figures.draw_figures`)."""
        if not self._png:
            from .figures import draw_figures

            self._png.update(draw_figures(self))
        return self._png

    # ---------------------------------------------------------------- writing
    def write(self, out_dir: str | Path) -> list[Path]:
        """Write the report folder, replacing ``out_dir`` as a whole as ``--out`` does
        (:class:`analysis.report.outdir.OutputFolder`: only a folder meleelab wrote, or an empty or new one, is
        replaced; anything else in it is refused in one line). Returns the paths written."""
        from ..stats.checks import check_path
        from .outdir import replace_folder

        return replace_folder(check_path(out_dir, "out_dir"), self.write_files, "build_report")

    def write_files(self, out_dir: str | Path) -> list[Path]:
        """Write the report's files into ``out_dir`` (a staging folder of :meth:`write` or of ``write_all``)."""
        from ..stats.checks import check_path

        out = check_path(out_dir, "out_dir")
        paths = list(write_matrix(self.matrix, out, png=False))
        pngs = self.figures()
        paths.append(atomic_write_bytes(out / "matrix.png", pngs["matrix"]))
        if self.one_for_one is not None:
            from ..runs.matrix import LONG_COLUMNS
            from .safe_csv import frame_to_csv

            paths.append(atomic_write_text(out / "one_for_one_long.csv",
                                           frame_to_csv(self.one_for_one.long[LONG_COLUMNS])))
            paths.append(atomic_write_bytes(out / "one_for_one.png", pngs["one_for_one"]))
        paths += write_balance(self.balance, out)
        paths.append(atomic_write_text(out / "units.csv", to_csv(self.units_table())))
        paths.append(atomic_write_text(out / "switches.csv", to_csv(self.options_table())))
        if self.baseline is not None:
            from .safe_csv import frame_to_csv

            paths.append(atomic_write_text(out / "baseline_diff.csv", frame_to_csv(self.baseline.table)))
        if self.rebalance is not None:
            from .rebalance_page import write_rebalance

            paths += write_rebalance(self.rebalance, out / "rebalance")
        if self.lists is not None or self.meta is not None:
            from .lists_files import write_lists, write_meta

            paths += write_lists(self.lists, out / "lists") if self.lists is not None else []
            paths += write_meta(self.meta, out / "meta") if self.meta is not None else []
        paths.append(atomic_write_text(out / "metadata.json", to_json(self.metadata()) + "\n"))
        paths.append(atomic_write_text(out / "summary.md", self.markdown()))
        paths.append(atomic_write_text(out / "report.html", self.html()))
        return paths

    def headline(self) -> dict[str, Any]:
        """One line of the index: top unit, Nash support, and the advice (its changes, and what points cannot fix)."""
        b = self.balance
        top = b.rankings.iloc[0]["unit"] if len(b.rankings) else ""
        from .shares import share_texts

        shown = share_texts(list(b.nash["weight"]), 0)  # whole percentages that add up to 100%
        support = [f"{u} {t}" for u, w, t in zip(b.nash["unit"], b.nash["weight"], shown) if w and w > 0]
        advice = []
        adv = getattr(b, "advice", None)
        if adv is not None:
            from ..stats.verdicts import CANNOT, PRICE_VERDICTS

            for _, r in adv.table.iterrows():
                pts, new = float(r["points"]), float(r["advised_points"])
                if r["verdict"] in PRICE_VERDICTS:
                    advice.append(f"{r['unit']} {pts:g} → {new:g} ({100 * (new - pts) / pts:+.0f}%)")
                elif r["verdict"] == CANNOT:
                    advice.append(f"{r['unit']} (points cannot balance it)")
                elif r["verdict"] in ("invulnerable", "harmless"):
                    advice.append(f"{r['unit']} ({'cannot be harmed' if r['verdict'] == 'invulnerable' else 'cannot harm'})")
            if not advice:
                advice = ["nothing to change"]
        return {"ruleset": self.ruleset.id, "title": self.ruleset.title, "units": len(self.matrix.units),
                "budget": "one a side" if self.matrix.budget is None else f"{self.matrix.budget:g}",
                "trials": self.cell_stats()["trials_total"], "strongest": top, "nash_support": ", ".join(support),
                "cycles": len(b.cycles), "dominated": len(b.dominated), "fair_points_flags": ", ".join(advice)}

    def markdown(self) -> str:
        """summary.md: the findings and the headline tables (:mod:`analysis.report.markdown`)."""
        from .markdown import summary

        return summary(self)

    def html(self) -> str:
        """report.html: self-contained (plots embedded as base64 PNG), from the jinja2 templates."""
        from .html import render_report

        return render_report(self)


# ------------------------------------------------------------------- build
def build_report(
    ruleset: str | Ruleset,
    roster: Roster | str | Path | None = None,
    *,
    units: Sequence[str] | None = None,
    seed: int | None = DEFAULT_SEED,
    half_width: float = DEFAULT_HALF_WIDTH,
    max_trials: int = DEFAULT_MAX_TRIALS,
    rounds: Any = None,
    max_rounds: int | None = None,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    from_text: bool = False,
    budget: Any = None,
    executor: Any = None,
    store: Any = None,
    feature: Any = None,
    baseline: str | Path | None = None,
    rules_defaults: bool = False,
    fielding: str | None = None,
    method: str = "auto",
    rebalance: bool = False,
    lists: bool = False,
    score_half_width: float | None = DEFAULT_SCORE_HALF_WIDTH,
    one_a_side: bool | None = None,
) -> Report:
    """Run the matchup matrix of a roster and every balance metric.

    Parameters
    ----------
    ruleset : str or Ruleset
    roster : Roster, path or None
        Default: the ruleset's shipped roster.
    units : sequence of str, optional
        A subset of the roster.
    seed : int or None
        Default :data:`DEFAULT_SEED` (reports are reproducible by default); None draws fresh entropy.
    half_width, max_trials : float, int
        Per-cell target Wilson half-width and trial cap (see :func:`analysis.runs.matrix.matchup_matrix`).
    rounds, max_rounds, states, overrides, options, from_text
        As in :func:`sim.fight`, applied to every cell; rounds, the cap and the states default to the
        ruleset's balance settings (a state given replaces that state's balance value).
    rules_defaults : bool
        Fight under the rules' own defaults instead of the balance settings.
    fielding : {"expected", "whole"}, optional
        How the budget fields copies (:mod:`analysis.runs.fielding`; expected by default).
    method : {"auto", "exact", "mc"}
        How each matrix cell is answered (:func:`analysis.runs.matrix.matchup_matrix`);
        recorded in ``metadata.json`` (``method``, ``cells.cells_exact``).
    workers : int
        Processes (the numbers do not depend on it).
    progress : callable, optional
        ``progress(cells_done, cells_total)``.
    budget : number, "none" or None
        Equal-points budget (default the roster's): the headline matrix and every
        balance table are at equal points, fair prices come from fights at
        neighbouring copy counts, and the one-unit-a-side matrix is a section.
    executor, store : optional
        As in :func:`analysis.runs.matrix.matchup_matrix` (the matrix cells run on the
        executor and are kept in the store; the small time-to-resolution fights
        run in this process).
    feature : str, pair or sequence of them, optional
        The matchups shown in detail, ``"A vs B"`` or ``("A", "B")`` (default: the
        most lopsided and the most even cell of the headline matrix,
        :func:`analysis.report.featured.default_features`).
    baseline : path, optional
        An earlier report folder (``report`` or ``report --all``): the report gains
        a section "Changes since the baseline" (:mod:`analysis.report.diff`) and
        ``baseline_diff.csv``.
    rebalance : bool
        Also propose the whole balanced points table at these settings and prove it
        with a fresh run (:func:`analysis.runs.rebalance.rebalance`; 1.7 to 2.5 times
        the report's time): the "Balanced table" section shows it and the
        folder gains ``rebalance/``. A ruleset that cannot field copies, or a roster
        without a budget, cannot be rebalanced: the report is built without the
        table and says why (``rebalance_note``, in the report and ``metadata.json``).
    score_half_width : float or None
        Every unit's score to this 95% half-width (default +-0.5 pp), the fights shared out over the cells
        (:mod:`analysis.runs.allocation`; a roster of over 20 units no longer fights each cell to
        ``half_width``); None: every cell to ``half_width`` alone. The report says which target it used.
    one_a_side : bool or None
        With a budget, also fight the roster one unit a side (its own section); None (default): for rosters
        of at most 20 units (:mod:`analysis.report.one_a_side`; a larger report says it left it out).
    lists : bool
        Also fight the roster's army lists (``warband``, ``duel``) and search the meta at the
        roster's budget (:func:`analysis.report.lists_files.with_lists`; minutes): the folder gains
        ``lists/`` and ``meta/``. A ruleset without mixed sides is refused before any fight.

    Returns
    -------
    Report

    Raises
    ------
    InputError
        A featured unit that is not in the roster (or cannot fight), a baseline
        that is not a report folder of this ruleset; checked before any fight
        where possible.
    """
    from ..runs.matrix import matchup_matrix, resolve_roster

    start = time.perf_counter()
    rs = get_ruleset(ruleset)
    ros = resolve_roster(rs, roster)
    chosen = parse_features(feature, list(ros.names))
    old = baseline_folder(baseline, rs.id) if baseline is not None else None
    from ..stats.checks import check_flag

    # copies and a budget, before any fight (the rest is the section's to explain); a roster that has not both
    # cannot be rebalanced at all: the report says why (``refused``)
    refused = ""
    if one_a_side is not None:
        check_flag(one_a_side, "one_a_side")
    if check_flag(lists, "lists") and not rs.fields_lists:
        raise InputError(f"{rs.id}: {rs.lists_refusal}, so army lists are not available (--lists)")
    if check_flag(rebalance, "rebalance"):
        from ..runs.rebalance import rebalance_budget

        try:
            rebalance_budget(rs, ros, budget)
        except InputError as e:
            refused = str(e)
    run = dict(half_width=half_width, max_trials=max_trials, seed=seed, rounds=rounds, max_rounds=max_rounds,
               states=states, overrides=overrides, options=options, workers=workers, from_text=from_text,
               executor=executor, store=store, rules_defaults=rules_defaults, method=method,
               score_half_width=score_half_width)
    matrix = matchup_matrix(rs, ros, units, progress=progress, budget=budget, fielding=fielding, **run)
    one_for_one, one_note = one_a_side_matrix(rs, ros, units, matrix, run, one_a_side)
    balance = balance_summary(matrix, seed=0)
    settings = {"seed": seed if seed is not None else matrix.provenance.get("seed_entropy"),
                "half_width": half_width, "max_trials": int(max_trials), "rounds": matrix.settings.get("rounds"),
                "max_rounds": int(matrix.settings["max_rounds"]), "units": list(units) if units else None,
                "states": plain_values(matrix.settings.get("states") or {}), "overrides": plain_values(overrides or {}),
                "options": plain_values(options or {}), "budget": matrix.budget, "method": method,
                "score_half_width": score_half_width, "one_a_side": one_for_one is not None,
                "balance_settings": plain_values(matrix.settings.get("balance_settings") or {}),
                "time_to_resolution": {"rounds": "end", "max_rounds": int(matrix.settings["max_rounds"]),
                                       "trials": min(int(max_trials), TO_THE_END_TRIALS)}}
    if chosen:
        check_features(chosen, matrix)
        featured, why = chosen, tuple("Chosen with --feature" for _ in chosen)
        settings["feature"] = [list(p) for p in chosen]
    else:
        featured, why = default_features(matrix)
    if baseline is not None:
        settings["baseline"] = str(baseline)
    trials = min(int(max_trials), TO_THE_END_TRIALS)
    curves = {a: to_the_end(rs, ros, matrix, a, int(matrix.settings["max_rounds"]), trials,
                            matrix.settings.get("states") or {}, overrides, options, from_text)
              for a in dict.fromkeys(p[0] for p in featured)}
    rep = Report(rs, ros, matrix, balance, settings, featured, curves, 0.0, one_for_one, why,
                 one_for_one_note=one_note)
    if rebalance and refused:
        rep = dataclasses.replace(rep, rebalance_note=refused, settings={**settings, "rebalance": True})
    elif rebalance:
        from .balanced import with_rebalance

        rep = with_rebalance(rep, units, {**run, "robustness": None})  # by the roster's size
    if lists:
        from .lists_files import with_lists

        rep = with_lists(rep, run, budget)
    if old is not None:
        rep = dataclasses.replace(rep, baseline=compare_with_baseline(rep, old))
    return dataclasses.replace(rep, elapsed=time.perf_counter() - start)


# report --all lives beside this module; it is named here too (analysis.report.build.write_all)
from .report_all import write_all  # noqa: E402
