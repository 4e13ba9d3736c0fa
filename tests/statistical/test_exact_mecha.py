"""mecha exact answers: against the independent chain of test_mecha_exact.py, a hand enumeration and the kernel."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import sim
from sim.exact import exact_outcome
from sim.rulesets.mecha import RULESET as MECHA
from tests.helpers import assert_fits_exact
from tests.statistical.test_mecha_exact import AFS, CASES, GUSTAV, KROETE, NUTROCKER, SPEC_WIDE, STALKER, exact_fight, \
    summarise

pytestmark = pytest.mark.statistical


def _exact(att, dfn, *, imm_a=False, imm_d=False, evading=False, second_m=False, rounds=1, max_rounds=50,
           chart=None):
    states = {"attacker": {"immobilised": imm_a}, "defender": {"immobilised": imm_d, "evading": evading}}
    options = {"second_m_destroys": second_m, "chart": "wide" if chart is SPEC_WIDE else "reconstructed"}
    _, plan = sim.build_matchup(MECHA, att, dfn, states=states, options=options)
    return exact_outcome(MECHA, plan, rounds, max_rounds), plan


@pytest.mark.parametrize("case", CASES + [dict(att=STALKER, dfn=KROETE, rounds="end", max_rounds=3, second_m=True),
                                          dict(att=KROETE, dfn=GUSTAV, evading=True, rounds=4, imm_a=True)],
                         ids=lambda c: f"{c['att'].name}-{c['dfn'].name}-{c.get('rounds', 1)}")
def test_exact_matches_the_independent_chain(case):
    """To 1e-9 (in fact to rounding): winner, both final states, rounds, capped."""
    case = dict(case)
    att, dfn = case.pop("att"), case.pop("dfn")
    ex, _ = _exact(att, dfn, **case)
    final = exact_fight(att, dfn, **case)
    win, cat_a, cat_d, rounds_dist = summarise(final)
    assert ex.win_probability("attacker") == pytest.approx(float(win["attacker"]), abs=1e-9)
    assert ex.win_probability("defender") == pytest.approx(float(win["defender"]), abs=1e-9)
    assert ex.win_probability("draw") == pytest.approx(float(win["draw"]), abs=1e-9)
    assert np.allclose(ex.categories, [[float(p) for p in cat_a], [float(p) for p in cat_d]], rtol=0, atol=1e-9)
    damage = np.pad(ex.damage_to_attacker, (0, 3 - len(ex.damage_to_attacker)))  # up to the worst seen
    assert np.allclose(damage, [float(p) for p in cat_a], rtol=0, atol=1e-9)
    expected_rounds = np.zeros(len(ex.rounds))
    for r, p in rounds_dist.items():
        expected_rounds[r] += float(p)
    assert np.allclose(ex.rounds, expected_rounds, rtol=0, atol=1e-9)
    capped = sum(float(p) for (_, _, _, c), p in final.items() if c)
    assert ex.capped == pytest.approx(capped, abs=1e-9)
    assert abs(ex.total - 1) < 1e-12 and ex.truncated == 0.0


# Armour rows typed from the spec's table (totals <=1, 2, 3, 4, 5, 6; 7+ is "-").
ROWS = {"A": "DDM---", "B": "DDDM--", "C": "DDDDM-"}


def _hand_two_rounds(a, d, *, second_m):
    """Every sequence of four dice (two joint rolls) written out: P(attacker severity, defender severity, rounds)."""
    def result(unit, die, immobilised):
        total = die + unit.defence + unit.physical - 2 * immobilised
        return "-" if total >= 7 else ROWS[unit.armour][max(total, 1) - 1]

    def hit(sev, res):
        if res == "D" or (res == "M" and sev == 1 and second_m):
            return 2
        return max(sev, 1) if res == "M" else sev

    out: dict[tuple[int, int, int], Fraction] = {}
    for a1, d1, a2, d2 in itertools.product(range(1, 7), repeat=4):
        sa, sd = hit(0, result(a, a1, False)), hit(0, result(d, d1, False))
        rounds = 1
        if sa < 2 and sd < 2:  # nobody destroyed: a second combat, immobilisation carried over
            sa, sd, rounds = hit(sa, result(a, a2, sa == 1)), hit(sd, result(d, d2, sd == 1)), 2
        out[(sa, sd, rounds)] = out.get((sa, sd, rounds), Fraction(0)) + Fraction(1, 6**4)
    return out


@pytest.mark.parametrize("a, d, second_m", [(AFS, NUTROCKER, False), (STALKER, KROETE, True), (KROETE, AFS, False)])
def test_exact_matches_a_hand_enumeration_of_two_rounds(a, d, second_m):
    ex, _ = _exact(a, d, rounds=2, second_m=second_m)
    hand = _hand_two_rounds(a, d, second_m=second_m)
    win = {"attacker": Fraction(0), "defender": Fraction(0), "draw": Fraction(0)}
    rounds = [Fraction(0)] * 3
    for (sa, sd, r), p in hand.items():
        win["attacker" if sa < sd else "defender" if sa > sd else "draw"] += p
        rounds[r] += p
    for k, p in win.items():
        assert ex.win_probability(k) == pytest.approx(float(p), abs=1e-14)
    assert np.allclose(ex.rounds, [float(p) for p in rounds], rtol=0, atol=1e-14)


GRID = [(a, d, r) for a, d in [("AFS", "Nutrocker"), ("Kroete", "Sand Stalker"), ("PKA", "AFS"), ("Gustav", "Kroete")]
        for r in (1, 3, "end")]


@pytest.mark.parametrize("att, dfn, rounds", GRID)
def test_exact_matches_the_kernel_in_distribution(att, dfn, rounds):
    _, plan = sim.build_matchup(MECHA, att, dfn)
    ex = exact_outcome(MECHA, plan, rounds, 50)
    out = MECHA.simulate(plan, 200_000, np.random.default_rng(101), rounds, 50)
    assert_fits_exact(out, ex, f"{att} v {dfn}, rounds={rounds}")


def test_the_cap_is_a_draw_and_its_mass_is_reported():
    # A Gustav (defence 3, armour A) is never harmed; a Nutrocker immobilised only on a 1-... both survive a lot
    ex, _ = _exact(GUSTAV, NUTROCKER, rounds="end", max_rounds=4)
    assert ex.capped > 0.1 and ex.win_probability("draw") >= ex.capped
    assert ex.rounds[4] >= ex.capped and len(ex.rounds) == 5
