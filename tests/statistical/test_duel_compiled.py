"""The compiled ``duel`` group kernel (:mod:`sim.rulesets.duel.compiled`) against the vectorised one.

Both play the same rules from the same exact tables, each with its own draws, so they
must agree in distribution on every field the results hold. The vectorised kernel is
itself held to the exact group chains and to the general (hit-by-hit) kernel in
``test_duel_exact.py``, where the compiled one is held to them too.
"""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

from sim.rulesets.duel import compiled as duel_compiled
from sim.rulesets.duel.tables import build_tables
from sim.rulesets.duel import RULESET
from tests.helpers import assert_same_distribution
from tests.statistical.test_duel_exact import plan_of, unit

pytestmark = pytest.mark.statistical

N = 100_000
FIELDS = ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender", "rounds",
          "capped")
EXTRAS = ("misted_attacker", "misted_defender", "models_lost_attacker", "models_lost_defender")

GRID = [
    # attacker, defender, states, options, rounds[, max_rounds (default 50)]
    (unit("A", count=1, wounds=5, toughness=4, weapon=(3, 1)), unit("D", count=1, wounds=4, weapon=(3, 2)),
     {}, {}, "end"),                                                                    # 1 v 1, no chain
    (unit("A", count=2, wounds=2, toughness=4, weapon=(3, 1)), unit("D", count=1, wounds=3, weapon=(4, 1)),
     {}, {}, "end"),                                                                    # 2 v 1
    (unit("A", count=1, wounds=4, toughness=5, ws=4, weapon=(4, 2)), unit("D", count=3, wounds=2, weapon=(3, 1)),
     {}, {}, "end"),                                                                    # 1 v 3, Damage 2
    (unit("A", count=3, wounds=2, toughness=4, weapon=(5, 1)), unit("D", count=5, wounds=2, toughness=5),
     {}, {}, "end"),                                                                    # 3 v 5, instant death
    (unit("A", count=5, wounds=1, toughness=3, ws=2, weapon=(2, 1)), unit("D", count=3, wounds=3, weapon=(3, 2)),
     {"defender": {"space": 1}}, {}, "end"),                                            # 5 v 3, little space
    (unit("A", count=4, wounds=2, weapon=(3, 1), second=(3, 1)), unit("D", count=6, wounds=2, weapon=(3, 1)),
     {}, {"dual_wield": "both"}, "end"),                                                # two weapons: die and hit
    (unit("A", count=6, wounds=2, ws=4, weapon=(3, 1)), unit("D", count=4, wounds=3, weapon=(3, 1)),
     {"defender": {"prone": True}}, {"toughness_die": "2d6"}, 3),                       # prone, 2d6, capped
    (unit("A", count=7, wounds=3, ws=5, weapon=(4, 1)), unit("D", count=7, wounds=3, ws=3, weapon=(4, 1)),
     {"defender": {"initiative": True}}, {}, 2),                                        # 7 v 7, capped at 2
    (unit("A", count=10, wounds=2, weapon=(3, 1)), unit("D", count=10, wounds=2, weapon=(3, 1)),
     {}, {}, "end"),                                                                    # 10 v 10
    (unit("A", count=9, wounds=3, ws=5, weapon=(3, 1), second=(3, 1)),
     unit("D", count=7, wounds=4, toughness=6, weapon=(5, 2)), {}, {}, "end"),          # misted one way
    (unit("A", count=20, wounds=3, ws=4, weapon=(4, 1)), unit("D", count=20, wounds=2, weapon=(3, 1)),
     {}, {}, "end"),                                                                    # 20 v 20
    (unit("A", count=12, wounds=1, weapon=(3, 1)), unit("D", count=20, wounds=2, toughness=4, weapon=(3, 1)),
     {"attacker": {"space": 0}}, {}, "end"),                                            # long ganged lines
    (unit("A", count=8, wounds=3, weapon=(3, 1)), unit("D", count=6, wounds=4, ws=4, weapon=(3, 1)),
     {}, {}, "end", 3),                                                                 # stopped by max_rounds
    (unit("A", count=3, wounds=3, ws=4, weapon=(3, 1)), unit("D", count=6, wounds=2, weapon=(3, 1), second=(3, 1)),
     {}, {"dual_wield": "extra_die"}, "end"),                                           # the ganged side's extra dice
    (unit("A", count=4, wounds=3, weapon=(3, 1)), unit("D", count=7, wounds=2, weapon=(3, 1)),
     {"defender": {"prone": True}}, {}, "end"),                                         # the ganged side prone
]
TEN, TWENTY, LINES = 8, 10, 11                  # 10 v 10, 20 v 20, 12 v 20 against a wall
assert [(GRID[i][0].count, GRID[i][1].count) for i in (TEN, TWENTY, LINES)] == [(10, 10), (20, 20), (12, 20)]


def _plans(a, d, states, options):
    plan = plan_of(a, d, states=states, options=options)
    grouped = dataclasses.replace(plan, chain=None, tables=build_tables(plan))
    return grouped, RULESET.with_engine(grouped, "numpy")


def _field(out, name):
    return out.extras[name] if name in out.extras else getattr(out, name)


def _same(a, b, what):
    """Every field's distribution, and two joint ones (the damage both ways; the models each side lost)."""
    for f in FIELDS + EXTRAS:
        assert_same_distribution(np.bincount(_field(a, f)), np.bincount(_field(b, f)), what=f"{what}: {f}")
    for x, y in (("damage_to_attacker", "damage_to_defender"), ("models_lost_attacker", "models_lost_defender")):
        width = 1 + max(_field(a, y).max(), _field(b, y).max())
        joint = [np.bincount(_field(o, x).astype(np.int64) * width + _field(o, y)) for o in (a, b)]
        assert_same_distribution(*joint, what=f"{what}: {x} and {y}")


@pytest.mark.parametrize("case", range(len(GRID)))
def test_compiled_kernel_matches_the_vectorised_kernel(case):
    a, d, states, options, rounds, *cap = GRID[case]
    max_rounds = cap[0] if cap else 50
    compiled, vectorised = _plans(a, d, states, options)
    assert compiled.tables is not None and duel_compiled.available()
    out_c = RULESET.simulate(compiled, N, np.random.default_rng(800 + case), rounds, max_rounds)
    out_v = RULESET.simulate(vectorised, N, np.random.default_rng(900 + case), rounds, max_rounds)
    if cap:
        assert 0.05 < out_v.capped.mean() < 0.95       # the case tells capped fights apart
    _same(out_c, out_v, f"case {case} ({a.count} v {d.count}, {states}, {options}, rounds={rounds}, "
                        f"max_rounds={max_rounds})")


def test_the_comparison_can_fail():
    """One more wound on the defenders is told apart (the test above has the power to see a real change)."""
    a, d, states, options, rounds = GRID[TEN]
    compiled, _ = _plans(a, d, states, options)
    _, other = _plans(a, dataclasses.replace(d, wounds=d.wounds + 1), states, options)
    out_c = RULESET.simulate(compiled, N, np.random.default_rng(1), rounds, 50)
    out_o = RULESET.simulate(other, N, np.random.default_rng(2), rounds, 50)
    with pytest.raises(AssertionError):
        _same(out_c, out_o, "one more wound")


def test_which_kernel_plays_what(monkeypatch):
    """The compiled kernel plays the group kernel's fights; ``with_engine(plan, 'numpy')``, and a machine
    without Numba, the vectorised one."""
    duel = importlib.import_module("sim.rulesets.duel")   # (``sim.rulesets.duel`` the attribute is not the module)
    calls = []
    monkeypatch.setattr(duel, "simulate_loop", lambda *a: calls.append("compiled"))
    monkeypatch.setattr(duel, "simulate_fast", lambda *a: calls.append("numpy"))
    compiled, vectorised = _plans(*GRID[TEN][:4])
    RULESET.simulate(compiled, 10, np.random.default_rng(0), "end", 50)
    RULESET.simulate(vectorised, 10, np.random.default_rng(0), "end", 50)
    monkeypatch.setattr(duel, "available", lambda: False)
    RULESET.simulate(compiled, 10, np.random.default_rng(0), "end", 50)
    assert calls == ["compiled", "numpy", "numpy"]
    with pytest.raises(ValueError):
        RULESET.with_engine(compiled, "fortran")


def test_a_run_depends_only_on_the_stream_and_the_count():
    compiled, _ = _plans(*GRID[TWENTY][:4])
    a = RULESET.simulate(compiled, 20_000, np.random.default_rng(3), "end", 50)
    b = RULESET.simulate(compiled, 20_000, np.random.default_rng(3), "end", 50)
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


@pytest.mark.parametrize("buffer, headroom", [(0, 1.0), (1 << 10, 3.0)])
def test_a_run_does_not_depend_on_the_buffer_sizes(monkeypatch, buffer, headroom):
    """The uniforms are read from the stream in order whatever the refills (the unused rest of one
    buffer starts the next)."""
    compiled, _ = _plans(*GRID[LINES][:4])
    a = RULESET.simulate(compiled, 5_000, np.random.default_rng(4), "end", 50)
    monkeypatch.setattr(duel_compiled, "BUFFER", buffer)
    monkeypatch.setattr(duel_compiled, "HEADROOM", headroom)
    b = RULESET.simulate(compiled, 5_000, np.random.default_rng(4), "end", 50)
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for e in EXTRAS:
        assert np.array_equal(a.extras[e], b.extras[e]), e
