"""The report's tables as a person reads them: human headers, one number format per column.

The CSV files keep their machine column names and full precision (they are
contracts); this module turns the same frames into :class:`TableView` objects for
``report.html`` (rendered by the jinja2 templates) and Markdown tables for
``summary.md``. Each column has a *kind* that fixes its format:

=========== ============================================== ==================
kind        shown as                                       example
=========== ============================================== ==================
``text``    as it is, left-aligned                         ``Terminators``
``int``     whole number, thousands separators             ``32,768``
``points``  points rounded to a whole number               ``1,085``
``pct``     a probability as a percentage, one decimal     ``38.0%``
``prob``    a probability (or payoff) to three decimals    ``0.181``
``logit``   two decimals, signed                           ``+0.74``
``ratio``   two decimals                                   ``0.59``
``pp``      percentage points, one decimal                 ``-31.7``
``bool``    yes / no                                       ``yes``
``rank``    competition rank, ties as ``=3``               ``=3``
``num``     a number already formatted, right-aligned      ``+2.1 pp``
``value``   a setting in words (:mod:`.words`)             ``yes``, ``none``
=========== ============================================== ==================

Every numeric kind shows zero as ``0`` (never ``6.7e-16`` or ``-0.0``) and a
missing value as an en dash. A column may carry an interval (two more frame
columns, ``lo`` and ``hi``), shown as ``37.9–38.2%`` under "95% interval".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .safe_markdown import md_cell
from .shares import with_shares
from .words import value_text

__all__ = ["Column", "Cell", "Row", "TableView", "fmt", "fmt_interval", "interval_against", "table_view", "markdown_table",
           "rank_labels", "RANKINGS", "NASH", "DOMINATED", "CYCLES", "FAIR_POINTS", "EFFICIENCY", "MISFIT",
           "OPTIONS", "HEADLINE", "generic_columns", "NUMERIC_KINDS", "MISSING", "fight_tables", "DIFF", "diff_frame"]

#: What a missing number (NaN, None) shows as.
MISSING = "–"
NUMERIC_KINDS = frozenset({"int", "points", "pct", "prob", "logit", "ratio", "pp", "rank", "num", "copies"})
#: Below this a number is zero (float noise from sums and differences of probabilities).
_ZERO = 5e-7


def _number(v: Any) -> float | None:
    if v is None or isinstance(v, (bool, np.bool_)) or isinstance(v, str):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _no_negative_zero(text: str) -> str:
    """``-0.00`` (a small negative number rounded) is ``0.00``."""
    if text.startswith(("-", "−")) and not any(c in "123456789" for c in text):
        return text[1:]
    return text


def fmt(v: Any, kind: str) -> str:
    """One value in the format of its column ``kind`` (see the module docstring)."""
    if kind == "value":  # a setting: yes/no, none, key: value (never a Python repr)
        return value_text(v)
    if kind in ("text", "num"):
        return MISSING if v is None or (isinstance(v, float) and math.isnan(v)) or v == "" and kind == "num" else str(v)
    if kind == "bool":
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return MISSING
        if isinstance(v, str):
            return {"true": "yes", "false": "no"}.get(v.lower(), v)
        return "yes" if bool(v) else "no"
    x = _number(v)
    if x is None:
        return MISSING if not isinstance(v, str) or not v else v
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) < _ZERO:
        return "0%" if kind == "pct" else "0"
    if kind in ("int", "points", "rank"):
        return _no_negative_zero(f"{x:,.0f}")
    if kind == "pct":
        return _no_negative_zero(f"{100 * x:.1f}") + "%"
    if kind == "prob":
        return _no_negative_zero(f"{x:.3f}")
    if kind == "logit":
        return _no_negative_zero(f"{x:+.2f}").replace("+0.00", "0.00")
    if kind == "ratio":
        return _no_negative_zero(f"{x:.2f}")
    if kind == "copies":  # whole copies as whole numbers, expected copies to two decimals (6.67)
        return f"{x:,.0f}" if abs(x - round(x)) < 5e-3 else f"{x:,.2f}"
    if kind == "pp":
        return _no_negative_zero(f"{x:+.1f}").replace("+0.0", "0.0")
    raise ValueError(f"unknown column kind {kind!r}")


def fmt_interval(lo: Any, hi: Any, kind: str) -> str:
    """``lo–hi`` in ``kind``'s format (the % sign once, at the end; ``lo to hi`` when a bound is negative).

    A missing bound (an extrapolation, or no estimate) is ``?``.
    """
    a, b = _number(lo), _number(hi)
    if a is None and b is None:
        return MISSING
    left = "?" if a is None else fmt(a, kind).lstrip("+")
    right = "?" if b is None else fmt(b, kind).lstrip("+")
    if kind == "pct" and left.endswith("%") and right.endswith("%"):
        left = left[:-1]
    # "-0.13–-0.10" is hard to read: a negative bound gets words between
    return f"{left} to {right}" if left.startswith("-") or right.startswith("-") else f"{left}–{right}"


def interval_against(lo: Any, hi: Any, kind: str, value: Any) -> str:
    """:func:`fmt_interval`, with a bound that rounds to ``value`` but lies beyond it shown to one decimal.

    A unit listed at 45 whose fair-price interval starts at 45.06 is flagged; "45–52" beside it would read
    as if 45 were inside. "45.1–52" says why it is not.
    """
    v = _number(value)
    if v is None or kind != "points":
        return fmt_interval(lo, hi, kind)
    a, b = _number(lo), _number(hi)
    if a is None and b is None:
        return MISSING

    # the interval lies wholly on one side of the value: each bound that would round to the value is shown
    # to the decimal that tells them apart ("44.8–44.9" beside 45, never "45–44.9")
    outside = (a is not None and a > v) or (b is not None and b < v)

    def bound(x: float | None) -> str:
        if x is None:
            return "?"
        if outside and x != v and fmt(x, kind) == fmt(v, kind):
            return f"{x:,.1f}" if round(x, 1) != round(v, 1) else f"{x:,.2f}"
        return fmt(x, kind).lstrip("+")

    return f"{bound(a)}–{bound(b)}"


@dataclass(frozen=True)
class Column:
    """One shown column: the frame column ``key``, its ``header`` and ``kind``; ``interval`` = (lo, hi) columns."""

    key: str
    header: str
    kind: str = "text"
    interval: tuple[str, str] | None = None
    #: Explanation shown on hover (``title`` attribute of the header).
    help: str = ""
    #: A column the interval is read against (a fair price's against the listed ``points``): see
    #: :func:`interval_against`.
    against: str | None = None

    @property
    def numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS


@dataclass(frozen=True)
class Cell:
    """A formatted cell: its text, right-aligned when ``numeric``, a link when ``href`` is set."""

    text: str
    numeric: bool = False
    href: str | None = None


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    #: ``id`` attribute of the row (what the findings link to).
    id: str | None = None
    #: CSS class (``flagged`` highlights a re-cost verdict).
    cls: str = ""


@dataclass(frozen=True)
class TableView:
    """A formatted table: headers with alignment, rows of text cells. Rendered by ``_macros.html``."""

    headers: tuple[Cell, ...]
    rows: tuple[Row, ...]
    caption: str = ""
    titles: tuple[str, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.rows)


def rank_labels(ranks: Sequence[Any]) -> list[str]:
    """Competition ranks as text; a rank held by several rows is shown as ``=3`` on each."""
    values = [_number(r) for r in ranks]
    counts: dict[float, int] = {}
    for v in values:
        if v is not None:
            counts[v] = counts.get(v, 0) + 1
    return [MISSING if v is None else ("=" if counts[v] > 1 else "") + fmt(v, "int") for v in values]


def _cell_texts(frame: pd.DataFrame, col: Column) -> list[str]:
    if col.kind == "rank":
        return rank_labels(list(frame[col.key]))
    values = frame[col.key] if col.key in frame else [None] * len(frame)
    return [fmt(v, col.kind) for v in values]


def _blank(values: pd.Series) -> bool:
    return bool(values.map(lambda v: v is None or v == "" or (isinstance(v, float) and math.isnan(v))).all())


def _shown(frame: pd.DataFrame, columns: Sequence[Column], drop_blank: bool = False
           ) -> list[tuple[Column, Column | None]]:
    """The columns present in ``frame``, each followed by its interval column when both bounds are there.

    With ``drop_blank``, a text column with nothing in any row (no extrapolation, no note) is left out.
    """
    out: list[tuple[Column, Column | None]] = []
    for c in columns:
        if c.key not in frame or (drop_blank and c.kind == "text" and len(frame) and _blank(frame[c.key])):
            continue
        iv = None
        if c.interval and all(k in frame for k in c.interval):
            iv = Column(c.interval[0], "95% interval", c.kind, help=f"95% interval of {c.header.lower()}")
        out.append((c, iv))
    return out


def table_view(frame: pd.DataFrame, columns: Sequence[Column], *, row_ids: Callable[[Any], str] | None = None,
               row_class: Callable[[Mapping[str, Any]], str] | None = None,
               hrefs: Mapping[str, Callable[[Mapping[str, Any]], str]] | None = None,
               caption: str = "", drop_blank: bool = False) -> TableView:
    """``frame`` formatted by ``columns`` (columns absent from the frame are skipped).

    Parameters
    ----------
    row_ids : callable, optional
        ``row_ids(label)`` -> the ``id`` of the row with index ``label`` (the anchors the findings link to).
    row_class : callable, optional
        ``row_class(record)`` -> a CSS class for the row ("" for none).
    hrefs : mapping, optional
        Column key -> ``href(record)``: that column's cells are links.
    drop_blank : bool
        Leave out text columns that are empty in every row.
    """
    shown = _shown(frame, columns, drop_blank)
    headers: list[Cell] = []
    titles: list[str] = []
    texts: list[tuple[list[str], bool, str | None]] = []  # column texts, numeric, link column
    hrefs = hrefs or {}
    for col, iv in shown:
        headers.append(Cell(col.header, col.numeric))
        titles.append(col.help)
        texts.append((_cell_texts(frame, col), col.numeric, col.key if col.key in hrefs else None))
        if iv is not None:
            lo, hi = col.interval  # type: ignore[misc]
            headers.append(Cell(iv.header, True))
            titles.append(iv.help)
            if col.against is not None and col.against in frame:
                shown_iv = [interval_against(a, b, col.kind, v) for a, b, v in zip(frame[lo], frame[hi], frame[col.against])]
            else:
                shown_iv = [fmt_interval(a, b, col.kind) for a, b in zip(frame[lo], frame[hi])]
            texts.append((shown_iv, True, None))
    records = frame.to_dict(orient="records")
    rows = []
    for i, (label, rec) in enumerate(zip(frame.index, records)):
        cells = tuple(Cell(t[i], numeric, hrefs[link](rec) if link else None) for t, numeric, link in texts)
        rows.append(Row(cells, row_ids(label) if row_ids else None, row_class(rec) if row_class else ""))
    return TableView(tuple(headers), tuple(rows), caption, tuple(titles))


def markdown_table(frame: pd.DataFrame, columns: Sequence[Column]) -> str:
    """The same table in Markdown (every cell escaped; numbers right-aligned)."""
    view = table_view(frame, columns)
    if not len(view):
        return "(none)"
    head = "| " + " | ".join(md_cell(h.text) for h in view.headers) + " |"
    rule = "|" + "|".join("---:" if h.numeric else ":---" for h in view.headers) + "|"
    body = ["| " + " | ".join(md_cell(c.text) for c in r.cells) + " |" for r in view.rows]
    return "\n".join([head, rule, *body])


def generic_columns(frame: pd.DataFrame, headers: Mapping[str, str] | None = None) -> list[Column]:
    """Columns for a frame without a fixed layout (the units table): kind from the dtype, header from the name."""
    headers = headers or {}
    out = []
    for c in frame.columns:
        s = frame[c]
        kind = "text"
        if s.dtype.kind == "b":
            kind = "bool"
        elif s.dtype.kind in "iu":
            kind = "int"
        elif s.dtype.kind == "f":
            finite = s.dropna()
            kind = "int" if len(finite) and bool((finite == finite.round()).all()) else "prob"
        else:
            vals = {str(v).lower() for v in s.dropna()}
            if vals and vals <= {"true", "false"}:
                kind = "bool"
        name = headers.get(str(c), str(c).replace("_", " "))
        out.append(Column(str(c), name[:1].upper() + name[1:] if name.islower() and len(name) > 3 else name, kind))
    return out


# ------------------------------------------------------------ the report's tables
RANKINGS = (
    Column("rank", "Rank", "rank", help="by score; =3: shared by units whose intervals overlap (or equal exact scores)"),
    Column("unit", "Unit"),
    Column("opponents", "Opponents", "int",
           help="every other unit of the roster, which its win, draw and loss rates average over (its own mirror "
                "match left out)"),
    Column("win_rate", "Win rate", "pct", ("win_rate_lo", "win_rate_hi"),
           help="mean side-averaged P(win) against the other units (its mirror match left out)"),
    Column("draw_rate", "Draw rate", "pct"),
    Column("loss_rate", "Loss rate", "pct"),
    Column("score", "Score", "pct", ("score_lo", "score_hi"),
           help="the unit's one score: win + draw/2 against the roster as listed, both roles averaged, its own "
                "mirror match counting 1/2"),
    Column("strength", "Strength (logit)", "logit", ("strength_lo", "strength_hi"),
           help="Bradley-Terry strength, 0 = roster average"),
    Column("elo", "Elo", "int"),
    Column("nash_weight", "Nash weight", "pct"),
    Column("role_decided", "Decided by who charges", "int",
           help="opponents with which the cell goes to the attacker at least 90% both ways"),
)
NASH = (
    Column("unit", "Unit"),
    Column("weight", "Weight in the mix", "pct", help="rounded so that the mix adds up to 100%"),
    Column("any_equilibrium", "Any equilibrium", "num", help="the least and greatest weight across every equilibrium mix"),
    Column("redrawn", "Redrawn", "num", help="95% range of the weight when the payoffs are redrawn within their noise"),
    Column("support_share", "Support share", "pct",
           help="share of payoff tables redrawn within their noise whose equilibrium uses the unit"),
)
DOMINATED = (
    Column("unit", "Unit"),
    Column("dominated_by", "Dominated by"),
    Column("strictly", "Strictly", "bool", help="significantly worse against every unit"),
)
CYCLES = (
    Column("unit_a", "A"), Column("unit_b", "beats B"), Column("unit_c", "beats C, which beats A"),
    Column("payoff_ab", "Payoff A vs B", "prob"), Column("payoff_bc", "Payoff B vs C", "prob"),
    Column("payoff_ca", "Payoff C vs A", "prob"), Column("weakest_link", "Weakest link", "prob"),
)
FAIR_POINTS = (
    Column("unit", "Unit"),
    Column("points", "Points", "points"),
    Column("copies", "Copies", "copies", help="copies fielded at the budget (on average, under expected fielding)"),
    Column("fielded", "Fielded", "points", help="points on the table: copies x points"),
    Column("score", "Score", "pct", ("score_lo", "score_hi"),
           help="the unit's one score, against the roster as listed"),
    Column("fair_points", "Fair price alone", "points", ("fair_lo", "fair_hi"),
           help="the points at which the unit alone would score 50%, every other price as listed (the interval is "
                "the Monte Carlo one); not the advice: one mispriced unit moves every other unit's fair price alone",
           against="points"),
    Column("advised_points", "Advised", "points", help="the advice: its price in the fewest changes that balance the "
                                                       "roster"),
    Column("roster_range", "Roster range", "num", help="the fair price when each opponent in turn is left out of the "
                                                 "roster: how much it depends on which units the roster holds"),
    Column("nearest_price", "Nearest fieldable", "points", help="the fieldable price nearest the fair price"),
    Column("role_decided", "Decided by who charges", "int",
           help="opponents with which the cell goes to the attacker at least 90% both ways"),
    Column("ratio", "Fair ÷ points", "ratio"),
    Column("verdict", "Verdict"),
    Column("beyond", "Extrapolation", help="outside [min points / 4, 4 x max points]: not a number the roster vouches for"),
    Column("method", "Method"),
    Column("note", "Note"),
)
def with_ranges(frame: pd.DataFrame) -> pd.DataFrame:
    """Display columns: ranges that are not 95% intervals (the Nash weight's, a fair price's roster range), and a Nash
    mix's ``weight`` as shown (texts adding up to 100%: :mod:`analysis.report.shares`)."""
    out = frame.copy()
    if {"weight", "weight_min", "weight_max"} <= set(out.columns):  # a Nash mix: shown so that it adds up to 100%
        out = with_shares(out, "weight")
    if {"weight_min", "weight_max"} <= set(out.columns):
        out["any_equilibrium"] = [fmt_interval(a, b, "pct") for a, b in zip(out["weight_min"], out["weight_max"])]
    if {"weight_lo", "weight_hi"} <= set(out.columns):
        out["redrawn"] = [fmt_interval(a, b, "pct") for a, b in zip(out["weight_lo"], out["weight_hi"])]
    if {"roster_lo", "roster_hi"} <= set(out.columns):
        out["roster_range"] = [fmt_interval(a, b, "points") for a, b in zip(out["roster_lo"], out["roster_hi"])]
    return out


VERDICTS = (
    Column("unit", "Unit"),
    Column("verdict", "Verdict", help="from the one solution: only a unit whose price it changes is under- or "
                                      "overpriced"),
    Column("points", "Points", "points"),
    Column("advised_points", "Advised", "points", help="its price in the fewest changes that balance the roster"),
    Column("score", "Score", "pct", ("score_lo", "score_hi"), help="its one score against the roster as listed"),
    Column("score_advised", "Score at the advised prices", "pct", ("score_advised_lo", "score_advised_hi"),
           help="against the repriced roster, on this run's fights"),
    Column("advice", "What to do"),
)
EFFICIENCY = (
    Column("unit", "Unit"),
    Column("score", "Score", "pct"),
    Column("win_rate", "Win rate", "pct"),
    Column("points", "Points", "points"),
    Column("score_per_100_points", "Score per 100 points", "prob"),
    Column("value_ratio", "Value ratio", "ratio", help="fair price ÷ points"),
)
MISFIT = (
    Column("attacker", "Attacker"), Column("defender", "Defender"),
    Column("observed", "Observed P(attacker wins)", "pct"), Column("model", "Model", "pct"),
    Column("residual_pp", "Residual (pp)", "pp"), Column("noise_pp", "Noise (pp)", "pp"),
)
OPTIONS = (
    Column("option", "Switch"), Column("value", "Value", "value"), Column("default", "Default", "value"),
    Column("set_by", "Set by"), Column("description", "What it does"),
)
HEADLINE = (
    Column("ruleset", "Ruleset"), Column("title", "Rules"), Column("units", "Units", "int"),
    Column("budget", "Budget"), Column("trials", "Fights", "int"), Column("strongest", "Strongest"),
    Column("nash_support", "Nash mix"), Column("cycles", "Cycles", "int"), Column("dominated", "Dominated", "int"),
    Column("fair_points_flags", "Advice", help="the fewest price changes that balance the roster"),
)


def _mean_interval(mean: float, se: float, digits: int) -> str:
    """Normal 95% interval of a mean of non-negative counts (damage, rounds), clipped at zero."""
    lo, hi = max(mean - 1.96 * se, 0.0), mean + 1.96 * se
    return f"{_no_negative_zero(f'{lo:.{digits}f}')}–{hi:.{digits}f}"


def fight_tables(result: Any) -> list[TableView]:
    """One fight's headline numbers as tables: result probabilities, damage, final states, extras.

    A mirror match (a unit against itself) names the sides "attacker" and
    "defender", never the unit twice.
    """
    mirror = result.attacker == result.defender
    name = {"attacker": "attacker" if mirror else f"{result.attacker} (attacker)",
            "defender": "defender" if mirror else f"{result.defender} (defender)"}
    ci = result.ci95
    exact = getattr(result, "method", "mc") == "exact"  # no fights counted: the probabilities themselves
    wins = pd.DataFrame([{"result": f"{name[k]} wins" if k != "draw" else "draw", "p": result.win[k],
                          "lo": ci[k][0], "hi": ci[k][1], **({} if exact else {"count": result.win_counts[k]})}
                         for k in ("attacker", "defender", "draw")])
    count_col = () if exact else (Column("count", "Fights", "int"),)
    tables = [table_view(wins, (Column("result", "Result"), *count_col,
                                Column("p", "Probability", "pct", ("lo", "hi"))),
                         caption="exact (the matchup's Markov chain, no sampling: intervals of zero width)"
                         if exact else f"{result.trials:,} fights")]
    dmg = []
    for side in ("attacker", "defender"):
        mean, se = result.damage(side)
        dmg.append({"side": f"to the {side}" if mirror else f"to {name[side]}", "mean": f"{mean:.2f}",
                    "ci": _mean_interval(mean, se, 2)})
    tables.append(table_view(pd.DataFrame(dmg), (Column("side", "Damage taken"), Column("mean", "Mean", "num"),
                                                 Column("ci", "95% interval", "num")),
                             caption=f"damage in {result.ruleset.damage_unit}"))
    cats = list(result.ruleset.outcome_categories)
    states = pd.DataFrame([{"side": name[side], **result.outcomes[side]} for side in ("attacker", "defender")])
    tables.append(table_view(states, (Column("side", "Final state"),
                                      *(Column(c, c.replace("_", " "), "pct") for c in cats))))
    mr, mr_se = result.mean_rounds
    rows = [{"measure": "rounds fought", "mean": f"{mr:.2f}", "ci": _mean_interval(mr, mr_se, 2),
             "doc": "mean rounds until the fight ended or its rounds ran out"}]
    for e in result.ruleset.extras:
        x = result.extra(e.name)
        rows.append({"measure": e.name.replace("_", " "), "mean": f"{x['mean']:.3f}",
                     "ci": _mean_interval(x["mean"], x["se"], 3), "doc": x["doc"]})
    tables.append(table_view(pd.DataFrame(rows), (Column("measure", "Measure"), Column("mean", "Mean", "num"),
                                                  Column("ci", "95% interval", "num"), Column("doc", "What it is"))))
    return tables


DIFF = (Column("kind", "Kind"), Column("item", "Item"), Column("quantity", "Quantity"),
        Column("old", "Before", "num"), Column("new", "After", "num"), Column("diff", "Change", "num"),
        Column("z", "z (standard errors)", "num"))


def diff_frame(changed: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """Rows of :meth:`analysis.report.diff.RunDiff.changed` formatted by quantity (probabilities in %, changes in pp)."""
    kinds = [("points" if q == "fair_price" else "logit" if q == "strength" else "pct") for q in changed["quantity"]]
    out = pd.DataFrame({"kind": changed["kind"], "item": changed["item"],
                        "quantity": [labels.get(q, q) for q in changed["quantity"]]})
    out["old"] = [fmt(v, k) for v, k in zip(changed["old"], kinds)]
    out["new"] = [fmt(v, k) for v, k in zip(changed["new"], kinds)]
    out["diff"] = [fmt(100 * float(v), "pp") + " pp" if k == "pct" else fmt(v, "logit") if k == "logit"
                   else ("+" if float(v) > 0 else "") + fmt(v, "points") for v, k in zip(changed["diff"], kinds)]
    out["z"] = ["exact" if se == 0 else fmt(v, "pp") for v, se in zip(changed["z"], changed["diff_se"])]
    return out
