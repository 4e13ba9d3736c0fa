"""warband exact answers (one against one): against the hand-derived chain of test_warband_exact.py and the kernel."""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.exact import exact_outcome
from sim.rulesets.warband import RULESET as WB
from tests.helpers import assert_fits_exact
from tests.statistical.test_warband_exact import CHAINS, W, markov_fight

pytestmark = pytest.mark.statistical


def _exact(att, dfn, rounds="end", max_rounds=50, states=None, overrides=None):
    _, plan = sim.build_matchup(WB, att, dfn, states=states, overrides=overrides, budget="none")
    return exact_outcome(WB, plan, rounds, max_rounds), plan


@pytest.mark.parametrize("att, dfn, sa, sd", CHAINS)
def test_one_against_one_matches_the_hand_derived_chain(att, dfn, sa, sd):
    """P(attacker wins), P(defender wins), P(capped), the rounds and the mean damage to the defender, to 1e-9."""
    p_a, p_d, capped, rounds, dmg_d = markov_fight(sa, sd)
    ex, _ = _exact(att, dfn)
    assert abs(ex.win_probability("attacker") - p_a) < 1e-9
    assert abs(ex.win_probability("defender") - p_d) < 1e-9
    assert abs(ex.capped - capped) < 1e-9
    assert np.abs(np.pad(ex.rounds, (0, 51 - len(ex.rounds))) - np.array(rounds, float)).max() < 1e-9
    assert abs(ex.mean(ex.damage_to_defender) - dmg_d) < 1e-9


GRID = [
    ("Mercenary Captain", "Swordsman", {}, "end", None),                   # sword and dagger: parries
    ("Champion", "Ogre Brute", {}, "end", None),                           # double-handed; a 2-attack batch
    ("Elf Blademaster", "Zealot", {"attacker": {"charging": False}}, "end", None),
    ("Pit Fighter", "Dwarf Clansman", {}, 3, None),                        # heavy morning star, 2 attacks
    ("Skaven Verminkin", "Spearman", {}, 2, None),                         # two daggers, a spear strikes first
    ("Youngblood", "Mercenary Warrior", {}, "end", {"defender": {"w": 2, "helmet": True}}),
]


@pytest.mark.parametrize("att, dfn, states, rounds, over", GRID)
def test_exact_matches_the_kernel_in_distribution(att, dfn, states, rounds, over):
    ex, plan = _exact(att, dfn, rounds, states=states, overrides=over)
    out = WB.simulate(plan, 200_000, np.random.default_rng(505), rounds, 50)
    assert_fits_exact(out, ex, f"{att} v {dfn}, rounds={rounds}")
    numpy_plan = WB.with_engine(plan, "numpy")                             # the vectorised kernel too
    out = WB.simulate(numpy_plan, 100_000, np.random.default_rng(506), rounds, 50)
    assert_fits_exact(out, ex, f"{att} v {dfn}, rounds={rounds} (vectorised)")


def test_groups_and_big_batches_have_no_exact_answer():
    _, plan = sim.build_matchup(WB, "Orc Boy", "Youngbloods", budget="none")
    assert plan.defender.count > 1  # the roster's Youngbloods are a group
    assert WB.exact_work(plan, "end", 50) is None
    _, plan = sim.build_matchup(WB, W(a=6), W(), budget="none")
    assert WB.exact_work(plan, "end", 50) is None
    with pytest.raises(sim.MatchupError, match="strikes 6 attacks a batch; an exact batch table holds at most 5"):
        WB.exact(plan, "end", 50)
