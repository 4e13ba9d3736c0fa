"""The double oracle (analysis/stats/double_oracle.py) on small games whose equilibrium is known."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.stats.double_oracle import double_oracle
from sim.errors import InputError

# A weighted rock-paper-scissors (rows beat columns by A[i, j]) plus two strategies every one of the three beats:
# the equilibrium is (1/4, 1/2, 1/4) on the first three, derived by hand: against the mix (a, b, c) the three
# columns pay b - 2c, -a + c and 2a - b, all zero at a = c = b / 2.
A = np.array([
    [0, -1, 2, 1, 1],
    [1, 0, -1, 1, 1],
    [-2, 1, 0, 1, 1],
    [-1, -1, -1, 0, 0.5],
    [-1, -1, -1, -0.5, 0],
], float)


def _payoff(strategies):
    idx = list(strategies)
    return A[np.ix_(idx, idx)]


def _oracle(strategies, weights):
    """The exact best response over the whole game to the mix over ``strategies``."""
    gains = A[:, list(strategies)] @ weights
    best = int(np.argmax(gains))
    return best, float(gains[best])


def test_it_finds_the_known_equilibrium_from_one_strategy():
    seen = []
    res = double_oracle([3], _payoff, _oracle, on_step=seen.append)
    assert res.converged
    mix = res.mix()
    assert set(mix) == {0, 1, 2}
    assert mix[0] == pytest.approx(0.25, abs=1e-9)
    assert mix[1] == pytest.approx(0.5, abs=1e-9)
    assert mix[2] == pytest.approx(0.25, abs=1e-9)
    assert res.value == pytest.approx(0.0, abs=1e-9)
    assert 4 not in res.strategies                    # never a best response: never fought
    assert seen[-1].added is False and all(s.added for s in seen[:-1])


def test_tolerance_stops_early_and_the_iteration_cap_is_reported():
    res = double_oracle([3], _payoff, _oracle, tol=10.0)
    assert res.converged and res.strategies == [3]
    capped = double_oracle([3], _payoff, _oracle, max_iterations=1)
    assert not capped.converged and len(capped.strategies) == 2 and len(capped.weights) == 2


def test_a_game_with_a_pure_equilibrium():
    """A dominant strategy: the oracle finds it and the mix is that strategy alone."""
    B = np.array([[0, -1, -1], [1, 0, 0.5], [1, -0.5, 0]], float)
    res = double_oracle([0], lambda s: B[np.ix_(list(s), list(s))],
                        lambda s, w: (int(np.argmax(B[:, list(s)] @ w)), float(np.max(B[:, list(s)] @ w))))
    assert res.mix() == {1: pytest.approx(1.0)}


def test_bad_arguments_are_one_line():
    with pytest.raises(InputError, match="no starting strategy"):
        double_oracle([], _payoff, _oracle)
    with pytest.raises(InputError, match="given twice"):
        double_oracle([1, 1], _payoff, _oracle)
    with pytest.raises(InputError, match="max_iterations"):
        double_oracle([1], _payoff, _oracle, max_iterations=0)
