"""Rounding a proposed table for the whole table at once, on a strength model with known scores."""

from __future__ import annotations

import dataclasses
import math

import pytest

from analysis.runs.fielding import copy_mixture
from analysis.runs.rounding import round_jointly
from analysis.runs.scoring import TableScorer

BUDGET = 300.0


class StrengthBank:
    """Stands in for a CellBank: ``k`` copies of u beat ``m`` of o with probability logistic(s_u - s_o + log(k / m)).

    The opponent's expected copies mix its whole counts linearly, as expected fielding does.
    """

    def __init__(self, strength: dict[str, float]):
        self.strength, self.fought, self.reused = strength, set(), 0

    def cells_for(self, unit, k, opponent, opponent_copies):
        return [(unit, k, opponent, m) for m, _ in copy_mixture(opponent_copies)]

    def fight(self, cells, progress=None):  # WholeCells from the scorer, tuples from cells_for
        self.fought.update(tuple(c) if isinstance(c, tuple) else dataclasses.astuple(c) for c in cells)

    def side_averaged(self, unit, k, opponent, opponent_copies):
        total = 0.0
        for m, w in copy_mixture(opponent_copies):
            assert (unit, k, opponent, m) in self.fought  # a score is only read from a cell that was fought
            z = self.strength[unit] - self.strength[opponent] + math.log(k / m)
            total += w / (1 + math.exp(-z))
        return total, 0.0


def _gap(strength, table, classes, held=None):
    """The largest |score - 50%| of a table, scored directly from the strengths (no TableScorer)."""
    n = sum(len(m) for m in classes.values())
    out = []
    for r, members in classes.items():
        if held is not None and r not in held:
            continue
        cr = BUDGET / table[r]
        total = 0.5 * len(members)
        for o, theirs in classes.items():
            if o == r:
                continue
            co = BUDGET / table[o]
            for k, wk in copy_mixture(cr):
                for m, wm in copy_mixture(co):
                    z = strength[r] - strength[o] + math.log(k / m)
                    total += len(theirs) * wk * wm / (1 + math.exp(-z))
        out.append(abs(total / n - 0.5))
    return max(out)


def _setup(strength, prices, classes=None):
    classes = classes or {u: [u] for u in strength}
    scorer = TableScorer(StrengthBank(strength), BUDGET, classes)
    ranges = {u: (1.0, BUDGET) for u in classes}
    return scorer, classes, ranges


def _nearest(prices, step=1.0):
    return {u: max(step, step * round(p / step)) for u, p in prices.items()}


def test_the_whole_table_is_rounded_nearer_50_percent_than_each_price_alone():
    # balanced prices are C exp(s): every unit scores exactly 50% before rounding
    strength = {"Sellsword": 0.0, "Knight": 0.9, "Reaver": 0.35, "Assassin": -0.25, "Ogre": 1.3}
    prices = {u: 20.0 * math.exp(s) for u, s in strength.items()}
    scorer, classes, ranges = _setup(strength, prices)
    joint = round_jointly(scorer, prices, list(prices), list(prices), 1.0, ranges, {u: u for u in prices})
    start = _nearest(prices)
    assert _gap(strength, joint, classes) < _gap(strength, start, classes)
    for u, p in joint.items():  # always the floor or the ceiling of the unrounded price
        assert p in (math.floor(prices[u]), math.ceil(prices[u])), u
    best = _gap(strength, joint, classes)
    for u in joint:  # no single unit's other direction does better
        other = math.floor(prices[u]) if joint[u] == math.ceil(prices[u]) else math.ceil(prices[u])
        assert _gap(strength, {**joint, u: other}, classes) >= best - 1e-12, u


def test_clones_round_alike_and_unchanged_units_do_not_move():
    """A and its clone (one profile, prices a little apart) take one price; Kept, not changed, keeps 34 exactly."""
    strength = {"A": 0.0, "A clone": 0.0, "B": 0.8, "C": -0.4, "Kept": 0.3}
    prices = {u: 25.0 * math.exp(s) for u, s in strength.items()}
    prices.update({"A clone": prices["A"] * 1.01, "Kept": 34.3})
    scorer, classes, ranges = _setup(strength, prices)
    profile = {u: "A" if u.startswith("A") else u for u in prices}
    joint = round_jointly(scorer, prices, ["A", "A clone", "B", "C"], list(prices), 0.5, ranges, profile)
    assert joint["A"] == joint["A clone"]
    assert joint["Kept"] == 34.3
    assert all(joint[u] / 0.5 == int(joint[u] / 0.5) for u in ("A", "B", "C"))


@pytest.mark.parametrize("step", [1.0, 5.0])
def test_the_rounding_never_leaves_the_table_further_from_50_percent(step):
    strength = {"Sellsword": 0.2, "Duellist": -0.6, "Knight": 1.1, "Brawler": 0.45}
    prices = {u: 31.7 * math.exp(s) for u, s in strength.items()}
    scorer, classes, ranges = _setup(strength, prices)
    joint = round_jointly(scorer, prices, list(prices), list(prices), step, ranges, {u: u for u in prices})
    assert _gap(strength, joint, classes) <= _gap(strength, _nearest(prices, step), classes)


def test_an_exempt_unit_is_an_opponent_not_a_target():
    """Out is not held to 50%: the rounding minimises the held units' gap, with Out still in their roster."""
    strength = {"A": 0.0, "B": 0.8, "C": -0.4, "Out": -3.0}
    prices = {u: 25.0 * math.exp(s) for u, s in strength.items()}
    prices["Out"] = 15.0
    scorer, classes, ranges = _setup(strength, prices)
    held = ["A", "B", "C"]
    joint = round_jointly(scorer, prices, held, held, 1.0, ranges, {u: u for u in prices})
    assert joint["Out"] == 15.0
    best = _gap(strength, joint, classes, held)
    import itertools

    for combo in itertools.product(*[(math.floor(prices[u]), math.ceil(prices[u])) for u in held]):
        assert _gap(strength, {**joint, **dict(zip(held, combo))}, classes, held) >= best - 1e-12


def _brute_force_best(strength, classes, prices):
    """The smallest largest gap over every floor/ceiling table, scored directly from the strengths."""
    import itertools

    free = list(prices)
    best = math.inf
    for combo in itertools.product(*[(math.floor(prices[u]), math.ceil(prices[u])) for u in free]):
        best = min(best, _gap(strength, dict(zip(free, combo)), classes))
    return best


def test_up_to_sixteen_choosing_units_the_table_is_the_best_of_every_rounding():
    strength = {"Sellsword": 0.0, "Knight": 0.9, "Reaver": 0.35, "Assassin": -0.25, "Ogre": 1.3, "Brawler": 0.6}
    prices = {u: 13.0 * math.exp(s) for u, s in strength.items()}
    scorer, classes, ranges = _setup(strength, prices)
    joint = round_jointly(scorer, prices, list(prices), list(prices), 1.0, ranges, {u: u for u in prices})
    assert _gap(strength, joint, classes) == pytest.approx(_brute_force_best(strength, classes, prices), abs=1e-12)


def test_beyond_the_exhaustive_limit_no_flip_of_one_or_two_units_does_better(monkeypatch):
    import itertools

    import analysis.runs.rounding as rounding

    monkeypatch.setattr(rounding, "MAX_EXHAUSTIVE", 2)
    strength = {"Sellsword": 0.0, "Knight": 0.9, "Reaver": 0.35, "Assassin": -0.25, "Ogre": 1.3, "Brawler": 0.6}
    prices = {u: 13.0 * math.exp(s) for u, s in strength.items()}
    scorer, classes, ranges = _setup(strength, prices)
    joint = round_jointly(scorer, prices, list(prices), list(prices), 1.0, ranges, {u: u for u in prices})
    best = _gap(strength, joint, classes)
    assert best <= _gap(strength, _nearest(prices), classes)

    def other(u, table):
        return math.floor(prices[u]) if table[u] == math.ceil(prices[u]) else math.ceil(prices[u])

    for pair in itertools.combinations(list(strength), 2):
        for flip in ([pair[0]], [pair[1]], list(pair)):
            trial = {**joint, **{u: other(u, joint) for u in flip}}
            assert _gap(strength, trial, classes) >= best - 1e-12, flip
