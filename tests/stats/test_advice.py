"""The fewest price changes (issue 37, item 1), on payoff models whose balanced prices are known analytically.

A logistic strength model: unit ``i`` of strength ``theta_i`` fielded at
``B / p_i`` copies has value ``v_i = theta_i + log(B / p_i)`` and beats ``j``
with probability ``sigmoid(v_i - v_j)``; its score against the roster is the
mean over every unit (itself at 1/2). Every unit scores exactly 50% when all
values are equal, so the balanced prices are ``p_i = K exp(theta_i)`` and a
unit planted too cheap or too dear is the one change that balances the roster.
The minimal sets are checked against a brute force that solves every subset
independently (``scipy.optimize.least_squares``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import brentq, least_squares

from analysis.stats.advice import Crossing, fewest_changes, surely_off

TOL = 0.02


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class Logistic:
    """Scores and crossings of the logistic strength model (classes of ``sizes`` identical units each)."""

    def __init__(self, theta: dict[str, float], budget: float = 100.0, sizes: dict[str, int] | None = None,
                 se: float = 0.0) -> None:
        self.theta, self.budget, self.se = dict(theta), budget, se
        self.sizes = sizes or {u: 1 for u in theta}
        self.n = sum(self.sizes.values())

    def value(self, u: str, p: float) -> float:
        return self.theta[u] + math.log(self.budget / p)

    def scores(self, prices):
        out = {}
        for u in prices:
            vu = self.value(u, prices[u])
            total = 0.5 * self.sizes[u] + sum(self.sizes[o] * _sigmoid(vu - self.value(o, prices[o]))
                                              for o in prices if o != u)
            out[u] = total / self.n
        return out, {u: self.se for u in prices}

    def fair(self, prices, reps):
        out = {}
        for r in reps:
            f = lambda lp: self.scores({**prices, r: math.exp(lp)})[0][r] - 0.5  # noqa: E731
            out[r] = Crossing(math.exp(brentq(f, -30, 30)))
        return out

    def solve(self, prices, ranges=None, **kw):
        classes = {u: [u] if self.sizes[u] == 1 else [f"{u}#{k}" for k in range(self.sizes[u])] for u in prices}
        ranges = ranges or {u: (p / 20, p * 20) for u, p in prices.items()}
        return fewest_changes(classes, prices, self.scores, self.fair, tolerance=TOL, ranges=ranges, **kw)


def _roster(n: int, seed: int) -> tuple[Logistic, dict[str, float]]:
    rng = np.random.default_rng(seed)
    units = [f"u{i}" for i in range(n)]
    theta = dict(zip(units, rng.normal(0, 0.6, n)))
    return Logistic(theta), {u: 30 * math.exp(theta[u]) for u in units}


@pytest.mark.parametrize("factor", [0.84, 0.75, 1.25])
@pytest.mark.parametrize("seed", range(3))
def test_one_planted_unit_is_the_only_change_and_goes_back_to_its_balanced_price(factor, seed):
    model, balanced = _roster(9, seed)
    planted = f"u{seed + 2}"
    prices = {**balanced, planted: balanced[planted] * factor}
    s, _ = model.scores(prices)
    assert abs(s[planted] - 0.5) > TOL  # the plant is visible: the check below is not vacuous
    sol = model.solve(prices)
    assert sol.changed == (planted,)
    assert sol.prices[planted] == pytest.approx(balanced[planted], rel=1e-3)
    assert sol.balanced and sol.worst <= TOL


def test_two_planted_units_are_the_two_changes():
    model, balanced = _roster(9, 7)
    prices = {**balanced, "u1": balanced["u1"] * 0.75, "u6": balanced["u6"] * 1.3}
    sol = model.solve(prices)
    assert set(sol.changed) == {"u1", "u6"}
    for u in ("u1", "u6"):
        assert sol.prices[u] == pytest.approx(balanced[u], rel=1e-3)


def _brute_minimum(model: Logistic, prices: dict[str, float], tol: float) -> int:
    """The smallest set whose joint 50% prices put every unit within ``tol``, each subset solved on its own."""
    units = list(prices)
    for size in range(1, len(units) + 1):
        for chosen in itertools.combinations(units, size):
            def residual(lp, chosen=chosen):
                table = {**prices, **{u: math.exp(v) for u, v in zip(chosen, lp)}}
                s = model.scores(table)[0]
                return [s[u] - 0.5 for u in chosen]

            fit = least_squares(residual, [math.log(prices[u]) for u in chosen])
            table = {**prices, **{u: math.exp(v) for u, v in zip(chosen, fit.x)}}
            if max(abs(v - 0.5) for v in model.scores(table)[0].values()) <= tol:
                return size
    return len(units)


@pytest.mark.parametrize("seed", range(12))
def test_no_smaller_set_balances_the_roster_than_the_one_proposed(seed):
    """Random mispricings of a 6-unit roster: no set that the brute force proves feasible with a 0.1 pp margin
    is smaller than the proposal, and the proposal holds."""
    model, balanced = _roster(6, 100 + seed)
    rng = np.random.default_rng(seed)
    prices = {u: p * math.exp(rng.normal(0, 0.15)) for u, p in balanced.items()}
    sol = model.solve(prices)
    s, _ = model.scores(prices)
    if not any(abs(v - 0.5) > TOL for v in s.values()):
        assert sol.changed == ()
        return
    assert sol.balanced
    assert len(sol.changed) <= _brute_minimum(model, prices, TOL - 0.001)


def test_nothing_changes_while_no_unit_is_surely_off():
    """A unit 2.5 pp from 50% with a standard error of 1 pp is not surely outside 2 pp: no advice."""
    model, balanced = _roster(6, 3)
    model.se = 0.01
    prices = dict(balanced)
    lo, hi = 1e-3, 1.0
    for _ in range(60):  # the price that puts u0 at 52.5%
        mid = math.sqrt(lo * hi)
        prices["u0"] = balanced["u0"] * mid
        lo, hi = (lo, mid) if model.scores(prices)[0]["u0"] < 0.525 else (mid, hi)
    assert not surely_off(model.scores(prices)[0]["u0"], 0.01, TOL)
    assert model.solve(prices).changed == ()
    model.se = 0.001  # the same unit, now surely off
    assert model.solve(prices).changed == ("u0",)


def test_a_unit_its_range_cannot_balance_stays_an_opponent_and_the_others_are_balanced():
    """u0 planted 40% too cheap may not rise above 5% of its price (a side's limits, say): it is exempt, named,
    moved to the edge of its range, and the others are balanced against it."""
    model, balanced = _roster(8, 11)
    prices = {**balanced, "u0": balanced["u0"] * 0.6}
    ranges = {u: (p / 20, p * 20) for u, p in prices.items()}
    ranges["u0"] = (prices["u0"] * 0.9, prices["u0"] * 1.05)
    sol = model.solve(prices, ranges=ranges)
    assert "u0" in sol.exempt and "u0" not in sol.held
    s, _ = model.scores(sol.prices)
    assert s["u0"] > 0.5 + TOL  # it still wins too often: it is an opponent the others are balanced against
    assert all(abs(s[u] - 0.5) <= TOL + 1e-9 for u in sol.held)
    assert sol.prices["u0"] in (pytest.approx(prices["u0"]), pytest.approx(prices["u0"] * 1.05))


def test_a_locked_unit_never_changes_and_a_cap_names_what_a_unit_needs():
    model, balanced = _roster(8, 5)
    prices = {**balanced, "u3": balanced["u3"] * 0.7}
    ranges = {u: (p / 20, p * 20) for u, p in prices.items()}
    ranges["u3"] = (prices["u3"], prices["u3"])  # locked
    sol = model.solve(prices, ranges=ranges)
    assert "u3" not in sol.changed and sol.prices["u3"] == prices["u3"]
    capped = {u: (p * 0.9, p * 1.1) for u, p in prices.items()}
    sol = model.solve(prices, ranges=capped, max_change=0.1)
    assert "u3" in sol.exempt and "cap of 10%" in sol.exempt["u3"] and "+4" in sol.exempt["u3"]
    assert sol.prices["u3"] == pytest.approx(prices["u3"] * 1.1)


def test_twins_move_together_and_count_as_their_size():
    """A class of three identical units planted too cheap: the one change is the class, and its weight in every
    score is three units'."""
    rng = np.random.default_rng(2)
    theta = {f"u{i}": float(rng.normal(0, 0.5)) for i in range(5)}
    model = Logistic(theta, sizes={"u0": 3, "u1": 1, "u2": 1, "u3": 1, "u4": 1})
    balanced = {u: 30 * math.exp(t) for u, t in theta.items()}
    prices = {**balanced, "u0": balanced["u0"] * 0.8}
    sol = model.solve(prices)
    assert sol.changed == ("u0",)
    assert sol.prices["u0"] == pytest.approx(balanced["u0"], rel=1e-3)


def test_a_cap_moves_every_unit_as_far_as_it_allows_and_names_what_each_needs():
    """Every price may move only 1%: each unit that needs more is exempt, named with what it needs, and moved by
    1% in the right direction; the others keep their price."""
    model, balanced = _roster(5, 9)
    prices = {u: p * f for (u, p), f in zip(balanced.items(), (0.6, 1.5, 1.0, 0.8, 1.25))}
    ranges = {u: (p * 0.99, p * 1.01) for u, p in prices.items()}
    sol = model.solve(prices, ranges=ranges, max_change=0.01)
    s, _ = model.scores(prices)
    for u in prices:
        if abs(s[u] - 0.5) > TOL:
            assert "cap of 1%" in sol.exempt[u]
            assert sol.prices[u] == pytest.approx(prices[u] * (1.01 if s[u] > 0.5 else 0.99))


def test_a_roster_beyond_the_exhaustive_search_finds_its_two_planted_units():
    """24 units (the beam search, its systems solved by LU): the two planted units are the two changes."""
    from analysis.stats import advice

    model, balanced = _roster(advice.EXHAUSTIVE + 8, 11)
    prices = {**balanced, "u3": balanced["u3"] * 0.7, "u17": balanced["u17"] * 1.35}
    sol = model.solve(prices)
    assert set(sol.changed) == {"u3", "u17"}
    for u in ("u3", "u17"):
        assert sol.prices[u] == pytest.approx(balanced[u], rel=1e-3)


def test_the_beam_s_solves_are_the_pseudo_inverse_s_answers_and_a_singular_batch_falls_back_to_it():
    from analysis.stats.advice import EXHAUSTIVE, _solve_each

    rng = np.random.default_rng(4)
    s = EXHAUSTIVE + 4
    system = rng.normal(size=(30, s, s)) + 3 * np.eye(s)
    rhs = rng.normal(size=(30, s))
    want = np.einsum("mij,mj->mi", np.linalg.pinv(system), rhs)
    assert np.allclose(_solve_each(system, rhs), want, rtol=1e-9, atol=1e-12)
    system[7, :, 2] = 0.0  # a class whose price moves no score: singular, the least-norm answer
    want = np.einsum("mij,mj->mi", np.linalg.pinv(system), rhs)
    assert np.allclose(_solve_each(system, rhs), want, rtol=1e-9, atol=1e-12)
