"""The report's one-unit-a-side matrix: fought for rosters of at most 20 units, left out (and said so) above,
and whatever the size when asked (issue 39: a large roster's report is not a second matrix of its square)."""

from __future__ import annotations

import json

import pytest

from analysis.cli import main
from analysis.report import one_a_side as module
from analysis.report.build import build_report
from sim.errors import InputError

QUICK = {"max_trials": 256, "half_width": 0.25, "seed": 5}
UNITS = ["Sellsword", "Knight", "Ogre"]


def test_a_small_roster_fights_it_unless_told_not_to():
    rep = build_report("duel", units=UNITS, **QUICK)
    assert rep.one_for_one is not None and not rep.one_for_one_note
    assert rep.settings["one_a_side"] is True
    off = build_report("duel", units=UNITS, one_a_side=False, **QUICK)
    assert off.one_for_one is None and "--no-one-a-side" in off.one_for_one_note
    assert off.settings["one_a_side"] is False
    # the equal-points matrix is the same run either way
    assert off.matrix.long.equals(rep.matrix.long)


def test_over_the_size_it_is_left_out_and_every_output_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(module, "ONE_A_SIDE_UNITS", 2)
    rep = build_report("duel", units=UNITS, **QUICK)
    assert rep.one_for_one is None
    note = rep.one_for_one_note
    assert "over 2 units (3 here)" in note and "9 cells" in note and "--one-a-side" in note
    rep.write(tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "metadata.json").read_text())
    assert meta["one_for_one_note"] == note
    assert "one_for_one_long.csv" not in meta["files"] and not (tmp_path / "r" / "one_for_one.png").exists()
    assert "over 2 units (3 here)" in (tmp_path / "r" / "summary.md").read_text()
    assert "over 2 units (3 here)" in (tmp_path / "r" / "report.html").read_text()
    asked = build_report("duel", units=UNITS, one_a_side=True, **QUICK)
    assert asked.one_for_one is not None and not asked.one_for_one_note


def test_without_a_budget_there_is_nothing_more_to_fight():
    rep = build_report("duel", units=UNITS, budget="none", one_a_side=True, **QUICK)
    assert rep.one_for_one is None and not rep.one_for_one_note


def test_a_flag_that_is_not_true_or_false_is_refused_before_any_fight():
    with pytest.raises(InputError, match="one_a_side"):
        build_report("duel", units=UNITS, one_a_side="yes", **QUICK)


def test_the_cli_flag(tmp_path, capsys):
    code = main(["report", "duel", "--units", ",".join(UNITS), "--max-trials", "256", "--half-width", "0.25",
                 "--no-one-a-side", "--quiet", "--out", str(tmp_path / "r")])
    assert code == 0
    meta = json.loads((tmp_path / "r" / "metadata.json").read_text())
    assert "--no-one-a-side" in meta["one_for_one_note"] and meta["settings"]["one_a_side"] is False
