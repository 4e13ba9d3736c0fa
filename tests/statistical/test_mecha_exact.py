"""mecha: Monte Carlo against exact probabilities from an independent Markov chain.

The oracle below reads the chart as the spec prints it (strings typed here, not
the package's Chart) and builds the per-round transition matrix from single-die
probabilities, so it shares no code with the kernel or the reference.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import sim
from sim.dice import RandomDice
from sim.outcomes import Outcomes
from sim.rulesets.mecha import RULESET as MECHA
from sim.rulesets.mecha import MechaUnit
from sim.tally import Tally
from tests.helpers import assert_distribution, assert_mean, assert_proportion, assert_same_distribution

pytestmark = pytest.mark.statistical

SPEC_CHART = {"A": "DDM---", "B": "DDDM--", "C": "DDDDM-", "D": "DDDDDM", "E": "DDDDDD"}
SPEC_WIDE = {"A": "DDMM--", "B": "DDDMM-", "C": "DDDDMM", "D": "DDDDDM", "E": "DDDDDD"}
SEV = {"-": 0, "M": 1, "D": 2}


def side_probs(unit, immobilised, evading, chart):
    """P(result) for one roll: Fractions over -, M, D."""
    p = {0: Fraction(0), 1: Fraction(0), 2: Fraction(0)}
    for die in range(1, 7):
        total = die + unit.defence + unit.physical - 2 * immobilised + 2 * evading
        code = "-" if total >= 7 else chart[unit.armour][max(total, 1) - 1]
        p[SEV[code]] += Fraction(1, 6)
    return p


def exact_fight(att, dfn, *, imm_a=False, imm_d=False, evading=False, second_m=False, rounds=1, max_rounds=50,
                chart=SPEC_CHART):
    """Exact joint distribution of (sev_a, sev_d, rounds, capped) by forward iteration of the chain."""
    def step(sev, res):
        if res == 2:
            return 2
        if res == 1:
            return 2 if (sev == 1 and second_m) else 1
        return sev

    dist = {(int(imm_a), int(imm_d)): Fraction(1)}
    final: dict[tuple[int, int, int, bool], Fraction] = {}
    limit = max_rounds if rounds == "end" else rounds
    for r in range(1, limit + 1):
        nxt: dict[tuple[int, int], Fraction] = {}
        for (sa, sd), p in dist.items():
            ev = evading and sd == 0
            pa = {0: Fraction(1), 1: Fraction(0), 2: Fraction(0)} if ev else side_probs(att, sa == 1, False, chart)
            pd = side_probs(dfn, sd == 1, ev, chart)
            for ra, qa in pa.items():
                for rd, qd in pd.items():
                    if qa * qd == 0:
                        continue
                    na = sa if ev else step(sa, ra)
                    nd = step(sd, rd)
                    nxt[(na, nd)] = nxt.get((na, nd), 0) + p * qa * qd
        dist = {}
        for (sa, sd), p in nxt.items():
            if sa == 2 or sd == 2 or r == limit:
                capped = rounds == "end" and r == limit and sa != 2 and sd != 2
                final[(sa, sd, r, capped)] = final.get((sa, sd, r, capped), 0) + p
            else:
                dist[(sa, sd)] = p
    return final


def summarise(final):
    win = {"attacker": Fraction(0), "defender": Fraction(0), "draw": Fraction(0)}
    cat_a = [Fraction(0)] * 3
    cat_d = [Fraction(0)] * 3
    rounds_dist: dict[int, Fraction] = {}
    for (sa, sd, r, capped), p in final.items():
        key = "draw" if capped or sa == sd else ("attacker" if sa < sd else "defender")
        win[key] += p
        cat_a[sa] += p
        cat_d[sd] += p
        rounds_dist[r] = rounds_dist.get(r, 0) + p
    return win, cat_a, cat_d, rounds_dist


AFS = MechaUnit("AFS", 2, 0, "B")
NUTROCKER = MechaUnit("Nutrocker", 4, -2, "A")
KROETE = MechaUnit("Kroete", 3, 0, "B")
STALKER = MechaUnit("Sand Stalker", 1, 0, "C")
GUSTAV = MechaUnit("Gustav", 3, 0, "A")


def test_spec_worked_probabilities():
    """The spec's worked probabilities with the default chart."""
    assert side_probs(AFS, False, False, SPEC_CHART) == {0: Fraction(4, 6), 1: Fraction(1, 6), 2: Fraction(1, 6)}
    assert side_probs(NUTROCKER, False, False, SPEC_CHART) == {0: Fraction(5, 6), 1: Fraction(1, 6), 2: 0}
    assert side_probs(NUTROCKER, True, False, SPEC_CHART) == {0: Fraction(3, 6), 1: Fraction(1, 6), 2: Fraction(2, 6)}


CASES = [
    dict(att=AFS, dfn=NUTROCKER),
    dict(att=AFS, dfn=NUTROCKER, rounds="end"),
    dict(att=AFS, dfn=NUTROCKER, rounds=3, imm_d=True, second_m=True),
    dict(att=KROETE, dfn=STALKER, evading=True, rounds="end", max_rounds=8),
    dict(att=STALKER, dfn=GUSTAV, imm_a=True, rounds="end"),
    dict(att=GUSTAV, dfn=KROETE, rounds="end", chart=SPEC_WIDE),
]


def _ids(case):
    return f"{case['att'].name}-{case['dfn'].name}-{case.get('rounds', 1)}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_monte_carlo_matches_exact_chain(case):
    case = dict(case)
    att, dfn = case.pop("att"), case.pop("dfn")
    rounds = case.get("rounds", 1)
    max_rounds = case.get("max_rounds", 50)
    states = {"attacker": {"immobilised": case.get("imm_a", False)},
              "defender": {"immobilised": case.get("imm_d", False), "evading": case.get("evading", False)}}
    options = {"second_m_destroys": case.get("second_m", False),
               "chart": "wide" if case.get("chart") is SPEC_WIDE else "reconstructed"}
    n = 400_000
    r = sim.fight("mecha", att, dfn, trials=n, seed=20240601, rounds=rounds, max_rounds=max_rounds, states=states,
                  options=options, method="mc")
    win, cat_a, cat_d, rounds_dist = summarise(exact_fight(att, dfn, **case))
    for k in ("attacker", "defender", "draw"):
        assert_proportion(r.win_counts[k], n, float(win[k]), what=f"P({k})")
    assert_distribution(r.tally.categories[0], [float(p) for p in cat_a], what="attacker final state")
    assert_distribution(r.tally.categories[1], [float(p) for p in cat_d], what="defender final state")
    probs = np.zeros(max(rounds_dist) + 1)
    for k, p in rounds_dist.items():
        probs[k] = float(p)
    assert_distribution(r.tally.rounds.hist, probs, what="rounds")
    mean_a = sum(i * float(p) for i, p in enumerate(cat_a))
    sd_a = np.sqrt(sum(i * i * float(p) for i, p in enumerate(cat_a)) - mean_a**2)
    assert_mean(r.damage("attacker")[0], mean_a, sd_a, n, what="damage to attacker")


def test_afs_vs_nutrocker_headline_numbers():
    """The CLI's `fight mecha AFS Nutrocker`: exact 4/36, 11/36, 21/36."""
    n = 1_000_000
    r = sim.fight("mecha", "AFS", "Nutrocker", trials=n, seed=99, method="mc")
    assert_proportion(r.win_counts["attacker"], n, 4 / 36)
    assert_proportion(r.win_counts["defender"], n, 11 / 36)
    assert_proportion(r.win_counts["draw"], n, 21 / 36)


def test_reference_matches_exact_chain_in_distribution():
    """The scalar reference, run on random dice, has the chain's final-state distribution."""
    _, p = sim.build_matchup("mecha", AFS, NUTROCKER)
    dice = RandomDice(np.random.default_rng(5))
    rows = [MECHA.resolve_one(p, dice, "end", 50) for _ in range(20_000)]
    ref = Outcomes.stack(rows)
    final = exact_fight(AFS, NUTROCKER, rounds="end")
    win, cat_a, cat_d, _ = summarise(final)
    tally = Tally(3)
    tally.add(ref)
    assert_distribution(tally.wins, [float(win["draw"]), float(win["attacker"]), float(win["defender"])],
                        what="reference winner")
    kernel = MECHA.simulate(p, 200_000, np.random.default_rng(6), "end", 50)
    kt = Tally(3)
    kt.add(kernel)
    assert_same_distribution(kt.rounds.hist, tally.rounds.hist, what="rounds: kernel vs reference")
