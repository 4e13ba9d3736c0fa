"""pools: Monte Carlo against exact probabilities, and kernel against the scalar reference.

Oracles, sharing no code with the package:

* one engagement: the pools and hit thresholds of each case are written down
  by hand from the rules; unsaved hits received are then Binomial(pool,
  p_hit x p_fail_save) (binomial thinning), independent between the sides, and
  Shaken is Binomial(pool, p_hit) >= courage (scipy binomials);
* fights over several rounds: a Markov chain over (wounds left, Shaken,
  retreated) of both sides, propagated round by round with scipy binomials.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

import numpy as np
import pytest
from scipy import stats

import sim
from sim.dice import RandomDice
from sim.outcomes import Outcomes
from sim.rulesets.pools import RULESET as POOLS
from sim.rulesets.pools import PoolsUnit
from tests.helpers import assert_distribution, assert_mean, assert_proportion, assert_same_distribution

pytestmark = pytest.mark.statistical

N = 200_000


def unit(name="U", bases=3, attack=1, courage=99, move=6, save=None, wounds=1, vehicle=False):
    return PoolsUnit(name, bases, attack, courage, move, save, wounds, vehicle)


def p6(t):
    """P(d6 >= t) for a threshold already clamped by hand."""
    return (7 - t) / 6


def fail(save):
    return 1.0 if save is None else (save - 1) / 6


# ------------------------------------------------------------------ one engagement
# Each case: attacker, defender, states, options, and by hand: (attacker pool, attacker's hit threshold,
# defender pool, defender's hit threshold).
CASES = {
    "plain 10 v 10": (unit(bases=10, attack=1, save=5, courage=6), unit(bases=10, attack=2, save=4, courage=8),
                      {}, {}, (20, 4, 20, 4)),
    "dash v cover, shaken": (unit(bases=6, attack=3, courage=4), unit(bases=4, attack=2, save=3, courage=5),
                             {"attacker": {"charge": False, "dash": True, "shaken": True}, "defender": {"cover": True}},
                             {}, (12, 6, 8, 4)),
    "flanked vehicle": (unit(bases=5, attack=2, save=5, courage=5, wounds=2),
                        unit(bases=1, attack=5, save=3, courage=4, wounds=6, vehicle=True),
                        {"defender": {"flanked": True}}, {}, (15, 3, 3, 4)),
    "gun crew": (unit(bases=4, attack=1, save=6, courage=3), unit(bases=3, attack=1, save=6, courage=3, move=0),
                 {"attacker": {"charge": False}, "defender": {"shaken": True, "flanked": True}},
                 {"flank_shift": -2}, (4, 2, 3, 4)),
    "stat 0 and target dash": (unit(bases=8, attack=0, courage=3), unit(bases=3, attack=2, save=5, courage=6),
                               {"defender": {"dash": True, "shaken": True}}, {"target_dash_shift": -1},
                               (8, 3, 3, 5)),
}


def exact_single(att, dfn, states, by_hand):
    """Exact outcome distributions of one engagement."""
    pool_a, t_a, pool_d, t_d = by_hand
    # unsaved hits received by each side: binomial thinning of the other side's pool
    u_a = stats.binom.pmf(np.arange(pool_d + 1), pool_d, p6(t_d) * fail(att.save))
    u_d = stats.binom.pmf(np.arange(pool_a + 1), pool_a, p6(t_a) * fail(dfn.save))
    start_shaken_a = states.get("attacker", {}).get("shaken", False)
    start_shaken_d = states.get("defender", {}).get("shaken", False)
    shaken_a = 1.0 if start_shaken_a else stats.binom.sf(att.courage - 1, pool_d, p6(t_d))
    shaken_d = 1.0 if start_shaken_d else stats.binom.sf(dfn.courage - 1, pool_a, p6(t_a))
    wa, wd = att.bases * att.wounds, dfn.bases * dfn.wounds
    winner, cat_a, cat_d = np.zeros(3), np.zeros(3), np.zeros(3)
    dmg_a, dmg_d = np.zeros(wa + 1), np.zeros(wd + 1)
    lost_a_bases, lost_d_bases = np.zeros(att.bases + 1), np.zeros(dfn.bases + 1)
    for i, pa in enumerate(u_a):
        for j, pd in enumerate(u_d):
            p = pa * pd
            dead_a, dead_d = i >= wa, j >= wd
            lose_a, lose_d = i > j, j > i
            if lose_a and not dead_a and att.move == 0:
                dead_a = True
            if lose_d and not dead_d and dfn.move == 0:
                dead_d = True
            if dead_a and dead_d:
                w = 0
            elif dead_d:
                w = 1
            elif dead_a:
                w = 2
            else:
                w = 1 if i < j else 2 if j < i else 0
            winner[w] += p
            cat_a[0 if dead_a else 1 if lose_a else 2] += p
            cat_d[0 if dead_d else 1 if lose_d else 2] += p
            dmg_a[min(i, wa)] += p
            dmg_d[min(j, wd)] += p
            lost_a_bases[att.bases if dead_a else att.bases - (wa - min(i, wa) + att.wounds - 1) // att.wounds] += p
            lost_d_bases[dfn.bases if dead_d else dfn.bases - (wd - min(j, wd) + dfn.wounds - 1) // dfn.wounds] += p
    return dict(winner=winner, cat_a=cat_a, cat_d=cat_d, dmg_a=dmg_a, dmg_d=dmg_d, shaken_a=shaken_a,
                shaken_d=shaken_d, lost_a=lost_a_bases, lost_d=lost_d_bases)


def hist(values, weights, length):
    return np.bincount(np.asarray(values, np.int64), weights=weights, minlength=length)[:length]


def check_against(out: Outcomes, ex, what):
    w = out.weights
    n = out.n_trials
    assert_distribution(hist(out.winner, w, 3), ex["winner"], what=f"{what} winner")
    assert_distribution(hist(out.category_attacker, w, 3), ex["cat_a"], what=f"{what} attacker category")
    assert_distribution(hist(out.category_defender, w, 3), ex["cat_d"], what=f"{what} defender category")
    assert_distribution(hist(out.damage_to_attacker, w, len(ex["dmg_a"])), ex["dmg_a"], what=f"{what} damage to A")
    assert_distribution(hist(out.damage_to_defender, w, len(ex["dmg_d"])), ex["dmg_d"], what=f"{what} damage to D")
    for key, dist in (("dmg_a", out.damage_to_attacker), ("dmg_d", out.damage_to_defender)):
        k = np.arange(len(ex[key]))
        mean = float(ex[key] @ k)
        sd = float(np.sqrt(ex[key] @ (k - mean) ** 2))
        assert_mean(float(np.average(dist, weights=w)), mean, sd, n, what=f"{what} mean {key}")
    for key, side in (("lost_a", "attacker"), ("lost_d", "defender")):
        counts = hist(out.extras[f"bases_lost_{side}"], w, len(ex[key]))
        assert_distribution(counts, ex[key], what=f"{what} {side} bases lost")
    for key, side in (("shaken_a", "attacker"), ("shaken_d", "defender")):
        assert_proportion(int(hist(out.extras[f"shaken_{side}"], w, 2)[1]), n, ex[key], what=f"{what} {key}")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("method", ["multinomial", "table", "binomial"])
def test_one_engagement_matches_the_binomial_convolution(case, method):
    att, dfn, states, options, by_hand = CASES[case]
    _, plan = sim.build_matchup("pools", att, dfn, states=states, options=options, budget="none")
    out = POOLS.simulate(plan, N, np.random.default_rng(20240601), 1, 50, method=method)
    assert out.n_trials == N
    check_against(out, exact_single(att, dfn, states, by_hand), f"{case}/{method}")


def test_exact_oracle_sanity_by_hand():
    # 1 base each, no charge, no saves: each side hits with p = 1/2 on its single die.
    att, dfn = unit(bases=1), unit(bases=1)
    ex = exact_single(att, dfn, {"attacker": {"charge": False}}, (1, 4, 1, 4))
    # both hit (1/4): both destroyed, draw; neither (1/4): draw; one hits: it wins
    assert np.allclose(ex["winner"], [0.5, 0.25, 0.25])


# ------------------------------------------------------------------ fights over several rounds
@lru_cache(maxsize=None)
def side_table(pool, p_hit, courage, already, p_fail):
    """P(Shaken after the check, unsaved hits) for a side receiving ``pool`` dice."""
    table = defaultdict(float)
    hits = stats.binom.pmf(np.arange(pool + 1), pool, p_hit)
    for h in range(pool + 1):
        kept = stats.binom.pmf(np.arange(h + 1), h, p_fail)
        for u in range(h + 1):
            table[(bool(already or h >= courage), u)] += hits[h] * kept[u]
    return dict(table)


def chain(att, dfn, states, options, rounds, max_rounds):
    """Exact distribution of (winner, rounds, damage A, damage D, category A, category D, shaken A, shaken D).

    A second implementation of the spec's multi-round loop, written as a Markov
    chain over the state at the start of an engagement.
    """
    o = {"rally": False, "dash_shift": 1, "cover_shift": 1, "flank_shift": -1, "target_dash_shift": 0, **options}
    st = {s: {"charge": s == "attacker", "dash": False, "cover": False, "shaken": False, "flanked": False,
              **states.get(s, {})} for s in ("attacker", "defender")}
    units = (att, dfn)
    full = (att.bases * att.wounds, dfn.bases * dfn.wounds)
    limit = max_rounds if rounds == "end" else rounds

    # state: (wounds left A, wounds left D, shaken A, shaken D, retreated A, retreated D, lost A, lost D)
    live = {(full[0], full[1], st["attacker"]["shaken"], st["defender"]["shaken"], False, False, False, False): 1.0}
    final = defaultdict(float)

    def record(r, s, dead, dmg):
        wl_a, wl_d, sh_a, sh_d, _, _, lost_a, lost_d = s
        capped = rounds == "end" and not any(dead)
        if dead[0] and dead[1]:
            w = 0
        elif dead[1]:
            w = 1
        elif dead[0]:
            w = 2
        elif capped:
            w = 0
        else:
            w = 1 if dmg[0] < dmg[1] else 2 if dmg[1] < dmg[0] else 0
        cats = tuple(0 if dead[k] else 1 if (lost_a, lost_d)[k] else 2 for k in (0, 1))
        return (w, r, dmg[0], dmg[1], cats[0], cats[1], int(sh_a), int(sh_d), capped)

    for r in range(1, limit + 1):
        a = 0 if r % 2 == 1 else 1
        nxt = defaultdict(float)
        for s, p in live.items():
            wl = [s[0], s[1]]
            shaken = [s[2], s[3]]
            retreated = [s[4], s[5]]
            if r > 1 and o["rally"]:
                shaken[a] = False
            if r == 1:
                charge = st["attacker"]["charge"]
                flanked = [st["attacker"]["flanked"], st["defender"]["flanked"]]
                dash = [st["attacker"]["dash"], st["defender"]["dash"]]
                cover = [st["attacker"]["cover"], st["defender"]["cover"]]
            else:
                charge, dash, cover = True, [False, False], [False, False]
                flanked = [False, False]
                flanked[1 - a] = retreated[1 - a]
            pools, thresholds = [], []
            for k in (0, 1):
                u = units[k]
                b = -(-wl[k] // u.wounds)
                mods = (k == a and charge) - shaken[k] - flanked[k] - (u.vehicle and k != a)
                pool = u.attack * b + mods * b
                if mods < 0 and pool < min(u.attack * b, b):
                    pool = min(u.attack * b, b)
                pools.append(pool)
                t = 4 + o["dash_shift"] * dash[k] + o["target_dash_shift"] * dash[1 - k] \
                    + o["cover_shift"] * cover[1 - k] + o["flank_shift"] * flanked[1 - k]
                thresholds.append(min(6, max(2, t)))
            tabs = [side_table(pools[1 - k], p6(thresholds[1 - k]), units[k].courage, shaken[k], fail(units[k].save))
                    for k in (0, 1)]
            for (sh_a, ua), pa in tabs[0].items():
                for (sh_d, ud), pd in tabs[1].items():
                    q = p * pa * pd
                    left = [max(wl[0] - ua, 0), max(wl[1] - ud, 0)]
                    lost = [ua > ud, ud > ua]
                    dead = [left[k] == 0 or (lost[k] and units[k].move == 0) for k in (0, 1)]
                    ret = [lost[k] and not dead[k] for k in (0, 1)]
                    ns = (left[0], left[1], sh_a, sh_d, ret[0], ret[1], lost[0], lost[1])
                    if any(dead) or r == limit:
                        dmg = (full[0] - left[0], full[1] - left[1])
                        final[record(r, ns, dead, dmg)] += q
                    else:
                        nxt[ns] += q
        live = nxt
    return final


def check_chain(out: Outcomes, ex, what):
    keys = list(ex)
    probs = np.array([ex[k] for k in keys])
    assert abs(probs.sum() - 1) < 1e-9
    index = {k: i for i, k in enumerate(keys)}
    o = out.expand()
    rows = zip(o.winner.tolist(), o.rounds.tolist(), o.damage_to_attacker.tolist(), o.damage_to_defender.tolist(),
               o.category_attacker.tolist(), o.category_defender.tolist(), o.extras["shaken_attacker"].tolist(),
               o.extras["shaken_defender"].tolist(), o.capped.tolist())
    counts = np.zeros(len(keys))
    for row in rows:
        counts[index[row]] += 1  # a KeyError here is an outcome the chain says is impossible
    # whole joint distribution, then the marginals that matter most
    assert_distribution(counts, probs, what=f"{what} joint")
    for pos, name in ((0, "winner"), (1, "rounds")):
        m = defaultdict(float)
        c = defaultdict(int)
        for k, i in index.items():
            m[k[pos]] += ex[k]
            c[k[pos]] += counts[i]
        ks = sorted(m)
        assert_distribution([c[k] for k in ks], [m[k] for k in ks], what=f"{what} {name}")
    p_win = sum(v for k, v in ex.items() if k[0] == 1)
    assert_proportion(int((o.winner == 1).sum()), len(o), p_win, what=f"{what} P(attacker wins)")


CHAIN_CASES = {
    "small to the end": (unit(bases=3, attack=1, save=5, courage=3), unit(bases=3, attack=1, save=4, courage=2),
                         {}, {}, "end", 12),
    "rally, retreat flanking": (unit(bases=3, attack=2, courage=2, move=4), unit(bases=2, attack=1, save=4, courage=2,
                                wounds=2), {"attacker": {"shaken": True}}, {"rally": True}, "end", 12),
    "gun crew and vehicle, 3 rounds": (unit(bases=1, attack=3, save=3, courage=3, wounds=3, vehicle=True),
                                       unit(bases=3, attack=1, save=6, courage=2, move=0),
                                       {"attacker": {"charge": False}, "defender": {"cover": True}}, {}, 3, 50),
    "capped": (unit(bases=2, attack=0, save=2, courage=9, wounds=3), unit(bases=2, attack=0, save=2, courage=9,
               wounds=3), {}, {}, "end", 4),
}


@pytest.mark.parametrize("case", list(CHAIN_CASES))
@pytest.mark.parametrize("method", ["table", "binomial"])
def test_fights_over_several_rounds_match_the_markov_chain(case, method):
    att, dfn, states, options, rounds, max_rounds = CHAIN_CASES[case]
    _, plan = sim.build_matchup("pools", att, dfn, states=states, options=options, budget="none")
    ex = chain(att, dfn, states, options, rounds, max_rounds)
    out = POOLS.simulate(plan, 100_000, np.random.default_rng(11), rounds, max_rounds, method=method)
    check_chain(out, ex, f"{case}/{method}")


@pytest.mark.parametrize("case", ["small to the end", "rally, retreat flanking"])
def test_reference_matches_the_markov_chain(case):
    att, dfn, states, options, rounds, max_rounds = CHAIN_CASES[case]
    _, plan = sim.build_matchup("pools", att, dfn, states=states, options=options, budget="none")
    ex = chain(att, dfn, states, options, rounds, max_rounds)
    dice = RandomDice(np.random.default_rng(5))
    out = Outcomes.stack([POOLS.resolve_one(plan, dice, rounds, max_rounds) for _ in range(20_000)])
    check_chain(out, ex, f"reference {case}")


# ------------------------------------------------------------------ kernel vs reference
GRID = [
    ("Line Infantry", "Spear Wall", {}, 1),
    ("Berserkers", "Goblin Horde", {"defender": {"cover": True}}, 3),
    ("Light Cavalry", "Gun Crew", {"attacker": {"charge": False, "dash": True}}, "end"),
    ("Ogre Brutes", "Battle Tank", {"defender": {"flanked": True}}, "end"),
    ("Iron Golems", "Berserkers", {"attacker": {"shaken": True}}, 4),
]


@pytest.mark.parametrize("att,dfn,states,rounds", GRID)
def test_kernel_and_reference_agree_in_distribution(att, dfn, states, rounds):
    _, plan = sim.build_matchup("pools", att, dfn, states=states, options={"rally": rounds == "end"}, budget="none")
    k = POOLS.simulate(plan, 200_000, np.random.default_rng(3), rounds, 50).expand()
    dice = RandomDice(np.random.default_rng(4))
    r = Outcomes.stack([POOLS.resolve_one(plan, dice, rounds, 50) for _ in range(20_000)])
    for name in ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender",
                 "rounds"):
        assert_same_distribution(np.bincount(getattr(k, name)), np.bincount(getattr(r, name)), what=name)
    for name in k.extras:
        assert_same_distribution(np.bincount(k.extras[name]), np.bincount(r.extras[name]), what=name)
