"""The score target (issue 39): one bound on each cell's score variance puts every unit's score within its
half-width; cells fought for it stay bit-identical over workers and chunks; bad targets get one line."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import analysis.runs.allocation as allocation
from analysis.runs.allocation import (SAFETY, check_score_half_width, score_classes, score_target,
                                      short_of_score_target)
from analysis.runs.matrix import matchup_matrix
from analysis.stats.estimates import score_variance
from analysis.stats.expected import unit_scores
from sim.errors import InputError
from sim.stats import Z95


def test_the_cell_bound_is_the_hand_derived_one():
    # ten units, no twins, one a side: B = 9 / (2 * 10**2) of every unit
    t = score_target(0.005, [(1, 1.0)] * 10)
    assert t.cell_variance == pytest.approx(SAFETY * (0.005 / Z95) ** 2 / (9 / 200))
    assert t.keeps_cells and t.units == 10
    # a class of two twins: the others see it twice over (2**2), it sees the two singles
    t = score_target(0.01, [(2, 1.0), (1, 1.0), (1, 1.0)])
    assert t.cell_variance == pytest.approx(SAFETY * (0.01 / Z95) ** 2 / (5 / 32))
    # a unit at k + 1/2 copies mixes two whole-copy cells of weight 1/2: its noise reaches scores half as much
    t = score_target(0.01, [(1, 0.5), (1, 1.0)])
    assert t.cell_variance == pytest.approx(SAFETY * (0.01 / Z95) ** 2 / (0.5 / 8))
    # every unit a twin of every other: every score is 1/2 exactly, no cell needs fights for it
    assert score_target(0.01, [(3, 1.0)]).cell_variance is None
    # over the size that keeps cell precision, cells are fought for the scores alone
    assert not score_target(0.005, [(1, 1.0)] * (allocation.CELL_PRECISION_UNITS + 1)).keeps_cells


@pytest.mark.parametrize("bad", [0, -0.01, 0.2500001, 1, math.nan, math.inf, True, "0.01", None])
def test_a_bad_score_half_width_is_one_line(bad):
    with pytest.raises(InputError, match="score-half-width: got"):
        check_score_half_width(bad)


def test_the_loosest_target_is_accepted():
    assert check_score_half_width(0.25) == 0.25


def _stopped_trials(p_att: float, p_def: float, bound: float, step: int = 256) -> int:
    """The fights at which a cell with these probabilities meets ``bound`` on both sides (the stopping rule)."""
    draw = 1 - p_att - p_def
    n = step
    while max(score_variance(p_att, draw, n), score_variance(p_def, draw, n)) > bound:
        n += step
    return n


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 3), min_size=2, max_size=9), half_width=st.sampled_from([0.005, 0.01, 0.03]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_cells_at_the_bound_put_every_score_within_its_half_width(sizes, half_width, seed):
    """Whatever the probabilities and classes: cells that each stop at the bound give every unit's score
    (as the report computes it) a 95% half-width within the target."""
    rng = np.random.default_rng(seed)
    units = [f"u{i}t{k}" for i, w in enumerate(sizes) for k in range(w)]
    classes = {f"u{i}t0": [f"u{i}t{k}" for k in range(w)] for i, w in enumerate(sizes)}
    target = score_target(half_width, score_classes(units, {u: u.split("t")[0] for u in units}, None))
    if target.cell_variance is None:
        return
    rows = []
    for a in classes:
        for d in classes:
            p = rng.dirichlet([1, 1, 0.3])  # attacker, defender, draw
            n = _stopped_trials(p[0], p[1], target.cell_variance)
            rows.append({"attacker": a, "defender": d, "p_attacker": p[0], "p_defender": p[1], "p_draw": p[2],
                         "trials": n, "method": "mc"})
    scores = unit_scores(pd.DataFrame(rows), classes)
    assert not short_of_score_target(scores, half_width), scores


#: Six of duel's units: enough cells for several chunks and both workers, few enough for the default suite.
SIX = ["Sellsword", "Duellist", "Knight", "Reaver", "Ogre", "Militia"]


@pytest.fixture
def scores_alone(monkeypatch):
    """Every roster fought for its scores alone (the shipped rosters are under the size that keeps cells)."""
    monkeypatch.setattr(allocation, "CELL_PRECISION_UNITS", 1)


def test_cells_fought_for_the_scores_are_bit_identical_over_workers_and_chunks(scores_alone, monkeypatch):
    import analysis.runs.streaming as streaming

    run = dict(seed=7, score_half_width=0.004, max_trials=1 << 14, units=SIX)
    one = matchup_matrix("duel", workers=1, **run)
    assert one.settings["cell_half_width"] is None and one.settings["score_target"]["score_step_trials"] == 256
    monkeypatch.setattr(streaming, "STREAM_MAX_CELLS", 7)  # many chunks, on two workers
    two = matchup_matrix("duel", workers=2, **run)
    pd.testing.assert_frame_equal(one.long, two.long)
    # and the cells spent their fights by their share: lopsided cells stopped sooner than even ones (the cells
    # of units raced for their verdicts, :mod:`analysis.runs.racing`, were fought on past their share)
    raced = {u for r in one.settings["score_target"]["racing"]["rounds"] for u in r}
    long = one.long[~one.long["attacker"].isin(raced) & ~one.long["defender"].isin(raced)]
    fought = long[(long["method"] == "mc") & (long["attacker"] != long["defender"])]
    even = (fought["p_attacker"] - 0.5).abs() < 0.15
    assert fought[even]["fights"].mean() > 1.3 * fought[~even]["fights"].mean()


def test_a_small_roster_keeps_its_cells_at_their_own_half_width():
    m = matchup_matrix("duel", seed=3, half_width=0.02, score_half_width=0.005, max_trials=1 << 15, units=SIX)
    assert m.settings["cell_half_width"] == 0.02 and m.settings["score_target"]["cells_keep_half_width"]
    mc = m.long[m.long["method"] == "mc"]
    assert ((mc["p_attacker_hi"] - mc["p_attacker_lo"]) / 2 <= 0.02 + 1e-9).all()


def test_a_target_the_cap_cannot_reach_names_the_units(scores_alone):
    m = matchup_matrix("duel", seed=3, score_half_width=0.002, max_trials=512, units=SIX)
    short = short_of_score_target(allocation.matrix_scores(m), 0.002)
    assert short and all(hw > 0.002 for _, hw in short)
    assert {u for u, _ in short} <= set(m.units)
