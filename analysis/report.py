"""Balance reports: one matrix run, every balance metric, plots, tables and provenance in one folder.

:func:`build_report` runs the matchup matrix of a roster and the balance
metrics; :meth:`Report.write` writes

* ``report.html``: self-contained (plots embedded as base64 PNG, no external files),
* ``summary.md``: the headline tables in Markdown,
* every CSV: ``matrix_long.csv``, ``matrix.csv``, ``rankings.csv``, ``nash.csv``,
  ``dominated.csv``, ``cycles.csv``, ``fair_points.csv``, ``points_efficiency.csv``,
  ``side_averaged.csv``, ``payoff.csv``, ``units.csv``,
* ``metadata.json``: settings, seed, provenance, the rules simulated, the switches set,

all atomically (:mod:`analysis.io`); the same seed and settings give byte-identical
CSV files. :func:`write_all` does this for every registered ruleset plus an index.
"""

from __future__ import annotations

import base64
import html
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import sim
import sim.plugins
from sim.results import FightResult
from sim.roster import Roster
from sim.ruleset import Ruleset
from sim.rulesets import get_ruleset

from .balance import BalanceSummary, balance_summary, to_csv
from .defaults import DEFAULT_HALF_WIDTH, DEFAULT_MAX_TRIALS, DEFAULT_SEED
from .io import atomic_write_bytes, atomic_write_text, check_output_dir, to_json
from .safe_markdown import md_cell, md_link, md_text

__all__ = ["Report", "build_report", "write_all", "DEFAULT_SEED", "DEFAULT_HALF_WIDTH", "DEFAULT_MAX_TRIALS",
           "SECTIONS"]


#: Fights per curve of the time-to-resolution plot (fought to the end).
TO_THE_END_TRIALS = 8_192

#: Section ids of report.html, in order (tests check each one is there).
SECTIONS = ("overview", "rules", "settings", "units", "matrix", "rankings", "outcomes", "nash", "dominance",
            "cycles", "fair-points", "one-for-one", "matchup", "provenance", "files")


@dataclass(frozen=True)
class Report:
    """A built report (nothing written yet).

    Attributes
    ----------
    ruleset : Ruleset
    roster : Roster
    matrix : analysis.matrix.MatchupMatrix
    balance : BalanceSummary
    settings : dict
        The report's own settings (seed, half_width, max_trials, rounds...).
    featured : tuple of (str, str) or None
        The matchup shown in detail (the ruleset's benchmark pair, else the most even pair).
    to_the_end : list of FightResult
        The featured attacker against every unit with ``rounds="end"``: rounds-to-resolution curves.
    elapsed : float
        Seconds spent building (not written to files, which stay deterministic).
    one_for_one : MatchupMatrix or None
        With a budget, the same roster one unit a side (a section of its own; the
        headline matrix and every balance table are the equal-points ones).
    """

    ruleset: Ruleset
    roster: Roster
    matrix: Any
    balance: BalanceSummary
    settings: dict[str, Any]
    featured: tuple[str, str] | None = None
    #: The featured attacker against each unit, fought to the end (time-to-kill curves).
    to_the_end: list[FightResult] = field(default_factory=list)
    elapsed: float = 0.0
    one_for_one: Any = None
    _png: dict[str, bytes] = field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- content
    @property
    def featured_result(self) -> FightResult | None:
        return self.matrix.results.get(self.featured) if self.featured else None

    def options_table(self) -> pd.DataFrame:
        """Every switch/option: value used, default, and who set it (roster, command or default)."""
        used = self.matrix.settings.get("options", {})
        given = self.settings.get("options") or {}
        rows = []
        for f in self.ruleset.option_fields:
            value = used.get(f.name, f.default)
            by = "command" if f.name in given else "roster" if f.name in self.roster.options else "default"
            rows.append({"option": f.name, "value": _plain(value), "default": _plain(f.default), "set_by": by,
                         "description": f.doc})
        return pd.DataFrame(rows, columns=["option", "value", "default", "set_by", "description"])

    def units_table(self) -> pd.DataFrame:
        rows = []
        for name, unit in self.roster.units.items():
            for row in self.ruleset.unit_rows(unit):
                rows.append({k: _plain(v) for k, v in row.items()})
        frame = pd.DataFrame(rows)
        key = "name" if "name" in frame else "unit" if "unit" in frame else None
        if key:
            excluded = self.matrix.excluded
            frame["in_matrix"] = ["no: " + excluded[n] if n in excluded else "yes" if n in self.matrix.units else ""
                                  for n in frame[key]]
        return frame

    def cell_stats(self) -> dict[str, Any]:
        """Trials per cell and the widest interval achieved."""
        long = self.matrix.long
        fought = long[long["trials"] > 0]
        half = ((fought["p_attacker_hi"] - fought["p_attacker_lo"]) / 2).max() if len(fought) else float("nan")
        return {"cells": int(len(long)), "cells_fought": int(len(fought)),
                "trials_total": int(fought["trials"].sum()), "trials_min": int(fought["trials"].min()),
                "trials_median": float(fought["trials"].median()), "trials_max": int(fought["trials"].max()),
                "widest_half_width": float(half),
                "not_fought": [f"{a} vs {d}: {n}" for a, d, n in
                               zip(long["attacker"], long["defender"], long["note"]) if n]}

    def metadata(self) -> dict[str, Any]:
        """Everything needed to understand and repeat the run (no timestamps: deterministic).

        ``resumed_cells`` counts the matrix cells taken from the results store
        (the only entry that differs between a resumed and an uninterrupted run).
        """
        import matplotlib

        rs = self.ruleset
        return {
            "ruleset": rs.describe(),
            "roster": {"source": self.roster.source, "description": self.roster.description,
                       "units": list(self.roster.names), "in_matrix": list(self.matrix.units),
                       "budget": self.roster.budget, "copies": dict(self.matrix.copies),
                       "excluded": dict(self.matrix.excluded), "options": _plain(self.roster.options)},
            "settings": _plain({**self.settings, "matrix": self.matrix.settings}),
            "switches": self.options_table().to_dict(orient="records"),
            "budget": self.matrix.budget,
            "fair_price_method": self.balance.fair_points.attrs.get("method"),
            "cells": self.cell_stats(),
            "featured_matchup": list(self.featured) if self.featured else None,
            "attacker_advantage": self.balance.attacker_advantage,
            "balance_model": self.balance.model_text(),
            "provenance": _plain({**self.matrix.provenance, "pandas": pd.__version__,
                                  "matplotlib": matplotlib.__version__}),
            "files": self.file_names(),
            "resumed_cells": int(getattr(self.matrix, "resumed_cells", 0)),
        }

    def file_names(self) -> list[str]:
        names = ["report.html", "summary.md", "metadata.json", "matrix_long.csv", "matrix.csv", "matrix.json",
                 "matrix.png", "units.csv", "switches.csv"]
        names += [f"{n}.csv" for n in self.balance.tables()] + ["balance_model.txt"]
        if self.one_for_one is not None:
            names += ["one_for_one_long.csv", "one_for_one.png"]
        return names

    # ---------------------------------------------------------------- figures
    def figures(self) -> dict[str, bytes]:
        """Name -> PNG bytes of every plot (drawn once, cached)."""
        if self._png:
            return self._png
        from . import plots

        m, b = self.matrix, self.balance
        n = max(len(m.units), 1)
        square = (2.6 + 0.7 * n, 1.8 + 0.6 * n)
        score = b.payoff.copy()
        score[:] = (b.payoff.to_numpy(float) + 1) / 2  # side-averaged score = (1 + payoff) / 2
        score.index.name, score.columns.name = "unit", "opponent"
        draw: list[tuple[str, tuple[float, float], Callable[[Any], Any]]] = [
            ("matrix", square, lambda ax: plots.matrix_heatmap(m.wide("p_attacker"), ax=ax, title=(
                f"P(attacker wins) at equal points ({m.budget:g} points a side)" if m.budget is not None
                else None))),
            ("score", square, lambda ax: plots.matrix_heatmap(
                score, ax=ax, value_label="side-averaged score of the row unit",
                title="Side-averaged score, win + draw/2 (%): row unit vs column unit")),
            ("ranking", (7.0, 1.4 + 0.38 * n), lambda ax: plots.ranking_chart(b.rankings, ax=ax)),
            ("outcomes", (max(6.4, 0.8 * n + 2), 4.4), lambda ax: plots.wdl_bars(b.rankings, ax=ax)),
            ("points", (6.4, 5.4), lambda ax: plots.points_chart(b.fair_points, ax=ax)),
        ]
        res = self.featured_result
        if res is not None:
            att = self.featured[0]
            curves = self.to_the_end or [m.results[(att, d)] for d in m.units if (att, d) in m.results]
            cap = self.matrix.settings.get("max_rounds")
            draw += [
                ("featured_wdl", (6.4, 4.0), lambda ax: plots.wdl_bars(res, ax=ax)),
                ("damage", (6.4, 4.0), lambda ax: plots.damage_distributions(res, ax=ax)),
                ("rounds", (7.0, 4.8), lambda ax: plots.rounds_curve(
                    curves, ax=ax, title=f"{att} attacking each unit, fought to the end (cap {cap} rounds)")),
            ]
        if self.one_for_one is not None:
            one = self.one_for_one
            draw.append(("one_for_one", square, lambda ax: plots.matrix_heatmap(
                one.wide("p_attacker"), ax=ax, title="P(attacker wins), one unit a side (whatever it costs)")))
        for name, size, fn in draw:
            self._png[name] = _render(fn, size)
        return self._png

    # ---------------------------------------------------------------- writing
    def write(self, out_dir: str | Path) -> list[Path]:
        """Write the report folder (every file atomically). Returns the paths written."""
        out = Path(out_dir)
        paths = list(self.matrix.write(out, png=False))
        pngs = self.figures()
        paths.append(atomic_write_bytes(out / "matrix.png", pngs["matrix"]))
        if self.one_for_one is not None:
            from .matrix import LONG_COLUMNS, frame_to_csv

            paths.append(atomic_write_text(out / "one_for_one_long.csv", frame_to_csv(self.one_for_one.long[LONG_COLUMNS])))
            paths.append(atomic_write_bytes(out / "one_for_one.png", pngs["one_for_one"]))
        paths += self.balance.write(out)
        paths.append(atomic_write_text(out / "units.csv", to_csv(self.units_table())))
        paths.append(atomic_write_text(out / "switches.csv", to_csv(self.options_table())))
        paths.append(atomic_write_text(out / "metadata.json", to_json(self.metadata()) + "\n"))
        paths.append(atomic_write_text(out / "summary.md", self.markdown()))
        paths.append(atomic_write_text(out / "report.html", self.html()))
        return paths

    def headline(self) -> dict[str, Any]:
        """One line of the index: top unit, Nash support, flags."""
        b = self.balance
        top = b.rankings.iloc[0]["unit"] if len(b.rankings) else ""
        support = [f"{u} {w:.0%}" for u, w in zip(b.nash["unit"], b.nash["weight"]) if w and w > 0]
        flagged = list(b.fair_points.loc[b.fair_points["flagged"].astype(bool), "unit"]) if len(b.fair_points) else []
        return {"ruleset": self.ruleset.id, "title": self.ruleset.title, "units": len(self.matrix.units),
                "budget": "one a side" if self.matrix.budget is None else f"{self.matrix.budget:g}",
                "trials": self.cell_stats()["trials_total"], "strongest": top, "nash_support": ", ".join(support),
                "cycles": len(b.cycles), "dominated": len(b.dominated), "fair_points_flags": ", ".join(flagged)}

    def markdown(self) -> str:
        """summary.md: the headline tables."""
        rs, b, st = self.ruleset, self.balance, self.cell_stats()
        lines = [f"# {md_text(rs.title)} ({md_text(rs.id)}): balance summary", "",
                 f"Roster: {md_cell(self.roster.source)}"
                 + (f" ({md_cell(self.roster.description)})" if self.roster.description else ""),
                 f"Rules: {md_text(rs.source)}; spec `{rs.spec.replace('`', '')}`; "
                 f"damage unit: {md_text(rs.damage_unit)}.",
                 (f"Equal points: each side fields floor({self.matrix.budget:g} / points) copies of its unit "
                  f"({md_text(', '.join(f'{u} x{k}' for u, k in self.matrix.copies.items()))})."
                  if self.matrix.budget is not None else "One unit a side (no budget)."),
                 f"Seed {self.settings['seed']}, target half-width ±{100 * self.settings['half_width']:.2g} pp, "
                 f"cap {self.settings['max_trials']:,} trials per cell; {st['trials_total']:,} fights in "
                 f"{st['cells_fought']} cells (widest half-width ±{100 * st['widest_half_width']:.2f} pp); "
                 f"rounds = {self.matrix.settings.get('rounds')}.", ""]
        switches = self.options_table()
        set_ = switches[switches["set_by"] != "default"]
        lines += ["Switches: " + (", ".join(f"{md_cell(o)}={md_cell(v)} ({s})" for o, v, s in
                                            zip(set_["option"], set_["value"], set_["set_by"])) or "all defaults")
                  + ".", ""]
        if self.matrix.excluded:
            lines += ["Left out (cannot fight): " + "; ".join(f"{md_cell(u)}: {md_cell(w)}"
                                                              for u, w in self.matrix.excluded.items()), ""]
        rk = b.rankings[["rank", "unit", "win_rate", "win_rate_lo", "win_rate_hi", "score", "strength",
                         "strength_lo", "strength_hi", "nash_weight"]]
        lines += ["## Rankings", "", "Side-averaged mean rates against the other units (mirror matches excluded); "
                  "strength: Bradley-Terry logit with 95% interval.", "", _md_table(rk), ""]
        adv = b.attacker_advantage
        lines += [f"Attacker advantage: {adv['attacker_advantage']:+.3f} logit (s.e. {adv['attacker_advantage_se']:.3f}).", ""]
        lines += ["## Nash equilibrium", "", _md_table(b.nash[b.nash["weight"].fillna(0) > 0]), ""]
        lines += ["## Dominated units", "", _md_table(b.dominated), ""]
        lines += ["## Intransitive triples", "", _md_table(b.cycles), ""]
        lines += ["## Fair prices", "", _md_table(b.fair_points), "", "Points efficiency:", "",
                  _md_table(b.efficiency), "", md_text(b.model_text()), ""]
        if self.one_for_one is not None:
            lines += ["## One unit a side", "", "P(attacker wins) with one unit a side whatever it costs "
                      "(rows attack, columns defend):", "",
                      _md_table((100 * self.one_for_one.wide("p_attacker")).round(1).rename_axis("attacker")
                                .reset_index()), ""]
        lines += ["## Files", "", "Full report: [report.html](report.html). Tables: "
                  + ", ".join(f"[{n}]({n})" for n in self.file_names() if n.endswith(".csv")), ""]
        return "\n".join(lines)

    def html(self) -> str:
        """report.html: self-contained, plots embedded as base64 PNG."""
        rs, b, st, pngs = self.ruleset, self.balance, self.cell_stats(), self.figures()
        esc = html.escape
        settings = {"seed": self.settings["seed"], "target half-width": f"±{100 * self.settings['half_width']:.2g} pp",
                    "trial cap per cell": f"{self.settings['max_trials']:,}",
                    "rounds": self.matrix.settings.get("rounds"), "max rounds": self.matrix.settings.get("max_rounds"),
                    "states": to_json(self.matrix.settings.get("states"), None),
                    "unit overrides": to_json(self.matrix.settings.get("overrides"), None),
                    "cells fought": f"{st['cells_fought']} of {st['cells']}",
                    "fights": f"{st['trials_total']:,} (per cell {st['trials_min']:,} to {st['trials_max']:,})",
                    "widest half-width": f"±{100 * st['widest_half_width']:.2f} pp"}
        rules = {"id": rs.id, "title": rs.title, "source": rs.source, "spec": rs.spec, "origin": sim.plugins.origin(rs.id),
                 "damage unit": rs.damage_unit, "default rounds": rs.default_rounds,
                 "outcome categories": ", ".join(rs.outcome_categories),
                 "extras": ", ".join(e.name for e in rs.extras) or "none"}
        adv = b.attacker_advantage
        sec: list[str] = []
        sec.append(_section("overview", f"{rs.title}: balance report", [
            f"<p>Roster <b>{esc(self.roster.source)}</b>{(' — ' + esc(self.roster.description)) if self.roster.description else ''}. "
            f"{len(self.matrix.units)} units, every unit attacking every unit (mirror matches included), "
            f"{st['trials_total']:,} simulated fights.</p>",
            _html_table(pd.DataFrame([self.headline()]))]))
        sec.append(_section("rules", "Rules simulated", [_kv(rules), "<h3>Switches and options</h3>",
                                                         _html_table(self.options_table())]))
        sec.append(_section("settings", "Settings", [_kv(settings)]))
        units_html = [_html_table(self.units_table())]
        if self.matrix.excluded:
            units_html.append("<p>Left out of the matrix: " + "; ".join(
                f"<b>{esc(u)}</b>: {esc(w)}" for u, w in self.matrix.excluded.items()) + "</p>")
        sec.append(_section("units", "Units", units_html))
        nf = "".join(f"<li>{esc(x)}</li>" for x in st["not_fought"])
        sec.append(_section("matrix", "Matchup matrix", [
            "<p>Rows attack, columns defend. Blue: the row unit does better than 50%; red: worse. "
            "Each cell ran until its Wilson 95% half-width reached the target or the cap.</p>",
            _img(pngs["matrix"], "P(attacker wins)"), _img(pngs["score"], "side-averaged score"),
            (f"<p>Pairs that cannot fight:</p><ul>{nf}</ul>" if nf else "")]))
        rk_cols = ["rank", "unit", "opponents", "win_rate", "win_rate_lo", "win_rate_hi", "draw_rate", "loss_rate",
                   "score", "strength", "strength_lo", "strength_hi", "elo", "nash_weight"]
        sec.append(_section("rankings", "Rankings", [
            "<p>Mean side-averaged rates against the other units (mirror matches excluded), normal 95% intervals; "
            "Bradley-Terry strength on the logit scale (0 = roster average) with 95% intervals from the Monte "
            "Carlo noise, and its Elo equivalent. Attacker advantage: "
            f"{adv['attacker_advantage']:+.3f} logit (s.e. {adv['attacker_advantage_se']:.3f}).</p>",
            f"<p>Model misfit: {b.misfit.get('rms_pp', float('nan')):.2f} pp RMS between the strength model and the "
            f"cells, against {b.misfit.get('noise_rms_pp', float('nan')):.2f} pp of Monte Carlo noise. "
            + (f"<b>{esc(b.misfit['warning'])}</b>" if b.misfit.get("warning") else "The model fits within the noise.")
            + "</p>",
            _img(pngs["ranking"], "ranking"), _html_table(b.rankings[[c for c in rk_cols if c in b.rankings]]),
            "<h3>Cells the strength model describes worst</h3>",
            _html_table(b.misfit["worst"]) if isinstance(b.misfit.get("worst"), pd.DataFrame) else ""]))
        sec.append(_section("outcomes", "Win / draw / loss", [_img(pngs["outcomes"], "win draw loss")]))
        sec.append(_section("nash", "Nash equilibrium", [
            "<p>The mix of units that no other unit beats on average, for the symmetric zero-sum game whose payoff "
            "is the side-averaged P(win) − P(loss) (solved with <code>scipy.optimize.linprog</code>). "
            "support_share: how often the unit is in the equilibrium when the payoffs are redrawn within their "
            "Monte Carlo error.</p>", _html_table(b.nash)]))
        sec.append(_section("dominance", "Dominated units", [
            "<p>A unit is dominated when another does at least as well against every unit (within 1.96 s.e.) "
            "and significantly better against at least one.</p>", _html_table(b.dominated)]))
        sec.append(_section("cycles", "Intransitive triples", [
            "<p>Rock-paper-scissors cycles: a beats b, b beats c, c beats a (side-averaged, each edge "
            "significant).</p>", _html_table(b.cycles)]))
        fp = b.fair_points
        sec.append(_section("fair-points", "Fair prices", [
            f"<p>{esc(str(fp.attrs.get('definition', '')))} {esc(str(fp.attrs.get('model', '')))}</p>",
            f"<p>{esc(str(fp.attrs.get('intervals', '')))}</p>",
            _img(pngs["points"], "points"), _html_table(fp), _html_table(b.efficiency),
            "<pre>" + esc(b.model_text()) + "</pre>"]))
        if self.one_for_one is not None:
            sec.append(_section("one-for-one", "One unit a side", [
                "<p>The same roster with one unit a side, whatever it costs: what a unit does in a single "
                "engagement. Dearer units win here by design; the headline matrix and every table above are at "
                "equal points.</p>", _img(pngs["one_for_one"], "one unit a side")]))
        else:
            sec.append(_section("one-for-one", "One unit a side", [
                "<p>This report is one unit a side (no budget): the headline matrix above is it.</p>"]))
        res = self.featured_result
        if res is not None:
            sec.append(_section("matchup", f"Featured matchup: {res.attacker} vs {res.defender}", [
                _img(pngs["featured_wdl"], "win draw loss"), _img(pngs["damage"], "damage"),
                _img(pngs["rounds"], "rounds"), "<pre>" + esc("\n".join(res.summary_lines())) + "</pre>"]))
        else:
            sec.append(_section("matchup", "Featured matchup", ["<p>No matchup between two units was fought.</p>"]))
        sec.append(_section("provenance", "Provenance", [
            "<p>Rerun with the same seed and settings to get identical CSV files "
            f"(<code>meleelab report {esc(rs.id)} --seed {esc(str(self.settings['seed']))}</code>).</p>",
            "<pre>" + esc(to_json(self.metadata()["provenance"])) + "</pre>"]))
        sec.append(_section("files", "Files", ["<ul>" + "".join(
            f'<li><a href="{esc(n)}">{esc(n)}</a></li>' for n in self.file_names()) + "</ul>"]))
        return _page(f"meleelab: {rs.title} balance report", "\n".join(sec))


# ------------------------------------------------------------------- build
def _featured(rs: Ruleset, matrix: Any, balance: BalanceSummary) -> tuple[str, str] | None:
    """The most even pair of different units (at equal points when the matrix has a budget)."""
    twins = matrix.twins() if hasattr(matrix, "twins") else {}
    sa = balance.side_averaged
    sa = sa[(sa["unit"] != sa["opponent"])]
    if twins:
        sa = sa[[twins.get(u) != twins.get(o) for u, o in zip(sa["unit"], sa["opponent"])]]
    if not len(sa):
        return next(iter(matrix.results), None)
    row = sa.iloc[int(np.argmin(np.abs(sa["payoff"].to_numpy(float))))]
    pair = (row["unit"], row["opponent"])
    return pair if pair in matrix.results else next(iter(matrix.results), None)


def _to_the_end(rs: Ruleset, ros: Roster, matrix: Any, attacker: str, max_rounds: int, trials: int,
                states: Any, overrides: Any, options: Any, from_text: bool) -> list[FightResult]:
    """``attacker`` against every unit with ``rounds="end"`` on streams of their own (same root seed)."""
    from sim.rng import stable_key

    root = np.random.SeedSequence(matrix.provenance["seed_entropy"], spawn_key=tuple(matrix.provenance["spawn_key"]))
    out = []
    for d in matrix.units:
        if (attacker, d) not in matrix.results:
            continue
        try:
            out.append(sim.fight(rs, attacker, d, trials=trials, seed=root, rounds="end", max_rounds=max_rounds,
                                 states=states, overrides=overrides, options=options, roster=ros, from_text=from_text,
                                 stream=(stable_key("to the end"), stable_key(attacker), stable_key(d)),
                                 budget=matrix.budget if matrix.budget is not None else "none"))
        except sim.MeleelabError:  # a pair that cannot fight to the end is left out of the curves
            continue
    return out


def build_report(
    ruleset: str | Ruleset,
    roster: Roster | str | Path | None = None,
    *,
    units: Sequence[str] | None = None,
    seed: int | None = DEFAULT_SEED,
    half_width: float = DEFAULT_HALF_WIDTH,
    max_trials: int = DEFAULT_MAX_TRIALS,
    rounds: Any = None,
    max_rounds: int = 50,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    from_text: bool = False,
    budget: Any = None,
    executor: Any = None,
    store: Any = None,
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
        Per-cell target Wilson half-width and trial cap (see :func:`analysis.matrix.matchup_matrix`).
    rounds, max_rounds, states, overrides, options, from_text
        As in :func:`sim.fight`, applied to every cell.
    workers : int
        Processes (the numbers do not depend on it).
    progress : callable, optional
        ``progress(cells_done, cells_total)``.
    budget : number, "none" or None
        Equal-points budget (default the roster's): the headline matrix and every
        balance table are at equal points, fair prices come from fights at
        neighbouring copy counts, and the one-unit-a-side matrix is a section.
    executor, store : optional
        As in :func:`analysis.matrix.matchup_matrix` (the matrix cells run on the
        executor and are kept in the store; the small time-to-resolution fights
        run in this process).

    Returns
    -------
    Report
    """
    from .matrix import matchup_matrix, resolve_roster

    start = time.perf_counter()
    rs = get_ruleset(ruleset)
    ros = resolve_roster(rs, roster)
    run = dict(half_width=half_width, max_trials=max_trials, seed=seed, rounds=rounds, max_rounds=max_rounds,
               states=states, overrides=overrides, options=options, workers=workers, from_text=from_text,
               executor=executor, store=store)
    matrix = matchup_matrix(rs, ros, units, progress=progress, budget=budget, **run)
    one_for_one = matchup_matrix(rs, ros, units, budget="none", **run) if matrix.budget is not None else None
    balance = balance_summary(matrix, seed=0)
    settings = {"seed": seed if seed is not None else matrix.provenance.get("seed_entropy"),
                "half_width": half_width, "max_trials": int(max_trials), "rounds": matrix.settings.get("rounds"),
                "max_rounds": int(max_rounds), "units": list(units) if units else None,
                "states": _plain(states or {}), "overrides": _plain(overrides or {}), "options": _plain(options or {}),
                "budget": matrix.budget,
                "time_to_resolution": {"rounds": "end", "max_rounds": int(max_rounds),
                                       "trials": min(int(max_trials), TO_THE_END_TRIALS)}}
    featured = _featured(rs, matrix, balance)
    to_the_end = (_to_the_end(rs, ros, matrix, featured[0], int(max_rounds), min(int(max_trials), TO_THE_END_TRIALS),
                              states, overrides, options, from_text) if featured else [])
    return Report(rs, ros, matrix, balance, settings, featured, to_the_end, time.perf_counter() - start, one_for_one)


def write_all(out_dir: str | Path, *, rulesets: Sequence[str] | None = None, log: Callable[[str], None] | None = None,
              fresh: bool = False, **kwargs: Any) -> dict[str, Any]:
    """A report for the default roster of every registered ruleset, one folder each, plus an index.

    A ruleset that fails is recorded in the index with its error and the others go on.
    ``out_dir`` is replaced as a whole at the end (:class:`analysis.outdir.OutputFolder`);
    finished matrix cells are kept in its results store, so a rerun after an
    interruption computes only the rest (``fresh=True`` ignores the store).

    Returns
    -------
    dict
        ``{"ok": [headline rows], "failed": {ruleset: message}, "seconds": float, "paths": [...]}``.
    """
    from .outdir import OutputFolder

    check_output_dir(out_dir)  # before computing any report
    folder = OutputFolder(out_dir)
    store = folder.open_store(fresh=fresh)
    ids = list(rulesets) if rulesets else [r.id for r in sim.rulesets()]
    reports: list[Report] = []
    failed: dict[str, str] = {}
    start = time.perf_counter()
    try:
        for rid in ids:
            t0 = time.perf_counter()
            try:
                rep = build_report(rid, store=store, **kwargs)
                rep.figures()  # drawn now: a plotting failure is this ruleset's, not the write's
                reports.append(rep)
                if log:
                    log(f"{rid}: {len(rep.matrix.units)} units, {rep.cell_stats()['trials_total']:,} fights, "
                        f"{time.perf_counter() - t0:.1f} s" + (f", {rep.matrix.resumed_cells} cells resumed"
                                                               if rep.matrix.resumed_cells else ""))
            except Exception as e:  # noqa: BLE001 - one broken ruleset must not stop the others
                failed[rid] = f"{type(e).__name__}: {' '.join(str(e).split())}"
                if log:
                    log(f"{rid}: FAILED ({failed[rid]})")
        paths = folder.replace(lambda staging: _write_tree(staging, reports, failed))
    finally:
        folder.close()
    return {"ok": [r.headline() for r in reports], "failed": failed, "seconds": time.perf_counter() - start,
            "paths": paths}


def _write_tree(out: Path, reports: Sequence[Report], failed: Mapping[str, str]) -> list[Path]:
    """Every report's folder and the index, into ``out``."""
    paths: list[Path] = []
    for rep in reports:
        paths += rep.write(out / rep.ruleset.id)
    index = pd.DataFrame([rep.headline() for rep in reports])
    body = ["<p>One balance report per registered ruleset (its shipped roster). Regenerate with "
            "<code>meleelab report --all --out reports/</code>.</p>"]
    if len(index):
        links = index.copy()
        links["ruleset"] = [f'<a href="{html.escape(r)}/report.html">{html.escape(r)}</a>' for r in index["ruleset"]]
        body.append(links.to_html(index=False, escape=False, border=0, classes="t"))
    if failed:
        body.append("<h2>Not generated</h2><ul>" + "".join(
            f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in failed.items()) + "</ul>")
    paths.append(atomic_write_text(out / "index.html", _page("meleelab balance reports",
                                                              _section("index", "Balance reports", body), nav=False)))
    md = ["# meleelab balance reports", "", "One report per registered ruleset (shipped roster), made by "
          "`meleelab report --all --out reports/`.", ""]
    if len(index):
        md_index = index.copy()
        md_index["ruleset"] = [md_link(r, f"{r}/report.html") + " (" + md_link("summary", f"{r}/summary.md") + ")"
                               for r in index["ruleset"]]
        md += [_md_table(md_index, raw=("ruleset",)), ""]
    md += [f"- **{md_cell(k)}** not generated: {md_cell(v)}" for k, v in failed.items()]
    paths.append(atomic_write_text(out / "index.md", "\n".join(md) + "\n"))
    return paths


# ------------------------------------------------------------------ helpers
def _plain(x: Any) -> Any:
    """JSON-friendly plain values (dataclasses, tuples, numpy scalars)."""
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if hasattr(x, "to_jsonable"):
        return x.to_jsonable()
    if hasattr(x, "__dataclass_fields__"):
        import dataclasses

        return _plain(dataclasses.asdict(x))
    return x


def _render(draw: Callable[[Any], Any], size: tuple[float, float]) -> bytes:
    from matplotlib.figure import Figure

    from .render import figure_png, glyph_warnings, plain_text

    fig = Figure(figsize=size)
    with plain_text(), glyph_warnings():
        ax = fig.add_subplot()
        draw(ax)
    return figure_png(fig, dpi=100)


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return "–"
        return f"{v:.4g}"
    return str(v)


def _md_table(frame: pd.DataFrame, raw: Sequence[str] = ()) -> str:
    """A Markdown table; every cell escaped (:func:`analysis.safe_markdown.md_cell`) but the ``raw`` columns."""
    if not len(frame):
        return "(none)"
    cols = list(frame.columns)
    rows = ["| " + " | ".join(md_cell(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for rec in frame.itertuples(index=False):
        rows.append("| " + " | ".join(_fmt(v) if c in raw else md_cell(_fmt(v)) for c, v in zip(cols, rec)) + " |")
    return "\n".join(rows)


def _html_table(frame: pd.DataFrame) -> str:
    if not len(frame):
        return "<p><i>(none)</i></p>"
    return frame.to_html(index=False, border=0, classes="t", na_rep="–",
                         formatters={c: _fmt for c in frame.columns if frame[c].dtype.kind == "f"})


def _kv(mapping: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in mapping.items())
    return f'<table class="kv">{rows}</table>'


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _section(sid: str, title: str, parts: Sequence[str]) -> str:
    return f'<section id="{sid}">\n<h2>{html.escape(title)}</h2>\n' + "\n".join(parts) + "\n</section>"


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{border-bottom:2px solid #2166ac}h2{margin-top:2em;border-bottom:1px solid #ccc}
table.t,table.kv{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}
table.t th,table.t td,table.kv th,table.kv td{border:1px solid #ddd;padding:2px 6px;text-align:right}
table.kv th{text-align:left;background:#f4f4f4}table.t th{background:#f4f4f4}
img{max-width:100%;display:block;margin:0.5em 0}pre{background:#f7f7f7;padding:0.6em;white-space:pre-wrap;font-size:0.8em}
nav a{margin-right:0.8em}"""


def _page(title: str, body: str, nav: bool = True) -> str:
    nav_html = " ".join(f'<a href="#{s}">{s}</a>' for s in SECTIONS) if nav else ""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{_CSS}</style>\n</head>\n<body>\n<h1>{html.escape(title)}</h1>\n<nav>{nav_html}</nav>\n{body}\n"
            "<footer><p>Made by meleelab.</p></footer>\n</body>\n</html>\n")
