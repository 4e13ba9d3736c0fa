"""The group kernel's exact tables of a batch of several attacks (:mod:`sim.rulesets.warband.batches`).

Three independent checks: against the hand-written enumeration of the spec's first batch
(Fractions, no parry), against the one-attack distribution (a different derivation), and
against the dice-rolling batch the kernel used before, outcome by outcome at 5.5 SE.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

import sim
from sim.rulesets.warband import RULESET as WB
from sim.rulesets.warband.batches import several_batch_distribution
from sim.rulesets.warband.single import batch_distribution
from sim.rulesets.warband.strikes import _code, _dice
from sim.rulesets.warband.tables import KNOCKED_DOWN, OUT_OF_ACTION, STANDING, STUNNED
from tests.statistical.test_warband_exact import W, first_batch_categories

pytestmark = pytest.mark.statistical


def _batches(att, dfn, states=None):
    """(blows, target side) of both sides' batches, later rounds then round 1, of a 2 v 2 fight."""
    over = {"attacker": {"count": 2}, "defender": {"count": 2}}
    kp = sim.build_matchup(WB, att, dfn, states=states, overrides=over, budget="none")[1].kernel
    return [(b, kp.sides[1 - k]) for k in (0, 1) for b in kp.blows[k]]


def _rows(b, t):
    return several_batch_distribution(b, t.w, t.parry_reroll, t.step_aside, t.helmet, t.jump_up)


@pytest.mark.parametrize("att, dfn, n_att, p_hit, need_wound, save, w", [
    (W(ws=4, s=4, a=2), W(armour="light"), 2, F(4, 6), 3, 8, 1),
    (W(ws=2, weapons=["axe", "axe"]), W(ws=5, armour="light"), 2, F(2, 6), 4, 7, 1),
    # three attacks on two wounds; heavy armour and shield 4+, worsened by S4 and the axe: 6+
    (W(ws=4, s=4, a=3), W(t=3, w=2, armour="heavy", shield=True), 3, F(4, 6), 3, 6, 2),
])
def test_several_attacks_match_the_spec_enumeration(att, dfn, n_att, p_hit, need_wound, save, w):
    b, t = _batches(att, dfn, states={"attacker": {"charging": True}})[1]     # the attacker's round-1 batch
    assert b.n == n_att and not b.parryable.any()
    exact = first_batch_categories(n_att, p_hit, need_wound, save, w)
    row = _rows(b, t)[w]                                                     # w wounds left, no parry
    got = dict.fromkeys(("UP", "KD", "ST", "OOA"), 0.0)
    for (_, status, _), p in row.items():
        got[{STANDING: "UP", KNOCKED_DOWN: "KD", STUNNED: "ST", OUT_OF_ACTION: "OOA"}[status]] += p
    for k, v in exact.items():
        assert got[k] == pytest.approx(float(v), abs=1e-12), k


def test_one_attack_equals_the_one_attack_distribution():
    checked = 0
    for a, d in itertools.permutations(["Mercenary Warrior", "Swordsman", "Dwarf Clansman", "Elf Blademaster",
                                        "Zealot", "Spearman", "Champion"], 2):
        for b, t in _batches(a, d):
            assert b.n == 1
            checked += 1
            one = batch_distribution(b, t.w, t.parry_reroll, t.step_aside, t.helmet, t.jump_up)
            for x, y in zip(one, _rows(b, t)):
                assert set(x) == set(y)
                assert all(abs(x[k] - y[k]) < 1e-12 for k in x), (a, d)
    assert checked == 7 * 6 * 4


SEVERAL = [
    ("Mercenary Captain", "Swordsman"),       # two attacks (sword and dagger) on a parry with a re-roll
    ("Skaven Verminkin", "Elf Blademaster"),  # two daggers on Step Aside and a parry
    ("Mercenary Captain", "Dwarf Clansman"),  # helmet, hard to stun
    ("Skaven Verminkin", "Zealot"),           # Jump Up
    ("Ogre Brute", "Mercenary Captain"),      # concussion
    # a sword and an axe (one worsens the save) on a parry: which of two equal hits is parried matters
    (W(ws=4, weapons=["sword", "axe"]), W(weapons=["sword"], armour="heavy")),
    (W(ws=5, a=3, weapons=["sword"], skills=["web_of_steel", "strike_to_injure"]),
     W(w=3, weapons=["sword"], buckler=True, helmet=True, skills=["jump_up", "step_aside"])),
]


@pytest.mark.parametrize("att, dfn", SEVERAL)
def test_several_attacks_match_the_dice_path(att, dfn):
    """Every row (wounds left, parry or not, knocked down) against 60,000 dice-rolled batches."""
    rng = np.random.default_rng(77)
    n = 60_000
    checked = 0
    for b, t in _batches(att, dfn):
        if b.n == 1:
            continue
        W_ = t.w
        for i, row in enumerate(_rows(b, t)):
            code, may = (W_ + 1, False) if i == 2 * (W_ + 1) else (i % (W_ + 1), i >= W_ + 1)
            new, scored = _dice(b, t, W_, np.full(n, code, np.int8), np.full(n, may), rng)
            seen = np.bincount(new.astype(np.int64) * 2 + scored, minlength=2 * (W_ + 4))
            p = np.zeros(2 * (W_ + 4))
            for (w, s, h), q in row.items():
                p[_code(w, s, W_) * 2 + h] += q
            assert abs(p.sum() - 1) < 1e-12
            assert not seen[p == 0].any(), f"row {i}: an outcome the table rules out"
            z = np.abs(seen / n - p) / np.sqrt(np.maximum(p * (1 - p), 1e-300) / n)
            assert np.all(z[p > 0] < 5.5), f"row {i}: {z.max():.1f} SE"
            checked += 1
    assert checked


def test_the_parry_takes_the_first_of_the_best_hits():
    """Which attacks land after a parry, enumerated from the rule: the target parries the highest
    parryable hit below 6 with a d6 that must beat it; of equal hits, the first attack's."""
    from sim.rulesets.warband.batches import _hit_sets

    b, t = _batches(W(ws=4, weapons=["sword", "axe"]), W(weapons=["sword"], armour="heavy"))[0]
    assert b.n == 2 and b.parryable.all() and b.need_hit == 3
    exact: dict = {}
    for d1, d2 in itertools.product(range(1, 7), repeat=2):
        hits = (d1 >= 3, d2 >= 3)
        best = max(d for d, h in zip((d1, d2), hits) if h) if any(hits) else 0
        parried = None if not 0 < best < 6 else (0 if hits[0] and d1 == best else 1)
        for parry_die in range(1, 7):
            landed = hits if parried is None or parry_die <= best else tuple(
                h and i != parried for i, h in enumerate(hits))
            key = (landed, any(hits))
            exact[key] = exact.get(key, 0) + F(1, 36 * 6)
    got = _hit_sets(b, True, False)
    assert set(got) == {k for k, v in exact.items() if v}
    for k, v in exact.items():
        assert got[k] == pytest.approx(float(v), abs=1e-12), k


@pytest.mark.parametrize("att, dfn", [("Mercenary Captain", "Swordsman"), ("Youngblood", "Elf Blademaster"),
                                      ("Zealot", "Dwarf Clansman")])
def test_volley_is_the_batches_one_after_another(att, dfn):
    """The volley table's rows for 0, 1, 2 and 3 batches against the strike table's rows composed by hand."""
    from sim.rulesets.warband.strikes import strike_table, volley_table

    for b, t in _batches(att, dfn):
        st = strike_table(b, t)
        vt = volley_table(st, 3)
        W_ = t.w

        def once(state):                      # {(code, spent): p} after one more batch
            code, spent = state
            if code == W_ + 3:
                return {state: 1.0}
            row = st.rows[code + (W_ + 1) * (not spent)] if code <= W_ else st.rows[2 * (W_ + 1) + code - W_ - 1]
            out: dict = {}
            for (new, hit), p in row.items():
                out[new, bool(spent or hit)] = out.get((new, bool(spent or hit)), 0.0) + p
            return out

        for code in range(W_ + 4):
            for spent in (False, True):
                dist = {(code, spent): 1.0}
                for j in range(4):
                    got = {}
                    r = (j * (W_ + 4) + code) * 2 + spent
                    for flat, q in vt.table.masses(r).items():     # the alias table's own mass per outcome
                        key = (int(vt.new_code[flat]), bool(vt.spent[flat]))
                        got[key] = got.get(key, 0.0) + q
                    for key in set(got) | set(dist):
                        # exact to within the 32-bit thresholds' rounding: (slots a row) x 2**-32
                        tol = (1 << vt.table.bits.bits) * 2.0 ** -32 + 1e-12
                        assert got.get(key, 0.0) == pytest.approx(dist.get(key, 0.0), abs=tol), (att, dfn, code, j)
                    nxt = {}
                    for s, p in dist.items():
                        for s2, q in once(s).items():
                            nxt[s2] = nxt.get(s2, 0.0) + p * q
                    dist = nxt
