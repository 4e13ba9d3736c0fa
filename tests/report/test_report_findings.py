"""Findings from hand-made tables with known answers: who is named, in what order, and how extrapolations read."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd

from analysis.report.findings import Code, Link, findings, markdown


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


def test_over_and_under_priced_flagged_first_then_by_how_far():
    f = _by_title(findings(_report(FAIR)))
    over = [_text(i).split(":")[0] for i in f["Over-priced"].items]
    under = [_text(i).split(":")[0] for i in f["Under-priced"].items]
    assert over == ["Pricey", "Steep", "Dear"]  # flagged by ratio (0.5, 0.8), then the unflagged one
    assert under == ["Bargain", "Cheap", "Fine"]  # an estimate above the range is the most under-priced
    dear = _text(f["Over-priced"].items[2])
    assert dear == "Dear: 240 points, fair price 200 (95% interval 150–260); within its interval, not flagged"
    bargain = _text(f["Under-priced"].items[0])
    assert "extrapolation" in bargain and "estimate above 960" in bargain and "nan" not in bargain.lower()
    links = [p for p in f["Under-priced"].items[0] if isinstance(p, Link)]
    assert {p.anchor for p in links} == {"fair-1"} and all(p.md_anchor == "fair-prices" for p in links)


def test_what_to_try_next_names_each_flagged_unit_and_the_noise():
    rep = _report(FAIR, trials_hi_lo=(0.45, 0.55))  # every cell +-5 pp against a +-1 pp target
    steps = [_text(i) for i in _by_title(findings(rep))["What to try next"].items]
    assert "lower the cost of Pricey from 120 towards 60" in steps
    assert "lower the cost of Steep from 100 towards 80" in steps
    assert "raise the cost of Cheap from 20 towards 30" in steps
    assert any(s.startswith("raise the cost of Bargain well above its 40 points") and "extrapolation" in s
               for s in steps)
    assert not any("Dear" in s or "Fine" in s for s in steps)  # not flagged: nothing to change
    assert "raise the trial cap (--max-trials, now 4,096): 36 cells are noisier than the target" in steps
    calm = [_text(i) for i in _by_title(findings(_report(FAIR)))["What to try next"].items]
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


def test_no_prices_says_so_in_one_bullet():
    empty = _fair([("A", math.nan, 1, math.nan, math.nan, math.nan, math.nan, False, "", "", "calibration", ""),
                   ("B", math.nan, 1, math.nan, math.nan, math.nan, math.nan, False, "", "", "calibration", "")])
    f = _by_title(findings(_report(empty)))
    assert "none could be computed" in _text(f["Fair prices"].parts)
    assert "Over-priced" not in f and "Under-priced" not in f


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


def test_every_flagged_unit_gets_a_next_step_though_three_are_shown():
    under = _fair([(f"U{j}", 40, 10, 44.0 + j, 42.0 + j, 46.0 + j, (44.0 + j) / 40, True, "underpriced", "", "copies",
                    "") for j in range(4)] + [("Fine", 50, 8, 50.0, 45.0, 55.0, 1.0, False, "fair", "", "copies", "")])
    f = _by_title(findings(_report(under)))
    assert len(f["Under-priced"].items) == 3
    assert "(1 more flagged in the fair-price table)" in _text(f["Under-priced"].parts)
    steps = [_text(i) for i in f["What to try next"].items]
    assert sum(s.startswith("raise the cost of U") for s in steps) == 4
