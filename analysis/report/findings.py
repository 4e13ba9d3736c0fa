"""The report's findings: what a designer should read first, in plain words, every number linked.

:func:`findings` turns a built report into a few bullets: the equilibrium mix,
the most over- and under-priced units (from the fair-points table: flagged ones
first, extrapolations said in words), dominated units, cycles, noise and model
misfit, the changes since a baseline, and what to try next. Each bullet is a
sequence of text and :class:`Link` parts; every number is a link to the table
row (or section) it comes from, so ``report.html`` renders them as ``<a
href="#fair-3">`` and ``summary.md`` as links to its own headings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..stats.estimates import order_key
from ..stats.verdicts import CANNOT, PRICE_VERDICTS
from .capped import capped_finding
from .shares import share_texts
from .tables import fmt, fmt_interval


def rt_interval(lo: Any, hi: Any) -> str:
    return fmt_interval(lo, hi, "pct")

__all__ = ["Link", "Code", "Finding", "findings", "MD_ANCHORS", "row_id", "HOW_MANY", "role_goal", "MIRROR_RANGE",
           "ROLE_SHARE"]

#: How many over- and under-priced units the findings name.
HOW_MANY = 3

#: report.html section id -> the anchor of the matching heading in summary.md.
MD_ANCHORS = {"fair-points": "fair-prices", "nash": "nash-equilibrium", "cycles": "intransitive-triples",
              "dominance": "dominated-units", "rankings": "rankings", "settings": "settings",
              "baseline": "changes-since-the-baseline", "matrix": "settings", "units": "settings",
              "balanced": "balanced-table", "verdicts": "verdicts"}


def row_id(table: str, index: Any) -> str:
    """The ``id`` of row ``index`` (the frame's index label) of a report table (``fair``, ``nash``, ``cycle``...)."""
    return f"{table}-{index}"


@dataclass(frozen=True)
class Link:
    """A number (or name) linked to where it comes from: ``anchor`` in report.html, ``section`` for summary.md."""

    text: str
    anchor: str
    section: str

    @property
    def md_anchor(self) -> str:
        return MD_ANCHORS.get(self.section, self.section)


@dataclass(frozen=True)
class Code:
    """A command-line option or command in the text (``<code>`` in HTML, backticks in Markdown)."""

    text: str


@dataclass(frozen=True)
class Finding:
    """One bullet: a bold ``title``, then ``parts``; ``items`` are sub-bullets (each a tuple of parts)."""

    title: str
    parts: tuple[Any, ...] = ()
    items: tuple[tuple[Any, ...], ...] = field(default_factory=tuple)


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _fair_link(text: str, i: Any) -> Link:
    return Link(text, row_id("fair", i), "fair-points")


def _verdict_link(text: str, i: Any) -> Link:
    return Link(text, row_id("verdict", i), "verdicts")


def _advice(rep: Any) -> list[Finding]:
    """The one answer: the fewest price changes that balance the roster, each linked to its verdict row."""
    adv = getattr(rep.balance, "advice", None)
    if adv is None or not len(adv.table):
        return []
    t = adv.table
    tol = Link(f"±{100 * adv.tolerance:g} pp", "verdicts", "verdicts")
    changed = t[t["verdict"].isin(PRICE_VERDICTS)]
    cannot = t[t["verdict"].isin([CANNOT, "invulnerable", "harmless"])]
    once = t[t["verdict"].str.startswith("fair once")]
    fair = t[t["verdict"] == "fair"]
    items: list[tuple[Any, ...]] = []
    for i, r in changed.iterrows():
        items.append((f"{r['unit']}: ", _verdict_link(r["advice"], i)))
    if len(changed) and len(fair) + len(once):
        keep: list[Any] = ["every other unit keeps its price"]
        if len(fair):
            keep += [": fair ", ", ".join(str(u) for u in fair["unit"])]
        if len(once):
            keep += ["; " if len(fair) else ": ", "fair once the others are repriced ",
                     ", ".join(str(u) for u in once["unit"])]
        items.append(tuple(keep))
    for i, r in cannot.iterrows():
        items.append((f"{r['unit']}: ", _verdict_link(f"{r['verdict']}: {r['advice']}", i)))
    if adv.method != "joint":
        lead: tuple[Any, ...] = (f"{adv.note}; ",)
        if not len(changed):
            return [Finding("Advice", (*lead, "no unit's price lies outside its fair price's interval."), tuple(items))]
        return [Finding("Advice", (*lead, "the units outside their interval, each to its own fair price:"),
                        tuple(items))]
    if not len(changed):
        text = ("nothing to change: no unit's score is surely outside 50% ", tol,
                " (its 95% interval wholly beyond it)" + (":" if items else "."))
        return [Finding("Advice", text, tuple(items))]
    n = Link(fmt(len(changed), "int"), "verdicts", "verdicts")
    of = Link(fmt(len(t), "int"), "verdicts", "verdicts")
    gap = Link(f"{100 * adv.worst:.1f} pp", "verdicts", "verdicts")
    if adv.balanced:
        lead = ("the fewest price changes that bring every unit points can balance within ", tol, " of 50% against "
                "the repriced roster: ", n, " of ", of, " units (largest gap ", gap, " on this report's fights):")
    else:
        lead = ("no table within reach of points brings every unit within ", tol, " of 50%; the nearest changes ", n,
                " of ", of, " units (largest gap ", gap, "):")
    return [Finding("Advice", lead, tuple(items))]


def _mix(rep: Any) -> Finding:
    b = rep.balance
    nash = b.nash[pd.to_numeric(b.nash["weight"], errors="coerce").fillna(0) > 0]
    nash = nash.sort_values("weight", ascending=False, kind="mergesort", key=order_key)
    parts: list[Any] = (["at equal points (", Link(fmt(rep.matrix.budget, "points"), "settings", "settings"),
                         " points a side), the mix of units no unit beats on average is "]
                        if rep.matrix.budget is not None else
                        ["one unit a side, the mix of units no unit beats on average is "])
    shown = dict(zip(b.nash.index, share_texts(list(b.nash["weight"]))))  # as the Nash table shows them: adding up
    for k, (i, r) in enumerate(nash.iterrows()):
        parts += [", " if k else "", f"{r['unit']} ", Link(shown[i], row_id("nash", i), "nash")]
    if not len(nash):
        parts.append("not defined (too few cells fought)")
    parts.append(".")
    if "weight_min" in b.nash and len(nash):
        w = b.nash
        loose = w[(pd.to_numeric(w["weight_max"], errors="coerce") - pd.to_numeric(w["weight_min"], errors="coerce"))
                  > 0.01]
        if len(loose):
            parts.append(" It is one of many: across every equilibrium ")
            for k, (i, r) in enumerate(loose.iterrows()):
                parts += [", " if k else "", f"{r['unit']} ranges over ",
                          Link(rt_interval(r["weight_min"], r["weight_max"]), row_id("nash", i), "nash")]
            parts.append(".")
    if rep.matrix.budget is None and not getattr(rep.ruleset, "fields_copies", True):
        # A designer reading "buy the dearest unit" here needs to know cost never entered the fight.
        parts.append(f" {rep.ruleset.id} cannot field copies ({rep.ruleset.copies_refusal}), so this matrix ignores "
                     "cost and dearer units win here by design; cost enters only through the ")
        parts.append(Link("fair prices", "fair-points", "fair-points"))
        parts.append(" below.")
    return Finding("Equilibrium", tuple(parts))


#: The goal a balance setting must meet: the mean mirror P(attacker) in this range ...
MIRROR_RANGE = (0.35, 0.65)
#: ... and at most this share of pairs decided by who charges (90% to the attacker both ways).
ROLE_SHARE = 0.10


def role_goal(long: pd.DataFrame, units: Sequence[str]) -> dict[str, Any]:
    """The mean mirror-match P(attacker), the pairs decided by who charges, and whether the goal is met."""
    from ..stats.verdicts import role_decided

    f = long.set_index(["attacker", "defender"])
    mirrors = [float(f.loc[(u, u), "p_attacker"]) for u in units if (u, u) in f.index
               and math.isfinite(_num(f.loc[(u, u), "p_attacker"]))]
    decided = role_decided(long, list(units))
    pairs = len(units) * (len(units) - 1) // 2
    mean = sum(mirrors) / len(mirrors) if mirrors else math.nan
    share = len(decided) / pairs if pairs else 0.0
    ok = (MIRROR_RANGE[0] <= mean <= MIRROR_RANGE[1] if math.isfinite(mean) else True) and share <= ROLE_SHARE
    return {"mirror_mean": mean, "decided": decided, "pairs": pairs, "share": share, "ok": ok}


def _role(rep: Any) -> Finding | None:
    """Who charges: said first, in plain words, when it decides the cells rather than the units."""
    long = rep.matrix.long
    if not {"p_attacker", "p_draw"} <= set(long.columns):
        return None
    goal = role_goal(long, list(rep.matrix.units))
    n, mean = len(goal["decided"]), goal["mirror_mean"]
    mirror = (" (a unit against itself: ", Link(fmt(mean, "pct"), "matrix", "matrix"), " to the attacker)")
    if goal["ok"]:
        if not n:
            return None
        return Finding("Who charges", (Link(fmt(n, "int"), "matrix", "matrix"), " of ",
                                       Link(fmt(goal["pairs"], "int"), "matrix", "matrix"),
                                       " pairs go to whoever charges (90% or more both ways): their side-averaged "
                                       "50% says nothing about the units; the rankings and prices count them in "
                                       "the column 'decided by who charges'.",))
    return Finding("Who charges decides", ("in this setting the charge, not the units, decides: ",
                                          Link(fmt(n, "int"), "matrix", "matrix"), " of ",
                                          Link(fmt(goal["pairs"], "int"), "matrix", "matrix"),
                                          " pairs go to whoever charges both ways", *mirror,
                                          ". Read each cell in both roles (the matrix), not only the side-averaged "
                                          "tables below; the rules page says which settings measure the units."))


def _cannot_balance(rep: Any) -> Finding | None:
    """Units that points cannot fix: they cannot be harmed, or cannot harm."""
    v = getattr(rep.balance, "verdicts", None)
    if not isinstance(v, pd.DataFrame) or not len(v):
        return None
    special = v[v["verdict"].isin(["invulnerable", "harmless"])]
    if not len(special):
        return None
    return Finding("Points cannot balance", ("the rules make these fights certain whatever they cost:",),
                   tuple(_verdict_item(i, r) for i, r in special.iterrows()))


def _verdict_item(i: Any, r: Any) -> tuple[Any, ...]:
    """``Unit: verdict: advice``, linked to the unit's row of the verdicts table."""
    return (f"{r['unit']}: ", Link(f"{r['verdict']}: {r['advice']}" if r["advice"] else str(r["verdict"]),
                                   row_id("verdict", i), "verdicts"))


def _balanced_table(rep: Any) -> Finding | None:
    """The advice as one table: how to write and prove it, or what its proof said (``report --rebalance``)."""
    ruleset = getattr(rep, "ruleset", None)
    adv = getattr(rep.balance, "advice", None)
    if rep.matrix.budget is None or not getattr(ruleset, "fields_copies", False) or adv is None:
        return None
    rb = getattr(rep, "rebalance", None)
    if rb is None:
        if not adv.changed:
            return None
        return Finding("Balanced table", ("the advice is one points table (",
                                          Link("the balanced table", "balanced", "balanced"), "); ",
                                          Code(f"meleelab rebalance {rep.ruleset.id}"),
                                          " writes it as a roster and proves it on that file with a fresh run."))
    held = rb.verification[rb.verification["balanceable"].astype(bool)]
    proof = ("its advice at the written table is to change nothing" if rb.proved else
             f"its advice at the written table would still change {', '.join(rb.still_flagged)}")
    return Finding("Balanced table", ("the advised table, written to ", Code("rebalance/rebalanced.toml"),
                                      " and fought again at a fresh seed: ",
                                      Link(fmt(len(held), "int"), "balanced", "balanced"),
                                      " units held within ", Link(f"±{100 * rb.tolerance:g} pp", "balanced", "balanced"),
                                      " (largest gap ", Link(f"{100 * rb.max_deviation:.1f} pp", "balanced", "balanced"),
                                      f"); {proof}."))


def _army_lists(rep: Any) -> Finding | None:
    """``report --lists``: what the meta uses and leaves out, and the strongest shipped list (their tables are in
    ``lists/report.md`` and ``meta/report.md``)."""
    meta, lists = getattr(rep, "meta", None), getattr(rep, "lists", None)
    if meta is None and lists is None:
        return None
    parts: tuple[Any, ...] = ()
    if meta is not None:
        used, out = meta.units_used, meta.units_left_out
        parts = (f"the meta at {meta.budget:g} points (the mix of lists no list the search found beats"
                 + ("" if meta.converged else "; not converged") + f") uses {len(used)} of {len(used) + len(out)} "
                 "units" + (f"; no meta list takes {', '.join(out)}" if out else "") + " (", Code("meta/report.md"),
                 ").")
    items: list[tuple[Any, ...]] = []
    if lists is not None and len(lists.scores):
        top = lists.scores.iloc[0]
        items.append((f"of the roster's own lists, {top['list']} scores best: {100 * float(top['score']):.1f}% "
                      "against the others; every list against every list, and what each unit adds to a list: ",
                      Code("lists/report.md")))
    return Finding("Army lists", parts, tuple(items))


def _dominated(rep: Any) -> Finding | None:
    dom, n = rep.balance.dominated, len(rep.matrix.units)
    if not len(dom):
        return Finding("Dominance", ("no unit is dominated: each one does something better than every other.",))
    names = ", ".join(str(u) for u in dom["unit"])
    head = (Link(fmt(len(dom), "int"), "dominance", "dominance"), " of ", Link(fmt(n, "int"), "units", "units"),
            " units are dominated (another unit does at least as well against everyone): " + names + ".")
    v = getattr(rep.balance, "verdicts", None)
    if not isinstance(v, pd.DataFrame) or not len(v):
        return Finding("Dominance", head)
    mine = v[v["unit"].isin(dom["unit"])]
    return Finding("Dominance", head, tuple(_verdict_item(i, r) for i, r in mine.iterrows()))


def _cycles(rep: Any) -> Finding:
    cyc = rep.balance.cycles
    if not len(cyc):
        return Finding("Cycles", ("no rock-paper-scissors triple (a beats b beats c beats a) beyond the noise.",))
    items = []
    for i, r in cyc.head(HOW_MANY).iterrows():
        items.append((f"{r['unit_a']} beats {r['unit_b']}, {r['unit_b']} beats {r['unit_c']}, {r['unit_c']} beats "
                      f"{r['unit_a']} (weakest link: payoff ", Link(fmt(r["weakest_link"], "prob"),
                                                                    row_id("cycle", i), "cycles"), ")"))
    more = f" ({len(cyc) - HOW_MANY} more in the table)" if len(cyc) > HOW_MANY else ""
    return Finding("Cycles", (Link(fmt(len(cyc), "int"), "cycles", "cycles"),
                              f" rock-paper-scissors triple{'s' if len(cyc) > 1 else ''}{more}:"), tuple(items))


def noisy_cells(rep: Any) -> int:
    """Cells whose 95% half-width is wider than the target (they stopped at the trial cap)."""
    from .score_target import cell_half_width

    target = cell_half_width(rep)
    if target is None:  # fought for the scores: no cell target to miss (a unit's score says so instead)
        return 0
    long = rep.matrix.long
    fought = long[long["trials"] > 0]
    half = (fought["p_attacker_hi"] - fought["p_attacker_lo"]) / 2
    return int((half > target * (1 + 1e-9)).sum())


def _noise(rep: Any) -> list[Finding]:
    out = []
    st, noisy = rep.cell_stats(), noisy_cells(rep)
    if noisy:
        out.append(Finding("Noise", (Link(fmt(noisy, "int"), "settings", "settings"), " of ",
                                     Link(fmt(st["cells_fought"], "int"), "settings", "settings"),
                                     " cells stopped at the trial cap of ",
                                     Link(fmt(rep.settings["max_trials"], "int"), "settings", "settings"),
                                     " fights wider than the target half-width of ",
                                     Link(f"±{100 * rep.settings['half_width']:.2g} pp", "settings", "settings"),
                                     " (widest ", Link(f"±{100 * st['widest_half_width']:.2f} pp", "settings",
                                                       "settings"), ").")))
    from .score_target import score_finding

    score = score_finding(rep)
    if score is not None:
        out.append(score)
    mis = rep.balance.misfit
    if mis.get("warning"):
        out.append(Finding("Model misfit", ("the one-number-per-unit strength model is off by ",
                                            Link(f"{mis.get('rms_pp', math.nan):.1f} pp", "rankings", "rankings"),
                                            " RMS against ", Link(f"{mis.get('noise_rms_pp', math.nan):.2f} pp", "rankings",
                                                                  "rankings"),
                                            " of noise: read the matrix and the worst cells, not only the ranking.")))
    return out


#: A unit fielding less than this share of the budget is named in the "Unspent points" finding.
UNSPENT_SHARE = 0.95


def _unspent(rep: Any) -> Finding | None:
    """Units whose whole copies leave over 5% of the budget unspent: the matrix handicaps them, their prices do not."""
    budget, fp = rep.matrix.budget, rep.balance.fair_points
    if budget is None or "fielded" not in fp or not len(fp):
        return None
    fielded = pd.to_numeric(fp["fielded"], errors="coerce")
    short = fp[fielded < UNSPENT_SHARE * float(budget)]
    if not len(short):
        return None
    parts: list[Any] = [f"at {fmt(budget, 'points')} points a side, whole copies leave "]
    for k, (i, r) in enumerate(short.iterrows()):
        parts += [", " if k else "", f"{r['unit']} with ", _fair_link(fmt(r["fielded"], "points"), i)]
    parts.append(" points on the table. Their matrix cells, rankings and Nash weights carry that handicap; their "
                 "fair prices are per point and do not (a price that divides the budget spends it all).")
    return Finding("Unspent points", tuple(parts))


def _baseline(rep: Any) -> Finding | None:
    diff = getattr(rep, "baseline", None)
    if diff is None:
        return None
    ch = diff.changed()
    counts = {k: int((ch["kind"] == k).sum()) for k in ("cell", "ranking", "fair price")}
    if not len(ch):
        return Finding("Since the baseline", ("no number changed by more than its noise (",
                                              Link("details", "baseline", "baseline"), ")."))
    return Finding("Since the baseline", (Link(fmt(counts["cell"], "int"), "baseline", "baseline"), " cells, ",
                                          Link(fmt(counts["ranking"], "int"), "baseline", "baseline"),
                                          " ranking numbers and ", Link(fmt(counts["fair price"], "int"), "baseline",
                                                                        "baseline"),
                                          " fair prices changed beyond their noise."))


def _next_steps(rep: Any) -> Finding:
    items: list[tuple[Any, ...]] = []
    v = getattr(rep.balance, "verdicts", None)
    if isinstance(v, pd.DataFrame) and len(v):
        # the advice's changes first, then what points cannot fix: one answer, in the words of the verdicts table
        for group in (v[v["verdict"].isin(PRICE_VERDICTS)], v[v["verdict"].isin([CANNOT, "invulnerable", "harmless"])]):
            for i, r in group.iterrows():
                items.append((f"{r['unit']}: ", _verdict_link(str(r["advice"]), i)))
    noisy = noisy_cells(rep)
    if noisy:
        items.append(("raise the trial cap (", Code("--max-trials"), ", now ",
                      Link(fmt(rep.settings["max_trials"], "int"), "settings", "settings"), "): ",
                      Link(fmt(noisy, "int"), "settings", "settings"), " cells are noisier than the target"))
    if not items:
        items.append(("nothing stands out at this precision; a larger roster or more trials would test it further",))
    return Finding("What to try next", (), tuple(items))


def findings(rep: Any) -> list[Finding]:
    """The findings of a built :class:`analysis.report.build.Report`, in reading order."""
    role = _role(rep)
    first = [role] if role is not None and role.title == "Who charges decides" else []
    out: list[Finding] = [*first, *_advice(rep), _mix(rep)]
    for extra in (_cannot_balance(rep), _dominated(rep), _cycles(rep), role if not first else None,
                  _unspent(rep), capped_finding(rep.matrix), *_noise(rep), _baseline(rep), _balanced_table(rep),
                  _army_lists(rep)):
        if extra is not None:
            out.append(extra)
    out.append(_next_steps(rep))
    return out


def markdown(items: Sequence[Finding]) -> list[str]:
    """The findings as Markdown bullets (numbers link to summary.md's own headings)."""
    from .safe_markdown import md_link, md_text

    def part(p: Any) -> str:
        if isinstance(p, Link):
            return md_link(p.text, "#" + p.md_anchor)
        return f"`{p.text}`" if isinstance(p, Code) else md_text(p)

    def parts(ps: Sequence[Any]) -> str:
        return "".join(part(p) for p in ps)

    lines = []
    for f in items:
        lines.append(f"- **{md_text(f.title)}**" + (": " + parts(f.parts) if f.parts else ":"))
        lines += [f"  - {parts(i)}" for i in f.items]
    return lines
