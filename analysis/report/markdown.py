"""``summary.md`` and ``index.md``: the findings and headline tables in Markdown.

Same human headers and number formats as ``report.html`` (:mod:`analysis.report.tables`);
every cell and every piece of roster text is escaped (:mod:`analysis.report.safe_markdown`),
so a unit name can never become a link, a script or a broken table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..stats.estimates import order_key
from . import tables as rt
from .balanced import advice_text, balanced_columns, balanced_lines, balanced_table, balanced_table_text
from .capped import capped_sentence
from .cell_stats import exact_sentence
from .findings import findings
from .findings import markdown as findings_markdown
from .safe_markdown import md_cell, md_link, md_text
from .shares import with_shares
from .words import value_text

__all__ = ["summary", "index"]


def _fielding_sentence(m: Any) -> str:
    """How the budget fields copies, with each unit's copies (expected ones to two decimals)."""
    copies = ", ".join(f"{u} x{k:.2f}".replace(".00", "") if isinstance(k, float) else f"{u} x{k}"
                       for u, k in m.copies.items())
    if getattr(m, "fielding", "whole") == "expected":
        return (f"Equal points with expected fielding: a unit costing p fields {m.budget:g} / p copies on average "
                "(one more copy in the fraction of its fights that makes up the remainder), so every side puts the "
                f"whole budget on the table ({md_text(copies)}).")
    return f"Equal points: each side fields floor({m.budget:g} / points) copies of its unit ({md_text(copies)})."


def _md_code(text: str) -> str:
    """Markdown text whose `command` spans stay code spans (the rest escaped)."""
    return "".join(f"`{t}`" if i % 2 else md_text(t) for i, t in enumerate(text.split("`")))


def _precision_text(rep: Any) -> str:
    """The cells' target half-width, or the score target that replaced it."""
    from .score_target import cell_half_width, score_target_settings

    target, hw = score_target_settings(rep), cell_half_width(rep)
    text = f"target half-width ±{100 * hw:.2g} pp a cell" if hw is not None else "no target a cell"
    return text + (f", score target: {md_text(target['text'])}" if target is not None else "")


def summary(rep: Any) -> str:
    """summary.md of a built :class:`analysis.report.build.Report`."""
    rs, b, st = rep.ruleset, rep.balance, rep.cell_stats()
    m = rep.matrix
    lines = [f"# {md_text(rs.title)} ({md_text(rs.id)}): balance summary", "",
             f"Roster: {md_cell(rep.roster.source)}"
             + (f" ({md_cell(rep.roster.description)})" if rep.roster.description else ""),
             f"Rules: {md_text(rs.source)}; spec `{rs.spec.replace('`', '')}`; damage unit: {md_text(rs.damage_unit)}.",
             "", "## Findings", "", *findings_markdown(findings(rep)), "", "## Settings", "",
             (_fielding_sentence(m) if m.budget is not None else "One unit a side (no budget)."),
             f"Seed {rep.settings['seed']}, {_precision_text(rep)}, "
             f"cap {rep.settings['max_trials']:,} trials per cell; {st['trials_total']:,} fights in "
             f"{st['cells_fought']} cells (widest half-width ±{100 * st['widest_half_width']:.2f} pp); "
             f"rounds = {m.settings.get('rounds')}.", *([exact_sentence(m.long)] if exact_sentence(m.long) else []),
             *([md_text(capped_sentence(m))] if capped_sentence(m) else []), ""]
    switches = rep.options_table()
    set_ = switches[switches["set_by"] != "default"]
    lines += ["Switches: " + (", ".join(f"{md_cell(o)}={md_cell(value_text(v))} ({s})" for o, v, s in
                                        zip(set_["option"], set_["value"], set_["set_by"])) or "all defaults") + ".", ""]
    if m.excluded:
        lines += ["Left out (cannot fight): " + "; ".join(f"{md_cell(u)}: {md_cell(w)}" for u, w in m.excluded.items()),
                  ""]
    ranking_cols = [c for c in rt.RANKINGS if c.key not in ("opponents", "draw_rate", "loss_rate", "elo")]
    adv = b.attacker_advantage
    lines += ["## Rankings", "", "Ranked by score, the unit's one score (win + draw/2 against the roster as listed, "
              "both roles averaged, its own mirror match counting 1/2); win rate: side-averaged against the other "
              "units (its mirror left out); strength: Bradley-Terry logit with 95% interval; =3: a shared rank.", "",
              rt.markdown_table(with_shares(b.rankings, "nash_weight"), ranking_cols), "",
              f"Attacker advantage: {adv['attacker_advantage']:+.3f} logit (s.e. {adv['attacker_advantage_se']:.3f}).",
              ""]
    nash = b.nash[pd.to_numeric(b.nash["weight"], errors="coerce").fillna(0) > 0]
    nash = nash.sort_values("weight", ascending=False, kind="mergesort", key=order_key)
    lines += ["## Nash equilibrium", "", rt.markdown_table(rt.with_ranges(nash), rt.NASH), ""]
    lines += ["## Dominated units", "", rt.markdown_table(b.dominated, rt.DOMINATED), ""]
    lines += ["## Intransitive triples", "", rt.markdown_table(b.cycles, rt.CYCLES), ""]
    verdicts = getattr(b, "verdicts", pd.DataFrame())
    if len(verdicts):
        lines += ["## Verdicts", "", md_text(advice_text(rep)), "", rt.markdown_table(verdicts, rt.VERDICTS), ""]
    lines += ["## Fair prices", "", rt.markdown_table(rt.with_ranges(b.fair_points), rt.FAIR_POINTS), "", "Points efficiency:", "",
              rt.markdown_table(b.efficiency, rt.EFFICIENCY), "", md_text(b.model_text()), ""]
    if balanced_table_text(rep):
        lines += ["## Balanced table", "", _md_code(balanced_table_text(rep)), ""]
        if balanced_table(rep) is not None:
            lines += [f"- {md_text(line)}" for line in balanced_lines(rep)]
            lines += ["", rt.markdown_table(balanced_table(rep), balanced_columns(rep)), ""]
            if getattr(rep, "rebalance", None) is not None:
                lines += ["Every file of the proposal: [rebalance/summary.md](rebalance/summary.md).", ""]
    if rep.one_for_one is not None:
        wide = (100 * rep.one_for_one.wide("p_attacker")).rename_axis("attacker").reset_index()
        cols = [rt.Column("attacker", "Attacker \\ defender")] + [rt.Column(c, str(c), "num") for c in wide.columns[1:]]
        for c in wide.columns[1:]:
            wide[c] = [rt.fmt(v / 100, "pct") for v in wide[c]]
        lines += ["## One unit a side", "", "P(attacker wins) with one unit a side whatever it costs "
                  "(rows attack, columns defend):", "", rt.markdown_table(wide, cols), ""]
    elif getattr(rep, "one_for_one_note", ""):
        lines += ["## One unit a side", "", md_text(rep.one_for_one_note), ""]
    if rep.baseline is not None:
        ch = rep.baseline.changed()
        lines += ["## Changes since the baseline", "", f"Compared with {md_cell(rep.settings.get('baseline', ''))}: "
                  f"{len(ch)} numbers changed by more than {rep.baseline.z:g} standard errors "
                  "(all compared numbers: [baseline_diff.csv](baseline_diff.csv)).", ""]
        if len(ch):
            from .diff import QUANTITIES

            labels = {q: lab for _, _, q, _, lab in QUANTITIES}
            lines += [rt.markdown_table(rt.diff_frame(ch.head(40), labels), rt.DIFF), ""]
    lines += ["## Files", "", "Full report: [report.html](report.html). Tables: "
              + ", ".join(f"[{n}]({n})" for n in rep.file_names() if n.endswith(".csv")), ""]
    return "\n".join(lines)


def index(headlines: Sequence[Mapping[str, Any]], failed: Mapping[str, str],
          command: str = "meleelab report --all --out reports/") -> str:
    """index.md of ``report --all`` (``command``: how it was made)."""
    md = ["# meleelab balance reports", "", f"One report per registered ruleset (shipped roster), made by "
          f"`{command}`.", ""]
    frame = pd.DataFrame(list(headlines))
    if len(frame):
        view = rt.table_view(frame, rt.HEADLINE)
        head = "| " + " | ".join(md_cell(h.text) for h in view.headers) + " |"
        rule = "|" + "|".join("---:" if h.numeric else ":---" for h in view.headers) + "|"
        md += [head, rule]
        for rid, row in zip(frame["ruleset"], view.rows):
            link = md_link(rid, f"{rid}/report.html") + " (" + md_link("summary", f"{rid}/summary.md") + ")"
            md.append("| " + " | ".join([link] + [md_cell(c.text) for c in row.cells[1:]]) + " |")
        md.append("")
    md += [f"- **{md_cell(k)}** not generated: {md_cell(v)}" for k, v in failed.items()]
    return "\n".join(md) + "\n"
