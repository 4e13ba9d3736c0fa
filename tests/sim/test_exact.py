"""Exact answers, the API side: ExactOutcome, the chain helpers, choose_method, fight(method=...) and the CLI.

The distributions themselves are tested against independent chains and the
kernels in ``tests/statistical/test_exact_<id>.py``.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import sim
from analysis.cli import main
from sim.engine import run_tally
from sim.errors import InputError, MatchupError
from sim.exact import (MC_WORK_PER_FIGHT, MC_WORK_PER_RUN, ExactOutcome, choose_method, combine, exact_outcome,
                       from_rows, mc_work, propagate, trials_for_half_width)
from sim.outcomes import Outcomes
from sim.rng import root_sequence
from sim.rulesets.mecha import Mecha, MechaUnit
from tests.broken_rulesets import LEAKY_EXACT

MECHA = sim.get_ruleset("mecha")


AFS, NUTROCKER = MechaUnit("AFS", 2, 0, "B"), MechaUnit("Nutrocker", 4, -2, "A")


def _plan(rs=MECHA, a=AFS, d=NUTROCKER, **kw):
    return sim.build_matchup(rs, a, d, **kw)[1]


# ------------------------------------------------------------- ExactOutcome
def _outcome(**over):
    base = dict(win=[0.5, 0.25, 0.25], capped=0.1, categories=[[0.5, 0.5], [0.25, 0.75]],
                damage_to_attacker=[0.5, 0.5], damage_to_defender=[1.0], rounds=[0, 0.5, 0.5])
    return ExactOutcome(**(base | over))


def test_exact_outcome_is_checked_and_frozen():
    ok = _outcome()
    assert ok.problems() == [] and ok.check() is ok
    assert ok.mean(ok.rounds) == 1.5 and ok.win_probability("attacker") == 0.25
    with pytest.raises(ValueError):
        ok.win[0] = 1.0                               # read-only arrays
    assert any("sum to" in p for p in _outcome(win=[0.5, 0.25, 0.2]).problems())
    assert any("negative" in p for p in _outcome(damage_to_defender=[1.1, -0.1]).problems())
    assert any("damage to attacker sums" in p for p in _outcome(damage_to_attacker=[0.5, 0.4]).problems())
    assert any("capped" in p for p in _outcome(capped=0.6).problems())
    with pytest.raises(ValueError, match="not a distribution"):
        _outcome(win=[0.6, 0.25, 0.25]).check()


def test_from_rows_and_combine_by_hand():
    # three final states with probabilities 1/2, 1/3, 1/6
    out = Outcomes(np.array([1, 2, 0]), np.array([0, 2, 1]), np.array([2, 0, 0]), np.array([0, 1, 1]),
                   np.array([1, 0, 0]), np.array([1, 2, 3]), np.array([False, False, True]),
                   {"x": np.array([0, 0, 4])})
    p = np.array([1 / 2, 1 / 3, 1 / 6])
    ex = from_rows(out, p, n_categories=2, extra_names=("x",)).check()
    assert np.allclose(ex.win, [1 / 6, 1 / 2, 1 / 3]) and ex.capped == pytest.approx(1 / 6)
    assert np.allclose(ex.damage_to_attacker, [1 / 2, 1 / 6, 1 / 3]) and np.allclose(ex.rounds, [0, 1 / 2, 1 / 3, 1 / 6])
    assert np.allclose(ex.categories, [[1 / 2, 1 / 2], [1 / 2, 1 / 2]]) and np.allclose(ex.extras["x"], [5 / 6, 0, 0, 0, 1 / 6])
    halves = [from_rows(out, p * m, n_categories=2, extra_names=("x",)) for m in (np.array([1, 0, 0]), np.array([0, 1, 1]))]
    both = combine(halves).check()
    assert np.allclose(both.win, ex.win) and np.allclose(both.rounds, ex.rounds) and both.capped == ex.capped


def test_propagate_a_coin_chain_by_hand():
    # state 0 going; each round: 1/2 stay, 1/4 to absorbing 1, 1/4 to absorbing 2
    P = np.array([[0.5, 0.25, 0.25], [0, 1, 0], [0, 0, 1]])
    run = propagate(lambda p, r: p @ P, np.array([1.0, 0, 0]), np.array([False, True, True]), 3)
    rows = {(int(s), int(r), bool(a)): float(q) for s, r, a, q in zip(run.state, run.rounds, run.absorbed, run.prob)}
    expected = {(1, 1, True): 1 / 4, (2, 1, True): 1 / 4, (1, 2, True): 1 / 8, (2, 2, True): 1 / 8,
                (1, 3, True): 1 / 16, (2, 3, True): 1 / 16, (0, 3, False): 1 / 8}
    assert rows.keys() == expected.keys() and all(rows[k] == pytest.approx(v, abs=1e-15) for k, v in expected.items())


# ------------------------------------------------------------- choose_method
class Priced(Mecha):
    """mecha, with exact work set by the test."""

    id = "mecha-priced"
    work: int | None = 0

    def exact_work(self, plan, rounds, max_rounds):
        return self.work


class NoExact(Mecha):
    """A ruleset that never offers exact answers (the protocol's base methods)."""

    id = "mecha-no-exact"
    exact_work = sim.ruleset.Ruleset.exact_work
    exact = sim.ruleset.Ruleset.exact


def test_auto_chooses_exact_exactly_below_the_monte_carlo_work():
    rs = Priced()
    plan = _plan(rs)
    budget = MC_WORK_PER_RUN + MC_WORK_PER_FIGHT * 1000
    assert mc_work(1000) == budget
    for work, expected in ((budget, "exact"), (budget + 1, "mc"), (0, "exact"), (None, "mc")):
        rs.work = work
        assert choose_method(rs, plan, 1, 50, trials=1000) == expected, work
    rs.work = budget + 1
    assert choose_method(rs, plan, 1, 50, trials=1000, method="exact") == "exact"
    assert choose_method(rs, plan, 1, 50, trials=10**9, method="mc") == "mc"
    # a half-width stands for the fights it needs at p = 1/2 (at most max_trials)
    assert trials_for_half_width(0.01) == 9604 and trials_for_half_width(0.01, 0.1) == 3458
    rs.work = mc_work(9604)
    assert choose_method(rs, plan, 1, 50, half_width=0.01) == "exact"
    assert choose_method(rs, plan, 1, 50, half_width=0.01, max_trials=9603) == "mc"
    with pytest.raises(InputError):
        choose_method(rs, plan, 1, 50)
    with pytest.raises(InputError):
        choose_method(rs, plan, 1, 50, trials=10, method="fast")


def test_a_ruleset_without_exact_falls_back_to_monte_carlo():
    rs = NoExact()
    plan = _plan(rs)
    assert rs.exact_work(plan, 1, 50) is None
    assert choose_method(rs, plan, 1, 50, trials=10**12) == "mc"
    r = sim.fight(rs, AFS, NUTROCKER, trials=5000, seed=3)
    assert r.method == "mc" and r.trials == 5000 and r.exact is None
    with pytest.raises(MatchupError) as info:
        sim.fight(rs, AFS, NUTROCKER, method="exact")
    assert "\n" not in str(info.value) and "mecha-no-exact" in str(info.value) and "no exact chain" in str(info.value)


def test_exact_where_impossible_is_one_line_naming_the_matchup_and_why(capsys):
    with pytest.raises(MatchupError) as info:
        sim.fight("warband", "Champion", "Youngblood", budget=300, method="exact")
    assert str(info.value) == "warband 6 v 11: groups have no exact chain (one warrior against one only)"
    with pytest.raises(MatchupError, match=r"attacker\.engaged=3 .*every model engaged"):
        sim.fight("grimdark", "Tactical squad", "Troopers", budget="none", states={"attacker": {"engaged": 3}},
                  method="exact")
    code = main(["fight", "warband", "Champion", "Youngblood", "--budget", "300", "--method", "exact"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "groups have no exact chain" in err
    with pytest.raises(InputError, match="method"):
        sim.fight("mecha", "AFS", "Nutrocker", method="fast")


def test_exact_outcome_refuses_what_is_not_a_distribution():
    with pytest.raises(ValueError, match="not a distribution"):
        exact_outcome(LEAKY_EXACT, _plan(LEAKY_EXACT), 1, 50)


# ------------------------------------------------------------- fight(method=...)
def test_a_mecha_fight_is_exact_by_default_with_zero_width_intervals():
    r = sim.fight("mecha", "AFS", "Nutrocker")
    # one round, by hand: AFS rolls d6+2 on row B (D on <=3, M on 4): P(D) = 1/6, P(M) = 1/6; Nutrocker d6+2 on
    # row A (D on <=2, M on 3): P(M) = 1/6, never D. AFS wins only if Nutrocker is M and AFS unharmed: 1/6 * 4/6.
    assert r.method == "exact" and r.trials == 0 and r.tally is None
    assert r.win["attacker"] == pytest.approx(4 / 36, abs=1e-15)
    assert r.win["defender"] == pytest.approx(11 / 36, abs=1e-15)
    assert r.ci95["attacker"] == (r.win["attacker"], r.win["attacker"])
    assert r.damage("defender") == (pytest.approx(1 / 6), 0.0) and r.mean_rounds == (1.0, 0.0)
    assert r.outcomes_ci95["attacker"]["destroyed"][0] == r.outcomes_ci95["attacker"]["destroyed"][1]
    assert np.allclose(r.damage_distribution("attacker"), [4 / 6, 1 / 6, 1 / 6])
    with pytest.raises(InputError, match="exact result counted no fights"):
        r.win_counts
    d = json.loads(json.dumps(r.to_dict()))
    assert d["method"] == "exact" and d["trials"] == 0 and d["counts"] is None and d["truncated"] == 0.0
    assert d["provenance"]["method"] == "exact"
    assert "exact" in "\n".join(r.summary_lines())


def test_extras_of_an_exact_result():
    r = sim.fight("pools", "Line Infantry", "Spear Wall", budget="none")
    assert r.method == "exact"
    shaken = r.extra("shaken_attacker")
    assert shaken["se"] == 0.0 and shaken["ci95"] == [shaken["mean"], shaken["mean"]]
    lost = r.extra("bases_lost_defender")
    assert sum(lost["distribution"]) == pytest.approx(1, abs=1e-12)
    assert lost["mean"] == pytest.approx(np.arange(len(lost["distribution"])) @ lost["distribution"])


def test_monte_carlo_results_do_not_change():
    """method="mc" is the engine's tally, bit for bit, with every old property and key."""
    r = sim.fight("mecha", "AFS", "Nutrocker", trials=70_000, seed=7, rounds="end", method="mc")
    _, plan = sim.build_matchup("mecha", "AFS", "Nutrocker")
    t = run_tally(MECHA, plan, 70_000, root_sequence(7), rounds="end", max_rounds=50)
    assert r.method == "mc" and r.tally.same_as(t) and r.trials == 70_000
    assert r.win_counts == {"attacker": int(t.wins[1]), "defender": int(t.wins[2]), "draw": int(t.wins[0])}
    assert r.damage("attacker") == t.damage_to_attacker.mean_se(70_000)
    d = r.to_dict()
    assert d["method"] == "mc" and d["counts"] == r.win_counts and "truncated" not in d
    assert r.provenance["seed_entropy"] == 7


def test_cli_fight_marks_exact_numbers(capsys):
    assert main(["fight", "mecha", "AFS", "Nutrocker", "--rounds", "end"]) == 0
    out = capsys.readouterr().out
    assert "exact: the outcome distribution" in out and "trials" not in out
    assert out.count("exact") >= 7  # three results, their interval column, damage and rounds s.e.
    assert main(["fight", "mecha", "AFS", "Nutrocker", "--method", "mc", "--trials", "1000", "--seed", "1",
                 "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["method"] == "mc" and data["trials"] == 1000
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("result"))
    wins = next(line for line in lines if line.startswith("AFS wins"))
    assert header.rstrip().endswith("95% interval") and wins.rstrip().endswith("exact")
    assert len(header.rstrip()) == len(wins.rstrip())  # "exact" right-aligned in the interval column


def test_exact_answers_are_fractions_where_they_should_be():
    """A fight to the end of mecha against an independent reading: the attacker (defence 3, armour A) can
    never be harmed (its lowest total 4 is above A's M cell), the defender (defence 0, armour A) is
    destroyed on 1-2 and immobilised on 3 (then -2: destroyed on 1-4). Exact: P(attacker wins) = 1."""
    a = sim.unit("mecha", name="Gustav", defence=3, physical=0, armour="A")
    d = sim.unit("mecha", name="Weak", defence=0, physical=0, armour="A")
    r = sim.fight("mecha", a, d, rounds="end", max_rounds=3)
    # capped: the defender not destroyed after 3 rounds. States: U (unharmed) -> U 1/2, M 1/6, D 1/3; M -> M 1/3 (5, 6), D 2/3
    u, m = Fraction(1), Fraction(0)
    for _ in range(3):
        u, m = u / 2, u / 6 + m / 3
    p_going = u + m
    assert r.capped_share == pytest.approx(float(p_going), abs=1e-15)
    assert r.win["attacker"] == pytest.approx(float(1 - p_going), abs=1e-15)


def test_result_frame_of_an_exact_fight_has_zero_width_and_agrees_with_monte_carlo():
    from analysis import result_frame

    exact = result_frame(sim.fight("mecha", "AFS", "Nutrocker"))
    mc = result_frame(sim.fight("mecha", "AFS", "Nutrocker", method="mc", trials=200_000, seed=11))
    assert (exact["se"] == 0).all() and (exact["lo"] == exact["value"]).all() and (exact["hi"] == exact["value"]).all()
    assert (exact["n"] == 0).all() and list(exact["quantity"]) == list(mc["quantity"])
    assert exact.loc[0, "value"] == pytest.approx(4 / 36)  # AFS wins: both hit dice, worked by hand in test above
    se = mc["se"].where(mc["se"] > 0, 1e-9)
    assert ((exact["value"] - mc["value"]).abs() <= 6 * se + 1e-12).all()
