"""Stat sweeps: exact curves on mecha, common random numbers across values, marginal values."""

from __future__ import annotations

from functools import partial

import math
from fractions import Fraction

import pandas as pd
import pytest

import sim
from analysis.runs.matrix import cell_stream
from analysis.runs.sweep import SWEEP_COLUMNS, marginal_value, parse_range
from analysis.runs.sweep import sweep as _sweep
from sim.errors import InputError
from sim.rng import BLOCK_TRIALS
from tests.helpers import assert_mean, assert_proportion

# These tests hold the sweeps to exact one-round answers, so they fight under the rules' own defaults
# (mecha: one round); the ruleset's balance settings have tests of their own (test_balance_settings.py).
sweep = partial(_sweep, rules_defaults=True, method="mc")  # Monte Carlo mechanics (paired batches, streams)

TRIALS = 4 * BLOCK_TRIALS


def sev(defence: int, physical: int, letter: str) -> list[Fraction]:
    """Exact severity distribution (unharmed, immobilised, destroyed) of one roll, from the spec's chart."""
    k = "ABCDE".index(letter)
    p = [Fraction(0)] * 3
    for die in range(1, 7):
        t = die + defence + physical
        p[0 if t >= 7 else 2 if t <= 2 + k else 1 if t == 3 + k else 0] += Fraction(1, 6)
    return p


def one_round(att: tuple[int, int, str], dfn: tuple[int, int, str]) -> tuple[Fraction, Fraction, Fraction]:
    """Exact (P attacker wins, P defender wins, P draw) of one mecha round (lower severity wins)."""
    a, d = sev(*att), sev(*dfn)
    win = sum((a[i] * d[j] for i in range(3) for j in range(3) if i < j), Fraction(0))
    loss = sum((a[i] * d[j] for i in range(3) for j in range(3) if i > j), Fraction(0))
    return win, loss, 1 - win - loss


def test_parse_range():
    assert parse_range("defence=1..4") == ("defence", [1, 2, 3, 4])
    assert parse_range(" physical = -2..0 ") == ("physical", [-2, -1, 0])
    assert parse_range("ws=3..3") == ("ws", [3])
    for bad, match in [("defence", "FIELD=LO..HI"), ("defence=1-4", "FIELD=LO..HI"), ("defence=a..4", "integers"),
                       ("defence=4..1", "below"), ("=1..2", "no field")]:
        with pytest.raises(InputError, match=match):
            parse_range(bad)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return sweep("mecha", "AFS", "defence", range(0, 6), ["Nutrocker", "Sand Stalker"], trials=TRIALS, seed=7)


def test_curves_match_exact_probabilities(frame):
    assert list(frame.columns) == SWEEP_COLUMNS
    opp = {"Nutrocker": (4, -2, "A"), "Sand Stalker": (1, 0, "C")}
    for _, r in frame.iterrows():
        win, loss, draw = one_round((int(r.value), 0, "B"), opp[r.opponent])
        assert_proportion(round(r.p_win * r.trials), int(r.trials), float(win), what=f"{r.opponent} {r.value}")
        assert_proportion(round(r.p_loss * r.trials), int(r.trials), float(loss), what=f"{r.opponent} {r.value}")
        assert r.p_win_lo <= r.p_win <= r.p_win_hi
        assert r.score == pytest.approx(r.p_win + r.p_draw / 2)
        # damage dealt is the opponent's severity: mean P(M) + 2 P(D)
        q = sev(*opp[r.opponent])
        mean = float(q[1] + 2 * q[2])
        sd = math.sqrt(float(q[1] + 4 * q[2]) - mean ** 2)
        assert_mean(r.damage_dealt, mean, sd, int(r.trials), what=f"damage to {r.opponent}")


def test_each_value_runs_on_the_matrix_cell_stream():
    # from 16 blocks on, batches are whole blocks: the engine's own addressing
    n = 16 * BLOCK_TRIALS
    r = sweep("mecha", "AFS", "defence", [2, 3], ["Nutrocker"], trials=n, seed=7).iloc[1]
    f = sim.fight("mecha", "AFS", "Nutrocker", trials=n, seed=7, stream=cell_stream("AFS", "Nutrocker"),
                  overrides={"attacker": {"defence": 3}}, method="mc")
    assert r.p_win == f.win["attacker"] and r.damage_taken == f.damage("attacker")[0]
    assert r.damage_dealt == f.damage("defender")[0]


def test_steps_are_paired_and_smaller_than_independent_errors(frame):
    part = frame[frame.opponent == "Sand Stalker"].reset_index(drop=True)
    assert math.isnan(part.p_win_step[0]) and part.p_win_change[0] == 0
    for i in range(1, len(part)):
        assert part.p_win_step[i] == pytest.approx(part.p_win[i] - part.p_win[i - 1])
        assert part.p_win_change[i] == pytest.approx(part.p_win[i] - part.p_win[0])
        indep = math.sqrt(part.p_win_se[i] ** 2 + part.p_win_se[i - 1] ** 2)
        if part.p_win_step[i] != 0:
            assert part.p_win_step_se[i] < 0.8 * indep
    # exact one-point steps: AFS defence 1 -> 2 against Sand Stalker
    exact = one_round((2, 0, "B"), (1, 0, "C"))[0] - one_round((1, 0, "B"), (1, 0, "C"))[0]
    assert abs(part.p_win_step[2] - float(exact)) < 6 * part.p_win_step_se[2]


def test_marginal_value(frame):
    mv = marginal_value(frame).set_index("opponent")
    assert list(mv.index) == ["Nutrocker", "Sand Stalker", "(all)"]
    part = frame[frame.opponent == "Nutrocker"]
    slope = (part.p_win.iloc[-1] - part.p_win.iloc[0]) / 5
    assert mv.loc["Nutrocker", "win_points_per_point"] == pytest.approx(100 * slope)
    exact = (one_round((5, 0, "B"), (4, -2, "A"))[0] - one_round((0, 0, "B"), (4, -2, "A"))[0]) / 5
    assert abs(mv.loc["Nutrocker", "win_points_per_point"] - 100 * float(exact)) < 6 * mv.loc["Nutrocker", "se"]
    assert mv.loc["(all)", "win_points_per_point"] == pytest.approx(mv.iloc[:2]["win_points_per_point"].mean())
    fair = frame.attrs["fair"].set_index("value")["fair_points"]
    assert mv.loc["(all)", "fair_points_per_point"] == pytest.approx((fair.loc[5] - fair.loc[0]) / 5)
    assert mv.loc["(all)", "fair_lo"] <= mv.loc["(all)", "fair_points_per_point"] <= mv.loc["(all)", "fair_hi"]
    # per-opponent intervals are t intervals on the batch-means degrees of freedom
    from scipy import stats

    t = stats.t.ppf(0.975, mv.loc["Nutrocker", "df"])
    assert mv.loc["Nutrocker", "hi"] - mv.loc["Nutrocker", "win_points_per_point"] == pytest.approx(
        t * mv.loc["Nutrocker", "se"])


def test_fair_prices_follow_the_one_model(frame):
    """Without a budget (mecha) each value is priced by the roster's calibration, like a report's units."""
    from analysis.runs.balance import balance_summary
    from analysis.runs.matrix import matchup_matrix
    matchup_matrix = partial(matchup_matrix, rules_defaults=True, method="mc")

    fair = frame.attrs["fair"].set_index("value")
    assert (fair["method"] == "calibration").all()
    assert fair["fair_points"].dropna().is_monotonic_increasing  # defence is worth points
    # AFS's own value (defence 2) is priced like AFS in the balance of the same seed's matrix
    m = matchup_matrix("mecha", half_width=0.01, max_trials=32_768, seed=7, budget="none")
    afs = balance_summary(m).fair_points.set_index("unit").loc["AFS"]
    assert fair.loc[2, "fair_points"] == pytest.approx(afs["fair_points"], rel=0.02)
    assert (frame.groupby("value")["fair_points"].nunique() == 1).all()  # one price per value


def test_defender_side_uses_the_mirrored_stream():
    n = 16 * BLOCK_TRIALS
    f = sweep("mecha", "AFS", "defence", [2], ["Gustav"], side="defender", trials=n, seed=2)
    g = sim.fight("mecha", "Gustav", "AFS", trials=n, seed=2, stream=cell_stream("Gustav", "AFS"), method="mc")
    assert f.iloc[0].p_win == g.win["defender"] and f.iloc[0].p_loss == g.win["attacker"]


def test_whole_roster_and_unfightable_opponents():
    f = sweep("mecha", "AFS", "physical", [0, 1], trials=BLOCK_TRIALS, seed=2)
    assert set(f.opponent) == set(sim.default_roster("mecha").names)
    fl = f[f.opponent == "Fliege"]
    assert (fl.trials == 0).all() and fl.note.str.contains("cannot be engaged").all()
    assert "Fliege" not in set(marginal_value(f).opponent)


def test_workers_do_not_change_results():
    a = sweep("mecha", "AFS", "defence", [1, 2], ["Nutrocker", "Gustav"], trials=BLOCK_TRIALS, seed=5, rounds="end")
    b = sweep("mecha", "AFS", "defence", [1, 2], ["Nutrocker", "Gustav"], trials=BLOCK_TRIALS, seed=5, rounds="end",
              workers=2)
    assert a.equals(b)


@pytest.mark.parametrize("kwargs, match", [
    ({"field": "defence", "values": [11]}, "defence"),
    ({"field": "nonsense", "values": [1]}, "nonsense"),
    ({"field": "name", "values": ["x"]}, "not a stat"),
    ({"field": "defence", "values": []}, "no values"),
    ({"field": "defence", "values": [1], "side": "charger"}, "side: "),
    ({"field": "defence", "values": [1], "overrides": {"attacker": {"defence": 2}}}, "conflicts"),
    ({"field": "defence", "values": [1], "opponents": ["Fliege"]}, "can fight none"),
])
def test_bad_input(kwargs, match):
    kw = {"opponents": ["Gustav"], "trials": 1000, **kwargs}
    with pytest.raises(InputError, match=match):
        sweep("mecha", "AFS", kw.pop("field"), kw.pop("values"), **kw)
