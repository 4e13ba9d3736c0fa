"""Balance metrics on hand-built matrices whose answers are known by construction."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from analysis.cli.tables import balance_text
from analysis.report.writers import write_balance
from analysis.runs.balance import balance_summary
from analysis.runs.pricing import fair_points
from analysis.stats.dominance import dominated_units, intransitive_triples
from analysis.stats.equilibrium import nash_equilibrium
from analysis.stats.strength import Z, bradley_terry, mean_win_rate, payoff_matrix, side_averaged


def long_frame(units, p_att, p_def, trials=1_000_000, points=None):
    """A matrix long frame from exact attacker/defender win probabilities (draws: the rest)."""
    rows = []
    for i, a in enumerate(units):
        for j, d in enumerate(units):
            pa, pd_ = float(p_att[i][j]), float(p_def[i][j])
            rows.append({"attacker": a, "defender": d, "trials": trials, "p_attacker": pa, "p_defender": pd_,
                         "p_draw": 1 - pa - pd_,
                         "points_attacker": np.nan if points is None else points[i],
                         "points_defender": np.nan if points is None else points[j]})
    return pd.DataFrame(rows)


def bt_frame(strengths, h=0.0, trials=10**7, points=None, draw=0.0, units=None):
    """Cells whose score (win + draw/2) follows Bradley-Terry exactly: logit = s_a - s_d + h."""
    k = len(strengths)
    units = units or [f"U{i}" for i in range(k)]
    score = np.array([[expit(strengths[i] - strengths[j] + h) for j in range(k)] for i in range(k)])
    # a draw share of `draw` (where it fits) keeps the score: p_att = score - draw/2
    d = np.minimum(draw, 2 * np.minimum(score, 1 - score))
    return long_frame(units, score - d / 2, 1 - score - d / 2, trials, points), units


def sampled_bt(strengths, h, n, rng):
    """Binomially sampled counts from a Bradley-Terry model (no draws)."""
    k = len(strengths)
    units = [f"U{i}" for i in range(k)]
    pa = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            pa[i, j] = rng.binomial(n, expit(strengths[i] - strengths[j] + h)) / n
    return long_frame(units, pa, 1 - pa, n), units


RPS = ["rock", "paper", "scissors"]
# rock beats scissors, scissors beat paper, paper beats rock, 80 pp margins both ways
RPS_WIN = [[0.5, 0.1, 0.9], [0.9, 0.5, 0.1], [0.1, 0.9, 0.5]]


def rps_frame(trials=1_000_000):
    return long_frame(RPS, RPS_WIN, [[1 - x for x in r] for r in RPS_WIN], trials)


# ------------------------------------------------------------ side averages
def test_side_average_by_hand():
    # A attacking B: .6 / .3 / .1; B attacking A: .2 / .7 / .1 (A wins .7 as defender)
    frame = long_frame(["A", "B"], [[0.5, 0.6], [0.2, 0.5]], [[0.5, 0.3], [0.7, 0.5]], trials=10_000)
    sa = side_averaged(frame).set_index(["unit", "opponent"])
    assert sa.loc[("A", "B"), "p_win"] == pytest.approx(float((Fraction(6, 10) + Fraction(7, 10)) / 2))
    assert sa.loc[("A", "B"), "p_loss"] == pytest.approx(0.25)
    assert sa.loc[("B", "A"), "payoff"] == pytest.approx(-0.4)
    assert sa.loc[("A", "A"), "payoff"] == 0 and sa.loc[("A", "A"), "payoff_se"] == 0
    # se of the mean of two independent binomial estimates
    se = math.sqrt(0.6 * 0.4 / 10_000 + 0.7 * 0.3 / 10_000) / 2
    assert sa.loc[("A", "B"), "p_win_se"] == pytest.approx(se)
    rates = mean_win_rate(frame).set_index("unit")
    assert rates.loc["A", "win_rate"] == pytest.approx(0.65)  # mirror match left out
    assert rates.loc["A", "score"] == pytest.approx(0.65 + 0.1 / 2)
    assert rates.loc["A", "win_rate_lo"] == pytest.approx(0.65 - Z * se)


def test_payoff_is_antisymmetric():
    frame, _ = bt_frame([0.3, -0.1, 0.5, -0.7], h=0.4, draw=0.2)
    pay = payoff_matrix(frame).to_numpy()
    np.testing.assert_allclose(pay, -pay.T, atol=1e-12)


# --------------------------------------------------------- rock paper scissors
def test_rock_paper_scissors_uniform_nash_and_one_cycle():
    frame = rps_frame()
    weights = nash_equilibrium(payoff_matrix(frame))
    np.testing.assert_allclose(weights.to_numpy(), [1 / 3] * 3, atol=1e-9)
    assert abs(weights.attrs["value"]) < 1e-9
    cycles = intransitive_triples(frame)
    assert len(cycles) == 1
    row = cycles.iloc[0]
    assert [row.unit_a, row.unit_b, row.unit_c] == ["rock", "scissors", "paper"]
    assert row.weakest_link == pytest.approx(0.8)
    assert dominated_units(frame).empty


def test_nash_of_weighted_rps_is_known_mix():
    # antisymmetric [[0, a, -b], [-a, 0, c], [b, -c, 0]] has the equilibrium (c, b, a) / (a + b + c)
    a, b, c = 1.0, 2.0, 3.0
    pay = pd.DataFrame([[0, a, -b], [-a, 0, c], [b, -c, 0]], index=list("XYZ"), columns=list("XYZ"))
    np.testing.assert_allclose(nash_equilibrium(pay).to_numpy(), [c / 6, b / 6, a / 6], atol=1e-9)


def test_transitive_roster_nash_is_the_best_unit_and_others_dominated():
    frame, units = bt_frame([1.0, 0.5, 0.0, -0.5])
    summary = balance_summary(frame)
    assert summary.nash.set_index("unit")["weight"].to_dict() == {"U0": 1.0, "U1": 0.0, "U2": 0.0, "U3": 0.0}
    dom = summary.dominated.set_index("unit")
    assert set(dom.index) == {"U1", "U2", "U3"}
    assert dom.loc["U3", "dominated_by"] == "U0; U1; U2"
    assert summary.cycles.empty
    assert list(summary.rankings["unit"]) == units


def test_dominated_unit_found_among_trade_offs():
    # A and B trade blows (A beats C, B beats D); E is A made worse by 5 pp against everyone
    u = ["A", "B", "C", "D", "E"]
    win = np.array([[.50, .50, .70, .40, .55],
                    [.50, .50, .40, .70, .55],
                    [.30, .60, .50, .50, .35],
                    [.60, .30, .50, .50, .65],
                    [.45, .45, .65, .35, .50]])
    np.testing.assert_allclose(win + win.T, 1)  # a consistent table, no draws
    frame = long_frame(u, win, 1 - win, trials=200_000)
    dom = dominated_units(frame)
    assert list(dom["unit"]) == ["E"]
    assert dom.iloc[0]["dominated_by"] == "A"


def test_identical_units_do_not_dominate_each_other_by_chance(rng):
    # two copies of the same unit, binomial noise only: the Bonferroni margin keeps them apart
    false = 0
    for _ in range(20):
        frame, _ = sampled_bt([0.2, 0.2, -0.3, 0.4, 0.0, -0.5], 0.0, 65_536, rng)
        dom = dominated_units(frame)
        false += int(any("U0" in d.split("; ") for d in dom.loc[dom["unit"] == "U1", "dominated_by"]))
        false += int(any("U1" in d.split("; ") for d in dom.loc[dom["unit"] == "U0", "dominated_by"]))
        assert intransitive_triples(frame).empty
    assert false <= 1


# ---------------------------------------------------------------- Bradley-Terry
def test_bradley_terry_recovers_exact_strengths_and_attacker_advantage():
    truth = np.array([0.8, -0.3, 0.1, -0.6, 0.0])
    frame, units = bt_frame(truth, h=0.35, draw=0.3)
    fit, info = bradley_terry(frame, full=True)
    np.testing.assert_allclose(fit["strength"], truth - truth.mean(), atol=2e-4)
    assert info["attacker_advantage"] == pytest.approx(0.35, abs=2e-4)
    assert (fit["lo"] < fit["strength"]).all() and (fit["hi"] > fit["strength"]).all()
    assert fit["elo"].iloc[0] == pytest.approx(1500 + 400 / math.log(10) * fit["strength"].iloc[0])


def test_bradley_terry_recovers_sampled_strengths_within_intervals(rng):
    truth = np.array([0.5, -0.2, 0.1, -0.4, 0.0, 0.3])
    frame, _ = sampled_bt(truth, 0.2, 50_000, rng)
    fit, info = bradley_terry(frame, full=True)
    err = np.abs(fit["strength"].to_numpy() - (truth - truth.mean()))
    assert (err < 4 * fit["se"].to_numpy()).all(), (err, fit["se"].to_numpy())
    assert abs(info["attacker_advantage"] - 0.2) < 4 * info["attacker_advantage_se"]
    assert info["dispersion"] < 3  # binomial noise only: the model fits


def test_bradley_terry_stays_finite_when_a_unit_always_wins():
    win = [[0.5, 1.0, 1.0], [0.0, 0.5, 0.7], [0.0, 0.3, 0.5]]
    frame = long_frame(["god", "b", "c"], win, [[1 - x for x in r] for r in win], trials=10_000)
    fit = bradley_terry(frame)
    assert np.isfinite(fit["strength"]).all() and fit["strength"].iloc[0] > 3


def test_rps_strengths_equal_with_noise_intervals_and_the_misfit_beside_them():
    fit, info = bradley_terry(rps_frame(), full=True)
    np.testing.assert_allclose(fit["strength"], 0, atol=1e-6)
    assert info["dispersion"] > 100  # no strength order describes a cycle
    # the intervals are Monte Carlo noise only (10**6 fights a cell): narrow, not widened by the misfit
    assert (fit["hi"] - fit["lo"] < 0.01).all()
    misfit = info["misfit"]
    assert misfit["exceeds_noise"] and "misfits beyond Monte Carlo noise" in misfit["warning"]
    assert misfit["rms_pp"] == pytest.approx(100 * math.sqrt(6 * 0.4 ** 2 / 9), rel=1e-3)  # six cells 40 pp off
    assert abs(misfit["worst"]["residual_pp"].iloc[0]) == pytest.approx(40, rel=1e-3)


def test_a_model_that_fits_reports_no_misfit():
    rng = np.random.default_rng(3)
    frame, _ = sampled_bt([0.5, 0.0, -0.3, -0.6], 0.1, 40_000, rng)
    info = bradley_terry(frame, full=True)[1]["misfit"]
    assert not info["exceeds_noise"] and info["warning"] == ""
    assert info["rms_pp"] < 2 * info["noise_rms_pp"]


def test_strength_intervals_halve_when_trials_quadruple():
    rng = np.random.default_rng(5)
    s = [0.8, 0.2, 0.0, -0.4, -0.6]
    widths = []
    for n in (20_000, 80_000):
        fit = bradley_terry(sampled_bt(s, 0.1, n, rng)[0])
        widths.append((fit["hi"] - fit["lo"]).to_numpy())
    np.testing.assert_allclose(widths[1] / widths[0], 0.5, rtol=0.05)


# ---------------------------------------------------------------- fair points
def _par(values, weights=None):
    """The value that scores 50% on average against units of these values (logistic), by bisection."""
    from scipy.optimize import brentq

    v = np.asarray(values, float)
    w = np.ones(len(v)) if weights is None else np.asarray(weights, float)
    return brentq(lambda x: float(np.average(expit(x - v), weights=w)) - 0.5, -50, 50, xtol=1e-13)


def test_fair_points_recover_a_known_cost():
    # strengths proportional to log(true cost); one unit listed at twice its true cost
    cost = np.array([10.0, 15.0, 20.0, 30.0, 40.0, 60.0])
    listed = cost.copy()
    listed[3] = 60.0
    s = 1.2 * np.log(cost)
    frame, units = bt_frame(s - s.mean(), h=0.1, points=list(listed), draw=0.1)
    fair = fair_points(frame).set_index("unit")
    assert fair.attrs["beta"] == pytest.approx(1.2, rel=2e-3)
    assert (fair["method"] == "calibration").all()
    # values against the line: 0 for the fairly listed units, -1.2 ln 2 for the one listed at double;
    # the roster it must score 50% against holds that weak unit, so every fair price is cost * exp(-par / beta)
    par = _par([0, 0, 0, -1.2 * math.log(2), 0, 0])
    for i in range(6):
        assert fair.loc[units[i], "fair_points"] == pytest.approx(cost[i] * math.exp(-par / 1.2), rel=2e-3)
    assert fair.loc["U3", "flagged"] and fair.loc["U3", "verdict"] == "overpriced"
    for i in (0, 1, 2, 4, 5):
        assert not fair.loc[units[i], "flagged"] and fair.loc[units[i], "verdict"] == "fair"


def test_fair_points_for_an_unpriced_unit_and_no_points():
    s = 0.9 * np.log(np.array([10.0, 20.0, 40.0, 25.0]))
    frame, units = bt_frame(s - s.mean(), points=[10.0, 20.0, 40.0, np.nan])
    fair = fair_points(frame).set_index("unit")
    assert fair.loc["U3", "fair_points"] == pytest.approx(25.0, rel=2e-3)
    assert not fair.loc["U3", "flagged"] and np.isnan(fair.loc["U3", "points"])
    frame_np, _ = bt_frame([0.1, 0.0, -0.1])
    none = fair_points(frame_np)
    assert none["fair_points"].isna().all() and "at least three" in none.attrs["note"]


def test_fair_points_when_strength_falls_with_points():
    s = -np.log(np.array([10.0, 20.0, 40.0, 80.0]))
    frame, _ = bt_frame(s - s.mean(), points=[10.0, 20.0, 40.0, 80.0])
    fair = fair_points(frame)
    assert fair["fair_points"].isna().all() and not fair["flagged"].any()
    assert "slope <= 0" in fair.attrs["note"]


def test_fair_prices_beyond_the_roster_range_are_extrapolations_not_numbers():
    # one unit far stronger than anything its price explains: its price and bounds leave [min/4, 4 max]
    s = np.array([1.0 * math.log(c) for c in (10.0, 20.0, 40.0)] + [12.0])
    frame, _ = bt_frame(s - s.mean(), points=[10.0, 20.0, 40.0, 30.0])
    fair = fair_points(frame).set_index("unit")
    row = fair.loc["U3"]
    assert np.isnan(row["fair_points"]) and "above 160" in row["beyond"]
    assert row["flagged"] and row["verdict"] == "underpriced"
    finite = fair[["fair_points", "fair_lo", "fair_hi"]].to_numpy(float)
    assert np.nanmax(finite) <= 160 and np.nanmin(finite) >= 2.5


# ------------------------------------------------------------------ summary
def test_unfought_unit_is_left_out():
    frame, _ = bt_frame([0.4, 0.0, -0.4], points=[30.0, 20.0, 10.0])
    extra = [{"attacker": a, "defender": d, "trials": 0, "p_attacker": np.nan, "p_defender": np.nan,
              "p_draw": np.nan} for a, d in [("flier", "U0"), ("U0", "flier"), ("flier", "flier")]]
    frame = pd.concat([frame, pd.DataFrame(extra)], ignore_index=True)
    summary = balance_summary(frame)
    assert "flier" not in summary.units and "flier" not in set(summary.rankings["unit"])


def test_summary_writes_every_table_deterministically(tmp_path):
    frame, _ = bt_frame([0.6, 0.1, -0.2, -0.5], h=0.2, points=[40.0, 25.0, 20.0, 12.0], draw=0.2)
    frame.attrs["ruleset"] = "handmade"
    one = balance_summary(frame)
    paths = write_balance(one, tmp_path / "a")
    write_balance(balance_summary(frame), tmp_path / "b")
    names = sorted(p.name for p in paths)
    for n in ("rankings.csv", "nash.csv", "dominated.csv", "cycles.csv", "fair_points.csv",
              "points_efficiency.csv", "side_averaged.csv", "payoff.csv", "balance_model.txt"):
        assert n in names
        assert (tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes()
    assert "Fair price alone: the points at which the unit would score 50%" in one.model
    assert "calibration" in one.model
    text = balance_text(one)
    for heading in ("Rankings", "Nash", "Dominated", "Intransitive", "Fair prices"):
        assert heading in text
    assert one.ruleset == "handmade"
    eff = one.efficiency.set_index("unit")
    assert eff.loc["U0", "score_per_100_points"] == pytest.approx(100 * eff.loc["U0", "score"] / 40)


def test_an_exact_tie_with_zero_error_is_not_worse_for_dominance():
    # A and B both always beat D (p = 1, zero standard error): an exact tie. B beats C where A only draws level,
    # so B weakly dominates A; a strict "better by more than -z s.e." test would call the tie worse and miss it
    u = ["A", "B", "C", "D"]
    win = np.array([[.50, .40, .50, 1.0],
                    [.60, .50, .70, 1.0],
                    [.50, .30, .50, .80],
                    [0.0, 0.0, .20, .50]])
    np.testing.assert_allclose(win + win.T, 1)
    frame = long_frame(u, win, 1 - win, trials=200_000)
    dom = dominated_units(frame).set_index("unit")
    assert "A" in dom.index and dom.loc["A", "dominated_by"].split("; ")[0] == "B"
