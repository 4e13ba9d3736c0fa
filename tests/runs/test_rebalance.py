"""Rebalancing: the fixed point on hand-built payoff models with analytic answers, then the command on real fights."""

from __future__ import annotations

import math

import pytest

import sim
from analysis.cli import main
from analysis.stats.rebalancing import Estimate, fixed_point_prices

BUDGET = 300.0


def logistic_model(strength: dict[str, float], fieldable=lambda u, p: True):
    """Copies multiply strength: u beats o with probability logistic(s_u - s_o + log(c_u / c_o)), c = B / p.

    Every unit scores 50% against the roster (itself 1/2) exactly when s_u + log(B / p_u) is the same for all,
    so the balanced prices are p_u = C exp(s_u): analytic, and the scale C is free.
    """
    names = list(strength)

    def score(u: str, pu: float, prices, excluded=frozenset()) -> float:
        roster = [o for o in names if o not in excluded or o == u]
        total = 0.5
        for o in roster:
            if o == u:
                continue
            z = strength[u] - strength[o] + math.log((BUDGET / pu) / (BUDGET / prices[o]))
            total += 1 / (1 + math.exp(-z))
        return total / len(roster)

    def evaluate(prices, excluded=frozenset()):
        out = {}
        for u in names:
            lo, hi = math.log(1e-3), math.log(1e6)  # score falls as the price rises: bisect log(price)
            for _ in range(200):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if score(u, math.exp(mid), prices, excluded) > 0.5 else (lo, mid)
            fair = math.exp((lo + hi) / 2)
            ok = fieldable(u, fair)
            out[u] = Estimate(score(u, prices[u], prices, excluded), fair, ok, prices[u] if not ok else math.nan,
                              "" if ok else "cannot be fielded")
        return out

    return evaluate


def test_the_fixed_point_recovers_the_analytic_balanced_prices_and_keeps_the_total():
    s = {"A": 0.0, "B": 0.7, "C": -0.4, "D": 1.2, "E": 0.2}
    listed = {"A": 30.0, "B": 30.0, "C": 45.0, "D": 50.0, "E": 25.0}
    point = fixed_point_prices(logistic_model(s), listed, tolerance=1e-6, max_iterations=60)
    scale = sum(listed.values()) / sum(math.exp(v) for v in s.values())
    for u, v in s.items():
        assert point.prices[u] == pytest.approx(scale * math.exp(v), rel=1e-4), u
    assert sum(point.prices.values()) == pytest.approx(sum(listed.values()))
    assert point.converged


def test_a_locked_unit_fixes_the_scale_and_keeps_its_price():
    s = {"A": 0.0, "B": 0.5, "C": -0.3, "D": 0.9}
    listed = {"A": 40.0, "B": 20.0, "C": 60.0, "D": 30.0}
    point = fixed_point_prices(logistic_model(s), listed, locked=["A"], tolerance=1e-6, max_iterations=60)
    assert point.prices["A"] == 40.0
    for u, v in s.items():
        assert point.prices[u] == pytest.approx(40.0 * math.exp(v - s["A"]), rel=1e-4), u


def test_twins_and_a_double_price_clone_end_at_one_price():
    s = {"A": 0.0, "A twin": 0.0, "A clone": 0.0, "B": 0.8, "C": -0.5}
    listed = {"A": 30.0, "A twin": 30.0, "A clone": 60.0, "B": 40.0, "C": 20.0}
    p = fixed_point_prices(logistic_model(s), listed, tolerance=1e-6, max_iterations=80).prices
    assert p["A"] == pytest.approx(p["A twin"], rel=1e-9)
    assert p["A clone"] == pytest.approx(p["A"], rel=1e-4)


def test_units_already_within_the_tolerance_keep_their_price():
    s = {"A": 0.0, "B": math.log(2), "C": math.log(0.5), "D": 0.0}
    balanced = {"A": 40.0, "B": 80.0, "C": 20.0, "D": 40.0}
    listed = dict(balanced, D=55.0)  # only D is off
    point = fixed_point_prices(logistic_model(s), listed, locked=["A"], tolerance=0.02, max_iterations=20)
    assert {u: point.prices[u] for u in "ABC"} == {u: balanced[u] for u in "ABC"}
    assert point.prices["D"] == pytest.approx(40.0, rel=0.02)


def test_a_unit_points_cannot_balance_is_named_and_the_rest_are_balanced():
    s = {"A": 0.0, "B": 0.4, "C": -0.2, "Weak": -3.0}
    listed = {"A": 30.0, "B": 30.0, "C": 30.0, "Weak": 30.0}
    floor = 20.0  # the lowest price a side can field: Weak would need far less

    def fieldable(u, p):
        return p >= floor

    model = logistic_model(s, fieldable)

    def evaluate(prices, excluded):
        out = dict(model(prices, excluded))
        e = out["Weak"]
        out["Weak"] = Estimate(e.score, e.fair, e.fair >= floor, floor, "needs more copies than a side can field")
        return out

    point = fixed_point_prices(evaluate, listed, locked=["A"], tolerance=1e-4, max_iterations=60)
    assert set(point.unbalanceable) == {"Weak"} and point.prices["Weak"] == floor
    scores = model(point.prices, frozenset({"Weak"}))  # balanced among themselves, Weak left out of the target
    assert all(abs(scores[u].score - 0.5) < 1e-3 for u in "ABC")


def test_with_nothing_locked_a_unit_points_cannot_balance_stays_at_its_floor_and_the_search_settles():
    s = {"A": 0.0, "B": 0.4, "C": -0.2, "Weak": -3.0}
    listed = {"A": 30.0, "B": 30.0, "C": 30.0, "Weak": 30.0}
    floor = 20.0
    model = logistic_model(s, lambda u, p: p >= floor)

    def evaluate(prices, excluded):
        out = dict(model(prices, excluded))
        e = out["Weak"]
        out["Weak"] = Estimate(e.score, e.fair, e.fair >= floor, floor, "needs more copies than a side can field")
        return out

    point = fixed_point_prices(evaluate, listed, tolerance=1e-4, max_iterations=60)
    assert point.converged and point.steps < 60  # the rescale no longer moves Weak off its floor every step
    assert point.prices["Weak"] == floor and sum(point.prices.values()) == pytest.approx(sum(listed.values()))
    scores = model(point.prices, frozenset({"Weak"}))
    assert all(abs(scores[u].score - 0.5) < 1e-3 for u in "ABC")


def test_a_unit_left_out_at_the_listed_prices_returns_once_the_repriced_roster_lets_it_be_balanced():
    # at the listed prices S would need to cost 6 (below the floor of 12); once A, B and C are repriced
    # from 10 to about 28, its fair price is about 17: fieldable, so it is balanced with the rest
    s = {"A": 0.0, "B": 0.0, "C": 0.0, "S": -0.5}
    listed = {"A": 10.0, "B": 10.0, "C": 10.0, "S": 70.0}
    floor = 12.0
    model = logistic_model(s, lambda u, p: u != "S" or p >= floor)

    def evaluate(prices, excluded):
        out = dict(model(prices, excluded))
        e = out["S"]
        out["S"] = Estimate(e.score, e.fair, e.fieldable, math.nan if e.fieldable else floor, e.note)
        return out

    point = fixed_point_prices(evaluate, listed, tolerance=1e-4, max_iterations=60)
    assert point.converged and point.unbalanceable == {}
    scale = sum(listed.values()) / sum(math.exp(v) for v in s.values())
    for u, v in s.items():
        assert point.prices[u] == pytest.approx(scale * math.exp(v), rel=1e-3), u


# ------------------------------------------------------------------ the command
@pytest.mark.parametrize("argv, needle", [
    (["rebalance", "mecha"], "cannot field copies"),
    (["rebalance", "duel", "--lock", "Nobody"], "no such unit"),
    (["rebalance", "duel", "--round-to", "0"], "round-to"),
    (["rebalance", "duel", "--round-to", "-5"], "round-to"),
    (["rebalance", "duel", "--tolerance", "0"], "tolerance"),
    (["rebalance", "duel", "--tolerance", "30"], "tolerance"),
    (["rebalance", "duel", "--budget", "10"], "10"),
    (["rebalance", "duel", "--budget", "none"], "needs a budget"),
    # issue 38, item 5: a rounding step over the budget used to leave every price at 120 with exit 0
    (["rebalance", "duel", "--round-to", "500"], "--round-to 500: larger than the budget of 120"),
    (["rebalance", "duel", "--round-to", "121"], "larger than the budget"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, argv, needle):
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("meleelab: error:") and needle in err[0], err
    assert not out.exists()


def test_an_empty_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """Issue 38, item 3: `rebalance duel --out ''` ran the whole rebalance and wrote nothing, exit 0."""
    monkeypatch.chdir(tmp_path)
    for empty in ("", "  "):
        assert main(["rebalance", "duel", "--out", empty, "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--out" in err[0] and "empty" in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_a_rounding_step_no_fieldable_price_of_a_unit_is_a_multiple_of_is_refused(tmp_path, capsys):
    """A unit of 20 models: a side fields one copy at most, so its only price at 120 points is 120, and 50 does
    not divide it (units of one model range from 120 / 20 = 6 to 120 and hold 50 and 100)."""
    path = tmp_path / "crowd.toml"
    unit = ('[[unit]]\nname = "{}"\ncount = {}\nwounds = 1\ntoughness = 3\nws = 3\nstrength = 3\npoints = {}\n'
            '[unit.weapon]\nstrength = 3\ndamage = 1\n')
    path.write_text('ruleset = "duel"\nbudget = 120\n' + unit.format("Lone", 1, 30) + unit.format("Other", 1, 40)
                    + unit.format("Crowd", 20, 120))
    out = tmp_path / "out"
    assert main(["rebalance", "duel", "--roster", str(path), "--round-to", "50", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--round-to 50: Crowd" in err[0] and "from 120 to 120" in err[0], err
    assert not out.exists()
    from analysis.runs.rebalance import check_rebalance
    from analysis.runs.rebalance_checks import price_range

    rs, ros = sim.get_ruleset("duel"), sim.load_roster(path)
    assert price_range(rs, ros.unit("Crowd"), 120) == (120, 120)
    assert price_range(rs, ros.unit("Lone"), 120) == (6, 120)
    with pytest.raises(sim.MeleelabError, match="Crowd"):
        check_rebalance(rs, ros, round_to=50)
    assert check_rebalance(rs, ros, round_to=40)[0] == 120  # 120 is a multiple of 40: every unit has a price
    assert check_rebalance(rs, ros, round_to=50, lock=["Crowd"])[1] == ("Crowd",)  # a locked price is not rounded


def test_every_unit_locked_is_refused(tmp_path, capsys):
    names = sim.default_roster("duel").names
    argv = ["rebalance", "duel", "--out", str(tmp_path / "o"), "--quiet"] + [a for n in names for a in ("--lock", n)]
    assert main(argv) == 2
    assert "every unit is locked" in capsys.readouterr().err


def test_fewer_than_two_balanceable_units_is_refused(tmp_path, capsys):
    path = tmp_path / "two.toml"
    path.write_text('ruleset = "duel"\nbudget = 100\n'
                    '[[unit]]\nname = "A"\ncount = 1\nwounds = 1\ntoughness = 3\nws = 3\nstrength = 3\npoints = 50\n'
                    '[unit.weapon]\nstrength = 3\ndamage = 1\n')
    assert main(["rebalance", "duel", "--roster", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fewer than two units can be balanced" in err


def test_a_small_roster_is_rebalanced_and_proved(tmp_path, capsys):
    """A real run at a wide tolerance and few fights: the files, the proof, twins at one price."""
    path = tmp_path / "small.toml"
    path.write_text('ruleset = "duel"\nbudget = 120\n'
                    + "".join(f'[[unit]]\nname = "{n}"\ncount = 1\nwounds = {w}\ntoughness = 4\nws = {ws}\n'
                              f'strength = 3\npoints = {p}\n[unit.weapon]\nstrength = {s}\ndamage = 1\n'
                              for n, w, ws, s, p in [("Guard", 2, 3, 3, 30), ("Guard twin", 2, 3, 3, 30),
                                                     ("Blade", 2, 5, 4, 30), ("Brute", 4, 3, 5, 40)]))
    out = tmp_path / "out"
    rc = main(["rebalance", "duel", "--roster", str(path), "--half-width", "0.03", "--max-trials", "4096",
               "--tolerance", "4", "--out", str(out), "--quiet"])
    text = capsys.readouterr()
    assert rc == 0, text.err
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(
        ["rebalanced.toml", "changes.csv", "verification.csv", "summary.md", "report.html", "metadata.json"])
    import pandas as pd

    changes = pd.read_csv(out / "changes.csv").set_index("unit")
    assert list(changes.columns[:6]) == ["old_points", "new_points", "change_pct", "new_lo", "new_hi", "changed"]
    assert changes.loc["Guard", "new_points"] == changes.loc["Guard twin", "new_points"]
    new = sim.load_roster(out / "rebalanced.toml")  # loads as it is, with the new points
    assert {u: new.unit(u).points for u in new.names} == changes["new_points"].to_dict()
    assert "# was 30" in (out / "rebalanced.toml").read_text()
    ver = pd.read_csv(out / "verification.csv")
    ok = ver[ver["balanceable"]]
    assert ((ok["score_after"] - 0.5).abs() <= 0.04 + 3 * (ok["score_after_hi"] - ok["score_after_lo"]) / 3.92).all()
    by_unit = ver.set_index("unit")
    weights = ["nash_before", "nash_after", "nash_max_before", "nash_max_after"]
    assert by_unit.loc["Guard", weights].tolist() == by_unit.loc["Guard twin", weights].tolist()  # twins: one answer
    assert "fresh seed" in text.out and "rebalanced at 120 points" in text.out
    meta = (out / "metadata.json").read_text()
    assert '"verification_seed"' in meta and '"matrix_runs"' in meta
