"""Rebalance on real fights: the advice written as a roster, proved on that file; bad input refused in one line.

The search itself (the fewest changes, on payoff models with known answers) is tested in
tests/stats/test_advice.py.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import sim
from analysis.cli import main


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
    (["rebalance", "duel", "--max-change", "0"], "--max-change"),
    (["rebalance", "duel", "--max-change", "-5"], "--max-change"),
    (["rebalance", "duel", "--max-change", "1000"], "--max-change"),
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


SMALL = ('ruleset = "duel"\nbudget = 120\n'
         + "".join(f'[[unit]]\nname = "{n}"\ncount = 1\nwounds = {w}\ntoughness = 4\nws = {ws}\n'
                   f'strength = 3\npoints = {p}\n[unit.weapon]\nstrength = {s}\ndamage = 1\n'
                   for n, w, ws, s, p in [("Guard", 2, 3, 3, 30), ("Guard twin", 2, 3, 3, 30),
                                          ("Blade", 2, 5, 4, 30), ("Brute", 4, 3, 5, 40)]))
QUICK = ["--half-width", "0.03", "--max-trials", "4096", "--tolerance", "4"]


def test_a_small_roster_is_rebalanced_and_proved_on_the_file_written(tmp_path, capsys):
    """A real run at a wide tolerance and few fights: the file written is the table proved, and the proof's own
    advice there is to change nothing; twins get one price; the total's change is said."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    out = tmp_path / "out"
    rc = main(["rebalance", "duel", "--roster", str(path), *QUICK, "--no-robustness", "--out", str(out), "--quiet"])
    text = capsys.readouterr()
    assert rc == 0, text.err
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(
        ["rebalanced.toml", "changes.csv", "verification.csv", "summary.md", "report.html", "metadata.json"])
    changes = pd.read_csv(out / "changes.csv").set_index("unit")
    assert list(changes.columns[:6]) == ["old_points", "new_points", "change_pct", "new_lo", "new_hi", "changed"]
    assert changes.loc["Guard", "new_points"] == changes.loc["Guard twin", "new_points"]
    new = sim.load_roster(out / "rebalanced.toml")  # loads as it is: every unit, at the price proved
    assert {u: new.unit(u).points for u in new.names} == changes["new_points"].to_dict()
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["proved"] is True and meta["still_flagged"] == []
    assert meta["total_after"] == pytest.approx(changes["new_points"].sum())
    ver = pd.read_csv(out / "verification.csv")
    ok = ver[ver["balanceable"]]
    assert ((ok["score_after"] - 0.5).abs() <= 0.04 + 2 * (ok["score_after_hi"] - ok["score_after_lo"]) / 3.92).all()
    assert set(ver["verdict_after"]) <= {"fair"}  # the proof's own advice: nothing to change
    by_unit = ver.set_index("unit")
    weights = ["nash_before", "nash_after", "nash_max_before", "nash_max_after"]
    assert by_unit.loc["Guard", weights].tolist() == by_unit.loc["Guard twin", weights].tolist()  # twins: one answer
    assert "the advice there is to change nothing" in text.out and "rebalanced at 120 points" in text.out
    assert f"the roster's total goes from 130 to {changes['new_points'].sum():g}" in text.out
    assert '"verification_seed"' in (out / "metadata.json").read_text()


def test_the_proof_seed_comes_from_the_seed_and_the_table():
    from analysis.runs.rebalance import verification_seed

    a = verification_seed(2026, {"A": 30.0, "B": 40.0})
    assert a == verification_seed(2026, {"B": 40.0, "A": 30.0})  # the table, not the order it is listed in
    assert a != verification_seed(2026, {"A": 31.0, "B": 40.0}) and a != verification_seed(2027, {"A": 30.0, "B": 40.0})
    assert 0 <= a < 2 ** 63 and a != 2026


# a rebalance with robustness of its own (6 s): in the slow step (.ci/run); the default run checks the same table
# on the one report --rebalance computes anyway (tests/report/test_report_rebalance.py, same assertions)
@pytest.mark.slow
def test_robustness_scores_both_tables_at_three_budgets_and_three_seeds(tmp_path):
    from analysis.runs.rebalance import rebalance

    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    r = rebalance("duel", path, half_width=0.05, max_trials=2048, tolerance=0.04, robustness=True)
    rob = r.robustness
    assert {"unit", "budget", "seed", "score"} <= set(rob.columns)
    assert set(rob["budget"]) == {60.0, 120.0, 240.0} and rob["seed"].nunique() == 3
    assert len(rob) == 2 * 3 * 3 * 4  # two tables, three budgets, three seeds, four units
    one = rob[(rob["table"] == "proposed") & (rob["budget"] == 120.0)]
    assert one["score"].notna().all()
    # each seed's scores are a roster's: they average 50% over the units fielded (zero-sum)
    for _, part in rob.dropna(subset=["score"]).groupby(["table", "budget", "seed"]):
        assert part["score"].mean() == pytest.approx(0.5, abs=1e-9)


def _with_titan(wounds: int) -> str:
    """SMALL with a Titan at 100 points: with 8 wounds it scores above 50% even as one copy at the budget."""
    return SMALL.replace('[[unit]]\nname = "Brute"', f'[[unit]]\nname = "Titan"\ncount = 1\nwounds = {wounds}\n'
                         'toughness = 6\nws = 6\nstrength = 6\npoints = 100\n[unit.weapon]\nstrength = 6\n'
                         'damage = 1\n[[unit]]\nname = "Brute"')


@pytest.mark.slow
def test_a_unit_only_the_proof_finds_unbalanceable_is_named_and_dropped_when_asked(tmp_path, capsys):
    """With 6 wounds the listed table can still hold the Titan (its fair price is above the budget, so the advice
    moves it there), and only the proof finds it above 50% as one copy: its row says why, the summary names it,
    and --drop-unbalanceable leaves it out and proves again."""
    path = tmp_path / "titan6.toml"
    path.write_text(_with_titan(6))
    kept = tmp_path / "kept"
    assert main(["rebalance", "duel", "--roster", str(path), *QUICK, "--no-robustness", "--out", str(kept),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    changes = pd.read_csv(kept / "changes.csv").set_index("unit")
    assert not changes.loc["Titan", "balanceable"] and "even with one copy" in changes.loc["Titan", "note"]
    assert "Points alone cannot balance Titan" in text
    dropped = tmp_path / "dropped"
    assert main(["rebalance", "duel", "--roster", str(path), *QUICK, "--no-robustness", "--drop-unbalanceable",
                 "--out", str(dropped), "--quiet"]) == 0
    assert "Titan" not in sim.load_roster(dropped / "rebalanced.toml").names
    assert "Left out of the file (--drop-unbalanceable): Titan" in capsys.readouterr().out


@pytest.mark.slow  # three rebalances with group fights: about 40 s on 2 cores
def test_drop_unbalanceable_leaves_the_unit_out_of_the_file_and_says_so_when_there_is_none(tmp_path, capsys):
    """A unit that wins even as one copy at the whole budget stays in the file by default, moved to the dearest
    price a side can field and an opponent in the proof; --drop-unbalanceable leaves it out of the file and the
    proof; with none to drop, it is a note."""
    path = tmp_path / "mob.toml"
    path.write_text(_with_titan(8))
    kept = tmp_path / "kept"
    assert main(["rebalance", "duel", "--roster", str(path), *QUICK, "--no-robustness", "--out", str(kept),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    changes = pd.read_csv(kept / "changes.csv").set_index("unit")
    written = sim.load_roster(kept / "rebalanced.toml")
    assert "Titan" in written.names and written.unit("Titan").points == 120  # the budget: one copy
    assert not changes.loc["Titan", "balanceable"] and "even with one copy" in changes.loc["Titan", "note"]
    assert "Points alone cannot balance Titan" in text and "It stays in the roster at 120 points" in text
    dropped = tmp_path / "dropped"
    assert main(["rebalance", "duel", "--roster", str(path), *QUICK, "--no-robustness", "--drop-unbalanceable",
                 "--out", str(dropped), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "Titan" not in sim.load_roster(dropped / "rebalanced.toml").names
    assert "Left out of the file (--drop-unbalanceable): Titan" in text
    assert json.loads((dropped / "metadata.json").read_text())["proved"] is True
    plain = tmp_path / "small.toml"
    plain.write_text(SMALL)
    assert main(["rebalance", "duel", "--roster", str(plain), *QUICK, "--no-robustness", "--drop-unbalanceable",
                 "--out", str(tmp_path / "none"), "--quiet"]) == 0
    assert "points can balance every unit, so none is left out" in capsys.readouterr().out


def test_a_roster_over_the_size_leaves_robustness_out_unless_asked_and_says_so(tmp_path, monkeypatch):
    """robustness=None (the CLI's default): scored for small rosters; above ROBUST_UNITS units left out, with
    a sentence in the settings and on the page that says how to ask for it."""
    from analysis.report.rebalance_page import headline
    from analysis.runs import rebalance as module

    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    quick = dict(half_width=0.05, max_trials=1024, tolerance=0.04)
    monkeypatch.setattr(module, "ROBUST_UNITS", 3)  # the roster has four units
    r = module.rebalance("duel", path, robustness=None, **quick)
    assert r.robustness is None and r.settings["robustness"] is False
    note = r.settings["robustness_note"]
    assert "over 3 units (4 here)" in note and "--robustness" in note
    assert note in headline(r)
    assert module.robustness_wanted(None, 3) == (True, "")  # at the size: scored, as robustness=True is above
    assert module.robustness_wanted(True, 4) == (True, "") and module.robustness_wanted(False, 2) == (False, "")
    with pytest.raises(sim.InputError, match="robustness"):
        module.rebalance("duel", path, robustness="yes", **quick)
