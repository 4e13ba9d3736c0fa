"""What each command prints in the terminal: the tables of ``fight``, ``matrix``, ``sweep``, ``compare``, ``balance``
and ``diff``, laid out by :mod:`analysis.cli.console`.

Only the terminal text lives here: the CSV, JSON and HTML outputs keep their own
column names and formats. Probabilities are from 0 to 1 everywhere (see
:mod:`analysis.cli.console` for the decimals).
"""

from __future__ import annotations

from typing import Any

from ..report.shares import rounded_shares
from .console import Column, cell, count, interval, number, prob, signed, table_text

__all__ = ["fight_text", "matrix_text", "sweep_text", "marginal_text", "prices_text", "compare_text", "balance_text",
           "advice_text", "diff_text"]

#: Decimals of a probability: one matchup (fight, compare, sweep) / many cells (matrix, balance).
ONE_MATCHUP = 4
MANY_CELLS = 3


def _text(*cols: str) -> list[Column]:
    return [Column(c) for c in cols]


def _nums(*cols: str) -> list[Column]:
    return [Column(c, numeric=True) for c in cols]


# -------------------------------------------------------------------- fight
def fight_text(result: Any) -> str:
    """``meleelab fight``: the result with 95% intervals, the means with standard errors, the final states."""
    from sim.stats import wilson_interval

    d = ONE_MATCHUP
    att, dfn = result.attacker, result.defender
    mirror = att == dfn
    names = {"attacker": f"{att} (attacker)" if mirror else att, "defender": f"{dfn} (defender)" if mirror else dfn}
    exact = getattr(result, "method", "mc") == "exact"
    head = [f"{result.ruleset.id}: {att} (attacker) vs {dfn} (defender)",
            f"exact: the outcome distribution of the matchup's Markov chain (no sampling), rounds={result.rounds}"
            if exact else
            f"{result.trials:,} trials, rounds={result.rounds}, seed entropy {result.provenance['seed_entropy']}"]
    settings = result.settings
    copies = settings.get("copies") or {}
    if settings.get("budget") is not None or any(k != 1 for k in copies.values()):
        fielded = settings.get("fielded") or {}

        def side(s: str, name: str) -> str:
            pts = fielded.get(s)
            return f"{copies.get(s, 1)} x {name}" + (f" ({pts:g} points)" if pts is not None else "")

        budget = settings.get("budget")
        head.append((f"equal points, budget {budget:g}: " if budget is not None else "copies: ")
                    + f"{side('attacker', att)} vs {side('defender', dfn)}")

    ci = result.ci95
    rows = [[f"{names[k]} wins" if k != "draw" else "draw", prob(result.win[k], d),
             "exact" if exact else interval(*ci[k], prob, d)] for k in ("attacker", "defender", "draw")]
    if exact and result.capped_share > 0:
        rows.append(["of which capped (stopped at --max-rounds)", prob(result.capped_share, d), "exact"])
    elif not exact and result.tally.capped:
        rows.append(["of which capped (stopped at --max-rounds)", prob(result.capped_share, d),
                     interval(*wilson_interval(int(result.tally.capped), result.trials), prob, d)])
    outcome = table_text(_text("result") + _nums("probability", "95% interval"), rows)

    means = []

    def se_text(se: float) -> str:
        return "exact" if exact else number(se, d)

    for side_ in ("attacker", "defender"):
        mean, se = result.damage(side_)
        means.append([f"damage to {names[side_]}", number(mean, d), se_text(se)])
    mr, mr_se = result.mean_rounds
    means.append(["rounds fought", number(mr, d), se_text(mr_se)])
    for e in result.ruleset.extras:
        x = result.extra(e.name)
        means.append([e.name, number(x["mean"], d), se_text(x["se"])])
    averages = table_text(_text("mean of") + _nums("mean", "s.e."), means)

    cats = list(result.ruleset.outcome_categories)
    finals = [[names[s]] + [prob(result.outcomes[s][c], d) for c in cats] for s in ("attacker", "defender")]
    final = table_text(_text("final state") + _nums(*cats), finals)
    return "\n".join(head + ["", outcome, "", f"damage in {result.ruleset.damage_unit}", averages, "", final])


# ------------------------------------------------------------------- matrix
def matrix_text(wide: Any) -> str:
    """Attacker rows x defender columns of P(attacker wins); wider than the terminal, in blocks of defenders."""
    cols = [Column("attacker \\ defender")] + [Column(str(d), numeric=True) for d in wide.columns]
    rows = [[str(a)] + [prob(v, MANY_CELLS) for v in wide.loc[a]] for a in wide.index]
    return table_text(cols, rows)


# -------------------------------------------------------------------- sweep
def sweep_text(shown: Any, field: str) -> str:
    """One row per value and opponent: P(win) with its interval, P(loss), damage both ways."""
    d = ONE_MATCHUP
    rows = [[str(r["value"]), str(r["opponent"]), prob(r["p_win"], d), interval(r["p_win_lo"], r["p_win_hi"], prob, d),
             prob(r["p_loss"], d), number(r["damage_dealt"], d), number(r["damage_taken"], d)]
            for _, r in shown.iterrows()]
    cols = [Column(field, numeric=True), Column("opponent")] + _nums(
        "P(win)", "95% interval", "P(loss)", "damage dealt", "damage taken")
    return table_text(cols, rows, key=2)


def marginal_text(marginal: Any, field: str) -> str:
    """The value of one point of ``field``: change in P(win) per point (t interval) and fair points per point.

    The CSV's ``win_points_per_point`` is in percentage points; the terminal shows
    probabilities like every other table, so it is divided by 100 here.
    """
    d = ONE_MATCHUP
    rows = []
    for _, r in marginal.iterrows():
        rows.append([str(r["opponent"]), f"{_plain(r['from_value'])}..{_plain(r['to_value'])}",
                     signed(r["win_points_per_point"] / 100, d), number(r["se"] / 100, d),
                     interval(r["lo"] / 100, r["hi"] / 100, signed, d),
                     number(r["fair_points_per_point"], 2), interval(r["fair_lo"], r["fair_hi"], number, 2)])
    cols = [Column("opponent"), Column(field, numeric=True)] + _nums(
        "P(win) per point", "s.e.", "95% interval", "fair points per point", "95% interval")
    return table_text(cols, rows)


def _plain(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def prices_text(fair: Any, label: str, names: dict[str, str] | None = None) -> str:
    """Fair prices (``frame.attrs["fair"]`` of a sweep or comparison): one row per value or unit."""
    rows = []
    for _, r in fair.iterrows():
        name = (names or {}).get(str(r["value"]), str(r["value"]))
        rows.append([name, number(r["fair_points"], 1), interval(r["fair_lo"], r["fair_hi"], number, 1),
                     str(r["method"]), str(r.get("beyond") or "")])
    cols = [Column(label, numeric=label != "unit")] + _nums("fair price", "95% interval") + _text("method", "note")
    return table_text(cols, rows)


# ------------------------------------------------------------------ compare
def compare_text(shown: Any) -> str:
    """Per opponent and role: P(win) of base and variant, the paired difference, its interval and errors."""
    d = ONE_MATCHUP
    rows = [[str(r["opponent"]), str(r["role"]), prob(r["p_win_base"], d), prob(r["p_win_variant"], d),
             signed(r["diff"], d), interval(r["diff_lo"], r["diff_hi"], signed, d), number(r["diff_se"], d),
             number(r["diff_se_independent"], d)] for _, r in shown.iterrows()]
    cols = _text("opponent", "role") + _nums("P(win) base", "P(win) variant", "difference", "95% interval",
                                             "s.e. paired", "s.e. independent")
    return table_text(cols, rows, key=2)


# ------------------------------------------------------------------ balance
def balance_text(summary: Any) -> str:
    """``meleelab balance``: the tables of :class:`analysis.stats.summary.BalanceSummary`, then the model in words."""
    d = MANY_CELLS
    s = summary
    head = (f"{s.ruleset}: balance of {len(s.units)} units at equal points (budget {s.budget:g})"
            if s.budget is not None else f"{s.ruleset}: balance of {len(s.units)} units, one a side")
    rk = s.rankings
    # shown to three decimals that add up to 1 (largest remainders), as the report's percentages add up to 100%
    rk_weight = rounded_shares(list(rk["nash_weight"]), d) if "nash_weight" in rk else [None] * len(rk)
    rankings = table_text(
        _nums("rank") + _text("unit") + _nums("win rate", "95% interval", "score", "strength", "95% interval",
                                             "Nash weight"),
        [[str(r["rank"]), str(r["unit"]), prob(r["win_rate"], d), interval(r["win_rate_lo"], r["win_rate_hi"], prob, d),
          prob(r["score"], d), number(r["strength"], d), interval(r["strength_lo"], r["strength_hi"], number, d),
          _share(w, d)] for (_, r), w in zip(rk.iterrows(), rk_weight)], key=2)
    nash = _nash_text(s.nash, d)
    dominated = table_text(_text("unit", "dominated by", "strictly"),
                           [[str(r["unit"]), str(r["dominated_by"]), "yes" if r["strictly"] else "no"]
                            for _, r in s.dominated.iterrows()])
    cycles = table_text(_text("a", "b", "c") + _nums("payoff a-b", "payoff b-c", "payoff c-a", "weakest link"),
                        [[str(r["unit_a"]), str(r["unit_b"]), str(r["unit_c"]), signed(r["payoff_ab"], d),
                          signed(r["payoff_bc"], d), signed(r["payoff_ca"], d), signed(r["weakest_link"], d)]
                         for _, r in s.cycles.iterrows()])
    fp = s.fair_points
    prices = table_text(
        _text("unit") + _nums("points", "copies", "fair price alone", "95% interval") + _text("verdict", "note"),
        [[str(r["unit"]), cell(r.get("points")) if "points" in fp else "-",
          count(r["copies"]) if "copies" in fp else "-", number(r["fair_points"], 1),
          interval(r["fair_lo"], r["fair_hi"], number, 1), str(r.get("verdict") or ""), str(r.get("beyond") or "")]
         for _, r in fp.iterrows()])
    adv = s.attacker_advantage
    advice = advice_text(s.advice) if getattr(s, "advice", None) is not None else ""
    lines = [head, "", *([advice, ""] if advice else []),
             "Rankings (score: against the roster as listed, both roles averaged, its own mirror counting 1/2; "
             "win rate: against the other units; strength: Bradley-Terry logit, intervals from Monte Carlo noise)",
             rankings, ""]
    if s.misfit.get("warning"):
        lines += [s.misfit["warning"], ""]
    lines += [f"Attacker advantage (logit): {adv['attacker_advantage']:.4f} (s.e. {adv['attacker_advantage_se']:.4f})",
              "", "Nash equilibrium mix (payoff = side-averaged P(win) - P(loss))", nash, "",
              "Dominated units", dominated, "", "Intransitive triples (a beats b beats c beats a)", cycles, "",
              f"Fair prices ({fp.attrs.get('method', '')})", prices, "", s.model_text()]
    return "\n".join(lines)


def advice_text(advice: Any) -> str:
    """The advice: the fewest price changes that balance the roster, then every unit's verdict (one table)."""
    d = MANY_CELLS
    t = advice.table
    changed = advice.changed
    tol = f"{100 * advice.tolerance:g} pp"
    if advice.method != "joint":
        head = f"Advice ({advice.note})"
    elif not changed:
        head = f"Advice: nothing to change (no unit's score is surely outside 50% +- {tol})"
    elif advice.balanced:
        head = (f"Advice: the fewest price changes that balance the roster ({len(changed)} of {len(t)}; every unit "
                f"points can balance then within {tol} of 50%, largest gap {100 * advice.worst:.1f} pp)")
    else:
        head = (f"Advice: no table within reach of points balances every unit within {tol}; the nearest changes "
                f"{len(changed)} of {len(t)} (largest gap {100 * advice.worst:.1f} pp)")
    rows = [[str(r["unit"]), str(r["verdict"]), cell(r["points"]), cell(r["advised_points"]), prob(r["score"], d),
             interval(r["score_lo"], r["score_hi"], prob, d), prob(r["score_advised"], d), str(r["advice"])]
            for _, r in t.iterrows()]
    body = table_text(_text("unit", "verdict") + _nums("points", "advised", "score", "95% interval",
                                                       "score advised") + _text("what to do"), rows)
    return "\n".join([head, body])


def _floats(values: Any) -> list[float]:
    out = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            out.append(float("nan"))
    return out


def _share(x: float | None, digits: int) -> str:
    return "-" if x is None else prob(x, digits)


def _nash_text(nash: Any, d: int) -> str:
    """The equilibrium mix: each unit's weight (adding up to 1 as shown), and, when the equilibrium is not unique,
    the least and greatest weight over every equilibrium (two interchangeable units: each 0 to 1)."""
    weights = rounded_shares(list(nash["weight"]), d)
    ranged = {"weight_min", "weight_max"} <= set(nash.columns)
    spans = [b - a for a, b in zip(_floats(nash["weight_min"]), _floats(nash["weight_max"]))] if ranged else []
    unique = not any(x > 0.5 * 10 ** -d for x in spans)  # (a NaN span is no evidence of a second equilibrium)
    cols = _text("unit") + _nums("weight") + ([] if unique else _nums("any equilibrium")) + _nums("support share")
    rows = []
    for i, (_, r) in enumerate(nash.iterrows()):
        row = [str(r["unit"]), _share(weights[i], d)]
        if not unique:
            row.append(interval(r["weight_min"], r["weight_max"], prob, d))
        rows.append(row + [prob(r["support_share"], d)])
    text = table_text(cols, rows)
    if not unique:
        text += ("\nThe equilibrium is not unique: 'any equilibrium' is the least and greatest weight a unit has "
                 "across every equilibrium mix (the weight column is one of them).")
    return text


# --------------------------------------------------------------------- diff
def diff_text(result: Any, limit: int | None = 40) -> str:
    """``meleelab diff``: numbers compared per kind and status, then the changes (at most ``limit``; None: all)."""
    lines = [f"meleelab diff: {result.old} -> {result.new} (a change: |new - old| > {result.z:g} x its standard error)"]
    lines += [f"note: {n}" for n in result.notes]
    counts = result.counts()
    statuses = [c for c in counts.columns if c not in ("ruleset", "kind")]
    lines += ["", table_text(_text("ruleset", "kind") + _nums(*statuses),
                             [[str(r["ruleset"]), str(r["kind"])] + [count(r[c]) for c in statuses]
                              for _, r in counts.iterrows()], key=2), ""]
    from ..report.diff_edits import in_words

    # the designer's edits and the verdicts that flipped, in words (old -> new), every one of them; then the numbers
    words, ch = in_words(result.changed())
    lines += words
    if not len(ch):
        return "\n".join(lines)
    limit = len(ch) if limit is None else limit
    rows = []
    for _, r in ch.head(limit).iterrows():
        digits = 1 if r["kind"] == "fair price" else MANY_CELLS
        rows.append([str(r["ruleset"]), str(r["kind"]), str(r["item"]), str(r["quantity"]), number(r["old"], digits),
                     number(r["new"], digits), signed(r["diff"], digits), number(r["diff_se"], digits + 1),
                     "exact" if r["diff_se"] == 0 else number(r["z"], 1)])  # exact cells: no noise to count in
    lines.append(f"changed beyond the noise ({len(ch)}):")
    lines.append(table_text(_text("ruleset", "kind", "item", "quantity") + _nums("old", "new", "difference", "s.e.",
                                                                              "z"), rows, key=3))
    if len(ch) > limit:
        lines.append(f"... and {len(ch) - limit} more (--out writes them all to diff.csv)")
    return "\n".join(lines)
