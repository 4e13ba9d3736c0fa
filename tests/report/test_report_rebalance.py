"""``report --rebalance``: the whole balanced points table inside the report, the same as ``rebalance`` alone."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from analysis.cli import main
from analysis.report.build import build_report, write_all
from analysis.runs.rebalance import rebalance

QUICK = {"max_trials": 2_048, "half_width": 0.05}
UNITS = ["Sellsword", "Knight", "Brawler"]


@pytest.fixture(scope="module")
def rebalanced():
    """``report duel --rebalance`` of three units: its proposal, proof and robustness (5 s: built once)."""
    return build_report("duel", units=UNITS, seed=5, rebalance=True, **QUICK)


def test_the_report_shows_the_proposal_that_rebalance_alone_makes(rebalanced, tmp_path):
    rep = rebalanced
    assert rep.rebalance is not None and rep.settings["rebalance"] is True
    # the table in the report is the one `meleelab rebalance` makes at the same settings and seed
    alone = rebalance("duel", rep.rebalance.roster, seed=5, **QUICK)
    assert rep.rebalance.prices == alone.prices
    assert rep.balance.advice.prices == alone.prices  # one answer: the report's advice is the table rebalance writes
    assert rep.rebalance.verification_seed == alone.verification_seed
    pd.testing.assert_frame_equal(rep.rebalance.verification, alone.verification)

    page = rep.html()
    section = page[page.index('id="balanced"'):page.index('id="one-for-one"')]
    assert 'href="rebalance/report.html"' in section and "Balanced points" in section
    for u in UNITS:
        assert u in section
    assert "<code class=\"opt\">meleelab rebalance duel --seed 5" in section and "units alone" in section
    md = rep.markdown()
    assert "| Balanced points |" in md and "(rebalance/summary.md)" in md

    paths = rep.write(tmp_path / "r")
    written = {p.relative_to(tmp_path / "r").as_posix() for p in paths}
    assert {"rebalance/rebalanced.toml", "rebalance/changes.csv", "rebalance/verification.csv",
            "rebalance/report.html"} <= written
    assert set(rep.metadata()["files"]) <= written
    changes = pd.read_csv(tmp_path / "r" / "rebalance" / "changes.csv").set_index("unit")
    assert changes["new_points"].to_dict() == alone.prices
    # the units of the report, alone: the written roster holds those three
    assert re.findall(r'name = "([^"]+)"', (tmp_path / "r" / "rebalance" / "rebalanced.toml").read_text()) == UNITS


def test_robustness_scores_both_tables_at_three_budgets_and_three_seeds(rebalanced):
    """The report's proof comes with :func:`analysis.runs.robustness.robustness` (``report --rebalance`` always
    scores it): both tables at 0.5x, 1x and 2x the budget, three seeds each."""
    rob = rebalanced.rebalance.robustness
    assert {"unit", "budget", "seed", "score"} <= set(rob.columns)
    assert set(rob["budget"]) == {60.0, 120.0, 240.0} and rob["seed"].nunique() == 3
    assert len(rob) == 2 * 3 * 3 * len(UNITS)  # two tables, three budgets, three seeds, every unit
    one = rob[(rob["table"] == "proposed") & (rob["budget"] == 120.0)]
    assert one["score"].notna().all()
    # each seed's scores are a roster's: they average 50% over the units fielded (zero-sum)
    for _, part in rob.dropna(subset=["score"]).groupby(["table", "budget", "seed"]):
        assert part["score"].mean() == pytest.approx(0.5, abs=1e-9)


@pytest.mark.usefixtures("plain_figures")  # the section's text and the folders, not the plots
def test_a_report_without_copies_is_written_and_says_it_cannot_be_rebalanced(tmp_path, capsys):
    """Issue 38, item 7: `report mecha --rebalance` used to fail the whole report (exit 2)."""
    rep = build_report("mecha", units=["AFS", "Nutrocker"], rebalance=True, **QUICK)
    assert rep.rebalance is None and "cannot field copies" in rep.rebalance_note
    assert rep.settings["rebalance"] is True and rep.metadata()["rebalance_note"] == rep.rebalance_note
    page = rep.html()
    section = page[page.index('id="balanced"'):page.index('id="one-for-one"')]
    assert "this roster cannot be rebalanced" in section and "cannot field copies" in section
    assert "this roster cannot be rebalanced" in rep.markdown()
    # a roster without a budget, likewise
    assert "needs a budget" in build_report("duel", units=UNITS, budget="none", rebalance=True,
                                            **QUICK).rebalance_note
    out = tmp_path / "m"
    assert main(["report", "mecha", "--units", "AFS,Nutrocker", "--rebalance", "--out", str(out), "--quiet",
                 "--max-trials", "512"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("meleelab: note: --rebalance: no balanced table") and \
        "cannot field copies" in err
    assert (out / "report.html").is_file() and not (out / "rebalance").exists()
    assert "this roster cannot be rebalanced" in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.usefixtures("plain_figures")  # the section's text and the folders, not the plots
def test_report_all_rebalances_only_the_rulesets_that_field_copies(tmp_path):
    result = write_all(tmp_path / "all", rulesets=["mecha"], rebalance=True, max_trials=512)
    assert not result["failed"] and not (tmp_path / "all" / "mecha" / "rebalance").exists()


@pytest.mark.usefixtures("plain_figures")  # the section's text and the folders, not the plots
def test_a_unit_points_cannot_balance_stays_in_the_proof_and_the_section_says_why(tmp_path):
    # the Titan wins even as one copy at the whole budget: it stays, at the budget, an opponent in the proof
    path = tmp_path / "titan.toml"
    path.write_text('ruleset = "duel"\nbudget = 120\n' + "".join(
        f'[[unit]]\nname = "{n}"\ncount = 1\nwounds = {w}\ntoughness = {t}\nws = {ws}\nstrength = 3\n'
        f'points = {p}\n[unit.weapon]\nstrength = {s}\ndamage = 1\n'
        for n, w, t, ws, s, p in [("Guard", 2, 4, 3, 3, 30), ("Blade", 2, 4, 5, 4, 30), ("Titan", 4, 6, 6, 6, 100)]))
    rep = build_report("duel", path, seed=1, rebalance=True, **QUICK)
    assert rep.rebalance is not None and "Titan" in rep.rebalance.rebalanced.names
    assert "even with one copy" in rep.rebalance.excluded["Titan"]
    page = rep.html()
    section = page[page.index('id="balanced"'):page.index('id="one-for-one"')]
    assert "Points alone cannot balance Titan" in section and "It stays in the roster at 120 points" in section
