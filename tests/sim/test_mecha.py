"""mecha: worked examples, chart data, validation, and kernel == reference on identical dice."""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.dice import ScriptedDice
from sim.errors import InputError, MatchupError
from sim.outcomes import ATTACKER, DEFENDER, DRAW, Outcomes, TrialOutcome
from sim.rulesets.mecha import RULESET as MECHA
from sim.rulesets.mecha import Chart, MechaUnit

AFS = MechaUnit("AFS", defence=2, physical=0, armour="B")
PKA = MechaUnit("PKA", defence=2, physical=0, armour="B")
NUTROCKER = MechaUnit("Nutrocker", defence=4, physical=-2, armour="A")
SAND_STALKER = MechaUnit("Sand Stalker", defence=1, physical=0, armour="C")
KROETE = MechaUnit("Kroete", defence=3, physical=0, armour="B")


def plan(att, dfn, states=None, options=None):
    return sim.build_matchup("mecha", att, dfn, states=states, options=options)[1]


# ------------------------------------------------------------------ worked examples (text 000)
def test_example_1_pka_and_afs():
    # PKA rolls 6 (+2 = 8: off the chart, no effect); AFS rolls 2 (+2 = 4: B4 = M).
    dice = ScriptedDice([6, 2])
    out = MECHA.resolve_one(plan(PKA, AFS), dice, 1, 50)
    dice.assert_exhausted()
    assert (out.category_attacker, out.category_defender) == (0, 1)
    assert out.winner == ATTACKER


def test_example_2_afs_attacks_nutrocker():
    # AFS rolls 1 (+2 = 3: B3 = destroyed); Nutrocker rolls 1 (+4 -2 = 3: A3 = M).
    dice = ScriptedDice([1, 1])
    out = MECHA.resolve_one(plan(AFS, NUTROCKER), dice, 1, 50)
    dice.assert_exhausted()
    assert (out.category_attacker, out.category_defender) == (2, 1)
    assert out.winner == DEFENDER


def test_example_3_sand_stalker_evades_kroete():
    # Only the evader rolls: 4 + 2 (evade) + 1 (defence) = 7, no effect; the Kroete does not roll.
    dice = ScriptedDice([4])
    out = MECHA.resolve_one(plan(KROETE, SAND_STALKER, states={"defender": {"evading": True}}), dice, 1, 50)
    dice.assert_exhausted()
    assert (out.category_attacker, out.category_defender) == (0, 0)
    assert out.winner == DRAW


def test_totals_below_one_read_the_lowest_column_and_seven_is_no_effect():
    chart = Chart.reconstructed()
    assert chart.lookup("A", -3) == chart.lookup("A", 1) == "D"
    assert all(chart.lookup(letter, 7) == "-" for letter in "ABCDE")


@pytest.mark.parametrize("chart", [Chart.reconstructed(), Chart.wide()])
def test_charts_keep_the_cells_the_text_fixes(chart):
    assert chart.lookup("B", 3) == "D" and chart.lookup("B", 4) == "M" and chart.lookup("A", 3) == "M"


def test_reconstructed_chart_is_the_spec_table():
    expected = {"A": "DDM---", "B": "DDDM--", "C": "DDDDM-", "D": "DDDDDM", "E": "DDDDDD"}
    assert {k: "".join(v) for k, v in Chart.reconstructed().rows.items()} == expected
    wide = {"A": "DDMM--", "B": "DDDMM-", "C": "DDDDMM"}
    assert {k: "".join(Chart.wide().rows[k]) for k in wide} == wide


# ------------------------------------------------------------------ rules on scripted dice
def test_immobilised_unit_rolls_at_minus_two():
    # Immobilised Nutrocker: 3 + 4 - 2 - 2 = 3 -> A3 = M (already immobilised: no further effect).
    dice = ScriptedDice([6, 3])
    out = MECHA.resolve_one(plan(AFS, NUTROCKER, states={"defender": {"immobilised": True}}), dice, 1, 50)
    assert out.category_defender == 1 and out.category_attacker == 0


def test_second_m_destroys_switch():
    p = plan(AFS, NUTROCKER, states={"defender": {"immobilised": True}}, options={"second_m_destroys": True})
    out = MECHA.resolve_one(p, ScriptedDice([6, 3]), 1, 50)
    assert out.category_defender == 2 and out.winner == ATTACKER


def test_evader_that_is_immobilised_stops_evading_next_round():
    evader = MechaUnit("Evader", defence=1, physical=0, armour="B")
    p = plan(AFS, evader, states={"defender": {"evading": True}})
    # round 1: evader rolls 1 -> 1+1+2 = 4 -> B4 = M (immobilised); round 2: both roll (attacker 6, evader 6).
    dice = ScriptedDice([1, 6, 6])
    out = MECHA.resolve_one(p, dice, 2, 50)
    dice.assert_exhausted()
    assert out.rounds == 2 and out.category_defender == 1


def test_fight_to_the_end_stops_at_first_destruction_and_caps():
    dice = ScriptedDice([6, 6, 1, 6])  # round 2: AFS rolls 1 -> 3 -> B3 = D
    out = MECHA.resolve_one(plan(AFS, NUTROCKER), dice, "end", 50)
    dice.assert_exhausted()
    assert out.rounds == 2 and out.category_attacker == 2 and out.winner == DEFENDER
    # Two units that can never be harmed are capped: a draw, flagged.
    tough = MechaUnit("Tough", defence=10, physical=0, armour="A")
    out = MECHA.resolve_one(plan(tough, tough), ScriptedDice([1] * 6), "end", 3)
    assert out.capped and out.winner == DRAW and out.rounds == 3


# ------------------------------------------------------------------ validation
def test_non_engageable_unit_is_refused_with_a_reason():
    flier = MechaUnit("Fliege", 2, 0, "C", engageable=False)
    with pytest.raises(MatchupError, match="cannot be engaged"):
        plan(AFS, flier)


def test_immobilised_unit_cannot_evade():
    with pytest.raises(MatchupError, match="cannot evade"):
        plan(AFS, NUTROCKER, states={"defender": {"evading": True, "immobilised": True}})


def test_attacker_cannot_evade():
    with pytest.raises(InputError, match="defender only"):
        plan(AFS, NUTROCKER, states={"attacker": {"evading": True}})


def test_armour_letter_must_be_in_the_chart():
    with pytest.raises(InputError, match="armour"):
        plan(MechaUnit("X", 2, 0, "F"), AFS)


# ------------------------------------------------------------------ kernel == reference, same dice
SCENARIOS = [
    (AFS, NUTROCKER, {}, {}, 1),
    (AFS, NUTROCKER, {}, {}, 3),
    (AFS, NUTROCKER, {}, {}, "end"),
    (PKA, AFS, {"attacker": {"immobilised": True}}, {}, "end"),
    (AFS, NUTROCKER, {"defender": {"immobilised": True}}, {"second_m_destroys": True}, "end"),
    (KROETE, SAND_STALKER, {}, {"chart": "wide"}, "end"),
    (MechaUnit("Tough", 8, 0, "A"), MechaUnit("Soft", 0, -2, "E"), {}, {}, 4),
    (MechaUnit("T1", 6, 0, "A"), MechaUnit("T2", 6, 0, "A"), {}, {}, "end"),  # capped every time
]


def _reference_rows(p, joint, rounds, max_rounds, evading=False):
    rows = []
    for k in range(joint.shape[0]):
        script = []
        for j in joint[k]:
            a, d = divmod(int(j), 6)
            script += [d + 1] if evading else [a + 1, d + 1]
        rows.append(MECHA.resolve_one(p, ScriptedDice(script), rounds, max_rounds))
    return rows


@pytest.mark.parametrize("att,dfn,states,options,rounds", SCENARIOS)
def test_kernel_equals_reference_on_identical_dice(att, dfn, states, options, rounds, rng):
    p = plan(att, dfn, states, options)
    max_rounds = 6
    limit = max_rounds if rounds == "end" else rounds
    n = 3000
    joint = rng.integers(0, 36, size=(n, limit))
    state, n_rounds = MECHA.final_states(p, n, lambda r, idx: joint[idx, r - 1], rounds, max_rounds)
    kernel = MECHA.outcomes_from_states(state, n_rounds, np.ones(n, np.int64), rounds, limit)
    reference = _reference_rows(p, joint, rounds, max_rounds)
    for k, ref in enumerate(reference):
        row = TrialOutcome(int(kernel.winner[k]), int(kernel.damage_to_attacker[k]), int(kernel.damage_to_defender[k]),
                           int(kernel.category_attacker[k]), int(kernel.category_defender[k]), int(kernel.rounds[k]),
                           bool(kernel.capped[k]))
        assert row.row() == ref.row(), f"trial {k}: kernel {row} != reference {ref}"


def test_kernel_equals_reference_for_an_evading_defender_single_round(rng):
    p = plan(KROETE, SAND_STALKER, {"defender": {"evading": True}})
    joint = rng.integers(0, 36, size=(500, 1))
    state, n_rounds = MECHA.final_states(p, 500, lambda r, idx: joint[idx, r - 1], 1, 50)
    ref = _reference_rows(p, joint, 1, 50, evading=True)
    assert [int(s) for s in state] == [3 * r.category_attacker + r.category_defender for r in ref]


def test_single_round_fast_path_counts_the_same_dice(rng):
    """The one-round path (bincount of joint dice) equals the general path on the same draws."""
    p = plan(AFS, NUTROCKER)
    fast = MECHA.simulate(p, 10_000, np.random.default_rng(7), 1, 50)
    joint = np.random.default_rng(7).integers(0, 36, size=10_000, dtype=np.int8)
    state, _ = MECHA.final_states(p, 10_000, lambda r, idx: joint[idx], 1, 50)
    expected = np.bincount(state, minlength=9)
    got = np.zeros(9, np.int64)
    got[3 * fast.category_attacker + fast.category_defender] = fast.weights
    np.testing.assert_array_equal(got, expected)


def test_outcomes_expand_to_one_row_per_trial():
    out = MECHA.simulate(plan(AFS, NUTROCKER), 1000, np.random.default_rng(1), "end", 50)
    assert isinstance(out, Outcomes) and out.n_trials == 1000 and len(out.expand()) == 1000
