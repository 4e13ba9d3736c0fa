"""Exact cells in the analysis layers (issue 32): matrices, mixtures, balance, the CLI and plugins.

Expected numbers come from outside the code under test: the independent mecha
chain written in ``tests/statistical/test_mecha_exact.py`` (forward iteration in
fractions), the expected-fielding weights computed here from points and budget,
and Monte Carlo runs of the kernels.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import sim
from analysis.cli import main
from analysis.runs.balance import balance_summary
from analysis.runs.matrix import LONG_COLUMNS, matchup_matrix
from analysis.stats.estimates import exact_row, mix_rows, tally_row
from sim.errors import MatchupError
from sim.rulesets import _registry
from sim.rulesets.mecha import Mecha
from tests.statistical.test_mecha_exact import exact_fight, summarise

UNITS = ["AFS", "Nutrocker", "Sand Stalker", "Gustav"]


@pytest.fixture(scope="module")
def exact_matrix():
    return matchup_matrix("mecha", units=UNITS, seed=1, method="exact")


# ------------------------------------------------------------- matrices
def test_an_exact_matrix_is_the_chain_of_every_cell(exact_matrix):
    m = exact_matrix
    assert "method" in LONG_COLUMNS and list(m.long.columns) == LONG_COLUMNS
    ros = sim.default_roster("mecha")
    rounds, cap = m.settings["rounds"], m.settings["max_rounds"]
    assert (rounds, cap) == ("end", 50)  # mecha's balance settings
    for _, row in m.long.iterrows():
        final = exact_fight(ros.unit(row.attacker), ros.unit(row.defender), rounds=rounds, max_rounds=cap)
        win, _, _, rounds_dist = summarise(final)
        assert row.method == "exact" and row.trials == 0 and row.fights == 0
        for col, side in (("p_attacker", "attacker"), ("p_defender", "defender"), ("p_draw", "draw")):
            assert abs(row[col] - float(win[side])) < 1e-12, (row.attacker, row.defender, col)
            assert row[f"{col}_lo"] == row[col] == row[f"{col}_hi"] and row[f"{col}_se"] == 0
        assert abs(row.mean_rounds - float(sum(r * p for r, p in rounds_dist.items()))) < 1e-12
        assert row.damage_to_attacker_se == row.damage_to_defender_se == row.mean_rounds_se == 0
        res = m.results[(row.attacker, row.defender)]
        assert res.method == "exact" and res.tally is None and res.ci95["attacker"] == (row.p_attacker,) * 2


def test_an_exact_matrix_agrees_with_monte_carlo_within_its_noise(exact_matrix):
    mc = matchup_matrix("mecha", units=UNITS, seed=5, method="mc", half_width=0.01)
    assert (mc.long.method == "mc").all() and (mc.long.trials > 0).all()
    ex = exact_matrix.long.set_index(["attacker", "defender"])
    for _, row in mc.long.iterrows():
        n = row.trials
        for col in ("p_attacker", "p_defender", "p_draw"):
            p = ex.loc[(row.attacker, row.defender), col]
            # 6 standard errors at the exact p, plus one fight's worth for p near 0 or 1
            bound = 6 * math.sqrt(max(p * (1 - p), 0) / n) + 1 / n
            assert abs(row[col] - p) <= bound, (row.attacker, row.defender, col)


def test_auto_is_exact_for_mecha_and_monte_carlo_for_the_grimdark_frontage():
    m = matchup_matrix("mecha", units=UNITS[:2], seed=1)
    assert m.settings["method"] == "auto" and (m.long.method == "exact").all()
    g = matchup_matrix("grimdark", units=["Horde mob", "Troopers"], seed=1, half_width=0.05)
    assert g.budget is not None and (g.long.method == "mc").all() and (g.long.trials > 0).all()


def test_method_exact_where_a_cell_has_no_chain_is_one_line_and_exit_2(capsys):
    with pytest.raises(MatchupError, match=r"--method exact: .* v .*every model engaged"):
        matchup_matrix("grimdark", units=["Horde mob", "Troopers"], seed=1, method="exact", half_width=0.05)
    for args in (["matrix", "grimdark", "--units", "Horde mob,Troopers", "--method", "exact"],
                 ["matrix", "warband", "--method", "exact"],
                 ["balance", "duel", "--method", "exact"]):
        code = main(args)
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and err.count("\n") == 1, (args, err)
        assert err.startswith("meleelab: error: --method exact: ") and " v " in err
        assert "chain" in err or "engaged" in err, err


# ------------------------------------------------------------- mixtures
def test_a_mixture_of_exact_rows_is_exact_and_the_weighted_sum():
    a = sim.fight("mecha", "AFS", "Nutrocker")
    b = sim.fight("mecha", "Gustav", "Nutrocker")
    ra, rb = exact_row(a.exact), exact_row(b.exact)
    mixed = mix_rows([ra, rb], [0.25, 0.75])
    assert mixed["method"] == "exact" and mixed["trials"] == 0 and mixed["effective_trials"] == 0
    for col in ("p_attacker", "p_defender", "p_draw", "damage_to_attacker", "mean_rounds"):
        assert mixed[col] == pytest.approx(0.25 * ra[col] + 0.75 * rb[col], abs=1e-15)
        assert mixed[f"{col}_se"] == 0
    assert mixed["p_attacker_lo"] == mixed["p_attacker"] == mixed["p_attacker_hi"]
    # one Monte Carlo part: the mixture is Monte Carlo, its error that part's alone
    c = sim.fight("mecha", "AFS", "Nutrocker", trials=40_000, seed=3, method="mc")
    rc = tally_row(c.tally)
    part = mix_rows([ra, rc], [0.5, 0.5])
    assert part["method"] == "mc" and part["effective_trials"] == 4 * 40_000
    assert part["p_attacker_se"] == pytest.approx(0.5 * rc["p_attacker_se"])


def test_an_expected_fielding_cell_of_exact_whole_cells_is_exact():
    # 1000 / 115 = 8.70 and 1000 / 110 = 9.09 copies: every cell mixes four whole-copy cells
    m = matchup_matrix("pools", units=["Line Infantry", "Berserkers"], seed=1, method="exact")
    assert m.fielding == "expected" and m.budget is not None
    ros = sim.default_roster("pools")

    def mixture(unit):  # B / p copies: k + 1 with probability f, k otherwise (computed here, not by the code)
        c = m.budget / float(ros.unit(unit).points)
        k = math.floor(c)
        return [(k, 1 - (c - k)), (k + 1, c - k)] if c - k > 1e-12 else [(k, 1.0)]

    for _, row in m.long.iterrows():
        assert row.method == "exact" and row.trials == 0 and row.p_attacker_lo == row.p_attacker_hi
        want = {"attacker": 0.0, "defender": 0.0, "draw": 0.0}
        for ka, wa in mixture(row.attacker):
            for kd, wd in mixture(row.defender):
                if wa * wd == 0:
                    continue
                r = sim.fight("pools", row.attacker, row.defender, copies={"attacker": ka, "defender": kd},
                              method="exact", rounds=m.settings["rounds"], max_rounds=m.settings["max_rounds"],
                              states=m.settings["states"])  # pools' balance settings (no charge)
                for k in want:
                    want[k] += wa * wd * r.win[k]
        assert row.p_attacker == pytest.approx(want["attacker"], abs=1e-12)
        assert row.p_defender == pytest.approx(want["defender"], abs=1e-12)
        assert row.p_draw == pytest.approx(want["draw"], abs=1e-12)


# ------------------------------------------------------------- balance
def test_balance_of_an_exact_matrix_has_no_monte_carlo_part():
    one = matchup_matrix("mecha", seed=1)
    two = matchup_matrix("mecha", seed=2)
    assert (one.long.method == "exact").all()
    s1, s2 = balance_summary(one, seed=7), balance_summary(two, seed=7)
    # the matrix seed changes nothing: no noise anywhere
    assert s1.payoff.equals(s2.payoff)
    assert (s1.side_averaged["payoff_se"] == 0).all() and (s1.side_averaged["p_win_se"] == 0).all()
    assert (s1.bradley_terry["se"] == 0).all() and (s1.bradley_terry["lo"] == s1.bradley_terry["hi"]).all()
    assert s1.nash.equals(s2.nash)
    assert np.array_equal(s1.fair_points["fair_points"].to_numpy(), s2.fair_points["fair_points"].to_numpy(),
                          equal_nan=True)
    # the fair-price intervals are the roster resampling alone: the same with the same resampling seed
    assert np.array_equal(s1.fair_points[["fair_lo", "fair_hi"]].to_numpy(float),
                          s2.fair_points[["fair_lo", "fair_hi"]].to_numpy(float), equal_nan=True)


# ------------------------------------------------------------- plugins
class NoExact(Mecha):
    """A plugin ruleset that never offers exact answers (the protocol's base methods)."""

    id = "mecha-no-exact"
    exact_work = sim.ruleset.Ruleset.exact_work
    exact = sim.ruleset.Ruleset.exact


def test_a_plugin_without_exact_falls_back_to_monte_carlo(monkeypatch):
    rs = NoExact()
    monkeypatch.setitem(_registry().rulesets, rs.id, rs)
    roster = dataclasses.replace(sim.default_roster("mecha"), ruleset=rs.id)
    m = matchup_matrix(rs, roster, units=UNITS[:2], seed=1, half_width=0.02)
    assert (m.long.method == "mc").all() and (m.long.trials > 0).all()
    with pytest.raises(MatchupError, match="no exact chain"):
        matchup_matrix(rs, roster, units=UNITS[:2], seed=1, method="exact")


def test_exact_cells_are_stored_bit_for_bit_and_a_rerun_builds_no_plan_for_them(tmp_path, monkeypatch):
    """A cell answered exactly costs its plan (the chain) and its propagation: stored too, as float.hex text."""
    import json
    import sqlite3

    from analysis.runs.matrix import matchup_matrix
    from analysis.runs.store import ResultsStore
    from analysis.runs.store_check import check_exact_row, exact_to_json
    from sim.rulesets import get_ruleset
    from sim.rulesets.mecha import Mecha

    rs = get_ruleset("mecha")
    kw = dict(units=["AFS", "Nutrocker", "Gustav"], seed=3, budget="none", method="auto")
    with ResultsStore(tmp_path / "s.sqlite") as store:
        first = matchup_matrix("mecha", store=store, **kw)
        assert (first.long["method"] == "exact").all() and len(store) == 9
    outcome = next(iter(first.results.values())).exact
    back = check_exact_row(json.loads(json.dumps(exact_to_json(outcome))), len(rs.outcome_categories),
                           tuple(e.name for e in rs.extras))
    for name in ("win", "categories", "damage_to_attacker", "damage_to_defender", "rounds"):
        assert getattr(back, name).tobytes() == getattr(outcome, name).tobytes(), name
    built = []
    prepare = Mecha.prepare
    monkeypatch.setattr(Mecha, "prepare", lambda self, m: built.append(m) or prepare(self, m))
    with ResultsStore(tmp_path / "s.sqlite") as store:
        again = matchup_matrix("mecha", store=store, **kw)
        assert len(store.reused) == 9
    assert built == [] and again.long.equals(first.long) and again.resumed_cells == 9
    # --method mc asks for other cells (sampled ones): none of these is handed out
    with ResultsStore(tmp_path / "s.sqlite") as store:
        assert matchup_matrix("mecha", store=store, **{**kw, "method": "mc", "max_trials": 500}).resumed_cells == 0
    # an edited exact row is ignored and computed again
    with sqlite3.connect(tmp_path / "s.sqlite") as con:
        con.execute("UPDATE cells SET tally = replace(tally, '0x1.', '0x1.1') WHERE tally LIKE '{\"exact\"%'")
    with ResultsStore(tmp_path / "s.sqlite") as store:
        third = matchup_matrix("mecha", store=store, **kw)
        assert third.resumed_cells == 0 and len(store.ignored) == 9
    assert third.long.equals(first.long)
