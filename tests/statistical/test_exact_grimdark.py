"""grimdark exact answers: against the independent chains of test_grimdark_exact.py, hand binomials and the kernel."""

from __future__ import annotations

import importlib
from fractions import Fraction as F

import numpy as np
import pytest

import sim
from sim.exact import exact_outcome
from sim.rulesets.grimdark import RULESET as GD
from tests.helpers import assert_fits_exact
from tests.statistical.test_grimdark_exact import (absorb, group, mixed_squads, mixed_step, monster_step, pmf, squad,
                                                   troopers_step)

pytestmark = pytest.mark.statistical
EXACT = importlib.import_module("sim.rulesets.grimdark.exact")


def _exact(att, dfn, rounds, *, budget="none", states=None, options=None, max_rounds=50):
    _, plan = sim.build_matchup(GD, att, dfn, budget=budget, states=states, options=options)
    return exact_outcome(GD, plan, rounds, max_rounds), plan


def _pad(a, n):
    return np.pad(np.asarray(a, float), (0, max(0, n - len(a))))


CHAINS = [
    # (attacker, defender, chain step, start, over, winner of a final state, attacker models lost)
    ("Troopers", "Troopers", troopers_step, (10, 10), lambda t: t[0] == 0 or t[1] == 0,
     lambda t: 1 if t[0] > 0 else 2 if t[1] > 0 else 0, lambda t: 10 - t[0]),
    (*mixed_squads(), mixed_step, (2, 1, 4), lambda t: t[0] + t[1] == 0 or t[2] == 0,
     lambda t: 1 if t[0] + t[1] > 0 else 2 if t[2] > 0 else 0, lambda t: 3 - t[0] - t[1]),
    ("Tactical squad", "Monster", monster_step, (10, 4), lambda s: s[0] == 0 or s[1] == 0,
     lambda s: 1 if s[0] > 0 else 2 if s[1] > 0 else 0, lambda s: 10 - s[0]),
]


@pytest.mark.parametrize("att, dfn, step, start, over, winner_of, lost_att", CHAINS, ids=["troopers", "mixed", "monster"])
def test_to_the_end_matches_the_independent_chains(att, dfn, step, start, over, winner_of, lost_att):
    """To 1e-9: winner, rounds (capped at 50 as the chain caps), attacker models lost."""
    ex, _ = _exact(att, dfn, "end")
    final = absorb(step, start, over)
    win = np.zeros(3)
    rounds = np.zeros(51)
    lost = np.zeros(20)
    for (t, r), p in final.items():
        win[0 if r == "capped" else winner_of(t)] += p
        rounds[50 if r == "capped" else r] += p
        lost[lost_att(t)] += p
    assert np.abs(ex.win - win).max() < 1e-9
    assert np.abs(_pad(ex.rounds, 51) - rounds).max() < 1e-9
    assert np.abs(_pad(ex.extras["models_lost_attacker"], 20) - lost).max() < 1e-9
    assert ex.truncated < 1e-13


def test_one_round_matches_hand_binomials():
    """Troopers v Troopers, one simultaneous step: 20 attacks and 10 at 1/6 each (as test_grimdark_exact.py)."""
    ex, _ = _exact("Troopers", "Troopers", 1)
    x, y = pmf(20, F(1, 6)), pmf(10, F(1, 6))
    to_def = np.zeros(11)
    to_att = np.zeros(11)
    att_wins = def_wins = 0.0
    for i, px in enumerate(x):
        for j, py in enumerate(y):
            dd, da = min(i, 10), min(j, 10)
            to_def[dd] += px * py
            to_att[da] += px * py
            att_wins += px * py * ((dd == 10 and da < 10) or (dd < 10 and da < 10 and dd > da))
            def_wins += px * py * ((da == 10 and dd < 10) or (dd < 10 and da < 10 and da > dd))
    assert np.abs(_pad(ex.damage_to_defender, 11) - to_def).max() < 1e-12
    assert np.abs(_pad(ex.damage_to_attacker, 11) - to_att).max() < 1e-12
    assert abs(ex.win_probability("attacker") - att_wins) < 1e-12
    assert abs(ex.win_probability("defender") - def_wins) < 1e-12


@pytest.mark.parametrize("instant_death", [True, False])
def test_instant_death_by_hand(instant_death):
    """A lone charging fist (3 attacks if alive after I4) against 3 two-wound veterans (6 attacks at 1/12 in I4):
    each fist hit (5/12) kills a veteran outright (2 wounds) with instant death, else takes 1 wound."""
    fist = squad("fist", group(1, a=2, save=3, weapon="power_fist"))
    vets = squad("vets", group(3, w=2, a=2))
    ex, _ = _exact(fist, vets, 1, options={"instant_death": instant_death})
    alive = (11 / 12) ** 6
    to_def = np.zeros(7)
    for k, pk in enumerate(pmf(3, F(5, 12))):
        to_def[2 * k if instant_death else k] += alive * pk
    to_def[0] += 1 - alive
    assert np.abs(_pad(ex.damage_to_defender, 7) - to_def).max() < 1e-12
    assert abs(ex.damage_to_attacker[1] - (1 - alive)) < 1e-12


GRID = [
    ("Troopers", "Tactical squad", {}, 1, "none"),
    ("Assault squad", "Terminators", {"defender": {"in_cover": True}}, 3, "none"),
    ("Stalkers", "Warrior brood", {"attacker": {"charging": False}}, "end", "none"),
    ("Champion", "Veteran squad", {}, "end", "none"),
    ("Horde mob", "Monster", {}, 2, "none"),
    ("Horde mob", "Veteran squad", {}, 1, 2000),         # 176 models against 100, the dense path
    ("Swarm", "Terminators", {"defender": {"in_cover": True}}, 1, 2000),
]


@pytest.mark.parametrize("att, dfn, states, rounds, budget", GRID)
def test_exact_matches_the_kernel_in_distribution(att, dfn, states, rounds, budget):
    ex, plan = _exact(att, dfn, rounds, budget=budget, states=states)
    out = GD.simulate(plan, 100_000, np.random.default_rng(202), rounds, 50)
    assert_fits_exact(out, ex, f"{att} v {dfn}, rounds={rounds}, budget={budget}")


@pytest.mark.parametrize("att, dfn, rounds", [("Troopers", "Troopers", "end"), ("Assault squad", "Horde mob", 3),
                                              ("Champion", "Warrior brood", "end"), ("Horde mob", "Terminators", 4)])
def test_the_small_and_the_dense_paths_agree(att, dfn, rounds, monkeypatch):
    small, plan = _exact(att, dfn, rounds, states={"defender": {"in_cover": True}})
    assert EXACT._small(plan)
    monkeypatch.setattr(EXACT, "SMALL_STATES", 0)
    dense, _ = _exact(att, dfn, rounds, states={"defender": {"in_cover": True}})
    for a, b in [(small.win, dense.win), (small.rounds, dense.rounds), (small.damage_to_attacker, dense.damage_to_attacker),
                 (small.damage_to_defender, dense.damage_to_defender), (small.categories[0], dense.categories[0])]:
        n = max(len(a), len(b))
        assert np.abs(_pad(a, n) - _pad(b, n)).max() < 1e-12


def test_partial_engagement_has_no_exact_chain():
    _, plan = sim.build_matchup(GD, "Tactical squad", "Troopers", budget="none", states={"defender": {"engaged": 4}})
    assert GD.exact_work(plan, 1, 50) is None
    with pytest.raises(sim.MatchupError, match="defender.engaged=4 .*every model engaged"):
        GD.exact(plan, 1, 50)
