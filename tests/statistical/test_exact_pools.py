"""pools exact answers: against the independent oracles of test_pools_exact.py and against the kernel."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import sim
from sim.exact import exact_outcome
from sim.rulesets.pools import RULESET as POOLS
from tests.helpers import assert_fits_exact
from tests.statistical.test_pools_exact import CASES, CHAIN_CASES, chain, exact_single

pytestmark = pytest.mark.statistical


def _exact(att, dfn, states, options, rounds, max_rounds=50):
    _, plan = sim.build_matchup("pools", att, dfn, states=states, options=options, budget="none")
    return exact_outcome(POOLS, plan, rounds, max_rounds), plan


def _close(a, b, tol=1e-9):
    n = max(len(a), len(b))
    return np.abs(np.pad(np.asarray(a, float), (0, n - len(a))) - np.pad(np.asarray(b, float), (0, n - len(b)))).max() < tol


@pytest.mark.parametrize("case", list(CASES))
def test_one_engagement_matches_the_binomial_convolution(case):
    att, dfn, states, options, by_hand = CASES[case]
    ex, _ = _exact(att, dfn, states, options, 1)
    want = exact_single(att, dfn, states, by_hand)
    assert _close(ex.win, want["winner"]) and _close(ex.categories[0], want["cat_a"])
    assert _close(ex.categories[1], want["cat_d"])
    assert _close(ex.damage_to_attacker, want["dmg_a"]) and _close(ex.damage_to_defender, want["dmg_d"])
    assert _close(ex.extras["bases_lost_attacker"], want["lost_a"]) and _close(ex.extras["bases_lost_defender"], want["lost_d"])
    for side, key in (("attacker", "shaken_a"), ("defender", "shaken_d")):
        shaken = np.pad(ex.extras[f"shaken_{side}"], (0, 1))[1]  # P(Shaken at the end); 0 if never
        assert abs(shaken - want[key]) < 1e-9


@pytest.mark.parametrize("case", list(CHAIN_CASES))
def test_several_rounds_match_the_markov_chain(case):
    """The chain's joint (winner, rounds, damage, categories, Shaken, capped), marginal by marginal, to 1e-9."""
    att, dfn, states, options, rounds, max_rounds = CHAIN_CASES[case]
    ex, _ = _exact(att, dfn, states, options, rounds, max_rounds)
    joint = chain(att, dfn, states, options, rounds, max_rounds)
    marg = [defaultdict(float) for _ in range(8)]
    capped = 0.0
    for key, p in joint.items():
        for i in range(8):
            marg[i][key[i]] += p
        capped += p * key[8]

    def vec(m):
        out = np.zeros(max(m) + 1)
        for k, p in m.items():
            out[k] += p
        return out

    assert _close(ex.win, vec(marg[0])) and _close(ex.rounds, vec(marg[1]))
    assert _close(ex.damage_to_attacker, vec(marg[2])) and _close(ex.damage_to_defender, vec(marg[3]))
    assert _close(ex.categories[0], vec(marg[4])) and _close(ex.categories[1], vec(marg[5]))
    assert _close(ex.extras["shaken_attacker"], vec(marg[6])) and _close(ex.extras["shaken_defender"], vec(marg[7]))
    assert abs(ex.capped - capped) < 1e-9 and abs(ex.total - 1) < 1e-12


GRID = [
    ("Line Infantry", "Spear Wall", {}, 1, {}),
    ("Berserkers", "Goblin Horde", {"defender": {"cover": True}}, 2, {}),
    ("Light Cavalry", "Gun Crew", {"attacker": {"charge": False, "dash": True}}, "end", {"rally": True}),
    ("Iron Golems", "Battle Tank", {"defender": {"flanked": True}}, "end", {}),
    ("Iron Golems", "Berserkers", {"attacker": {"shaken": True}}, 4, {"target_dash_shift": -1}),
]


@pytest.mark.parametrize("att, dfn, states, rounds, options", GRID)
def test_exact_matches_the_kernel_in_distribution(att, dfn, states, rounds, options):
    ex, plan = _exact(att, dfn, states, options, rounds)
    out = POOLS.simulate(plan, 200_000, np.random.default_rng(303), rounds, 50)
    assert_fits_exact(out, ex, f"{att} v {dfn}, rounds={rounds}")


def test_big_blocks_over_many_rounds_are_left_to_monte_carlo():
    _, plan = sim.build_matchup("pools", "Goblin Horde", "Militia", budget=1000)
    assert POOLS.exact_work(plan, 1, 50) is not None       # one engagement is always exact
    assert POOLS.exact_work(plan, "end", 50) is None
    with pytest.raises(sim.MatchupError, match=r"pools \d+ v \d+ bases, rounds=end: .*Monte Carlo plays it"):
        POOLS.exact(plan, "end", 50)
