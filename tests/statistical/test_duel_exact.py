"""``duel``: seeded Monte Carlo against exact values computed here, and kernels against the reference.

Exact values come from this file only: dice enumerated with ``itertools``, the
order statistics of d6 maxima ``P(max of n <= k) = (k/6)**n`` (checked against the
enumeration), ``scipy.stats.binom`` for failed Toughness checks, and small absorbing
Markov chains solved with numpy linear algebra for fights to the end.
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest
from scipy import stats

import sim
from sim.dice import RandomDice
from sim.errors import Where
from sim.outcomes import Outcomes
from sim.rulesets.duel.tables import build_tables
from sim.rulesets.duel import RULESET
from tests.helpers import assert_distribution, assert_mean, assert_proportion, assert_same_distribution

pytestmark = pytest.mark.statistical

N_KERNEL = 200_000
N_REFERENCE = 20_000


def unit(name="U", count=1, wounds=1, toughness=5, ws=3, strength=3, weapon=(3, 1), second=None):
    m = {"name": name, "count": count, "wounds": wounds, "toughness": toughness, "ws": ws, "strength": strength}
    if weapon is not None:
        m["weapon"] = {"strength": weapon[0], "damage": weapon[1]}
    if second is not None:
        m["second_weapon"] = {"strength": second[0], "damage": second[1]}
    return RULESET.parse_unit(m, Where("test", name))


def plan_of(a, d, states=None, options=None):
    return sim.build_matchup("duel", a, d, states=states, options=options, budget="none")[1]


def kernels(plan):
    """The kernels that can run this plan: always the general one, the group kernel (exact per-combat
    tables) unless ``spread`` assignment meets ganging, and the Markov chain when small enough."""
    out = [("general", dataclasses.replace(plan, chain=None, tables=None))]
    one_each = plan.sides[0].count == 1 and plan.sides[1].count == 1
    if plan.assignment == "fewest_wounds" or one_each:
        grouped = dataclasses.replace(plan, chain=None, tables=build_tables(plan))
        out.append(("groups", grouped))                                      # compiled (if Numba imports)
        out.append(("groups, vectorised", RULESET.with_engine(grouped, "numpy")))
    if plan.chain is not None:
        out.append(("chain", plan))
    return out


def hist(out: Outcomes, values) -> np.ndarray:
    w = out.weights if out.weights is not None else None
    return np.bincount(np.asarray(values, np.int64), weights=w).astype(np.int64)


# --------------------------------------------------------------- exact helpers
def p_max_le(n: int, k: int) -> Fraction:
    """Order statistic of n d6: P(max <= k) = (k/6)^n; a prone side (n = 0) always shows 1."""
    if n == 0:
        return Fraction(1 if k >= 1 else 0)
    return Fraction(k, 6) ** n


def p_max_eq(n: int, k: int) -> Fraction:
    return p_max_le(n, k) - p_max_le(n, k - 1)


@lru_cache(maxsize=None)
def duel_exact(n_a: int, n_d: int, ws_a: int, ws_d: int) -> tuple[Fraction, Fraction, Fraction]:
    """(P attacker wins, P defender wins, P double loss)."""
    gt = sum(p_max_eq(n_a, a) * p_max_eq(n_d, d) for a in range(1, 7) for d in range(1, 7) if a > d)
    lt = sum(p_max_eq(n_a, a) * p_max_eq(n_d, d) for a in range(1, 7) for d in range(1, 7) if a < d)
    eq = 1 - gt - lt
    if ws_a != ws_d:
        return (gt + eq, lt, Fraction(0)) if ws_a > ws_d else (gt, lt + eq, Fraction(0))
    return gt, lt, eq


def test_order_statistics_formula_matches_enumeration():
    for n in range(1, 5):
        for k in range(1, 7):
            count = sum(1 for roll in itertools.product(range(1, 7), repeat=n) if max(roll) <= k)
            assert Fraction(count, 6 ** n) == p_max_le(n, k)


# ------------------------------------------------------------ the duel roll
@pytest.mark.parametrize("a_count, a_wounds, d_wounds", [(1, 2, 3), (1, 4, 1), (2, 1, 3), (3, 2, 2)])
def test_duel_roll_win_probability(a_count, a_wounds, d_wounds):
    # The attacker's hits are instant death (S 6 >= T 5) and ties go to it (higher WS), so
    # the defender is eliminated in one phase exactly when max(A dice) >= max(D dice).
    a = unit("A", count=a_count, wounds=a_wounds, ws=4, weapon=(6, 1), toughness=9)
    d = unit("D", wounds=d_wounds, ws=3, weapon=(1, 1))
    p = duel_exact(a_count * a_wounds, d_wounds, 4, 3)[0]
    for name, plan in kernels(plan_of(a, d)):
        out = RULESET.simulate(plan, N_KERNEL, np.random.default_rng(11), 1, 50)
        eliminated = hist(out, out.category_defender)[1]
        assert_proportion(int(eliminated), N_KERNEL, float(p), what=f"{name}: P(attacker wins the duel)")
        misted = hist(out, out.extras["misted_defender"])
        assert misted[1] == eliminated  # every loss here is a misting


# ------------------------------------------------------- Toughness checks
def _loss_after_checks(hits: int, wounds: int, dmg: int, p: float, blocked_all: bool) -> np.ndarray:
    """Exact distribution of wounds lost to ``hits`` checks, plus (prone) one check per lost wound."""
    out = np.zeros(wounds + 1)
    for f in range(hits + 1):
        pf = stats.binom.pmf(f, hits, p)
        lost = min(f * dmg, wounds)
        if not blocked_all or lost in (0, wounds):
            out[lost] += pf
            continue
        for f2 in range(lost + 1):  # every yard is blocked: one more check per wound lost
            out[lost + min(f2 * dmg, wounds - lost)] += pf * stats.binom.pmf(f2, lost, p)
    return out


@pytest.mark.parametrize("a_wounds, dual, d_wounds, toughness, dmg, prone", [
    (4, False, 3, 6, 1, True),    # T' = 3: p_fail 1/2, blocked yards on every wound
    (3, True, 5, 5, 2, True),     # +1A: 4 hits, damage 2 capped
    (5, False, 4, 9, 1, False),   # T' = 6: only a 6 fails
])
def test_failed_checks_are_binomial(a_wounds, dual, d_wounds, toughness, dmg, prone):
    # The defender is prone (counts as 1) or has no dice advantage; the attacker has the higher
    # WS, so with a prone defender it always wins.
    a = unit("A", wounds=a_wounds, ws=5, weapon=(3, dmg), second=(3, dmg) if dual else None)
    d = unit("D", wounds=d_wounds, toughness=toughness, ws=2, weapon=(1, 1))
    states = {"defender": {"prone": True}} if prone else {"defender": {"space": 0}}
    t_eff = toughness - 3
    p_fail = 1 - min(t_eff, 5) / 6
    hits = a_wounds + dual
    loss = _loss_after_checks(hits, d_wounds, dmg, p_fail, blocked_all=True)
    if not prone:
        n_d = d_wounds
        win = float(duel_exact(a_wounds, n_d, 5, 2)[0])
        loss = win * loss
        loss[0] += 1 - win
    for name, plan in kernels(plan_of(a, d, states=states)):
        out = RULESET.simulate(plan, N_KERNEL, np.random.default_rng(5), 1, 50)
        assert_distribution(hist(out, out.damage_to_defender), loss, what=f"{name}: wounds lost")


def test_two_d6_check_probability():
    # 2d6 <= T' = 7 passes (21/36); the attacker always wins against a prone defender
    a = unit("A", wounds=1, ws=5, weapon=(2, 1))
    d = unit("D", wounds=1, toughness=9, ws=2)
    p_fail = 1 - Fraction(sum(1 for x, y in itertools.product(range(1, 7), repeat=2) if x + y <= 7), 36)
    plan = plan_of(a, d, states={"defender": {"prone": True}}, options={"toughness_die": "2d6"})
    for name, pl in kernels(plan):
        out = RULESET.simulate(pl, N_KERNEL, np.random.default_rng(9), 1, 50)
        assert_proportion(int(hist(out, out.category_defender)[1]), N_KERNEL, float(p_fail), what=name)


# ----------------------------------------------------- hit assignment (ganging)
@pytest.mark.parametrize("assignment", ["fewest_wounds", "spread"])
def test_hit_assignment_one_phase(assignment):
    # Two 2-wound models (4 dice) gang up on one 3-wound model (3 dice, higher WS): when it
    # wins, its 3 hits at p_fail = 4/6 go to the weakest model (a model falls on >= 2 fails)
    # or take turns (model 0 gets hits 1 and 3 and falls only if both fail).
    a = unit("A", count=2, wounds=2, ws=3)
    d = unit("D", wounds=3, ws=5)
    p = Fraction(4, 6)
    p_d_wins = duel_exact(4, 3, 3, 5)[1]
    if assignment == "fewest_wounds":
        p_fall = 3 * p ** 2 * (1 - p) + p ** 3
    else:
        p_fall = p ** 2
    for name, plan in kernels(plan_of(a, d, options={"hit_assignment": assignment})):
        out = RULESET.simulate(plan, N_KERNEL, np.random.default_rng(3), 1, 50)
        lost = hist(out, out.extras["models_lost_attacker"])
        assert len(lost) == 2  # never both in one phase
        assert_proportion(int(lost[1]), N_KERNEL, float(p_d_wins * p_fall), what=f"{name}: {assignment}")


# ---------------------------------------------------------- fights to the end
def chain_exact(a, d, dual_mode="extra_hit"):
    """Absorbing Markov chain over (wounds A, wounds D), open ground: P(win A, win D, draw), E[rounds], Var."""
    def side(u):
        pair = u.second_weapon is not None and u.second_weapon == u.weapon
        return dict(w=u.wounds, T=u.toughness, ws=u.ws, S=u.weapon.strength, D=u.weapon.damage,
                    die=int(pair and dual_mode == "extra_die"), hit=int(pair and dual_mode == "extra_hit"))

    A, Dd = side(a), side(d)

    def loser(hitter, target, hits, w):
        """{new wounds: prob} of the target after ``hits`` from ``hitter``."""
        if hitter["S"] >= target["T"]:
            return {0: 1.0}
        p = 1 - min(target["T"] - hitter["S"], 5) / 6
        out = {}
        for f in range(hits + 1):
            nw = max(w - f * hitter["D"], 0)
            out[nw] = out.get(nw, 0.0) + stats.binom.pmf(f, hits, p)
        return out

    states = [(i, j) for i in range(1, A["w"] + 1) for j in range(1, Dd["w"] + 1)]
    idx = {s: k for k, s in enumerate(states)}
    Q = np.zeros((len(states), len(states)))
    R = np.zeros((len(states), 3))  # absorbed: A wins, D wins, draw
    for (i, j), k in idx.items():
        pa, pd, pb = (float(x) for x in duel_exact(i + A["die"], j + Dd["die"], A["ws"], Dd["ws"]))
        moves = {}
        for nj, q in loser(A, Dd, i + A["hit"], j).items():
            moves[(i, nj)] = moves.get((i, nj), 0) + pa * q
        for ni, q in loser(Dd, A, j + Dd["hit"], i).items():
            moves[(ni, j)] = moves.get((ni, j), 0) + pd * q
        for ni, qa in loser(Dd, A, j + Dd["hit"], i).items():
            for nj, qd in loser(A, Dd, i + A["hit"], j).items():
                moves[(ni, nj)] = moves.get((ni, nj), 0) + pb * qa * qd
        for (ni, nj), q in moves.items():
            if ni > 0 and nj > 0:
                Q[k, idx[(ni, nj)]] += q
            else:
                R[k, 0 if ni > 0 else 1 if nj > 0 else 2] += q
    N = np.linalg.inv(np.eye(len(states)) - Q)
    start = idx[(A["w"], Dd["w"])]
    absorb = (N @ R)[start]
    t = N @ np.ones(len(states))
    var = ((2 * N - np.eye(len(states))) @ t - t * t)[start]
    return absorb, t[start], var


CASES = [
    # (attacker, defender, dual_wield)
    (unit("A", wounds=3, ws=4, weapon=(3, 1)), unit("D", wounds=2, toughness=6, ws=3, weapon=(4, 2)), "extra_hit"),
    (unit("A", wounds=2, toughness=5, ws=3, weapon=(3, 1), second=(3, 1)),
     unit("D", wounds=3, toughness=6, ws=3, weapon=(6, 1)), "extra_hit"),
    (unit("A", wounds=2, toughness=7, ws=3, weapon=(4, 1), second=(4, 1)),
     unit("D", wounds=3, toughness=5, ws=3, weapon=(3, 2)), "extra_die"),
    (unit("A", wounds=3, toughness=6, ws=3, weapon=(4, 1)),
     unit("D", wounds=2, toughness=6, ws=3, weapon=(3, 1), second=(3, 1)), "extra_hit"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_fight_to_the_end_matches_markov_chain(case):
    a, d, dual = CASES[case]
    absorb, mean_rounds, var_rounds = chain_exact(a, d, dual)
    plan = plan_of(a, d, options={"dual_wield": dual})
    for name, pl in kernels(plan):
        out = RULESET.simulate(pl, N_KERNEL, np.random.default_rng(21 + case), "end", 200)
        wins = hist(out, out.winner)
        assert_proportion(int(wins[1]), N_KERNEL, absorb[0], what=f"{name}: attacker wins")
        assert_proportion(int(wins[2]), N_KERNEL, absorb[1], what=f"{name}: defender wins")
        rounds = hist(out, out.rounds)
        mean = float((rounds * np.arange(len(rounds))).sum() / N_KERNEL)
        assert_mean(mean, mean_rounds, var_rounds ** 0.5, N_KERNEL, what=f"{name}: rounds")
        if a.toughness <= d.weapon.strength:  # the attacker can only fall to instant death
            assert np.array_equal(hist(out, out.extras["misted_attacker"]),
                                  hist(out, out.extras["models_lost_attacker"]))


# -------------------------------------------------- kernel against reference
GRID = [
    # attacker, defender, states, options, rounds
    (unit("A", wounds=3), unit("D", wounds=2, toughness=6, weapon=(4, 2)), {}, {}, "end"),
    (unit("A", wounds=2, weapon=(3, 1), second=(3, 1)), unit("D", wounds=4, toughness=7, weapon=(5, 2)),
     {"attacker": {"space": 1}, "defender": {"space": 0}}, {}, "end"),
    (unit("A", wounds=3, toughness=4, ws=4, strength=5, weapon=None), unit("D", wounds=3, ws=4, weapon=(4, 1)),
     {"defender": {"prone": True}, "attacker": {"space": 0}}, {}, 2),
    (unit("A", wounds=2, weapon=(5, 1), second=(5, 1)), unit("D", wounds=3, toughness=5, weapon=(2, 2)),
     {"defender": {"space": 2}}, {"dual_wield": "extra_die", "toughness_die": "2d6"}, "end"),
    (unit("A", wounds=3, weapon=(3, 1)), unit("D", wounds=5, toughness=6, weapon=(3, 1)),
     {"defender": {"space": 2}, "attacker": {"space": 1}}, {}, "end"),
    (unit("A", count=3, wounds=2, ws=4), unit("D", count=2, wounds=3, toughness=6, weapon=(4, 1)),
     {"defender": {"space": 1}}, {}, "end"),
    (unit("A", count=4, wounds=1, toughness=3, weapon=(2, 1)), unit("D", wounds=4, toughness=5, weapon=(2, 1)),
     {"attacker": {"space": 0}}, {"hit_assignment": "spread"}, "end"),
    (unit("A", count=2, wounds=2, toughness=4, weapon=(4, 2), second=(4, 2)),
     unit("D", count=3, wounds=1, toughness=6, ws=4, weapon=(4, 1)),
     {"defender": {"prone": True, "initiative": True}}, {"dual_wield": "both"}, 3),
    (unit("A", count=3, wounds=2, toughness=5, ws=2, weapon=(3, 1)), unit("D", wounds=4, ws=5, weapon=(3, 2)),
     {"attacker": {"space": 1}}, {"hit_assignment": "spread"}, "end"),
    (unit("A", wounds=4, ws=5, weapon=(3, 1), second=(3, 1)), unit("D", count=3, wounds=2, toughness=6, ws=2),
     {"defender": {"space": 1}}, {}, "end"),
    (unit("A", count=3, wounds=2, weapon=(3, 1), second=(3, 1)), unit("D", wounds=5, toughness=6, weapon=(4, 1)),
     {}, {"dual_wield": "both"}, "end"),
    (unit("A", count=2, wounds=2, ws=4, weapon=(3, 1)), unit("D", count=3, wounds=2, weapon=(3, 1)), {}, {}, "end"),
    (unit("A", count=3, toughness=3, weapon=(5, 1)), unit("D", count=2, wounds=2, weapon=(4, 1)), {}, {}, "end"),
]


@pytest.mark.parametrize("case", range(len(GRID)))
def test_kernel_matches_reference_in_distribution(case):
    a, d, states, options, rounds = GRID[case]
    plan = plan_of(a, d, states=states, options=options)
    dice = RandomDice(np.random.default_rng(100 + case))
    ref = Outcomes.stack([RULESET.resolve_one(plan, dice, rounds, 50) for _ in range(N_REFERENCE)])
    fields = [("winner", lambda o: o.winner), ("damage A", lambda o: o.damage_to_attacker),
              ("damage D", lambda o: o.damage_to_defender), ("category A", lambda o: o.category_attacker),
              ("category D", lambda o: o.category_defender), ("rounds", lambda o: o.rounds),
              ("misted A", lambda o: o.extras["misted_attacker"]), ("misted D", lambda o: o.extras["misted_defender"]),
              ("lost A", lambda o: o.extras["models_lost_attacker"]),
              ("lost D", lambda o: o.extras["models_lost_defender"])]
    for name, pl in kernels(plan):
        out = RULESET.simulate(pl, N_KERNEL, np.random.default_rng(200 + case), rounds, 50)
        assert out.n_trials == N_KERNEL
        for what, get in fields:
            assert_same_distribution(hist(out, get(out)), hist(ref, get(ref)), what=f"case {case} {name}: {what}")


# ------------------------------------------- pairing and ganging to the end
def one_wound_groups_exact(count_a, count_d, ws_a, ws_d, p_a, p_d):
    """Exact end-of-fight distribution for one-wound models: state = models standing per side.

    Each phase pairs k = min(a, d) combats; combats 1..k-1 are one model against one,
    combat 0 holds the first models plus the larger side's left-overs. In a combat with
    nA against nD models, the winner's hits (one per model) kill Binomial(hits, p) losers
    (every fail kills a one-wound model), capped at the losers present.
    ``p_a``: P(a hit from side A kills), ``p_d`` likewise.
    Returns ({(a, d) final: prob}, mean rounds).
    """
    def kills(hits, p, present):
        out = {}
        for f in range(hits + 1):
            k = min(f, present)
            out[k] = out.get(k, 0.0) + stats.binom.pmf(f, hits, p)
        return out

    def combat(n_a, n_d):
        """{(A models killed, D models killed): prob} for one combat."""
        win_a, win_d, both = (float(x) for x in duel_exact(n_a, n_d, ws_a, ws_d))
        out = {}
        for kd, q in kills(n_a, p_a, n_d).items():
            out[(0, kd)] = out.get((0, kd), 0.0) + win_a * q
        for ka, q in kills(n_d, p_d, n_a).items():
            out[(ka, 0)] = out.get((ka, 0), 0.0) + win_d * q
        for ka, qa in kills(n_d, p_d, n_a).items():
            for kd, qd in kills(n_a, p_a, n_d).items():
                out[(ka, kd)] = out.get((ka, kd), 0.0) + both * qa * qd
        return out

    def phase(a, d):
        k = min(a, d)
        dist = combat(a - k + 1, d - k + 1)
        for _ in range(k - 1):
            nxt = {}
            for (x, y), p in dist.items():
                for (u, v), q in combat(1, 1).items():
                    nxt[(x + u, y + v)] = nxt.get((x + u, y + v), 0.0) + p * q
            dist = nxt
        return {(a - x, d - y): p for (x, y), p in dist.items()}

    transient = [(a, d) for a in range(1, count_a + 1) for d in range(1, count_d + 1)]
    absorbing = [(a, d) for a in range(count_a + 1) for d in range(count_d + 1) if a == 0 or d == 0]
    ti = {s: i for i, s in enumerate(transient)}
    ai = {s: i for i, s in enumerate(absorbing)}
    Q = np.zeros((len(transient), len(transient)))
    R = np.zeros((len(transient), len(absorbing)))
    for s, i in ti.items():
        for nxt, p in phase(*s).items():
            if nxt in ti:
                Q[i, ti[nxt]] += p
            else:
                R[i, ai[nxt]] += p
    N = np.linalg.inv(np.eye(len(transient)) - Q)
    start = ti[(count_a, count_d)]
    final = dict(zip(absorbing, (N @ R)[start]))
    t = N @ np.ones(len(transient))
    var = ((2 * N - np.eye(len(transient))) @ t - t * t)[start]
    return final, t[start], var


@pytest.mark.parametrize("count_a, count_d, ws_a, ws_d, instant_a", [(3, 2, 3, 3, False), (2, 4, 4, 3, True)])
def test_ganged_fight_to_the_end_matches_markov_chain(count_a, count_d, ws_a, ws_d, instant_a):
    a = unit("A", count=count_a, toughness=4, ws=ws_a, weapon=(5, 1) if instant_a else (3, 1))
    d = unit("D", count=count_d, toughness=5, ws=ws_d, weapon=(2, 1))
    p_a = 1.0 if instant_a else 1 - 2 / 6   # vs T5: S5 instant, S3 -> T' 2
    p_d = 1 - 2 / 6                          # vs T4: S2 -> T' 2
    final, mean_rounds, var_rounds = one_wound_groups_exact(count_a, count_d, ws_a, ws_d, p_a, p_d)
    probs = np.zeros((count_a + 1) * (count_d + 1))
    for (fa, fd), p in final.items():
        probs[(count_a - fa) * (count_d + 1) + (count_d - fd)] += p
    for name, plan in kernels(plan_of(a, d)):
        out = RULESET.simulate(plan, N_KERNEL, np.random.default_rng(31), "end", 200)
        code = out.extras["models_lost_attacker"] * (count_d + 1) + out.extras["models_lost_defender"]
        assert_distribution(hist(out, code), probs, what=f"{name}: models lost (attacker, defender)")
        rounds = hist(out, out.rounds)
        assert_mean(float((rounds * np.arange(len(rounds))).sum() / N_KERNEL), mean_rounds, var_rounds ** 0.5,
                    N_KERNEL, what=f"{name}: rounds")
        if instant_a:  # every defender loss is a misting
            assert np.array_equal(hist(out, out.extras["misted_defender"]),
                                  hist(out, out.extras["models_lost_defender"]))


# ------------------------------------- group kernel against the exact group chain
def group_chain_final(plan, rounds, max_rounds=50):
    """Exact distribution of (final state, phases fought) from the group chain's one-phase transitions.

    States are (attacker wounds standing, defender wounds standing, misted A, misted D), built
    with ``sim.rulesets.duel.groups._Builder.phase`` (combat by combat from the spec's procedure), independently
    of the group kernel's tables.
    """
    from sim.rulesets.duel import groups as duel_groups
    b = duel_groups._Builder(plan)
    start = (tuple([plan.sides[0].wounds] * plan.sides[0].count), tuple([plan.sides[1].wounds] * plan.sides[1].count),
             0, 0)
    dist = {start: 1.0}
    final = {}
    limit = max_rounds if rounds == "end" else rounds
    for r in range(1, limit + 1):
        nxt = {}
        for (a, d, ma, md), p in dist.items():
            for (wa, wd, xa, xd), q in b.phase(a, d).items():
                key = (wa, wd, ma + xa, md + xd)
                nxt[key] = nxt.get(key, 0.0) + p * q
        dist = {}
        for s, p in nxt.items():
            if not s[0] or not s[1] or r == limit:
                final[(s, r)] = final.get((s, r), 0.0) + p
            else:
                dist[s] = p
        if not dist:
            break
    return final


GROUP_CASES = [
    # attacker, defender, states, options, rounds
    (unit("A", count=4, wounds=2, toughness=4, ws=3, weapon=(3, 1)),
     unit("D", count=3, wounds=3, toughness=5, ws=4, weapon=(4, 2)),
     {"defender": {"space": 1}, "attacker": {"space": 0}}, {}, "end"),
    (unit("A", count=3, wounds=2, toughness=4, weapon=(2, 1), second=(2, 1)),
     unit("D", count=5, wounds=1, toughness=3, weapon=(5, 1)), {}, {}, "end"),
    (unit("A", count=2, wounds=3, toughness=6, ws=4, weapon=(4, 1), second=(4, 1)),
     unit("D", count=4, wounds=2, toughness=5, ws=4, weapon=(3, 1)),
     {"defender": {"prone": True}}, {"toughness_die": "2d6", "dual_wield": "both"}, 3),
    (unit("A", count=5, wounds=1, toughness=3, ws=2, weapon=(2, 1)),
     unit("D", count=2, wounds=4, toughness=5, ws=3, weapon=(3, 2)), {"defender": {"space": 2}}, {}, "end"),
]


@pytest.mark.parametrize("engine", ["auto", "numpy"])
@pytest.mark.parametrize("case", range(len(GROUP_CASES)))
def test_group_kernel_matches_the_exact_group_chain(case, engine, monkeypatch):
    from sim.rulesets.duel import groups as duel_groups
    monkeypatch.setattr(duel_groups, "MAX_WORK", 10 ** 9)
    monkeypatch.setattr(duel_groups, "MAX_ENTRIES", 10 ** 9)
    a, d, states, options, rounds = GROUP_CASES[case]
    plan = plan_of(a, d, states=states, options=options)
    final = group_chain_final(plan, rounds)
    na, nd = a.count, d.count
    fast = dataclasses.replace(plan, chain=None, tables=build_tables(plan), engine=engine)
    out = RULESET.simulate(fast, N_KERNEL, np.random.default_rng(40 + case), rounds, 50)
    lost = np.zeros((na + 1) * (nd + 1))
    dmg = np.zeros((plan.start_wounds[0] + 1) * (plan.start_wounds[1] + 1))
    rnd = np.zeros(52)
    mist = np.zeros((na + 1) * (nd + 1))
    for ((wa, wd, ma, md), r), p in final.items():
        lost[(na - len(wa)) * (nd + 1) + nd - len(wd)] += p
        dmg[(plan.start_wounds[0] - sum(wa)) * (plan.start_wounds[1] + 1) + plan.start_wounds[1] - sum(wd)] += p
        rnd[r] += p
        mist[ma * (nd + 1) + md] += p
    code_lost = out.extras["models_lost_attacker"] * (nd + 1) + out.extras["models_lost_defender"]
    assert_distribution(hist(out, code_lost), lost, what=f"case {case}: models lost")
    code_dmg = out.damage_to_attacker * (plan.start_wounds[1] + 1) + out.damage_to_defender
    assert_distribution(hist(out, code_dmg), dmg, what=f"case {case}: wounds lost")
    assert_distribution(hist(out, out.rounds), rnd, what=f"case {case}: phases")
    code_mist = out.extras["misted_attacker"] * (nd + 1) + out.extras["misted_defender"]
    assert_distribution(hist(out, code_mist), mist, what=f"case {case}: misted")


# ----------------------------------------- large groups: group kernel against the general one
LARGE_GROUPS = [
    # attacker, defender, states, rounds: enough models for several blocks of pair rows and long
    # ganged lines; instant death one way (misted), ordinary checks the other
    (unit("A", count=9, wounds=3, ws=5, weapon=(3, 1), second=(3, 1)),
     unit("D", count=7, wounds=4, toughness=6, weapon=(5, 2)), {}, "end"),
    (unit("A", count=6, wounds=2, toughness=4, ws=3, weapon=(4, 1)),
     unit("D", count=11, wounds=3, toughness=5, ws=4, weapon=(3, 1)), {"defender": {"space": 1}}, 3),
]


@lru_cache(maxsize=None)
def _general_large(case: int) -> Outcomes:
    """The general kernel's fights of a large-groups case (its stream fixed by the case): the same for every engine
    and slack of the group kernel (it reads neither), so fought once (3 x 2.7 s before)."""
    a, d, states, rounds = LARGE_GROUPS[case]
    plan = plan_of(a, d, states=states)
    return RULESET.simulate(dataclasses.replace(plan, chain=None, tables=None), N_KERNEL,
                            np.random.default_rng(60 + case), rounds, 50)


@pytest.mark.parametrize("engine, slack", [("numpy", 0), ("numpy", None), ("auto", None)])
@pytest.mark.parametrize("case", range(len(LARGE_GROUPS)))
def test_group_kernel_matches_the_general_kernel_for_large_groups(case, engine, slack, monkeypatch):
    """The vectorised group kernel keeps its fights in descending order of pairs and draws the pair rows
    in blocks over column prefixes (``slack=0``: one block a row, the most blocks; None: the default),
    and sums the ganged members' wounds over row suffixes; the compiled one plays the same fights model
    by model: in distribution both the same as the general kernel (an independent, hit-by-hit
    implementation), on every field the results hold."""
    from sim.rulesets.duel import fast as duel_fast
    if slack is not None:
        monkeypatch.setattr(duel_fast, "_SLACK", slack)
    a, d, states, rounds = LARGE_GROUPS[case]
    plan = plan_of(a, d, states=states)
    general = _general_large(case)
    groups = RULESET.simulate(dataclasses.replace(plan, chain=None, tables=build_tables(plan), engine=engine),
                              N_KERNEL, np.random.default_rng(70 + case), rounds, 50)
    for what, get in [("winner", lambda o: o.winner), ("damage A", lambda o: o.damage_to_attacker),
                      ("damage D", lambda o: o.damage_to_defender), ("rounds", lambda o: o.rounds),
                      ("misted A", lambda o: o.extras["misted_attacker"]),
                      ("misted D", lambda o: o.extras["misted_defender"]),
                      ("lost A", lambda o: o.extras["models_lost_attacker"]),
                      ("lost D", lambda o: o.extras["models_lost_defender"])]:
        assert_same_distribution(hist(groups, get(groups)), hist(general, get(general)),
                                 what=f"case {case}, {engine}, slack {slack}: {what}")
