"""Exact probabilities from the README's rules (a Markov chain over wounds and armour), against kernel and reference."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from itertools import product

import numpy as np
import pytest

import sim
from sim.testing import RandomDice
from ironclash.rules import RULESET

ROSTER = sim.default_roster(RULESET)


def exchange(state, first, u, braced, both_strike, crushing):
    """Successor states of one exchange, {state: probability}, by listing all 100 pairs of d10."""
    out: dict = {}
    for ra, rd in product(range(1, 11), repeat=2):
        ta, td = ra + u[0].skill, rd + u[1].skill + (2 if first and braced else 0)
        hits = [(ta > td or ta == td and both_strike), (td > ta or ta == td and both_strike)]
        left, arm = list(state[:2]), list(state[2:])
        new_left, new_arm = list(left), list(arm)
        for s, roll in ((0, ra), (1, rd)):
            if hits[s]:
                t = 1 - s
                crush = crushing and roll == 10
                new_left[t] = max(new_left[t] - (u[s].damage if crush else max(u[s].damage - arm[t], 0)), 0)
                new_arm[t] -= 1 if not crush and arm[t] > 0 else 0
        nxt = (*new_left, *new_arm)
        out[nxt] = out.get(nxt, 0) + Fraction(1, 100)
    return out


def exact(att, dfn, rounds, braced=False, both_strike=False, crushing=True):
    """{(winner, damage_to_attacker, damage_to_defender): probability} after ``rounds`` exchanges (or to the end)."""
    u = (ROSTER[att], ROSTER[dfn])
    step = lru_cache(None)(lambda s, first: exchange(s, first, u, braced, both_strike, crushing))
    dist = {(u[0].wounds, u[1].wounds, u[0].armour, u[1].armour): Fraction(1)}
    for r in range(rounds):
        nxt: dict = {}
        for s, p in dist.items():
            for s2, q in (step(s, r == 0).items() if min(s[:2]) > 0 else [(s, 1)]):
                nxt[s2] = nxt.get(s2, 0) + p * q
        dist = nxt
    result: dict = {}
    for (la, ld, _, _), p in dist.items():
        lost = (u[0].wounds - la, u[1].wounds - ld)
        winner = 0 if la == ld == 0 else 1 if ld == 0 else 2 if la == 0 else 1 if lost[0] < lost[1] else \
            2 if lost[1] < lost[0] else 0
        key = (winner, *lost)
        result[key] = result.get(key, 0) + p
    return result


CASES = [("Gladiator", "Militia", 1, {}), ("Knight", "Brute", 3, {}), ("Duellist", "Veteran", 2, {"braced": True}),
         ("Militia", "Knight", 4, {"both_strike": True}), ("Brute", "Gladiator", 2, {"crushing": False})]


@pytest.mark.parametrize("att,dfn,rounds,kw", CASES)
def test_kernel_and_reference_match_the_exact_chain(att, dfn, rounds, kw):
    probs = exact(att, dfn, rounds, **kw)
    states = {"defender": {"braced": True}} if kw.get("braced") else {}
    options = {"ties": "both_strike"} if kw.get("both_strike") else {}
    if "crushing" in kw:
        options["crushing_blows"] = kw["crushing"]
    _, plan = sim.build_matchup(RULESET, att, dfn, states=states, options=options)
    kernel = RULESET.simulate(plan, 200_000, np.random.default_rng(1), rounds, 50)
    dice = RandomDice(np.random.default_rng(2))
    ref = [RULESET.resolve_one(plan, dice, rounds, 50) for _ in range(20_000)]
    samples = {"kernel": list(zip(kernel.winner.tolist(), kernel.damage_to_attacker.tolist(),
                                  kernel.damage_to_defender.tolist())),
               "reference": [(t.winner, t.damage_to_attacker, t.damage_to_defender) for t in ref]}
    for name, rows in samples.items():
        n = len(rows)
        seen = {k: 0 for k in probs}
        for row in rows:
            assert row in probs, f"{name}: {row} is impossible by the exact chain"
            seen[row] += 1
        for key, p in probs.items():  # every joint outcome within 6 standard errors
            se = math.sqrt(float(p) * (1 - float(p)) / n)
            assert abs(seen[key] / n - float(p)) < 6 * se + 1e-12, f"{name} {key}: {seen[key] / n} vs {float(p)}"


def test_the_chain_knows_a_hand_computed_case():
    # Militia (skill 1) v Gladiator (skill 3), one exchange: the attacker strikes when d_a + 1 > d_d + 3,
    # i.e. d_a - d_d >= 3: 28 of the 100 pairs; a blow of 1 against armour 1 wounds only on a natural 10
    # (crushing), which is 7 of those 28 pairs.
    probs = exact("Militia", "Gladiator", 1)
    assert sum(p for (w, _, dd), p in probs.items() if dd == 1) == Fraction(7, 100)
