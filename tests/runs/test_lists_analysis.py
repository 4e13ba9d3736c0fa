"""Army lists in the analysis (issue 40): the list matrix, what a unit adds to a list, the meta, and their commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sim
from analysis.cli import main
from analysis.runs.lists import canonical_list, field_scores, list_context, list_matrix, list_scores
from analysis.runs.meta import meta
from analysis.runs.unit_value import proportional_swap, unit_values
from sim.rng import root_sequence

ROSTER = """
ruleset = "warband"
budget = 100
[[unit]]
name = "Captain"
ws = 4
s = 4
t = 3
i = 4
w = 1
a = 1
weapons = ["sword", "dagger"]
points = 45
[[unit]]
name = "Warrior"
ws = 3
s = 3
t = 3
i = 3
w = 1
a = 1
weapons = ["axe"]
points = 30
[[unit]]
name = "Youngblood"
ws = 2
s = 3
t = 3
i = 3
w = 1
a = 1
weapons = ["club"]
points = 20
[[list]]
name = "Leader"
units = { "Captain" = 1, "Warrior" = 1, "Youngblood" = 1 }
[[list]]
name = "Mob"
units = { "Youngblood" = 5 }
[[list]]
name = "Pairs"
units = { "Warrior" = 2, "Youngblood" = 2 }
"""


@pytest.fixture()
def roster(tmp_path) -> Path:
    p = tmp_path / "r.toml"
    p.write_text(ROSTER, encoding="utf-8")
    return p


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_proportional_swap_spreads_the_points_exactly():
    """The swap's mixture: every other unit's mean count is its count plus its share of the freed points (derived
    by hand: Captain 45 freed over Warrior 2 x 30 and Youngblood 2 x 20 (100 points): +0.9 Warrior, +0.9 Youngblood)."""
    prices = {"Captain": 45, "Warrior": 30, "Youngblood": 20}
    order = list(prices)
    mix = proportional_swap({"Captain": 1, "Warrior": 2, "Youngblood": 2}, "Captain", prices, order)
    assert math.isclose(sum(w for w, _ in mix), 1.0)
    mean = {u: sum(w * c.get(u, 0) for w, c in mix) for u in order}
    assert mean["Captain"] == pytest.approx(0.0)
    assert mean["Warrior"] == pytest.approx(2.9) and mean["Youngblood"] == pytest.approx(2.9)
    assert sum(w * sum(prices[u] * k for u, k in c.items()) for w, c in mix) == pytest.approx(145.0)
    assert len(mix) <= 3                                    # systematic rounding: at most one list per unit, plus one
    assert proportional_swap({"Youngblood": 5}, "Youngblood", prices, order) == []


def test_list_matrix_is_a_matrix_of_lists(roster):
    m = list_matrix("warband", roster, half_width=0.03, seed=3)
    assert m.units == ["Leader", "Mob", "Pairs"]
    assert len(m.long) == 9 and set(m.long["attacker"]) == set(m.units)
    assert (m.long["attacker_copies"] == 1).all() and m.long.loc[m.long["attacker"] == "Leader", "points_attacker"].iloc[0] == 95
    s = list_scores(m)
    assert list(s.columns[:3]) == ["list", "rank", "score"] and s["rank"].tolist() == [1, 2, 3]
    # the mean score over the field is exactly 1/2 (each pair of lists shares its two cells)
    assert s["score"].mean() == pytest.approx(0.5, abs=1e-12)
    again = list_matrix("warband", roster, half_width=0.03, seed=3)
    assert again.long.equals(m.long)


def test_unit_value_agrees_with_a_direct_check(roster):
    """The acceptance check of the issue: the lists behind each value fought again (new streams, eight times the
    fights) give a value inside the 95% interval."""
    m = list_matrix("warband", roster, half_width=0.02, seed=5)
    uv = unit_values(m)
    v = uv.values.set_index(["unit", "list"])
    assert set(uv.ranking["unit"]) == {"Captain", "Warrior", "Youngblood"}
    assert v.loc[("Youngblood", "Mob"), "note"] == "the list holds no other unit to swap it for"
    ros = m.context.roster
    order = ros.names
    prices = {u: float(ros.unit(u).points) for u in order}
    ctx = list_context(ros and sim.get_ruleset("warband"), ros, root=root_sequence(999), rounds="end", max_rounds=50,
                       states={}, options={}, half_width=None, max_trials=8 * 10_000, workers=1, from_text=False,
                       executor=None, store=None, method="mc")
    checks, lists = [], {}
    for (u, name), row in v.iterrows():
        if not math.isfinite(row["value"]):
            continue
        counts = ros.army_list(name).counts
        rest = canonical_list({**counts, u: counts[u] - 1}, order)
        swaps = [(w, canonical_list(c, order)) for w, c in proportional_swap(counts, u, prices, order)]
        base = canonical_list(counts, order)
        lists.update({x.name: x for x in [base, rest] + [lst for _, lst in swaps]})
        checks.append((u, name, row, base, rest, swaps))
    # every list once (a list's cells have their own streams: its score is the same in any call; 14 lists, where
    # one call per value fought 20)
    fs = field_scores(ctx, list(lists.values()), {n: 1.0 for n in m.units},
                      max_trials=80_000).table.set_index("name")["score"]
    for u, name, row, base, rest, swaps in checks:
        s_swap = sum(w * fs[lst.name] for w, lst in swaps)
        direct = prices[u] * (fs[base.name] - fs[rest.name]) / (s_swap - fs[rest.name])
        assert row["value_lo"] <= direct <= row["value_hi"], (u, name, direct, row["value_lo"], row["value_hi"])
    assert len(checks) >= 4


def test_meta_on_a_small_roster(roster):
    res = meta("warband", roster, budget=100, seed=1, half_width=0.04, screen_trials=1024, max_iterations=8)
    assert res.converged
    assert res.lists["weight"].sum() == pytest.approx(1.0)
    assert (res.lists["points"] <= 100).all()
    assert res.units["share"].sum() == pytest.approx(1.0)
    assert set(res.units_used) | set(res.units_left_out) == {"Captain", "Warrior", "Youngblood"}
    assert set(res.units_used).isdisjoint(res.units_left_out)
    assert len(res.log) >= 1 and not res.log["added"].iloc[-1]
    assert res.log["score_vs_mix"].iloc[-1] <= 0.5 + 0.02 + 1e-9


def test_lists_command_writes_its_files(roster, tmp_path, capsys):
    out = tmp_path / "out"
    rc, text, err = run(capsys, "lists", "warband", "--roster", str(roster), "--half-width", "0.05", "--out", str(out))
    assert rc == 0, err
    names = {p.name for p in out.iterdir()}
    assert {"matrix_long.csv", "lists.csv", "rankings.csv", "nash.csv", "unit_value.csv", "unit_ranking.csv",
            "report.md", "matrix.json", "metadata.json", "unit_value.png", "matrix.png"} <= names
    header = (out / "unit_value.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[:6] == ["unit", "list", "count", "price", "value", "value_lo"] and "value_hi" in header
    assert (out / "lists.csv").read_text(encoding="utf-8").splitlines()[0] == "list,points,models,units"
    long_header = (out / "matrix_long.csv").read_text(encoding="utf-8").splitlines()[0]
    from analysis.runs.matrix import LONG_COLUMNS

    assert long_header == ",".join(LONG_COLUMNS)
    assert "rankings" in text and "Nash" in (out / "report.md").read_text(encoding="utf-8")
    # the same run again: every cell from the store, the same numbers
    rc, _, err = run(capsys, "lists", "warband", "--roster", str(roster), "--half-width", "0.05", "--out", str(out))
    assert rc == 0
    meta_json = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert meta_json["resumed_cells"] >= 9
    rc, text, _ = run(capsys, "diff", str(out), str(out))
    assert rc == 0 and "unit value" in text and "identical" in text


BAD = [
    ('[[list]]\nname = "X"\nunits = { "Nobody" = 1 }\n', "a unit of the roster"),
    ('[[list]]\nname = "X"\nunits = { "Warrior" = 0 }\n', "whole number of copies"),
    ('[[list]]\nname = "X"\nunits = { "Warrior" = 4 }\n', "costs 120 points, more than the budget of 100"),
    ('[[list]]\nname = "X"\nunits = {}\n', "at least one unit"),
    ('[[list]]\nname = "Mob"\nunits = { "Warrior" = 1 }\n', "also in"),
]


@pytest.mark.parametrize("lists, needle", BAD)
def test_lists_command_refuses_bad_lists_in_one_line(roster, tmp_path, capsys, lists, needle):
    f = tmp_path / "more.toml"
    f.write_text(lists, encoding="utf-8")
    out = tmp_path / "out"
    rc, _, err = run(capsys, "lists", "warband", "--roster", str(roster), "--lists", str(f), "--out", str(out))
    assert rc == 2 and len(err.strip().splitlines()) == 1 and err.startswith("meleelab: error:"), err
    assert needle in err, err
    assert not out.exists()                                  # nothing half-written


@pytest.mark.parametrize("ruleset", ["mecha", "grimdark", "pools"])
def test_lists_and_meta_are_refused_where_a_side_is_one_unit(tmp_path, capsys, ruleset):
    for command in (["lists", ruleset], ["meta", ruleset, "--budget", "100"]):
        rc, _, err = run(capsys, *command, "--out", str(tmp_path / "o"))
        assert rc == 2 and "army lists are not available" in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "o").exists()


def test_meta_command(roster, tmp_path, capsys):
    out = tmp_path / "meta"
    rc, text, err = run(capsys, "meta", "warband", "--roster", str(roster), "--budget", "100", "--half-width", "0.05",
                        "--screen-trials", "1024", "--out", str(out), "--quiet")
    assert rc == 0, err
    assert "its lists use" in text and "no meta list takes" in text
    header = (out / "meta.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[:2] == ["list", "weight"] and "units" in header
    assert {"meta_units.csv", "meta_log.csv", "meta_lists.csv", "report.md", "meta.png"} <= {p.name for p in out.iterdir()}
    rc, _, err = run(capsys, "meta", "warband", "--roster", str(roster), "--budget", "10", "--out",
                     str(tmp_path / "nothing"))
    assert rc == 2 and "no unit" in err and not (tmp_path / "nothing").exists()


def test_duplicate_list_names_in_a_roster_are_one_line(tmp_path, capsys):
    p = tmp_path / "dup.toml"
    p.write_text(ROSTER + '[[list]]\nname = "Mob"\nunits = { "Warrior" = 1 }\n', encoding="utf-8")
    rc, _, err = run(capsys, "lists", "warband", "--roster", str(p))
    assert rc == 2 and "duplicate" in err and len(err.strip().splitlines()) == 1


def test_pairing_switch_reaches_the_list_fights(roster):
    a = list_matrix("warband", roster, half_width=0.05, seed=2)
    b = list_matrix("warband", roster, half_width=0.05, seed=2, options={"pairing": "random"})
    assert b.settings["options"]["pairing"] == "random"
    # Mob against Mob is one profile a side: the same fights under either pairing
    same = (a.long["attacker"] == "Mob") & (a.long["defender"] == "Mob")
    assert np.array_equal(a.long.loc[same, "p_attacker"].to_numpy(), b.long.loc[same, "p_attacker"].to_numpy())


def test_lists_and_meta_are_the_same_whatever_the_workers(roster):
    """The cells run on addressed streams: local processes (as a Dask cluster would) change nothing."""
    one = list_matrix("warband", roster, half_width=0.05, seed=4)
    two = list_matrix("warband", roster, half_width=0.05, seed=4, workers=2)
    assert one.long.equals(two.long)
    a = meta("warband", roster, budget=130, seed=2, half_width=0.05, screen_trials=1024)
    b = meta("warband", roster, budget=130, seed=2, half_width=0.05, screen_trials=1024, workers=2)
    assert a.lists.equals(b.lists) and a.log["best_response"].tolist() == b.log["best_response"].tolist()


@pytest.mark.usefixtures("plain_figures")  # files and findings (the lists' own plots are drawn)
def test_report_lists_adds_the_lists_and_the_meta(roster, tmp_path, capsys):
    out = tmp_path / "rep"
    rc, _, err = run(capsys, "report", "warband", "--roster", str(roster), "--lists", "--half-width", "0.2",
                     "--max-trials", "512", "--out", str(out), "--quiet")
    assert rc == 0, err
    assert (out / "lists" / "unit_value.csv").is_file() and (out / "meta" / "meta.csv").is_file()
    files = json.loads((out / "metadata.json").read_text(encoding="utf-8"))["files"]
    assert "lists/unit_value.csv" in files and "meta/meta_units.csv" in files
    # the findings say what the meta uses and which of the roster's lists is strongest, as the files do
    summary = (out / "summary.md").read_text(encoding="utf-8")
    line = next(ln for ln in summary.splitlines() if ln.startswith("- **Army lists**"))
    units = pd.read_csv(out / "meta" / "meta_units.csv")
    assert f"uses {int(units['in_meta'].sum())} of {len(units)} units" in line
    top = pd.read_csv(out / "lists" / "rankings.csv").sort_values("rank").iloc[0]
    assert f"{top['list']} scores best: {100 * top['score']:.1f}%" in summary
    assert "Army lists" in (out / "report.html").read_text(encoding="utf-8")
    rc, _, err = run(capsys, "report", "mecha", "--lists", "--out", str(tmp_path / "m"))
    assert rc == 2 and "army lists are not available" in err and not (tmp_path / "m").exists()
