"""Rounding a rebalanced table for the whole table at once, on a strength model with known scores."""

from __future__ import annotations

import dataclasses
import math

import pytest

import sim
from analysis.runs.fielding import copy_mixture, profile_key
from analysis.runs.rounding import round_jointly, table_scores
from sim.roster import Roster

BUDGET = 300.0


class StrengthBank:
    """Stands in for a CellBank: ``k`` copies of u beat ``m`` of o with probability logistic(s_u - s_o + log(k / m)).

    The opponent's expected copies mix its whole counts linearly, as expected fielding does.
    """

    def __init__(self, strength: dict[str, float]):
        self.strength, self.fought = strength, set()

    def cells_for(self, unit, k, opponent, opponent_copies):
        return [(unit, k, opponent, m) for m, _ in copy_mixture(opponent_copies)]

    def fight(self, cells, progress=None):
        self.fought.update(cells)

    def side_averaged(self, unit, k, opponent, opponent_copies):
        total = 0.0
        for m, w in copy_mixture(opponent_copies):
            assert (unit, k, opponent, m) in self.fought  # a score is only read from a cell that was fought
            z = self.strength[unit] - self.strength[opponent] + math.log(k / m)
            total += w / (1 + math.exp(-z))
        return total, 0.0


def _roster(names_and_twins: dict[str, str]) -> tuple[object, Roster]:
    """A duel roster: each name takes the shipped unit it names (a twin or clone shares that unit's profile)."""
    rs, shipped = sim.get_ruleset("duel"), sim.default_roster("duel")
    units = {n: dataclasses.replace(shipped.unit(src), name=n) for n, src in names_and_twins.items()}
    return rs, Roster("duel", units, shipped.options, "test", "", BUDGET)


def _gap(bank, table, roster, profile_of, excluded=()):
    scores = table_scores(bank, table, BUDGET, list(roster.names), list(excluded), profile_of)
    return max(abs(s - 0.5) for s in scores.values())


def _nearest(prices, step=1.0):
    return {u: max(step, step * round(p / step)) for u, p in prices.items()}


def _profiles(rs, roster):
    return {u: profile_key(rs, roster.unit(u)) for u in roster.names}


def test_the_whole_table_is_rounded_nearer_50_percent_than_each_price_alone():
    # balanced prices are C exp(s): every unit scores exactly 50% before rounding
    strength = {"Sellsword": 0.0, "Knight": 0.9, "Reaver": 0.35, "Assassin": -0.25, "Ogre": 1.3}
    rs, roster = _roster({u: u for u in strength})
    prices = {u: 20.0 * math.exp(s) for u, s in strength.items()}
    bank, profiles = StrengthBank(strength), _profiles(rs, roster)
    start = _nearest(prices)
    joint = round_jointly(bank, rs, roster, prices, start, [], [], 1.0, BUDGET)
    assert _gap(bank, joint, roster, profiles) < _gap(bank, start, roster, profiles)
    for u, p in joint.items():  # always the floor or the ceiling of the unrounded price
        assert p in (math.floor(prices[u]), math.ceil(prices[u])), u
    best = _gap(bank, joint, roster, profiles)
    for u in joint:  # no single unit's other direction does better
        other = math.floor(prices[u]) if joint[u] == math.ceil(prices[u]) else math.ceil(prices[u])
        assert _gap(bank, {**joint, u: other}, roster, profiles) >= best - 1e-12, u


def test_twins_and_a_clone_round_alike_and_fixed_or_excluded_units_do_not_move():
    strength = {"A": 0.0, "A twin": 0.0, "A clone": 0.0, "B": 0.8, "C": -0.4, "Kept": 0.3, "Out": -3.0}
    rs, roster = _roster({"A": "Reaver", "A twin": "Reaver", "A clone": "Reaver", "B": "Knight",
                          "C": "Sellsword", "Kept": "Assassin", "Out": "Militia"})
    prices = {u: 25.0 * math.exp(s) for u, s in strength.items()}
    prices.update({"A clone": prices["A"] * 1.03, "Kept": 34.0, "Out": 15.0})  # the clone's search ended a bit apart
    start = {**_nearest(prices), "Kept": 34.0, "Out": 15.0}
    joint = round_jointly(StrengthBank(strength), rs, roster, prices, start, ["Kept"], ["Out"], 0.5, BUDGET)
    assert joint["A"] == joint["A twin"] == joint["A clone"]
    assert joint["Kept"] == 34.0 and joint["Out"] == 15.0
    assert all(p / 0.5 == int(p / 0.5) for p in joint.values())


@pytest.mark.parametrize("step", [1.0, 5.0])
def test_the_rounding_never_leaves_the_table_further_from_50_percent(step):
    strength = {"Sellsword": 0.2, "Duellist": -0.6, "Knight": 1.1, "Brawler": 0.45}
    rs, roster = _roster({u: u for u in strength})
    prices = {u: 31.7 * math.exp(s) for u, s in strength.items()}
    bank, profiles = StrengthBank(strength), _profiles(rs, roster)
    start = _nearest(prices, step)
    joint = round_jointly(bank, rs, roster, prices, start, [], [], step, BUDGET)
    assert _gap(bank, joint, roster, profiles) <= _gap(bank, start, roster, profiles)


def _brute_force_best(bank, roster, prices, profiles, fixed=()):
    """The smallest largest gap over every floor/ceiling table, scored by the readable table_scores."""
    import itertools

    free = [u for u in roster.names if u not in fixed]
    best = math.inf
    for combo in itertools.product(*[(math.floor(prices[u]), math.ceil(prices[u])) for u in free]):
        best = min(best, _gap(bank, {**prices, **dict(zip(free, combo))}, roster, profiles))
    return best


def test_up_to_sixteen_choosing_units_the_table_is_the_best_of_every_rounding():
    strength = {"Sellsword": 0.0, "Knight": 0.9, "Reaver": 0.35, "Assassin": -0.25, "Ogre": 1.3, "Brawler": 0.6}
    rs, roster = _roster({u: u for u in strength})
    prices = {u: 13.0 * math.exp(s) for u, s in strength.items()}
    bank, profiles = StrengthBank(strength), _profiles(rs, roster)
    joint = round_jointly(bank, rs, roster, prices, _nearest(prices), [], [], 1.0, BUDGET)
    assert _gap(bank, joint, roster, profiles) == pytest.approx(_brute_force_best(bank, roster, prices, profiles),
                                                                abs=1e-12)


def test_beyond_the_exhaustive_limit_no_flip_of_one_or_two_units_does_better(monkeypatch):
    import itertools

    import analysis.runs.rounding as rounding

    monkeypatch.setattr(rounding, "MAX_EXHAUSTIVE", 2)
    strength = {"Sellsword": 0.0, "Knight": 0.9, "Reaver": 0.35, "Assassin": -0.25, "Ogre": 1.3, "Brawler": 0.6}
    rs, roster = _roster({u: u for u in strength})
    prices = {u: 13.0 * math.exp(s) for u, s in strength.items()}
    bank, profiles = StrengthBank(strength), _profiles(rs, roster)
    start = _nearest(prices)
    joint = round_jointly(bank, rs, roster, prices, start, [], [], 1.0, BUDGET)
    best = _gap(bank, joint, roster, profiles)
    assert best <= _gap(bank, start, roster, profiles)

    def other(u, table):
        return math.floor(prices[u]) if table[u] == math.ceil(prices[u]) else math.ceil(prices[u])

    for pair in itertools.combinations(list(strength), 2):
        for flip in ([pair[0]], [pair[1]], list(pair)):
            trial = {**joint, **{u: other(u, joint) for u in flip}}
            assert _gap(bank, trial, roster, profiles) >= best - 1e-12, flip
