"""Report tables for people: one format per column, zero as 0, ties as ties, numbers right-aligned."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.report import tables as rt


@pytest.mark.parametrize("value,kind,text", [
    (6.7e-16, "prob", "0"), (-6.7e-16, "logit", "0"), (-0.0, "pct", "0%"), (0.0, "points", "0"),
    (-0.0004, "logit", "0.00"), (-0.004, "ratio", "0.00"), (-0.00004, "pct", "0.0%"),
    (0.38044, "pct", "38.0%"), (1.0, "pct", "100.0%"), (0.18149, "prob", "0.181"), (0.1816, "prob", "0.182"),
    (1084.96, "points", "1,085"), (24441264332.8, "points", "24,441,264,333"), (32768, "int", "32,768"),
    (0.7436, "logit", "+0.74"), (-0.5630, "logit", "-0.56"), (1.2934, "ratio", "1.29"), (-31.746, "pp", "-31.7"),
    (True, "bool", "yes"), (np.bool_(False), "bool", "no"), ("False", "bool", "no"),
    (math.nan, "pct", rt.MISSING), (None, "points", rt.MISSING), (math.inf, "points", "∞"),
    ("Terminators", "text", "Terminators"), (np.float64(0.25), "pct", "25.0%"), (np.int64(7), "int", "7"),
])
def test_one_format_per_kind(value, kind, text):
    assert rt.fmt(value, kind) == text


def test_no_format_ever_prints_exponents_or_negative_zero():
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.normal(0, 1e-12, 200), -np.abs(rng.normal(0, 1e-3, 200)), [0.0, -0.0]])
    for kind in ("prob", "pct", "logit", "ratio", "points", "int", "pp"):
        for v in values:
            text = rt.fmt(v, kind)
            assert "e-" not in text and "e+" not in text, (v, kind, text)
            assert not (text.startswith("-") and set(text) <= set("-0.%")), (v, kind, text)


def test_intervals_share_the_column_format_and_say_missing_bounds():
    assert rt.fmt_interval(0.3791, 0.3818, "pct") == "37.9–38.2%"
    assert rt.fmt_interval(22.9, 45.9, "points") == "23–46"
    assert rt.fmt_interval(98.2, math.nan, "points") == "98–?"  # an extrapolated bound
    assert rt.fmt_interval(math.nan, math.nan, "points") == rt.MISSING
    assert rt.fmt_interval(0.59, 0.63, "logit") == "0.59–0.63"  # no "+0.59–+0.63"
    assert rt.fmt_interval(-0.13, -0.10, "logit") == "-0.13 to -0.10"  # no "-0.13–-0.10"


def test_rank_ties_are_shown_as_ties():
    assert rt.rank_labels([1, 2, 2, 4, 5, 5, 5, 8]) == ["1", "=2", "=2", "4", "=5", "=5", "=5", "8"]
    assert rt.rank_labels([1, math.nan]) == ["1", rt.MISSING]


def test_table_view_human_headers_alignment_intervals_and_row_ids():
    frame = pd.DataFrame({"unit": ["A <b>", "B"], "points": [20.0, 1500.0], "copies": [3, 1],
                          "fair_points": [25.8684, math.nan], "fair_lo": [22.2257, 900.0], "fair_hi": [33.41, math.nan],
                          "ratio": [1.2934, math.nan], "flagged": [True, False], "verdict": ["underpriced", "fair"],
                          "beyond": ["", "estimate above 6,000"], "method": ["copies"] * 2, "note": ["", ""]},
                         index=[4, 7])
    view = rt.table_view(frame, rt.FAIR_POINTS, row_ids=lambda i: f"fair-{i}",
                         row_class=lambda r: "flagged" if r["flagged"] else "")
    headers = [h.text for h in view.headers]
    assert headers == ["Unit", "Points", "Copies", "Fair price alone", "95% interval", "Fair ÷ points", "Verdict",
                       "Extrapolation", "Method", "Note"]
    assert not any("_" in h for h in headers)  # no machine names
    numeric = {h.text: h.numeric for h in view.headers}
    assert numeric["Points"] and numeric["Fair price alone"] and numeric["95% interval"] and not numeric["Unit"]
    first, second = view.rows
    assert [c.text for c in first.cells[:6]] == ["A <b>", "20", "3", "26", "22–33", "1.29"]
    assert [c.text for c in second.cells[:6]] == ["B", "1,500", "1", rt.MISSING, "900–?", rt.MISSING]
    assert (first.id, second.id) == ("fair-4", "fair-7") and (first.cls, second.cls) == ("flagged", "")
    assert all(c.numeric == h.numeric for c, h in zip(first.cells, view.headers))


def test_markdown_table_escapes_and_right_aligns_numbers():
    frame = pd.DataFrame({"unit": ["x|y", "[a](javascript:1)"], "weight": [0.5, 6.7e-16], "support_share": [1.0, 0]})
    md = rt.markdown_table(frame, rt.NASH).splitlines()
    assert md[0] == "| Unit | Weight in the mix | Support share |"
    assert md[1] == "|:---|---:|---:|"
    assert md[2] == "| x\\|y | 50.0% | 100.0% |"
    assert md[3] == "| \\[a\\](javascript:1) | 0% | 0% |"
    assert rt.markdown_table(frame.iloc[:0], rt.NASH) == "(none)"


def test_generic_columns_pick_kinds_from_the_data():
    frame = pd.DataFrame({"name": ["A"], "ws": [4], "in_matrix": ["yes"], "shield": [True], "points": [60.0],
                          "armour_save": [0.5]})
    cols = {c.key: c for c in rt.generic_columns(frame, {"in_matrix": "In matrix"})}
    assert cols["ws"].kind == "int" and cols["points"].kind == "int" and cols["shield"].kind == "bool"
    assert cols["name"].kind == "text" and cols["armour_save"].kind == "prob"
    assert cols["in_matrix"].header == "In matrix" and cols["armour_save"].header == "Armour save"


def test_blank_text_columns_can_be_left_out():
    frame = pd.DataFrame({"unit": ["A", "B"], "points": [20.0, 30.0], "beyond": ["", ""], "note": [None, "x"]})
    cols = (rt.Column("unit", "Unit"), rt.Column("points", "Points", "points"), rt.Column("beyond", "Extrapolation"),
            rt.Column("note", "Note"))
    assert [h.text for h in rt.table_view(frame, cols).headers] == ["Unit", "Points", "Extrapolation", "Note"]
    assert [h.text for h in rt.table_view(frame, cols, drop_blank=True).headers] == ["Unit", "Points", "Note"]


def test_a_bound_that_rounds_to_the_listed_price_shows_why_it_is_flagged():
    from analysis.report.tables import interval_against

    # flagged under-priced at 45 with a lower bound of 45.06: "45–52" would read as if 45 were inside
    assert interval_against(45.06, 52.1, "points", 45) == "45.1–52"
    assert interval_against(22.3, 29.97, "points", 30) == "22–29.97"  # one decimal would round to 30.0 too
    # wholly below the price, both bounds rounding to it: both told apart (warband Swordsman 45: "45–44.9")
    assert interval_against(44.792274, 44.863593, "points", 45) == "44.8–44.9"
    assert interval_against(61.4, 68.8, "points", 60) == "61–69"  # nothing to explain: the usual format
    assert interval_against(44.6, 52.1, "points", 45) == "45–52"  # 45 is inside: no extra digits
    frame = pd.DataFrame({"unit": ["Champion"], "points": [45.0], "fair_points": [48.3], "fair_lo": [45.06],
                          "fair_hi": [52.1]})
    view = rt.table_view(frame, rt.FAIR_POINTS)
    assert "45.1–52" in [c.text for c in view.rows[0].cells]
