"""Racing (issue 39): the units whose score interval holds a verdict bound get their cells fought on; a cell
fought on is the cell fought to the tighter bound from the start; the same numbers for any worker count."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

import analysis.runs.allocation as allocation
import analysis.runs.streaming as streaming
from analysis.runs.allocation import matrix_scores
from analysis.runs.cells import CellBank, WholeCell
from analysis.runs.fielding import RunContext
from analysis.runs.matrix import matchup_matrix
from analysis.runs.racing import RACE_FACTOR, Race, in_doubt, starting_variance
from sim.errors import InputError
from sim.rng import root_sequence
from sim.roster import default_roster
from sim.stats import Z95

SIX = ["Sellsword", "Duellist", "Knight", "Reaver", "Ogre", "Militia"]
RUN = dict(seed=5, score_half_width=0.02, max_trials=1 << 18, units=SIX)


@pytest.fixture(scope="module")
def matrices():
    """The six units fought for their scores alone (as a large roster's cells are; the shipped rosters keep
    their cells), without racing and with a verdict bound at one unit's own score: that unit is in doubt
    whatever its interval. Shared by the tests below (each matrix costs seconds)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(allocation, "CELL_PRECISION_UNITS", 1)
        calm = matchup_matrix("duel", race_tolerance=None, **RUN)
        scores = matrix_scores(calm).set_index("unit")["score"]
        unit = max(SIX, key=lambda u: abs(scores[u] - 0.5))
        tolerance = abs(float(scores[unit]) - 0.5)
        raced = matchup_matrix("duel", race_tolerance=tolerance, **RUN)
    return calm, raced, unit, tolerance


def _half_widths(m) -> pd.Series:
    s = matrix_scores(m).set_index("unit")
    return (s["score_hi"] - s["score_lo"]) / 2


def test_in_doubt_is_an_interval_holding_a_bound():
    scores = pd.DataFrame({"unit": ["a", "b", "c", "d", "e"],
                           "score_lo": [0.47, 0.475, 0.515, 0.49, 0.40],
                           "score_hi": [0.489, 0.479, 0.525, 0.51, 0.44]})
    scores["score"] = (scores["score_lo"] + scores["score_hi"]) / 2
    # a holds 48%, c holds 52%; b is wholly below 48%, d wholly inside the band, e far below
    assert in_doubt(scores, 0.02) == ["a", "c"]
    assert in_doubt(scores, 0.01) == ["d"]  # 49% and 51%
    # widened 1.5 times about its score (0.477 +- 0.003), b's interval reaches 48% too
    assert in_doubt(scores, 0.02, 1.5) == ["a", "b", "c"]


def test_racing_starts_below_what_the_cells_already_have():
    assert starting_variance(1e-4, None) == 1e-4
    assert starting_variance(1e-4, 0.01) == pytest.approx((0.01 / Z95) ** 2)  # the cell half-width binds
    assert starting_variance(1e-5, 0.01) == 1e-5


def test_the_units_in_doubt_are_raced_and_their_intervals_halve(matrices):
    calm, raced, unit, tolerance = matrices
    assert "racing" not in calm.settings["score_target"]
    racing = raced.settings["score_target"]["racing"]
    assert unit in racing["rounds"][0] and racing["cells"] > 0
    assert racing["tolerance"] == tolerance and "racing:" in raced.settings["score_target"]["text"]
    assert racing["cell_score_variance"][0] == pytest.approx(
        raced.settings["score_target"]["cell_score_variance"] / RACE_FACTOR)
    before, after = _half_widths(calm), _half_widths(raced)
    # a quarter of the variance bound a cell: about half the score's half-width (the bound is an upper one)
    assert after[unit] < 0.7 * before[unit]
    # its cells were fought on, none fought less; a pair of two units not raced is untouched
    join = ["attacker", "defender"]
    both = calm.long.merge(raced.long, on=join, suffixes=("_calm", "_raced"))
    assert (both["fights_raced"] >= both["fights_calm"]).all()
    mine = (both["attacker"] == unit) | (both["defender"] == unit)
    assert (both.loc[mine, "fights_raced"] > both.loc[mine, "fights_calm"]).any()
    others = set().union(*racing["rounds"])
    untouched = ~both["attacker"].isin(others) & ~both["defender"].isin(others)
    assert untouched.any()
    assert (both.loc[untouched, "p_attacker_calm"] == both.loc[untouched, "p_attacker_raced"]).all()


def test_racing_is_bit_identical_over_workers_and_chunks(matrices, monkeypatch):
    _, one, _, tolerance = matrices
    monkeypatch.setattr(allocation, "CELL_PRECISION_UNITS", 1)
    monkeypatch.setattr(streaming, "STREAM_MAX_CELLS", 5)  # many chunks, on two workers
    two = matchup_matrix("duel", workers=2, race_tolerance=tolerance, **RUN)
    assert one.settings["score_target"]["racing"] == two.settings["score_target"]["racing"]
    assert one.settings["score_target"]["racing"]["rounds"]
    pd.testing.assert_frame_equal(one.long, two.long)


def test_a_cell_fought_on_is_the_cell_fought_to_the_tighter_bound_from_the_start():
    ros = default_roster("duel")
    context = RunContext("duel", ros, root_sequence(11), 1, 50, half_width=None, max_trials=1 << 18,
                         score_variance=4e-4, step_trials=256, budget=ros.budget, method="mc")
    cells = [WholeCell("Knight", 1, "Reaver", 1), WholeCell("Reaver", 1, "Militia", 2),
             WholeCell("Militia", 2, "Knight", 1)]
    bank = CellBank(context)
    bank.fight(cells)
    first = {c: bank.tallies[c].trials for c in cells if c in bank.tallies}
    assert first, "the cells are fought by Monte Carlo"
    bank.race(cells, 1e-4)
    fresh = CellBank(dataclasses.replace(context, score_variance=1e-4))
    fresh.fight(cells)
    for c in first:
        assert bank.tallies[c].trials >= first[c]
        assert bank.tallies[c].trials == fresh.tallies[c].trials
        assert (bank.tallies[c].wins == fresh.tallies[c].wins).all()
        assert bank.score(c.attacker, c.attacker_copies, c.defender, c.defender_copies, "attacker") \
            == fresh.score(c.attacker, c.attacker_copies, c.defender, c.defender_copies, "attacker")
    assert any(bank.tallies[c].trials > n for c, n in first.items())  # the tighter bound asked for more


def test_the_sentence_names_what_racing_did():
    quiet = Race(0.02, (), (), 0, ())
    assert "no cell was fought on" in quiet.describe() and "48% or 52%" in quiet.describe()
    assert "within 1.5 half-widths" in quiet.describe()
    busy = Race(0.02, (("Knight", "Ogre"), ("Knight",)), (1e-4, 2.5e-5), 120, ("Knight",))
    text = busy.describe()
    assert "2 unit(s)" in text and "2 round(s)" in text and "120 cells" in text and "still in doubt: Knight" in text
    assert busy.settings()["rounds"] == [["Knight", "Ogre"], ["Knight"]]


@pytest.mark.parametrize("bad", [0, -0.1, 0.3, "0.02", True])
def test_a_bad_race_tolerance_is_one_line(bad):
    with pytest.raises(InputError, match="race_tolerance"):
        matchup_matrix("duel", units=SIX[:2], score_half_width=0.02, race_tolerance=bad)
