"""The balance settings: what the balance commands fight under, and that ``fight`` keeps the rules' defaults."""

from __future__ import annotations

import json

import pytest

import sim
from analysis.cli import main
from analysis.runs.matrix import matchup_matrix
from analysis.runs.settings import run_settings
from sim.errors import InputError
from sim.ruleset import BalanceSettings


@pytest.mark.parametrize("rid", ["mecha", "grimdark", "duel", "pools", "warband"])
def test_every_shipped_ruleset_says_what_it_is_balanced_under_and_why(rid):
    b = sim.get_ruleset(rid).balance_defaults()
    assert isinstance(b, BalanceSettings) and b.why and all(w.strip() for w in b.why)
    run = run_settings(sim.get_ruleset(rid))
    assert (run.rounds, run.max_rounds, run.balance) == (b.rounds, b.max_rounds, True)


def test_grimdark_fights_to_the_end_on_a_frontage_and_pools_without_the_charge():
    g = run_settings(sim.get_ruleset("grimdark"))
    assert g.rounds == "end" and g.max_rounds >= 300
    assert all(g.states[s] == {"engaged": 10, "supporting": 10} for s in ("attacker", "defender"))
    p = run_settings(sim.get_ruleset("pools"))
    assert p.rounds == 1 and p.states == {"attacker": {"charge": False}}


def test_what_the_caller_gives_wins_state_by_state():
    rs = sim.get_ruleset("grimdark")
    run = run_settings(rs, rounds=2, max_rounds=80, states={"attacker": {"engaged": 3, "charging": "false"}})
    assert (run.rounds, run.max_rounds) == (2, 80)
    assert run.states["attacker"] == {"engaged": 3, "supporting": 10, "charging": "false"}
    assert run.states["defender"] == {"engaged": 10, "supporting": 10}
    rules = run_settings(rs, rules_defaults=True)
    assert (rules.rounds, rules.max_rounds, rules.states, rules.balance) == (rs.default_rounds, 50, {}, False)
    with pytest.raises(InputError, match="side must be attacker or defender"):
        run_settings(rs, states={"flank": {"engaged": 1}})
    with pytest.raises(InputError):
        run_settings(rs, max_rounds=0)


def test_a_matrix_fights_under_the_balance_settings_and_records_them():
    m = matchup_matrix("pools", units=["Line Infantry", "Militia"], half_width=None, max_trials=2000, seed=1,
                       budget="none")
    assert m.settings["rounds"] == 1 and m.settings["states"] == {"attacker": {"charge": False}}
    assert m.settings["balance_settings"]["source"] == "balance settings"
    r = m.results[("Line Infantry", "Militia")]
    assert r.settings["states"]["attacker"]["charge"] is False
    rules = matchup_matrix("pools", units=["Line Infantry", "Militia"], half_width=None, max_trials=2000, seed=1,
                           budget="none", rules_defaults=True)
    assert rules.results[("Line Infantry", "Militia")].settings["states"]["attacker"]["charge"] is True
    # no charge: the attacker's pool loses the +1 die per base, so it wins less often
    assert (m.long["p_attacker"].to_numpy() <= rules.long["p_attacker"].to_numpy() + 0.03).all()


def test_fight_keeps_the_rules_defaults_and_one_unit_a_side(capsys):
    # grimdark's roster has a budget of 2,000 points: fight still fields one squad a side, for one round
    assert main(["fight", "grimdark", "Troopers", "Swarm", "--trials", "2000", "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["copies"] == {"attacker": 1, "defender": 1} and out["rounds"] == 1 and out["budget"] is None
    assert main(["fight", "grimdark", "Troopers", "Swarm", "--trials", "2000", "--seed", "1", "--json",
                 "--budget", "400"]) == 0
    assert json.loads(capsys.readouterr().out)["copies"] == {"attacker": 10, "defender": 5}
