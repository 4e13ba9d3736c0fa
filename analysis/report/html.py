"""``report.html`` and the ``report --all`` ``index.html``, rendered from jinja2 templates.

The templates live in ``analysis/report/templates/`` (package data): ``base.html`` (the
page: title, navigation, style), ``report.html`` (one roster's report),
``index.html`` (the list of reports) and ``_macros.html`` (tables, plots, text
with links). Autoescaping is on, so unit names, roster descriptions and error
messages are always shown as text. This module only builds the context: every
number arrives formatted (:mod:`analysis.report.tables`), every plot as a base64
``data:`` URI, so the page is one self-contained file.
"""

from __future__ import annotations

import base64
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..stats.estimates import order_key
from . import tables as rt
from .balanced import advice_text, balanced_columns, balanced_lines, balanced_table, balanced_table_text
from .capped import capped_sentence
from .cell_stats import exact_sentence
from .findings import Code, Link, findings, row_id
from .mixture import fielded_text, mixture_table
from .shares import with_shares
from .words import value_text

__all__ = ["SECTION_TITLES", "environment", "data_uri", "report_context", "render_report", "render_index"]

#: Section id -> its label in the navigation bar.
SECTION_TITLES = {"findings": "Findings", "overview": "Overview", "baseline": "Since the baseline",
                  "rules": "Rules", "settings": "Settings", "units": "Units", "matrix": "Matrix",
                  "rankings": "Rankings", "outcomes": "Win / draw / loss", "nash": "Nash mix",
                  "dominance": "Dominance", "cycles": "Cycles", "fair-points": "Advice and prices",
                  "one-for-one": "One a side", "matchup": "Featured matchups", "provenance": "Provenance",
                  "files": "Files"}


@functools.lru_cache(maxsize=1)
def environment() -> Any:
    """The jinja2 environment of the report templates (autoescaped, undefined names are errors)."""
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("analysis.report", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _parts(ps: Sequence[Any]) -> list[dict[str, Any]]:
    def one(p: Any) -> dict[str, Any]:
        if isinstance(p, Link):
            return {"text": p.text, "href": "#" + p.anchor, "code": False}
        return {"text": p.text if isinstance(p, Code) else str(p), "href": None, "code": isinstance(p, Code)}

    return [one(p) for p in ps]


def _version() -> str:
    import sim

    return str(getattr(sim, "__version__", ""))


def _nash(b: Any) -> tuple[rt.TableView, str]:
    nash = rt.with_ranges(b.nash)  # (its weights become the shown texts: read the numbers from b.nash)
    weight = pd.to_numeric(b.nash["weight"], errors="coerce").fillna(0)
    share = pd.to_numeric(nash["support_share"], errors="coerce").fillna(0)
    shown = nash[(weight > 0) | (share > 0)]
    shown = shown.loc[order_key(weight[shown.index]).sort_values(ascending=False, kind="mergesort").index]
    absent = ", ".join(str(u) for u in nash.loc[~nash.index.isin(shown.index), "unit"])
    return rt.table_view(shown, rt.NASH, row_ids=lambda i: row_id("nash", i)), absent


def _baseline(rep: Any, uri: Mapping[str, str]) -> dict[str, Any] | None:
    diff = rep.baseline
    if diff is None:
        return None
    from .diff import QUANTITIES

    counts = diff.counts().drop(columns=["ruleset"], errors="ignore")
    count_cols = [rt.Column("kind", "Compared")] + [rt.Column(c, c[:1].upper() + c[1:], "int")
                                                     for c in counts.columns if c != "kind"]
    changed = rt.table_view(rt.diff_frame(diff.changed(), {q: lab for _, _, q, _, lab in QUANTITIES}), rt.DIFF)
    images = [(uri[k], alt) for k, alt in (("baseline_cells", "cells before and after"),
                                           ("baseline_strength", "strengths before and after"),
                                           ("baseline_prices", "fair prices before and after")) if k in uri]
    return {"old": rep.settings.get("baseline") or diff.old, "z": f"{diff.z:g}", "notes": list(diff.notes),
            "counts": rt.table_view(counts, count_cols), "changed": changed, "images": images}


def _matchups(rep: Any, uri: Mapping[str, str]) -> list[dict[str, Any]]:
    out = []
    for k, (pair, why) in enumerate(zip(rep.featured, rep.featured_why)):
        res = rep.matrix.results.get(pair)
        if res is None:
            continue
        a, d = pair
        title = f"{a} against itself (mirror match: attacker vs defender)" if a == d else f"{a} vs {d}"
        copies, fielded = res.settings.get("copies") or {}, res.settings.get("fielded") or {}
        sides = []
        for side, name in (("attacker", a), ("defender", d)):
            pts = fielded.get(side)
            sides.append(f"{copies.get(side, 1)} × {name if a != d else side}"
                         + (f" ({pts:,.0f} points)" if pts is not None else ""))
        fielding = "; fielded: " + " against ".join(sides) if rep.matrix.budget is not None else ""
        mixed, mixture, detail = mixture_table(rep.matrix, pair), None, ""
        if mixed is not None:  # the caption's number is the mixture's: show it, then say which part is detailed
            m, (mixture, weight) = rep.matrix, mixed
            fielding = (f"; fielded on average: {fielded_text(m, a, m.copies[a])} against "
                        f"{fielded_text(m, d, m.copies[d])}, a mixture of whole-copy fights (first table)")
            detail = (f"The tables and the first two plots below show the heaviest of these fights in detail: "
                      f"{' against '.join(sides)}, weight {weight}. The last plot fights each unit at whole copies "
                      "(floor(budget / points) a side) to the end.")
        images = [(uri[f"featured_{k}_{n}"], alt) for n, alt in (("wdl", "win draw loss"), ("damage", "damage"),
                                                                 ("rounds", "rounds to resolution"))
                  if f"featured_{k}_{n}" in uri]
        out.append({"title": title, "why": why + fielding + ".", "mixture": mixture, "detail": detail,
                    "tables": rt.fight_tables(res), "images": images})
    return out


def _colours_only(rep: Any) -> dict[str, Any]:
    """Heatmap name -> what its caption says it leaves out (over 20 units: :mod:`.large_rosters`), or None."""
    from .large_rosters import heatmap_caption

    n = len(rep.matrix.units)
    one = rep.one_for_one
    return {"matrix": heatmap_caption(n, "matrix.csv"), "score": heatmap_caption(n, "side_averaged.csv"),
            "one_for_one": None if one is None else heatmap_caption(len(one.units), "one_for_one_long.csv")}


def rerun_command(rep: Any) -> str:
    """The command that repeats the run (the settings that differ from the defaults; roster and --set as given)."""
    from ..runs.defaults import DEFAULT_HALF_WIDTH, DEFAULT_MAX_TRIALS

    st = rep.settings
    parts = [f"meleelab report {rep.ruleset.id} --seed {st['seed']}"]
    if rep.matrix.budget is not None:
        parts.append(f"--budget {rep.matrix.budget:g}")
    if st["max_trials"] != DEFAULT_MAX_TRIALS:
        parts.append(f"--max-trials {st['max_trials']}")
    if st["half_width"] != DEFAULT_HALF_WIDTH:
        parts.append(f"--half-width {st['half_width']:g}")
    return " ".join(parts)


def report_context(rep: Any) -> dict[str, Any]:
    """Everything ``report.html`` shows, formatted (see the template for where each piece goes)."""
    from .io import to_json

    rs, b, st = rep.ruleset, rep.balance, rep.cell_stats()
    uri = {k: data_uri(v) for k, v in rep.figures().items()}
    m = rep.matrix
    budget = m.budget
    if budget is None:
        fielding = "One unit a side (no budget)."
    elif getattr(m, "fielding", "whole") == "expected":
        fielding = (f"Equal points with expected fielding: a unit costing p fields {budget:,g} / p copies on "
                    "average (one more copy in the fraction of its fights that makes up the remainder), so every "
                    "side puts the whole budget on the table.")
    else:
        fielding = f"Equal points: each side fields floor({budget:,g} / points) copies of its unit."
    hw = rep.settings["half_width"]
    from .findings import noisy_cells

    from .score_target import cell_half_width, cell_rule, score_target_settings

    target, cell_hw = score_target_settings(rep), cell_half_width(rep)
    settings = [("seed", rep.settings["seed"]),
                ("target half-width", f"±{100 * cell_hw:.2g} pp a cell" if cell_hw is not None
                 else f"none a cell (--half-width {hw:g} not used: over the roster size that keeps cell precision)"),
                *([("score target", target["text"])] if target is not None else []),
                ("trial cap per cell", f"{rep.settings['max_trials']:,}"),
                ("budget", f"{budget:,g} points a side" if budget is not None else "none (one unit a side)"),
                ("rounds", m.settings.get("rounds")), ("max rounds", m.settings.get("max_rounds")),
                ("states", value_text(m.settings.get("states"))),
                ("unit overrides", value_text(m.settings.get("overrides"))),
                ("cells fought", f"{st['cells_fought']:,} of {st['cells']:,}"),
                ("fights", f"{st['trials_total']:,} (per cell {st['trials_min']:,} to {st['trials_max']:,})"),
                ("widest half-width", f"±{100 * st['widest_half_width']:.2f} pp"),
                ("method", f"{rep.settings.get('method', 'auto')}: {st.get('cells_exact', 0):,} exact cells, "
                           f"{st.get('cells_mc', st['cells_fought']):,} Monte Carlo"),
                ("cells wider than the target", f"{noisy_cells(rep):,}")]
    if capped_sentence(m):  # many draws that only mean "nobody won before the cap"
        settings.append(("fights at the round cap", capped_sentence(m)))
    import sim.plugins

    rules = [("id", rs.id), ("title", rs.title), ("source", rs.source), ("spec", rs.spec),
             ("origin", sim.plugins.origin(rs.id)), ("damage unit", rs.damage_unit),
             ("default rounds", rs.default_rounds), ("outcome categories", ", ".join(rs.outcome_categories)),
             ("extras", ", ".join(e.name for e in rs.extras) or "none")]
    units = rep.units_table()
    nash, absent = _nash(b)
    fp = b.fair_points
    adv = b.attacker_advantage
    mis = b.misfit
    worst = mis.get("worst") if isinstance(mis.get("worst"), pd.DataFrame) else pd.DataFrame()
    chosen = bool(rep.settings.get("feature"))
    return {
        "title": f"meleelab: {rs.title} balance report",
        "nav": [(s, SECTION_TITLES.get(s, s)) for s in rep.sections()],
        "version": _version(),
        "findings_intro": "What this run says about the roster, most important first.",
        "findings": [{"title": f.title, "parts": _parts(f.parts), "subitems": [_parts(i) for i in f.items]}
                     for f in findings(rep)],
        "roster": {"source": rep.roster.source, "description": rep.roster.description},
        "overview": {"units": len(m.units), "fights": f"{st['trials_total']:,}",
                     "fielding": " ".join(t for t in (fielding, exact_sentence(m.long)) if t),
                     "headline": rt.table_view(pd.DataFrame([rep.headline()]), rt.HEADLINE)},
        "baseline": _baseline(rep, uri),
        "baseline_note": rep.baseline_note,
        "one_for_one_note": getattr(rep, "one_for_one_note", ""),
        "rules": rules, "spec": rs.spec,
        "options": rt.table_view(rep.options_table(), rt.OPTIONS),
        "settings": settings,
        "cell_rule": cell_rule(rep),
        "colours_only": _colours_only(rep),
        "units": rt.table_view(units, rt.generic_columns(units, {"in_matrix": "In matrix"})),
        "excluded": list(m.excluded.items()),
        "images": {"matrix": uri["matrix"], "score": uri["score"], "ranking": uri["ranking"],
                   "outcomes": uri["outcomes"], "points": uri["points"], "one_for_one": uri.get("one_for_one")},
        "not_fought": st["not_fought"],
        "advantage": f"{adv['attacker_advantage']:+.3f} logit (s.e. {adv['attacker_advantage_se']:.3f})",
        "misfit_text": (f"Model misfit: {mis.get('rms_pp', math.nan):.2f} pp RMS between the strength model and the "
                        f"cells, against {mis.get('noise_rms_pp', math.nan):.2f} pp of Monte Carlo noise."
                        + ("" if mis.get("warning") else " The model fits within the noise.")),
        "misfit_warning": mis.get("warning", ""),
        "rankings": rt.table_view(with_shares(b.rankings, "nash_weight"), rt.RANKINGS,
                                  row_ids=lambda i: row_id("rank", i)),
        "misfit": rt.table_view(worst, rt.MISFIT),
        "nash": nash, "nash_absent": absent,
        "dominated": rt.table_view(b.dominated, rt.DOMINATED, row_ids=lambda i: row_id("dominated", i)),
        "cycles": rt.table_view(b.cycles, rt.CYCLES, row_ids=lambda i: row_id("cycle", i)),
        "verdicts": rt.table_view(getattr(b, "verdicts", pd.DataFrame()), rt.VERDICTS,
                                  row_ids=lambda i: row_id("verdict", i)),
        # `command` spans of the text as code (even pieces of the split are prose, odd ones commands)
        "balanced_text": _parts([Code(t) if i % 2 else t for i, t in enumerate(balanced_table_text(rep).split("`"))
                                 if t]),
        "balanced_lines": balanced_lines(rep),
        "balanced_table": None if balanced_table(rep) is None else rt.table_view(balanced_table(rep),
                                                                                  balanced_columns(rep)),
        "balanced_proved": getattr(rep, "rebalance", None) is not None,
        "advice_text": advice_text(rep),
        "fair": {"definition": str(fp.attrs.get("definition", "")), "model": str(fp.attrs.get("model", "")),
                 "intervals": str(fp.attrs.get("intervals", "")),
                 "table": rt.table_view(rt.with_ranges(fp), rt.FAIR_POINTS, row_ids=lambda i: row_id("fair", i),
                                        drop_blank=True,
                                        row_class=lambda r: "flagged" if bool(r.get("flagged")) else ""),
                 "efficiency": rt.table_view(b.efficiency, rt.EFFICIENCY)},
        "model_text": b.model_text(),
        "model_paragraphs": [p.strip() for p in b.model_text().split("\n") if p.strip()],  # prose, not a wall
        "featured_chosen": chosen,
        "matchups": _matchups(rep, uri),
        "rerun": rerun_command(rep),
        "provenance": to_json(rep.metadata()["provenance"]),
        "files": rep.file_names(),
    }


def render_report(rep: Any) -> str:
    """The report page of a built :class:`analysis.report.build.Report`."""
    return environment().get_template("report.html").render(report_context(rep))


def render_index(headlines: Sequence[Mapping[str, Any]], failed: Mapping[str, str],
                 command: str = "meleelab report --all --out reports/") -> str:
    """The index page of ``report --all``: how it was made (``command``), one row per report (linked), then the
    rulesets that failed."""
    frame = pd.DataFrame(list(headlines))
    view = rt.table_view(frame, rt.HEADLINE, hrefs={"ruleset": lambda r: f"{r['ruleset']}/report.html"}) if len(
        frame) else rt.TableView((), ())
    return environment().get_template("index.html").render(
        title="meleelab balance reports", nav=[], version=_version(), reports=view, failed=list(failed.items()),
        command=command)
