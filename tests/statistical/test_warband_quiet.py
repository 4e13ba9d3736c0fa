"""warband group kernel: quiet rounds skipped as a geometric count (``sim.rulesets.warband.quiet``).

Three kinds of check: the quiet tables against the alias tables' own masses (the
probability of no change, and the rest renormalised); the skipping kernel against the
exact chains written from the spec, with every settled fight made to skip
(``Q_MIN = 0``); and skipping on against skipping off on long armoured fights, where
most rounds are skipped.
"""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.rulesets.warband import RULESET as WB
from sim.rulesets.warband import quiet
from sim.rulesets.warband.stars import N_PATTERNS
from sim.rulesets.warband.strikes import Alias
from tests.helpers import assert_same_distribution
from tests.statistical import test_warband_groups_capped_chain as capped
from tests.statistical import test_warband_groups_exact as exact

pytestmark = pytest.mark.statistical


def _tables(att: str, dfn: str, counts=(3, 3)):
    over = {"attacker": {"count": counts[0]}, "defender": {"count": counts[1]}}
    return sim.build_matchup(WB, att, dfn, overrides=over, budget="none")[1].kernel.groups


@pytest.mark.parametrize("att, dfn", [("Dwarf Clansman", "Swordsman"), ("Ogre Brute", "Elf Blademaster")])
def test_quiet_tables_are_the_tables_own_masses(att, dfn):
    """q (no change) and the change-only table against :meth:`Alias.masses` of the table drawn from,
    row by row, for the pair table and both sides' star tables."""
    g = _tables(att, dfn)
    pt = g.pair[0]
    q, cond = quiet.quiet_pairs(pt)
    n_rows = len(pt.table.bits.threshold) >> pt.table.bits.bits
    for row in range(0, n_rows, 7):
        ca, cd = divmod(row // 3, pt.n_codes_d)
        full, changed = ({}, {})
        for into, masses in ((full, pt.table.masses(row)), (changed, cond.table.masses(row))):
            for flat, p in masses.items():                      # by outcome (new codes), not by slot
                key = (int(pt.new_a[flat]), int(pt.new_d[flat]))
                into[key] = into.get(key, 0.0) + p
        same = full.get((ca, cd), 0.0)
        assert q[row] == pytest.approx(same, abs=1e-12)
        if same < 1:
            assert changed.get((ca, cd), 0.0) == 0.0
            for key, p in full.items():
                if key != (ca, cd):
                    assert changed.get(key, 0.0) == pytest.approx(p / (1 - same), abs=1e-6)
    for k in (0, 1):
        tb = g.star[k][0]
        q, cond = quiet.quiet_stars(tb)
        n_rows = len(tb.table.threshold) >> tb.table.bits
        for row in range(0, n_rows, 11):
            state = row // N_PATTERNS
            cc, c1, c2 = state // tb.n_l ** 2, (state // tb.n_l) % tb.n_l, state % tb.n_l
            unchanged = (cc * 16 + c1) * 16 + c2
            full, changed = Alias(0, tb.table).masses(row), Alias(0, cond.table).masses(row)
            same = full.get(unchanged, 0.0)
            assert q[row] == pytest.approx(same, abs=1e-12)
            if same < 1:
                assert changed.get(unchanged, 0.0) == 0.0
                for code, p in full.items():
                    if code != unchanged:
                        assert changed.get(code, 0.0) == pytest.approx(p / (1 - same), abs=1e-6)


def test_quiet_rounds_are_geometric():
    """P(T >= t) = q ** t on a fine grid of uniforms; q = 0 never waits, q = 1 waits for ever."""
    u = (np.arange(1_000_000) + 0.5) / 1_000_000
    for q in (0.2, 0.5, 0.9, 0.99):
        T = quiet.quiet_rounds(np.full(u.size, q), u, 10_000)
        for t in (1, 2, 5, 20):
            assert (T >= t).mean() == pytest.approx(q ** t, abs=2e-6)
    assert (quiet.quiet_rounds(np.zeros(3), np.array([0.1, 0.5, 1.0]), 9) == 0).all()
    assert (quiet.quiet_rounds(np.ones(3), np.array([0.1, 0.5, 1.0]), 9) == 9).all()


@pytest.fixture
def skip_every_settled_fight(monkeypatch):
    """Q_MIN = 0 (every settled fight skips), and a count of the components that drew a quiet time."""
    monkeypatch.setattr(quiet, "Q_MIN", 0.0)
    drawn = []
    real = quiet.quiet_rounds

    def counting(q, u, most):
        drawn.append(q.size)
        return real(q, u, most)

    monkeypatch.setattr(quiet, "quiet_rounds", counting)
    return drawn


@pytest.mark.parametrize("na, nd", [(2, 2), (3, 2)])   # (2 v 1 is a lone warrior's fight: the 1 v 1 kernel)
def test_skipping_kernel_matches_the_chain_to_the_end(skip_every_settled_fight, na, nd):
    exact._check(na, nd, "own_turn_charge", 150_000, 0, 700 + 10 * na + nd)
    assert sum(skip_every_settled_fight) > 10_000          # the check went through the skipping path


@pytest.mark.parametrize("na, nd", [(2, 2), (3, 2), (2, 3)])
def test_skipping_kernel_matches_the_capped_chain(skip_every_settled_fight, na, nd):
    """Fights of at most 8 rounds: quiet rounds that would run past the cap end the fight there."""
    out = WB.simulate(capped._plan(na, nd), 150_000, np.random.default_rng(7100 + 10 * na + nd), "end",
                      capped.CAP).expand()
    capped._against_chain(out, na, nd, f"skipping kernel {na} v {nd}")
    assert sum(skip_every_settled_fight) > 10_000


@pytest.mark.parametrize("att, dfn, counts, rounds", [
    ("Dwarf Clansman", "Dwarf Clansman", (3, 3), "end"),    # mostly quiet pairs: most rounds skipped
    ("Dwarf Clansman", "Swordsman", (3, 6), "end"),         # stars, parries
    ("Dwarf Clansman", "Swordsman", (3, 6), 7),             # a fixed number of rounds
    ("Orc Boy", "Dwarf Clansman", (5, 3), "end"),
])
def test_skipping_on_and_off_agree(monkeypatch, att, dfn, counts, rounds):
    over = {"attacker": {"count": counts[0]}, "defender": {"count": counts[1]}}
    plan = sim.build_matchup(WB, att, dfn, overrides=over, budget="none")[1]
    on = WB.simulate(plan, 150_000, np.random.default_rng(61), rounds, exact.MAX_ROUNDS)
    monkeypatch.setattr(quiet, "Q_MIN", 2.0)                 # no fight is that quiet: nothing skips
    off = WB.simulate(plan, 150_000, np.random.default_rng(62), rounds, exact.MAX_ROUNDS)
    for f in ("winner", "damage_to_attacker", "damage_to_defender", "rounds"):
        assert_same_distribution(np.bincount(getattr(on, f)), np.bincount(getattr(off, f)), what=f)
    for e in ("out_of_action_attacker", "out_of_action_defender"):
        assert_same_distribution(np.bincount(on.extras[e]), np.bincount(off.extras[e]), what=e)

