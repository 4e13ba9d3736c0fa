"""One verdict per unit, reconciled across price, dominance, the equilibrium and what the rules make certain
(issue 28, item 2): hand-built tables, so each rule is seen alone."""

from __future__ import annotations

import pandas as pd

from analysis.stats.verdicts import COUNTER_WEIGHT, rank_by_significance, unit_verdicts

UNITS = ["A", "B", "C", "D"]


def _fair(verdicts: dict[str, str], points: float = 50.0, fair: float = 40.0) -> pd.DataFrame:
    return pd.DataFrame({"unit": list(verdicts), "points": points, "fair_points": fair,
                         "verdict": list(verdicts.values()), "score": 0.4})


def _long(damage: dict[tuple[str, str], tuple[float, float]]) -> pd.DataFrame:
    rows = [{"attacker": a, "defender": d, "trials": 1000, "damage_to_attacker": da, "damage_to_defender": dd,
             "p_attacker": 0.5, "p_defender": 0.5, "p_draw": 0.0} for (a, d), (da, dd) in damage.items()]
    return pd.DataFrame(rows)


def _verdicts(fair, dominated=None, nash=None, long=None) -> dict[str, dict]:
    dominated = dominated if dominated is not None else pd.DataFrame(columns=["unit", "dominated_by"])
    nash = nash if nash is not None else pd.DataFrame({"unit": UNITS, "weight": [0.25] * 4})
    long = long if long is not None else pd.DataFrame()
    out = unit_verdicts(UNITS, fair, dominated, nash, long)
    return out.set_index("unit").to_dict("index")


def test_an_overpriced_unit_the_equilibrium_fields_is_a_counter_not_only_overpriced():
    fair = _fair({"A": "overpriced", "B": "overpriced", "C": "fair", "D": "fair"})
    nash = pd.DataFrame({"unit": UNITS, "weight": [0.34, COUNTER_WEIGHT / 2, 0.33, 0.33 + COUNTER_WEIGHT / 2]})
    v = _verdicts(fair, nash=nash)
    assert v["A"]["verdict"] == "overpriced, a counter" and "34% of the equilibrium mix" in v["A"]["reason"]
    assert "rebalance" in v["A"]["advice"] and v["A"]["advice"].startswith("lower its cost from 50 to about 40")
    assert v["B"]["verdict"] == "overpriced"  # a trace in the mix is not a counter


def test_a_unit_dominated_by_one_no_fight_can_harm_is_not_told_to_raise_that_units_cost():
    fair = _fair({"A": "underpriced", "B": "fair", "C": "fair", "D": "fair"})
    damage = {(a, d): (0.0 if a == "A" else 1.0, 0.0 if d == "A" else 1.0) for a in UNITS for d in UNITS}
    dominated = pd.DataFrame({"unit": ["B"], "dominated_by": ["A"]})
    v = _verdicts(fair, dominated=dominated, long=_long(damage))
    assert v["A"]["verdict"] == "invulnerable" and "cannot be harmed" in v["A"]["reason"]
    assert v["B"]["verdict"] == "dominated by an invulnerable unit"
    assert "raise" not in v["B"]["advice"] and "change A's profile first" in v["B"]["advice"]


def test_a_unit_dominated_by_an_underpriced_one_is_told_to_fix_that_one_first():
    fair = _fair({"A": "underpriced", "B": "fair", "C": "fair", "D": "fair"})
    v = _verdicts(fair, dominated=pd.DataFrame({"unit": ["B"], "dominated_by": ["A"]}))
    assert v["B"]["verdict"] == "dominated by an underpriced unit"
    assert v["B"]["advice"] == "raise A's cost first, then look again"


def test_a_fair_unit_no_equilibrium_uses_says_so():
    fair = _fair({"A": "fair", "B": "fair", "C": "fair", "D": "fair"})
    nash = pd.DataFrame({"unit": UNITS, "weight": [0.5, 0.5, 0.0, 0.0], "weight_max": [0.6, 0.6, 0.1, 0.0]})
    v = _verdicts(fair, nash=nash)
    assert v["D"]["verdict"] == "fair, never in the mix" and v["C"]["verdict"] == "fair"


def test_ranks_share_a_place_when_intervals_overlap():
    r = rank_by_significance(pd.Series([0.60, 0.59, 0.40]), pd.Series([0.57, 0.56, 0.38]),
                             pd.Series([0.63, 0.62, 0.42]))
    assert list(r) == [1, 1, 3]


def test_dominated_and_overpriced_advice_stays_fieldable():
    """grimdark Swarm: fair 31 needs more copies than a side can field; the advice names the nearest price, 40."""
    fair = _fair({"A": "underpriced", "B": "overpriced", "C": "fair", "D": "fair"}, points=80, fair=31)
    fair["fieldable"] = [True, False, True, True]
    fair["nearest_price"] = [80.0, 40.0, 80.0, 80.0]
    v = _verdicts(fair, dominated=pd.DataFrame({"unit": ["B"], "dominated_by": ["A"]}))
    assert v["B"]["verdict"] == "overpriced, dominated"
    assert v["B"]["advice"].startswith("lower its cost from 80 towards 40, the nearest price this budget can field")


def test_a_unit_already_at_its_nearest_fieldable_price_is_told_to_change_its_profile():
    """duel Goblin Mob at 30: its fair price 26 would need more copies than a side fields, and 30 is the nearest
    price that can be fielded: "lower its cost to 30" would ask for nothing."""
    fair = _fair({"A": "overpriced", "B": "fair", "C": "fair", "D": "fair"}, points=30, fair=26)
    fair["fieldable"] = [False, True, True, True]
    fair["nearest_price"] = [30.0, 30.0, 30.0, 30.0]
    v = _verdicts(fair, nash=pd.DataFrame({"unit": UNITS, "weight": [0.0, 0.4, 0.3, 0.3]}))
    assert v["A"]["verdict"] == "overpriced" and v["A"]["advice"].startswith("change its profile")
    assert "lower its cost" not in v["A"]["advice"]
