"""Findings from hand-made tables with known answers: who is named, in what order, and how extrapolations read."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd

from analysis.report.findings import Code, Link, findings, markdown
from analysis.stats.verdicts import CANNOT, Advice


def _fair(rows):
    cols = ["unit", "points", "copies", "fair_points", "fair_lo", "fair_hi", "ratio", "flagged", "verdict", "beyond",
            "method", "note"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows], columns=cols)


def _report(fair, *, cycles=None, dominated=None, half_width=0.01, trials_hi_lo=(0.49, 0.51)):
    units = list(fair["unit"])
    long = pd.DataFrame([{"attacker": a, "defender": d, "trials": 4096, "p_attacker_lo": trials_hi_lo[0],
                          "p_attacker_hi": trials_hi_lo[1]} for a in units for d in units])
    nash = pd.DataFrame({"unit": units, "weight": [1.0] + [0.0] * (len(units) - 1), "support_share": 1.0})
    balance = SimpleNamespace(
        fair_points=fair, nash=nash, misfit={},
        dominated=dominated if dominated is not None else pd.DataFrame(columns=["unit", "dominated_by", "strictly"]),
        cycles=cycles if cycles is not None else pd.DataFrame(columns=["unit_a", "unit_b", "unit_c", "weakest_link"]))
    stats = {"cells_fought": len(long), "widest_half_width": (trials_hi_lo[1] - trials_hi_lo[0]) / 2}
    return SimpleNamespace(balance=balance, matrix=SimpleNamespace(budget=500.0, units=units, long=long),
                           settings={"half_width": half_width, "max_trials": 4096}, cell_stats=lambda: stats,
                           baseline=None)


def _text(parts):
    return "".join(p.text if isinstance(p, (Link, Code)) else str(p) for p in parts)


def _by_title(items):
    return {f.title: f for f in items}


FAIR = _fair([
    # unit, points, copies, fair, lo, hi, ratio, flagged, verdict, beyond
    ("Cheap", 20, 25, 30.0, 25.0, 35.0, 1.5, True, "underpriced", "", "copies", ""),
    ("Bargain", 40, 12, math.nan, 900.0, math.nan, math.nan, True, "underpriced", "estimate above 960", "copies", ""),
    ("Fine", 50, 10, 52.0, 40.0, 60.0, 1.04, False, "fair", "", "copies", ""),
    ("Pricey", 120, 4, 60.0, 50.0, 70.0, 0.5, True, "overpriced", "", "copies", ""),
    ("Dear", 240, 2, 200.0, 150.0, 260.0, 0.83, False, "fair", "", "copies", ""),
    ("Steep", 100, 5, 80.0, 70.0, 90.0, 0.8, True, "overpriced", "", "copies", ""),
])


def _advice(rows, **kw):
    """An advice from hand-made verdict rows: unit, verdict, points, advised, advice."""
    table = pd.DataFrame([{"unit": u, "verdict": v, "points": p, "advised_points": a, "advice": adv, "reason": "",
                           "held": v != CANNOT, "note": ""} for u, v, p, a, adv in rows])
    return Advice(table, 0.02, **{"balanced": True, "worst": 0.013, **kw})


ADVICE = _advice([
    ("Cheap", "underpriced", 20, 26, "raise its cost from 20 to 26"),
    ("Fine", "fair", 50, 50, "keep its cost"),
    ("Victim", "fair once Cheap and Steep are repriced", 240, 240, "keep its cost"),
    ("Steep", "overpriced", 100, 80, "lower its cost from 100 to 80"),
    ("Mob", CANNOT, 30, 30, "change its profile (or the budget): needs 4.57 copies, more than a side can field (4)"),
])


def _with_advice(rep, advice):
    rep.balance.advice = advice
    rep.balance.verdicts = advice.table
    return rep


def test_the_advice_names_each_change_and_says_every_other_unit_keeps_its_price():
    f = _by_title(findings(_with_advice(_report(FAIR), ADVICE)))
    lead = _text(f["Advice"].parts)
    assert lead.startswith("the fewest price changes that bring every unit points can balance within ±2 pp of 50%")
    assert "2 of 5 units" in lead and "largest gap 1.3 pp" in lead
    items = [_text(i) for i in f["Advice"].items]
    assert items[:2] == ["Cheap: raise its cost from 20 to 26", "Steep: lower its cost from 100 to 80"]
    assert items[2] == ("every other unit keeps its price: fair Fine; fair once the others are repriced Victim")
    assert items[3].startswith("Mob: cannot be balanced by points: change its profile")
    links = [p for p in f["Advice"].items[0] if isinstance(p, Link)]
    assert [p.anchor for p in links] == ["verdict-0"] and links[0].md_anchor == "verdicts"
    assert "Over-priced" not in f and "Under-priced" not in f  # one answer, not per-unit flags


def test_nothing_to_change_says_so():
    calm = _advice([("A", "fair", 20, 20, "keep its cost"), ("B", "fair", 30, 30, "keep its cost")])
    f = _by_title(findings(_with_advice(_report(FAIR), calm)))
    assert _text(f["Advice"].parts).startswith("nothing to change: no unit's score is surely outside 50% ±2 pp")
    assert not f["Advice"].items


def test_what_to_try_next_is_the_advice_then_the_noise():
    rep = _with_advice(_report(FAIR, trials_hi_lo=(0.45, 0.55)), ADVICE)  # every cell +-5 pp against +-1 pp
    steps = [_text(i) for i in _by_title(findings(rep))["What to try next"].items]
    assert steps[:3] == ["Cheap: raise its cost from 20 to 26", "Steep: lower its cost from 100 to 80",
                         "Mob: change its profile (or the budget): needs 4.57 copies, more than a side can field (4)"]
    assert not any(s.startswith(("Fine", "Victim")) for s in steps)  # fair: nothing to do
    assert "raise the trial cap (--max-trials, now 4,096): 36 cells are noisier than the target" in steps
    calm = [_text(i) for i in _by_title(findings(_with_advice(_report(FAIR), ADVICE)))["What to try next"].items]
    assert not any("trial cap" in s for s in calm)


def test_cycles_and_dominance_are_counted_and_linked():
    cycles = pd.DataFrame([{"unit_a": "Cheap", "unit_b": "Fine", "unit_c": "Dear", "weakest_link": 0.1234}])
    dominated = pd.DataFrame([{"unit": "Dear", "dominated_by": "Cheap; Fine", "strictly": True}])
    f = _by_title(findings(_report(FAIR, cycles=cycles, dominated=dominated)))
    assert _text(f["Cycles"].items[0]) == ("Cheap beats Fine, Fine beats Dear, Dear beats Cheap "
                                           "(weakest link: payoff 0.123)")
    assert [p.anchor for p in f["Cycles"].items[0] if isinstance(p, Link)] == ["cycle-0"]
    assert _text(f["Dominance"].parts).startswith("1 of 6 units are dominated")
    md = "\n".join(markdown(findings(_report(FAIR, cycles=cycles, dominated=dominated))))
    assert "[0.123](#intransitive-triples)" in md and "**Cycles**" in md and "[1](#dominated-units)" in md


def test_a_ruleset_without_copies_says_its_matrix_ignores_cost():
    """Mecha fights one suit a side: its equilibrium finding must not read as advice to buy the dearest suit."""
    rep = _report(FAIR)
    rep.matrix.budget = None
    rep.ruleset = SimpleNamespace(id="mecha", fields_copies=False, copies_refusal="a side is always one unit")
    text = _text(_by_title(findings(rep))["Equilibrium"].parts)
    assert text.startswith("one unit a side")
    assert "mecha cannot field copies (a side is always one unit)" in text and "ignores cost" in text
    rep.ruleset = SimpleNamespace(id="duel", fields_copies=True, copies_refusal="")
    assert "cannot field copies" not in _text(_by_title(findings(rep))["Equilibrium"].parts)


def test_units_whole_copies_leave_short_of_the_budget_are_named():
    # budget 500: Cheap 25 x 20 = 500 spent; Dear 2 x 240 = 480 (96%, not named); Pricey 4 x 120 = 480; Steep 5 x 100
    fair = FAIR.assign(fielded=[500.0, 480.0, 500.0, 480.0, 480.0, 450.0])
    f = _by_title(findings(_report(fair)))
    text = _text(f["Unspent points"].parts)
    assert "Steep with 450" in text
    assert "Cheap" not in text and "Dear" not in text  # all spent, or within 5% of the budget
    assert "Unspent points" not in _by_title(findings(_report(FAIR.assign(fielded=500.0))))
