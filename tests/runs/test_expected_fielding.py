"""Expected fielding: a budget buying k + f copies fields k + 1 in a fraction f of the fights, and what follows."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sim
from analysis.runs.balance import balance_summary
from analysis.runs.cells import WholeCell
from analysis.runs.fielding import copy_mixture
from analysis.runs.matrix import matchup_matrix
from analysis.stats.estimates import mix_rows, tally_row
from analysis.stats.expected import linear_crossing, unit_scores
from analysis.stats.pooling import twin_classes
from sim.stats import wilson_interval

UNITS = ["Champion", "Youngblood", "Ogre Brute"]


@pytest.mark.parametrize("copies", [1.0, 2.5, 6.6666666, 11.111111, 20.0, 3.0000000001])
def test_the_mixture_fields_the_expected_copies(copies):
    mix = copy_mixture(copies)
    assert sum(w for _, w in mix) == pytest.approx(1.0)
    assert sum(k * w for k, w in mix) == pytest.approx(copies)
    assert all(0 < w <= 1 for _, w in mix) and len(mix) <= 2


@pytest.fixture(scope="module")
def warband():
    return matchup_matrix("warband", units=UNITS, half_width=None, max_trials=4096, seed=5, budget=300)


def test_a_cell_is_the_weighted_sum_of_its_whole_copy_cells(warband):
    m = warband
    assert m.fielding == "expected" and m.copies["Champion"] == pytest.approx(300 / 45)
    row = m.long.set_index(["attacker", "defender"]).loc[("Champion", "Youngblood")]
    parts = [(WholeCell("Champion", ka, "Youngblood", kd), wa * wd) for ka, wa in copy_mixture(300 / 45)
             for kd, wd in copy_mixture(300 / 27)]
    assert len(parts) == 4
    expect = sum(w * tally_row(m.bank.tallies[c])["p_attacker"] for c, w in parts)
    assert row["p_attacker"] == pytest.approx(expect, abs=1e-12)
    assert row["fights"] == sum(m.bank.tallies[c].trials for c, _ in parts)
    assert row["attacker_copies"] == pytest.approx(300 / 45) and row["attacker_fielded"] == pytest.approx(300)


def test_the_mixture_is_what_drawing_the_copies_fight_by_fight_gives(warband):
    # Fight by fight: each side fields k + 1 copies with probability f (the definition); pooled, the win rate
    # must match the weighted mixture of the matrix cell within its noise.
    rng = np.random.default_rng(11)
    n = 60_000
    a, d = 300 / 45, 300 / 27
    ka, kd = math.floor(a), math.floor(d)
    up_a = rng.random(n) < a - ka
    up_d = rng.random(n) < d - kd
    assert abs(up_a.mean() - (a - ka)) < 5 * math.sqrt((a - ka) * (1 - a + ka) / n)  # P(k + 1) = f
    wins = 0
    for i, (xa, xd) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)]):
        count = int(np.count_nonzero((up_a == bool(xa)) & (up_d == bool(xd))))
        r = sim.fight("warband", "Champion", "Youngblood", trials=count, seed=100 + i,
                      copies={"attacker": ka + xa, "defender": kd + xd})
        wins += r.win_counts["attacker"]
    drawn = wins / n
    cell = warband.long.set_index(["attacker", "defender"]).loc[("Champion", "Youngblood")]
    se = math.sqrt(drawn * (1 - drawn) / n + cell["p_attacker_se"] ** 2)
    assert abs(drawn - cell["p_attacker"]) < 5 * se


def test_mixed_intervals_cover_the_truth():
    # two whole cells with known probabilities, mixed 0.3 / 0.7: the Wilson interval at the effective trials
    rng = np.random.default_rng(3)
    p, w, n = np.array([0.08, 0.55]), np.array([0.3, 0.7]), np.array([700, 1500])
    truth = float(w @ p)
    covered = 0
    for _ in range(2000):
        k = rng.binomial(n, p)
        rows = []
        for ki, ni in zip(k, n):
            lo, hi = wilson_interval(int(ki), int(ni))
            se = math.sqrt(ki / ni * (1 - ki / ni) / ni)
            rows.append({"trials": int(ni), "p_attacker": ki / ni, "p_attacker_se": se, "p_attacker_lo": lo,
                         "p_attacker_hi": hi, "p_defender": 0.0, "p_defender_se": 0.0, "p_defender_lo": 0.0,
                         "p_defender_hi": 0.0, "p_draw": 0.0, "p_draw_se": 0.0, "p_draw_lo": 0.0, "p_draw_hi": 0.0,
                         "damage_to_attacker": 0.0, "damage_to_attacker_se": 0.0, "damage_to_defender": 0.0,
                         "damage_to_defender_se": 0.0, "mean_rounds": 1.0, "mean_rounds_se": 0.0, "capped": 0.0})
        mixed = mix_rows(rows, w)
        covered += mixed["p_attacker_lo"] <= truth <= mixed["p_attacker_hi"]
    assert 0.93 <= covered / 2000 <= 0.985


def test_one_whole_cell_keeps_its_own_numbers():
    t = sim.fight("mecha", "AFS", "Nutrocker", trials=5000, seed=1, method="mc").tally
    row = tally_row(t)
    mixed = mix_rows([row], [1.0])
    for k in ("p_attacker", "p_attacker_lo", "p_attacker_hi", "p_attacker_se", "damage_to_defender"):
        assert mixed[k] == pytest.approx(row[k], abs=1e-12), k
    assert mixed["effective_trials"] == t.trials


def test_the_crossing_is_linear_between_whole_copies():
    assert linear_crossing(np.array([3.0, 4.0]), np.array([0.4, 0.6])) == pytest.approx(3.5)
    assert linear_crossing(np.array([3.0, 4.0, 5.0]), np.array([0.2, 0.45, 0.7])) == pytest.approx(4.2)
    assert linear_crossing(np.array([4.0, 5.0]), np.array([0.3, 0.4])) == pytest.approx(6.0)  # extrapolated
    assert linear_crossing(np.array([4.0, 5.0]), np.array([0.4, 0.3])) == math.inf  # more copies do not help


def test_a_direct_run_at_the_fair_price_scores_fifty_percent(warband):
    b = balance_summary(warband, seed=1)
    fair = b.fair_points.set_index("unit")
    unit = "Ogre Brute"
    ros = sim.default_roster("warband").subset(UNITS)
    import dataclasses

    repriced = ros.with_unit(dataclasses.replace(ros.unit(unit), points=float(fair.loc[unit, "fair_points"])))
    m = matchup_matrix("warband", repriced, half_width=None, max_trials=4096, seed=5, budget=300)
    s = unit_scores(m.long, twin_classes(m, list(m.units))).set_index("unit").loc[unit]
    assert abs(s["score"] - 0.5) < max(5 * s["score_se"], 1e-9), s.to_dict()


def test_no_unspent_points_under_expected_fielding(warband):
    assert (warband.long["attacker_fielded"] - 300.0).abs().max() < 1e-9
    fp = balance_summary(warband, seed=1).fair_points
    assert (fp["fielded"] - 300.0).abs().max() < 1e-9


@pytest.mark.slow
def test_a_unit_mispriced_by_15_percent_is_flagged_and_at_the_right_price_is_not(tmp_path):
    """On a roster of six at the default precision (+-1 pp, cap 32,768): the unit at its fair price is not
    repriced by the advice, the same unit 15% dearer is (overpriced). The three runs share one results store."""
    import dataclasses

    from analysis.runs.store import ResultsStore

    store = ResultsStore(tmp_path / "store.sqlite")
    base = sim.default_roster("duel").subset(["Sellsword", "Knight", "Reaver", "Assassin", "Militia", "Ironclad"])
    first = balance_summary(matchup_matrix("duel", base, seed=7, store=store))
    fair = float(first.fair_points.set_index("unit").loc["Ironclad", "fair_points"])

    def verdict(price: float) -> str:
        roster = base.with_unit(dataclasses.replace(base.unit("Ironclad"), points=price))
        fp = balance_summary(matchup_matrix("duel", roster, seed=7, store=store)).fair_points.set_index("unit")
        assert bool(fp.loc["Ironclad", "flagged"]) == (fp.loc["Ironclad", "verdict"] in ("overpriced", "underpriced"))
        return str(fp.loc["Ironclad", "verdict"])

    assert verdict(round(fair, 2)) == "fair"
    assert verdict(round(1.15 * fair, 2)) == "overpriced"
