"""Balance solver: known crossings on mecha, checked against exact probabilities from the spec's chart."""

from __future__ import annotations

from functools import partial

import math
from fractions import Fraction

import pytest

from analysis.runs.solver import BalanceSolution
from analysis.runs.solver import balance_pair as _balance_pair
from sim.errors import InputError
from sim.rng import BLOCK_TRIALS
from sim.roster import roster_from_dict

# These tests hold the solver to exact one-round answers, so they fight under the rules' own defaults
# (mecha: one round); the ruleset's balance settings have tests of their own (test_balance_settings.py).
balance_pair = partial(_balance_pair, rules_defaults=True, method="mc")  # the solver under Monte Carlo noise

PROFILES = {"AFS": (2, 0, "B"), "Nutrocker": (4, -2, "A"), "Sand Stalker": (1, 0, "C"), "Gustav": (3, 0, "A")}


def score(att: tuple[int, int, str], dfn: tuple[int, int, str]) -> Fraction:
    """Exact one-round score P(win) + P(draw)/2 of the attacker, from the spec's reconstructed chart."""
    def sev(defence: int, physical: int, letter: str) -> list[Fraction]:
        k = "ABCDE".index(letter)
        p = [Fraction(0)] * 3
        for die in range(1, 7):
            t = die + defence + physical
            p[0 if t >= 7 else 2 if t <= 2 + k else 1 if t == 3 + k else 0] += Fraction(1, 6)
        return p
    a, d = sev(*att), sev(*dfn)
    win = sum((a[i] * d[j] for i in range(3) for j in range(3) if i < j), Fraction(0))
    draw = sum((a[i] * d[i] for i in range(3)), Fraction(0))
    return win + draw / 2


def with_defence(name: str, v: int) -> tuple[int, int, str]:
    _, ph, letter = PROFILES[name]
    return v, ph, letter


def test_finds_the_defence_that_evens_a_matchup():
    unit, opp = "Sand Stalker", "Nutrocker"
    exact = {v: float(score(with_defence(unit, v), PROFILES[opp])) for v in range(0, 11)}
    best = min(exact, key=lambda v: abs(exact[v] - 0.5))
    # a unique best: the next candidate is far (several percentage points) from 50%
    second = sorted(abs(s - 0.5) for s in exact.values())[1]
    assert second > 0.05 and best == 4
    sol = balance_pair("mecha", unit, opp, "defence", lo=0, hi=10, trials=4 * BLOCK_TRIALS, seed=3)
    assert isinstance(sol, BalanceSolution) and sol.field == "defence"
    assert sol.value == best
    assert abs(sol.score - exact[best]) < 6 * max(sol.table.score_se[sol.table.value == best].iloc[0], 1e-9)
    for _, r in sol.table.iterrows():
        if r.score_se > 0:
            assert abs(r.score - exact[int(r.value)]) < 6 * r.score_se
        else:
            assert r.score == exact[int(r.value)]
    assert sol.crossing_lo <= best <= sol.crossing_hi
    assert best in sol.consistent
    assert sol.crossing_hi - sol.crossing_lo < 0.2


def test_interpolated_crossing_between_candidates():
    unit, opp = "Sand Stalker", "Nutrocker"
    s2, s6 = (float(score(with_defence(unit, v), PROFILES[opp])) for v in (2, 6))
    assert s2 < 0.5 < s6
    exact_cross = 2 + 4 * (0.5 - s2) / (s6 - s2)  # the linear interpolation the solver documents
    sol = balance_pair("mecha", unit, opp, "defence", values=[2, 6], side="attacker", trials=4 * BLOCK_TRIALS,
                       seed=5)
    assert sol.crossing_lo < exact_cross < sol.crossing_hi
    assert abs(sol.crossing - exact_cross) < 0.05
    assert sol.value == (2 if abs(s2 - 0.5) < abs(s6 - 0.5) else 6)


def test_no_crossing_in_range_gives_the_closest_value_and_nan():
    # Gustav beats Sand Stalker at every Gustav defence from 0: score > 50% throughout
    assert all(score(with_defence("Gustav", v), PROFILES["Sand Stalker"]) > Fraction(1, 2) for v in range(0, 4))
    sol = balance_pair("mecha", "Gustav", "Sand Stalker", "defence", lo=0, hi=3, trials=BLOCK_TRIALS, seed=1)
    assert sol.value == 0 and math.isnan(sol.crossing)
    assert sol.consistent == []


def test_fair_points_against_an_opponent():
    """Points use the one fair-price model: mecha (one a side) prices by the roster's calibration, with the
    opponent's value as the par (score 50% against it alone)."""
    from analysis.runs.matrix import matchup_matrix
    matchup_matrix = partial(matchup_matrix, rules_defaults=True)
    from analysis.stats.fair_prices import roster_calibration

    sol = balance_pair("mecha", "AFS", "Nutrocker", "points", trials=4 * BLOCK_TRIALS, seed=2)
    assert sol.field == "points" and "Fair price" in sol.model and "Nutrocker alone" in sol.model
    assert sol.crossing_lo < sol.value < sol.crossing_hi
    cal, reps, _ = roster_calibration(matchup_matrix("mecha", half_width=0.01, max_trials=32_768, seed=2))
    i, j = reps.index("AFS"), reps.index("Nutrocker")
    u_nut = cal.strengths[j] - cal.alpha - cal.beta * math.log(45.0)
    expected = math.exp((cal.strengths[i] - cal.alpha - u_nut) / cal.beta)
    assert sol.value == pytest.approx(expected, rel=0.02)  # AFS's strength re-measured on its own streams
    # Nutrocker is stronger than AFS: AFS is worth less than Nutrocker's 45 points against it
    assert sol.value < 45


def test_bad_input():
    with pytest.raises(InputError, match="not a numeric unit field"):
        balance_pair("mecha", "AFS", "Nutrocker", "armour", trials=1000)
    with pytest.raises(InputError, match="below"):
        balance_pair("mecha", "AFS", "Nutrocker", "defence", lo=5, hi=2, trials=1000)
    with pytest.raises(InputError, match="side"):
        balance_pair("mecha", "AFS", "Nutrocker", "defence", side="flank", trials=1000)
    with pytest.raises(InputError, match="can fight none"):
        balance_pair("mecha", "AFS", "Fliege", "defence", lo=1, hi=2, trials=1000)
    ros = roster_from_dict({"ruleset": "mecha", "unit": [
        {"name": "A", "defence": 2, "physical": 0, "armour": "B"},
        {"name": "B", "defence": 2, "physical": 0, "armour": "B"}]})
    with pytest.raises(InputError, match="has no points"):
        balance_pair("mecha", "A", "B", "points", roster=ros, trials=1000)
