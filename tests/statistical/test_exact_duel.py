"""duel exact answers: against the independent absorbing chains of test_duel_exact.py and against the kernel."""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.exact import exact_outcome
from sim.rulesets.duel import RULESET as DUEL
from tests.helpers import assert_fits_exact
from tests.statistical.test_duel_exact import CASES, chain_exact, one_wound_groups_exact, plan_of, unit

pytestmark = pytest.mark.statistical

#: Far beyond any of these fights: the independent chains are solved without a cap.
LONG = 1000


@pytest.mark.parametrize("case", range(len(CASES)))
def test_one_against_one_matches_the_absorbing_chain(case):
    """P(attacker wins), P(defender wins), P(draw) and the mean and variance of rounds, to 1e-9."""
    a, d, dual = CASES[case]
    absorb, mean_rounds, var_rounds = chain_exact(a, d, dual)
    ex = exact_outcome(DUEL, plan_of(a, d, options={"dual_wield": dual}), "end", LONG)
    assert abs(ex.win_probability("attacker") - absorb[0]) < 1e-9
    assert abs(ex.win_probability("defender") - absorb[1]) < 1e-9
    assert abs(ex.win_probability("draw") - absorb[2]) < 1e-9
    k = np.arange(len(ex.rounds))
    assert abs(ex.mean(ex.rounds) - mean_rounds) < 1e-9
    assert abs(float((k - mean_rounds) ** 2 @ ex.rounds) - var_rounds) < 1e-8
    assert ex.capped < 1e-12


@pytest.mark.parametrize("count_a, count_d, ws_a, ws_d, instant_a", [(3, 2, 3, 3, False), (2, 4, 4, 3, True)])
def test_small_groups_match_the_absorbing_chain(count_a, count_d, ws_a, ws_d, instant_a):
    a = unit("A", count=count_a, toughness=4, ws=ws_a, weapon=(5, 1) if instant_a else (3, 1))
    d = unit("D", count=count_d, toughness=5, ws=ws_d, weapon=(2, 1))
    p_a = 1.0 if instant_a else 1 - 2 / 6
    final, mean_rounds, _ = one_wound_groups_exact(count_a, count_d, ws_a, ws_d, p_a, 1 - 2 / 6)
    ex = exact_outcome(DUEL, plan_of(a, d), "end", LONG)
    lost_a, lost_d = np.zeros(count_a + 1), np.zeros(count_d + 1)
    for (fa, fd), p in final.items():
        lost_a[count_a - fa] += p
        lost_d[count_d - fd] += p
    assert np.abs(np.pad(ex.extras["models_lost_attacker"], (0, 8))[: count_a + 1] - lost_a).max() < 1e-9
    assert np.abs(np.pad(ex.extras["models_lost_defender"], (0, 8))[: count_d + 1] - lost_d).max() < 1e-9
    assert abs(ex.mean(ex.rounds) - mean_rounds) < 1e-9


GRID = [
    (unit("A", wounds=3), unit("D", wounds=2, toughness=6, weapon=(4, 2)), {}, {}, "end"),
    (unit("A", wounds=2, weapon=(3, 1), second=(3, 1)), unit("D", wounds=4, toughness=7, weapon=(5, 2)),
     {"attacker": {"space": 1}, "defender": {"space": 0}}, {}, "end"),
    (unit("A", wounds=3, toughness=4, ws=4, strength=5, weapon=None), unit("D", wounds=3, ws=4, weapon=(4, 1)),
     {"defender": {"prone": True}, "attacker": {"space": 0}}, {}, 2),
    (unit("A", wounds=2, weapon=(5, 1), second=(5, 1)), unit("D", wounds=3, toughness=5, weapon=(2, 2)),
     {"defender": {"space": 2}}, {"dual_wield": "extra_die", "toughness_die": "2d6"}, "end"),
    (unit("A", count=3, wounds=2, ws=4), unit("D", count=2, wounds=3, toughness=6, weapon=(4, 1)),
     {"defender": {"space": 1}}, {}, "end"),
    (unit("A", count=3, wounds=2, toughness=5, ws=2, weapon=(3, 1)), unit("D", wounds=4, ws=5, weapon=(3, 2)),
     {"attacker": {"space": 1}}, {"hit_assignment": "spread"}, 3),
]


@pytest.mark.parametrize("case", range(len(GRID)))
def test_exact_matches_the_kernel_in_distribution(case):
    a, d, states, options, rounds = GRID[case]
    plan = plan_of(a, d, states=states, options=options)
    ex = exact_outcome(DUEL, plan, rounds, 50)
    out = DUEL.simulate(plan, 200_000, np.random.default_rng(404 + case), rounds, 50)
    assert_fits_exact(out, ex, f"case {case}")


def test_groups_beyond_the_chain_have_no_exact_answer():
    _, plan = sim.build_matchup("duel", "Duellist", "Reaver", copies={"attacker": 10, "defender": 10})
    assert DUEL.exact_work(plan, "end", 50) is None
    with pytest.raises(sim.MatchupError, match="duel 10 v 10: the group chain .* beyond its size limits"):
        DUEL.exact(plan, "end", 50)
