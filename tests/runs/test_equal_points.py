"""Equal-points matchups (issue 10): copies per ruleset, the roster's budget, the CLI's --budget, and the
fair-price claims a designer acts on (twins priced alike, a double-price clone priced like the original)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import sim
from analysis.cli import main
from analysis.runs.balance import balance_summary
from analysis.runs.matrix import matchup_matrix
from sim.errors import MatchupError

DUEL_ROSTER = """
ruleset = "duel"
budget = 120
[[unit]]
name = "Sellsword"
wounds = 3
toughness = 5
ws = 4
strength = 3
points = 30
weapon = { strength = 4, damage = 1 }
[[unit]]
name = "Sellsword twin"
wounds = 3
toughness = 5
ws = 4
strength = 3
points = 30
weapon = { strength = 4, damage = 1 }
[[unit]]
name = "Sellsword dear"
wounds = 3
toughness = 5
ws = 4
strength = 3
points = 60
weapon = { strength = 4, damage = 1 }
[[unit]]
name = "Brawler"
wounds = 4
toughness = 6
ws = 4
strength = 6
points = 25
[[unit]]
name = "Knight"
wounds = 4
toughness = 6
ws = 5
strength = 4
points = 40
weapon = { strength = 4, damage = 2 }
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str, *needles: str) -> None:
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meleelab: error:"), err
    for n in needles:
        assert n in lines[0], (n, err)


@pytest.fixture
def duel_roster(tmp_path):
    path = tmp_path / "duel.toml"
    path.write_text(DUEL_ROSTER)
    return path


# ------------------------------------------------------------- copies per ruleset
def _points(ruleset: str, name: str) -> float:
    return sim.default_roster(ruleset).unit(name).points


def test_copies_are_floor_of_budget_over_points_and_at_least_one():
    # warband: count multiplied; a budget below a unit's price still fields one copy
    young, ogre = _points("warband", "Youngblood"), _points("warband", "Ogre Brute")
    budget = 2 * young + young / 2
    assert ogre > budget
    m, _ = sim.build_matchup("warband", "Youngblood", "Ogre Brute", budget=budget)
    assert m.copies == {"attacker": 2, "defender": 1}
    assert (m.attacker.count, m.attacker.points) == (2, 2 * young) and (m.defender.count, m.defender.points) == (1, ogre)
    r = sim.fight("warband", "Youngblood", "Ogre Brute", budget=budget, trials=2000, seed=1)
    assert r.settings["copies"] == {"attacker": 2, "defender": 1}
    assert r.settings["fielded"] == {"attacker": 2 * young, "defender": ogre} and r.settings["budget"] == budget
    # duel: count multiplied, a multi-model unit's count too (Goblin Mob: 5 models)
    mob, sell = _points("duel", "Goblin Mob"), _points("duel", "Sellsword")
    m, _ = sim.build_matchup("duel", "Goblin Mob", "Sellsword", budget=3 * max(mob, sell))
    k = (3 * max(mob, sell)) // mob, (3 * max(mob, sell)) // sell
    assert m.copies == {"attacker": k[0], "defender": k[1]}
    assert m.attacker.count == 5 * k[0] and m.defender.count == k[1]


def test_grimdark_copies_repeat_the_model_groups_in_listed_order():
    horde, troopers = _points("grimdark", "Horde mob"), _points("grimdark", "Troopers")
    budget = 2 * horde
    m, _ = sim.build_matchup("grimdark", "Horde mob", "Troopers", budget=budget)
    assert m.copies == {"attacker": 2, "defender": budget // troopers}
    unit = sim.default_roster("grimdark").unit("Horde mob")
    assert len(unit.groups) >= 2
    names = [g.name for g in m.attacker.groups]
    assert names == [g.name for g in unit.groups] * 2  # group 1, Boss, group 1, Boss: casualties in that order
    assert m.attacker.points == 2 * horde and m.attacker.models == 2 * unit.models


def test_pools_copies_merge_into_one_block_with_each_units_nerve():
    militia = sim.default_roster("pools").unit("Militia")
    m, _ = sim.build_matchup("pools", "Militia", "Militia", budget=2 * militia.points)
    assert m.copies == {"attacker": 2, "defender": 2}
    assert (m.attacker.bases, m.attacker.courage) == (2 * militia.bases, 2 * militia.courage)
    assert m.attacker.attack == militia.attack and m.attacker.points == 2 * militia.points


def test_mecha_cannot_field_copies_in_one_line(capsys):
    with pytest.raises(MatchupError, match="mecha: .*--budget"):
        sim.fight("mecha", "AFS", "Nutrocker", budget=100, trials=100)
    rc, _, err = run(capsys, "fight", "mecha", "AFS", "Nutrocker", "--budget", "100", "--trials", "100")
    one_line_error(rc, err, "mecha")
    # --budget none is one suit a side, as always
    rc, _, _ = run(capsys, "fight", "mecha", "AFS", "Nutrocker", "--budget", "none", "--trials", "100", "--quiet")
    assert rc == 0


def test_per_side_limits_warband_and_duel_twenty():
    ok, _ = sim.build_matchup("warband", "Youngblood", "Youngblood", copies={"attacker": 20, "defender": 20})
    assert ok.attacker.count == 20
    with pytest.raises(MatchupError, match="more than the 20"):
        sim.build_matchup("warband", "Youngblood", "Youngblood", copies={"attacker": 21, "defender": 1})
    ok, _ = sim.build_matchup("duel", "Goblin Mob", "Ogre", copies={"attacker": 4, "defender": 1})
    assert ok.attacker.count == 20
    with pytest.raises(MatchupError, match="more than the 20"):
        sim.build_matchup("duel", "Goblin Mob", "Ogre", copies={"attacker": 5, "defender": 1})


def test_grimdark_two_thousand_points_of_the_cheapest_squad_fit():
    ros = sim.default_roster("grimdark")
    for unit in ros.units.values():
        if unit.points:
            m, _ = sim.build_matchup("grimdark", unit.name, unit.name, budget=2000)
            assert m.copies["attacker"] == 2000 // unit.points


# ------------------------------------------------------------- the roster's budget
def test_roster_budget_is_the_default_and_none_turns_it_off(duel_roster):
    ros = sim.load_roster(duel_roster)
    assert ros.budget == 120
    r = sim.fight("duel", "Brawler", "Knight", roster=ros, trials=1000, seed=1)
    assert r.settings["copies"] == {"attacker": 4, "defender": 3}
    one = sim.fight("duel", "Brawler", "Knight", roster=ros, budget="none", trials=1000, seed=1)
    assert one.settings["copies"] == {"attacker": 1, "defender": 1}
    other = sim.fight("duel", "Brawler", "Knight", roster=ros, budget=80, trials=1000, seed=1)
    assert other.settings["copies"] == {"attacker": 3, "defender": 2}


def test_a_budget_on_a_mecha_roster_is_refused_when_loaded(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('ruleset = "mecha"\nbudget = 100\n[[unit]]\nname = "A"\ndefence = 2\nphysical = 0\n'
                    'armour = "B"\npoints = 20\n')
    with pytest.raises(sim.MeleelabError, match="budget"):
        sim.load_roster(path)


# ------------------------------------------------------------- the CLI's --budget
@pytest.mark.slow  # every command at a budget, end to end (20 s): pytest -m slow, as .ci/run does
def test_budget_on_every_command(tmp_path, capsys, duel_roster):
    r = str(duel_roster)
    rc, out, _ = run(capsys, "fight", "duel", "Brawler", "Knight", "--roster", r, "--budget", "80", "--trials",
                     "2000", "--json", "--quiet")
    assert rc == 0 and '"copies"' in out
    rc, _, _ = run(capsys, "matrix", "duel", "--roster", r, "--budget", "80", "--max-trials", "4096", "--quiet",
                   "--out", str(tmp_path / "m"))
    assert rc == 0
    long = pd.read_csv(tmp_path / "m" / "matrix_long.csv")
    assert {"attacker_fielded", "defender_fielded", "attacker_copies", "defender_copies"} <= set(long.columns)
    cell = long[(long.attacker == "Brawler") & (long.defender == "Knight")].iloc[0]
    # expected fielding (the default): 80 / 25 = 3.2 and 80 / 40 = 2 copies, 80 points on the table each
    assert (cell.attacker_copies, cell.defender_copies) == (3.2, 2.0)
    assert (cell.attacker_fielded, cell.defender_fielded) == (80, 80)
    rc, _, _ = run(capsys, "matrix", "duel", "--roster", r, "--budget", "80", "--max-trials", "4096", "--quiet",
                   "--fielding", "whole", "--out", str(tmp_path / "w"))
    assert rc == 0
    long = pd.read_csv(tmp_path / "w" / "matrix_long.csv")
    cell = long[(long.attacker == "Brawler") & (long.defender == "Knight")].iloc[0]
    assert (cell.attacker_copies, cell.defender_copies) == (3, 2)
    assert (cell.attacker_fielded, cell.defender_fielded) == (75, 80)
    for argv in (["balance", "duel", "--roster", r, "--budget", "80", "--max-trials", "2048"],
                 ["sweep", "duel", "Brawler", "Knight", "--roster", r, "--vary", "ws=3..4", "--budget", "80",
                  "--trials", "4096"],
                 ["compare", "duel", "Brawler", "ws=5", "Knight", "--roster", r, "--budget", "80", "--trials",
                  "4096"],
                 ["report", "duel", "--roster", r, "--budget", "80", "--max-trials", "2048", "--out",
                  str(tmp_path / "rep")]):
        rc, out, err = run(capsys, *argv, "--quiet")
        assert rc == 0, (argv, err)
    meta = (tmp_path / "rep" / "metadata.json").read_text()
    assert '"budget": 80' in meta


@pytest.mark.parametrize("bad", ["-3", "0", "inf", "nan", "1_000", "\u0663\u0660\u0660", "0x10", "lots"])
def test_a_bad_budget_is_one_line(capsys, bad):
    rc, _, err = run(capsys, "fight", "duel", "Brawler", "Knight", "--budget", bad, "--trials", "100", "--quiet")
    one_line_error(rc, err, "budget")


# ------------------------------------------------------------- fair prices at equal points
@pytest.fixture(scope="module")
def duel_balance(tmp_path_factory):
    path = tmp_path_factory.mktemp("duel") / "duel.toml"
    path.write_text(DUEL_ROSTER)
    matrix = matchup_matrix("duel", sim.load_roster(path), half_width=None, max_trials=8192, seed=2026)
    return matrix, balance_summary(matrix, seed=0)


def test_identical_units_get_identical_prices_flags_and_ranks(duel_balance):
    _, b = duel_balance
    fair = b.fair_points.set_index("unit")
    cols = ["fair_points", "fair_lo", "fair_hi", "flagged", "verdict"]
    assert fair.loc["Sellsword", cols].tolist() == fair.loc["Sellsword twin", cols].tolist()
    rk = b.rankings.set_index("unit")
    assert rk.loc["Sellsword", "rank"] == rk.loc["Sellsword twin", "rank"]
    assert rk.loc["Sellsword", "win_rate"] == rk.loc["Sellsword twin", "win_rate"]
    nash = b.nash.set_index("unit")["weight"]
    assert nash["Sellsword"] == nash["Sellsword twin"]


def test_a_clone_at_double_price_is_priced_like_the_original_and_flagged(duel_balance):
    _, b = duel_balance
    fair = b.fair_points.set_index("unit")
    original, clone = fair.loc["Sellsword"], fair.loc["Sellsword dear"]
    # a different price makes a different class, and each is in the other's roster at its own price, so one
    # report's prices agree only roughly (a rebalance, which reprices both, makes them agree: test_rebalance.py)
    assert clone["fair_points"] == pytest.approx(original["fair_points"], rel=0.15)
    assert clone["flagged"] and clone["verdict"] == "overpriced" and clone["fair_hi"] < 60
    assert clone["score_hi"] < original["score_lo"]  # at twice the price it fields half the copies
    assert (fair["method"] == "expected").all()


def test_no_floating_point_dust_in_the_tables(duel_balance):
    _, b = duel_balance
    for frame in (b.rankings, b.nash, b.fair_points):
        values = frame.select_dtypes("number").to_numpy(float)
        tiny = np.abs(values[np.isfinite(values)])
        assert not ((tiny > 0) & (tiny < 1e-12)).any(), frame


@pytest.mark.slow  # two reports of the shipped duel roster (11 s)
def test_headline_is_at_equal_points_and_one_for_one_is_a_section(tmp_path, duel_roster):
    from analysis.report.build import build_report

    rep = build_report("duel", duel_roster, max_trials=2048)
    assert rep.matrix.budget == 120 and rep.one_for_one is not None and rep.one_for_one.budget is None
    assert rep.matrix.copies["Brawler"] == pytest.approx(120 / 25)  # expected fielding: 4.8 copies
    rep.write(tmp_path / "r")
    assert "One unit a side" in (tmp_path / "r" / "report.html").read_text()


def test_mecha_twins_and_clone_under_the_calibration_model(tmp_path):
    # mecha cannot field copies: its fair price is the calibration model's, and the same claims hold
    base = sim.default_roster("mecha")
    lines = ['ruleset = "mecha"']
    for u in base.units.values():
        if u.engageable:
            lines.append(_mecha_unit(u.name, u, u.points))
    afs = base.unit("AFS")
    lines.append(_mecha_unit("AFS twin", afs, afs.points))
    lines.append(_mecha_unit("AFS dear", afs, 2 * afs.points))
    path = tmp_path / "mecha.toml"
    path.write_text("\n".join(lines))
    matrix = matchup_matrix("mecha", sim.load_roster(path), half_width=None, max_trials=16384, seed=3)
    fair = balance_summary(matrix, seed=0).fair_points.set_index("unit")
    cols = ["fair_points", "fair_lo", "fair_hi", "flagged", "verdict"]
    assert fair.loc["AFS", cols].tolist() == fair.loc["AFS twin", cols].tolist()
    assert fair.loc["AFS dear", "fair_points"] == pytest.approx(fair.loc["AFS", "fair_points"], rel=1e-9)
    assert fair.loc["AFS dear", "verdict"] == "overpriced"
    assert (fair["method"] == "calibration").all()
    assert math.isfinite(fair.loc["AFS", "fair_points"])


def _mecha_unit(name, u, points) -> str:
    return (f'[[unit]]\nname = "{name}"\ndefence = {u.defence}\nphysical = {u.physical}\narmour = "{u.armour}"\n'
            f"points = {points:g}")


@pytest.mark.slow  # a sweep, a compare and a report (7 s)
def test_sweep_and_compare_price_a_value_like_the_report(duel_balance, tmp_path):
    """One fair-price model: a sweep's value equal to the unit's own is priced like the balance's unit."""
    from analysis.runs.compare import compare
    from analysis.runs.sweep import sweep

    matrix, b = duel_balance
    path = tmp_path / "duel.toml"
    path.write_text(DUEL_ROSTER)
    own = b.fair_points.set_index("unit").loc["Brawler"]
    frame = sweep("duel", "Brawler", "ws", [4, 5], roster=path, trials=4096, seed=2026, fair_trials=8192,
                  fair_half_width=None)
    fair = frame.attrs["fair"].set_index("value")
    assert (fair["method"] == "expected").all()
    assert fair.loc[4, "fair_points"] == pytest.approx(own["fair_points"], rel=0.05)
    assert fair.loc[4, "fair_points"] < fair.loc[5, "fair_points"]
    cmp = compare("duel", "Brawler", {"ws": 5}, roster=path, trials=4096, seed=2026, fair=True, fair_trials=8192,
                  fair_half_width=None).attrs["fair"].set_index("value")
    assert cmp.loc["base", "fair_points"] == pytest.approx(own["fair_points"], rel=0.05)
    assert cmp.loc["variant", "fair_points"] == pytest.approx(fair.loc[5, "fair_points"], rel=0.05)


def test_a_unit_at_its_per_side_limit_gets_an_extrapolated_price():
    # 4 copies are all the ruleset can field and score below 50%: one count below gives the slope, and the
    # crossing beyond the limit is an extrapolation (before, one point made "no finite crossing" and no price)
    from analysis.stats.copy_curves import CopyCurve, crossing, next_copies
    from analysis.stats.fair_prices import curve_price

    curve = CopyCurve("p", ["Mob"], ["A", "B"], {4: (np.array([0.45, 0.40]), np.array([1e-5, 1e-5]))},
                      limit_reached=True)
    assert next_copies(curve) == 3
    curve.scores[3] = (np.array([0.38, 0.33]), np.array([1e-5, 1e-5]))
    assert next_copies(curve) is None
    k_star = crossing(*curve.mean_scores())
    assert k_star > 4
    est = curve_price(curve, 120.0)
    assert est["fair"] == pytest.approx(120 / k_star) and est["lo"] < est["fair"] < est["hi"]
    assert "per-side limit stopped the search" in est["note"] and "extrapolated" in est["note"]
