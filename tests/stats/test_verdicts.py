"""Every unit's verdict comes from the one solution (issue 37, item 1): hand-built solutions, each rule seen alone."""

from __future__ import annotations

import math

import pandas as pd

from analysis.stats.verdicts import CANNOT, advice_table, rank_by_significance

UNITS = ["A", "B", "C", "D"]


def _scores(values: dict[str, float], se: float = 0.002) -> pd.DataFrame:
    return pd.DataFrame({"unit": list(values), "score": list(values.values()), "score_se": se,
                         "score_lo": [v - 1.96 * se for v in values.values()],
                         "score_hi": [v + 1.96 * se for v in values.values()]})


def _table(before, after, listed, advised, **kw):
    return advice_table(UNITS, listed, advised, _scores(before), _scores(after), tolerance=0.02,
                        exempt=kw.pop("exempt", {}), **kw).set_index("unit")


def test_only_a_unit_whose_price_changes_is_mispriced_and_a_victim_is_fair_once_it_is_repriced():
    """A 16% too cheap: B falls outside the tolerance because of it; the solution changes A alone."""
    listed = {"A": 50.0, "B": 40.0, "C": 60.0, "D": 30.0}
    t = _table({"A": 0.56, "B": 0.475, "C": 0.49, "D": 0.485}, {"A": 0.50, "B": 0.495, "C": 0.505, "D": 0.50},
               listed, {**listed, "A": 58.0})
    assert t.loc["A", "verdict"] == "underpriced" and t.loc["A", "advice"] == "raise its cost from 50 to 58"
    assert t.loc["B", "verdict"] == "fair once A is repriced" and t.loc["B", "advice"] == "keep its cost"
    assert t.loc["C", "verdict"] == "fair" and t.loc["D", "verdict"] == "fair"
    assert bool(t.loc["B", "outside_tolerance"]) and not bool(t.loc["C", "outside_tolerance"])
    assert t.loc["A", "change_pct"] == 16.0


def test_a_unit_points_cannot_balance_is_said_so_and_never_told_a_price_it_cannot_field():
    listed = {"A": 30.0, "B": 40.0, "C": 60.0, "D": 30.0}
    why = "needs 4.57 copies, more than a side can field (4)"
    t = _table({"A": 0.41, "B": 0.52, "C": 0.52, "D": 0.55}, {"A": 0.45, "B": 0.51, "C": 0.51, "D": 0.51},
               listed, {**listed, "D": 33.0}, exempt={"A": why})
    assert t.loc["A", "verdict"] == CANNOT and why in t.loc["A", "advice"] and "change its profile" in t.loc["A",
                                                                                                           "advice"]
    assert not bool(t.loc["A", "held"]) and t.loc["A", "advised_points"] == 30.0
    assert t.loc["D", "verdict"] == "underpriced"


def test_an_exempt_unit_moved_to_its_nearest_fieldable_price_is_told_both():
    listed = {"A": 40.0, "B": 40.0, "C": 60.0, "D": 30.0}
    t = _table({"A": 0.40, "B": 0.52, "C": 0.52, "D": 0.53}, {"A": 0.44, "B": 0.51, "C": 0.51, "D": 0.51},
               listed, {**listed, "A": 30.0}, exempt={"A": "needs 4.6 copies, more than a side can field (4)"})
    assert t.loc["A", "verdict"] == CANNOT
    assert t.loc["A", "advice"].startswith("lower its cost from 40 to 30, the nearest price this budget can field")


def test_a_capped_unit_is_mispriced_with_the_change_it_needs():
    listed = {"A": 50.0, "B": 40.0, "C": 60.0, "D": 30.0}
    need = "needs +27% to score 50%, more than the cap of 15%"
    t = _table({"A": 0.58, "B": 0.48, "C": 0.48, "D": 0.48}, {"A": 0.53, "B": 0.49, "C": 0.49, "D": 0.49},
               listed, {**listed, "A": 57.5}, exempt={"A": need}, max_change=0.15)
    assert t.loc["A", "verdict"] == "underpriced" and need in t.loc["A", "advice"]
    assert "the most the cap allows" in t.loc["A", "advice"]


def test_a_unit_that_cannot_be_harmed_is_said_so_whatever_the_solution():
    listed = {"A": 50.0, "B": 40.0, "C": 60.0, "D": 30.0}
    t = _table({"A": 0.9, "B": 0.4, "C": 0.4, "D": 0.4}, {"A": 0.9, "B": 0.4, "C": 0.4, "D": 0.4}, listed, listed,
               exempt={"A": "invulnerable"}, special={"A": "invulnerable"})
    assert t.loc["A", "verdict"] == "invulnerable" and "cannot be harmed" in t.loc["A", "reason"]
    assert t.loc["A", "advice"].startswith("change its profile")


def test_nothing_to_change_is_fair_everywhere_with_the_same_score():
    listed = {"A": 50.0, "B": 40.0, "C": 60.0, "D": 30.0}
    before = {"A": 0.51, "B": 0.495, "C": 0.49, "D": 0.505}
    t = _table(before, before, listed, listed)
    assert set(t["verdict"]) == {"fair"} and set(t["advice"]) == {"keep its cost"}
    assert all(t.loc[u, "score"] == before[u] for u in UNITS)  # the one score, as given
    assert all(math.isclose(t.loc[u, "advised_points"], listed[u]) for u in UNITS)


def test_ranks_share_a_place_when_intervals_overlap():
    r = rank_by_significance(pd.Series([0.60, 0.59, 0.40]), pd.Series([0.57, 0.56, 0.38]),
                             pd.Series([0.63, 0.62, 0.42]))
    assert list(r) == [1, 1, 3]


def test_equal_exact_scores_share_a_rank_whatever_their_last_bits():
    """mecha's AFS, PKA and HAFS Jerry score 0.417330 exactly: one rank, not 3 and 4 (issue 37, item 6)."""
    v = pd.Series([0.6, 0.41733000000000004, 0.41733, 0.4173299999999999, 0.2])
    r = rank_by_significance(v, v, v)
    assert list(r) == [1, 2, 2, 2, 5]
