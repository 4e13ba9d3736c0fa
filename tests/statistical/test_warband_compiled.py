"""warband: the compiled kernel (``sim/rulesets/warband/compiled.py``) against the vectorised kernels.

The compiled kernel plays the same rules warrior by warrior; the vectorised
kernels stay tested against the reference and the exact chains in their own
files, and the compiled one is tested against the same chains there (the group
chains of ``test_warband_groups_exact.py``, the 1 v 1 chain of
``test_warband_exact.py``, the capped chains). Here both kernels play the same
matchups, 200,000 fights each from different seeds, and every outcome field
must agree in distribution (two-sample chi-square, alpha 1e-6): one against one
and one against many, groups under both re-engaging rules, fights to the end
and capped at N rounds, with parries, criticals, helmets, Jump Up, strike-last
and strike-first weapons and Lightning Reflexes.
"""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.rulesets.warband import RULESET as WB
from tests.helpers import assert_same_distribution
from tests.statistical.test_warband_exact import W

N = 200_000
FIELDS = ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender", "rounds",
          "capped")

GRID = [
    # (attacker, defender, counts, options, rounds)
    ("Mercenary Warrior", "Youngblood", (1, 1), {}, "end"),
    ("Mercenary Captain", "Swordsman", (1, 1), {}, "end"),                  # parries, two weapons
    ("Ogre Brute", "Dwarf Clansman", (1, 1), {}, "end"),                    # several attacks, gromril, helmet
    ("Elf Blademaster", "Champion", (1, 1), {}, 3),                         # capped at 3 rounds
    ("Zealot", "Pit Fighter", (1, 1), {"fist_strength": "user"}, "end"),
    ("Youngblood", "Ogre Brute", (3, 1), {}, "end"),                        # 3 v 1
    ("Spearman", "Youngblood", (1, 3), {}, 4),                              # 1 v 3, a spear
    ("Mercenary Warrior", "Youngblood", (3, 3), {}, "end"),
    ("Swordsman", "Elf Blademaster", (3, 5), {}, "end"),                    # Step Aside, Lightning Reflexes
    ("Zealot", "Dwarf Clansman", (5, 3), {}, "end"),                        # Jump Up, heavy weapon in round 1
    ("Skaven Verminkin", "Dwarf Clansman", (4, 2), {}, "end"),
    ("Ogre Brute", "Skaven Verminkin", (2, 6), {}, "end"),                  # stars of big batches
    ("Champion", "Zealot", (4, 4), {}, 6),
    ("Mercenary Warrior", "Youngblood", (10, 10), {}, "end"),
    ("Mercenary Warrior", "Zealot", (3, 3), {"reengage": "every_round"}, "end"),
    ("Elf Blademaster", "Swordsman", (2, 3), {"reengage": "every_round"}, 5),
    (W(count=3, weapons=["double_handed"]), W(count=4, skills=["lightning_reflexes"]), (3, 4), {}, "end"),
    (W(count=3, weapons=["double_handed"], skills=["strongman"]), W(count=2, weapons=["spear"]), (3, 2), {}, "end"),
]


def _plans(att, dfn, counts, options):
    over = {"attacker": {"count": counts[0]}, "defender": {"count": counts[1]}}
    plan = sim.build_matchup(WB, att, dfn, overrides=over, options=options, budget="none")[1]
    return plan, WB.with_engine(plan, "numpy")


@pytest.mark.parametrize("att, dfn, counts, options, rounds", GRID)
def test_compiled_kernel_matches_the_vectorised_kernel(att, dfn, counts, options, rounds):
    compiled, vectorised = _plans(att, dfn, counts, options)
    assert compiled.kernel.loop is not None and vectorised.kernel.loop is None
    seed = 500 + 10 * counts[0] + counts[1]
    a = WB.simulate(compiled, N, np.random.default_rng(seed), rounds, 50)
    b = WB.simulate(vectorised, N, np.random.default_rng(seed + 1), rounds, 50)
    what = f"{att} x{counts[0]} v {dfn} x{counts[1]} {options} rounds={rounds}"
    for f in FIELDS:
        assert_same_distribution(np.bincount(getattr(a, f)), np.bincount(getattr(b, f)), what=f"{what}: {f}")
    for e in ("out_of_action_attacker", "out_of_action_defender"):
        assert_same_distribution(np.bincount(a.extras[e]), np.bincount(b.extras[e]), what=f"{what}: {e}")


def test_the_comparison_can_fail():
    """A one-Wound change on one side is told apart (the test above has the power to see a real change)."""
    compiled, _ = _plans("Mercenary Warrior", "Youngblood", (3, 3), {})
    _, other = _plans("Mercenary Warrior", W(count=3, w=2), (3, 3), {})
    a = WB.simulate(compiled, N, np.random.default_rng(1), "end", 50)
    b = WB.simulate(other, N, np.random.default_rng(2), "end", 50)
    with pytest.raises(AssertionError):
        assert_same_distribution(np.bincount(a.winner), np.bincount(b.winner), what="different defenders")


def test_which_kernel_plays_what():
    """The compiled kernel plays the default switches with tabulated batches; the switches and
    batches of more than five attacks (which roll dice) stay on the vectorised kernels."""
    assert _plans("Mercenary Warrior", "Youngblood", (10, 10), {})[0].kernel.loop is not None
    assert _plans("Mercenary Warrior", "Youngblood", (1, 1), {"reengage": "every_round"})[0].kernel.loop is not None
    for options in ({"all_alone": True}, {"rout": True}):
        plan = _plans(W(ld=7), W(ld=7), (3, 3), options)[0]
        assert plan.kernel.loop is None and plan.kernel.groups is not None
    six = W(ws=4, a=5, weapons=["dagger", "dagger"])
    assert _plans(six, "Swordsman", (2, 3), {})[0].kernel.loop is None


def test_a_run_depends_only_on_the_stream_and_the_count():
    compiled, _ = _plans("Champion", "Zealot", (4, 4), {})
    a = WB.simulate(compiled, 30_000, np.random.default_rng(3), "end", 50)
    b = WB.simulate(compiled, 30_000, np.random.default_rng(3), "end", 50)
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f))



@pytest.mark.parametrize("buffer, headroom", [(0, 1.0), (1 << 10, 3.0)])
def test_a_run_does_not_depend_on_the_buffer_sizes(monkeypatch, buffer, headroom):
    """The uniforms are read from the stream in order whatever the refills (the unused rest of one
    buffer starts the next): smaller or larger buffers give the same fights."""
    from sim.rulesets.warband import compiled as module

    plan, _ = _plans("Mercenary Warrior", "Youngblood", (10, 10), {})
    a = WB.simulate(plan, 5_000, np.random.default_rng(4), "end", 50)
    monkeypatch.setattr(module, "BUFFER", buffer)
    monkeypatch.setattr(module, "HEADROOM", headroom)
    b = WB.simulate(plan, 5_000, np.random.default_rng(4), "end", 50)
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
