"""One unit, one score (issue 37, item 3): the same number in every table and file of a report, in rebalance's
proof before the change, and in balance's terminal table."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.cli import main
import sim
from analysis.report.build import build_report
from analysis.runs.rebalance import rebalance
from tests.plain_figures import blank_figures

QUICK = {"max_trials": 2_048, "half_width": 0.05}
UNITS = ["Sellsword", "Knight", "Brawler", "Ogre"]


@pytest.fixture(scope="module")
def duel(tmp_path_factory):
    rep = build_report("duel", units=UNITS, seed=3, **QUICK)
    out = tmp_path_factory.mktemp("one") / "r"
    with blank_figures():  # the scores in its files and pages are checked, not its plots
        rep.write(out)
    return rep, out


def _scores(path, col="score"):
    frame = pd.read_csv(path)
    return dict(zip(frame["unit"], frame[col]))


def test_every_file_of_a_report_shows_each_unit_s_one_score(duel):
    rep, out = duel
    rankings = _scores(out / "rankings.csv")
    assert _scores(out / "verdicts.csv") == rankings
    assert _scores(out / "fair_points.csv") == rankings
    assert _scores(out / "points_efficiency.csv") == rankings
    roster = sim.default_roster("duel").subset(UNITS)
    proof = rebalance("duel", roster, seed=3, **QUICK).verification  # rebalance at the report's seed and settings
    assert dict(zip(proof["unit"], proof["score_before"].round(6))) == rankings
    # and it is the score the definition gives, computed here from the matrix's own cells
    long = pd.read_csv(out / "matrix_long.csv").set_index(["attacker", "defender"])
    units = list(rankings)
    for u in units:
        total = 0.5
        for o in units:
            if o != u:
                a, d = long.loc[(u, o)], long.loc[(o, u)]
                total += (a.p_attacker + a.p_draw / 2 + d.p_defender + d.p_draw / 2) / 2
        assert rankings[u] == pytest.approx(total / len(units), abs=2e-6)  # the CSV's six decimals


def test_the_pages_show_the_same_score(duel):
    rep, _ = duel
    md = rep.markdown()
    for _, r in rep.balance.rankings.iterrows():
        shown = f"{100 * r['score']:.1f}%"
        assert md.count(f"| {r['unit']} |") >= 2 and shown in md


def test_balance_in_the_terminal_prints_the_same_score(tmp_path, capsys):
    assert main(["balance", "duel", "--units", ",".join(UNITS), "--seed", "3", "--max-trials",
                 "2048", "--half-width", "0.05", "--quiet", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    rankings = _scores(tmp_path / "b" / "rankings.csv")
    assert _scores(tmp_path / "b" / "verdicts.csv") == rankings
    for u, s in rankings.items():
        assert f"{s:.3f}" in out
