"""The double oracle: the equilibrium of a symmetric zero-sum game too large to write down.

The game's strategies (army lists, say) are too many to fight every pair, but a best
response to any mix can be *searched for*. The double oracle (McMahan, Gordon and
Blum, 2003) keeps a small set of strategies and grows it:

1. solve the game restricted to the set (:func:`analysis.stats.equilibrium.solve_game`);
2. ask the oracle for a best response to that mix, and its payoff against it;
3. stop when it beats the mix by at most ``tol`` (the mix is then an equilibrium of the
   whole game to within ``tol``, as far as the oracle can see), else add it and go on.

Nothing here fights: the caller gives the payoff of any pair of strategies and the
oracle (:mod:`analysis.runs.meta` fights lists and searches compositions).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.errors import InputError

from .equilibrium import solve_game

__all__ = ["OracleStep", "DoubleOracleResult", "double_oracle"]


@dataclass(frozen=True)
class OracleStep:
    """One iteration: the set's size, its game value, the oracle's answer and how far it beats the mix."""

    iteration: int
    strategies: int
    value: float
    response: Hashable
    gain: float
    added: bool


@dataclass
class DoubleOracleResult:
    """The final set, its equilibrium mix (``weights``, aligned with ``strategies``), the game value, whether the
    oracle's last answer beat the mix by at most the tolerance (``converged``), and every iteration."""

    strategies: list[Hashable]
    weights: np.ndarray
    value: float
    converged: bool
    history: list[OracleStep] = field(default_factory=list)

    def mix(self) -> dict[Hashable, float]:
        """Strategy -> weight, for the strategies with weight."""
        return {s: float(w) for s, w in zip(self.strategies, self.weights) if w > 0}


def double_oracle(initial: Sequence[Hashable], payoff: Callable[[Sequence[Hashable]], np.ndarray],
                  oracle: Callable[[Sequence[Hashable], np.ndarray], tuple[Hashable, float]], *,
                  tol: float = 0.0, max_iterations: int = 50,
                  on_step: Callable[[OracleStep], None] | None = None) -> DoubleOracleResult:
    """Grow ``initial`` until no best response beats the restricted equilibrium by more than ``tol``.

    Parameters
    ----------
    initial : sequence of hashable
        The starting strategies (at least one, each once).
    payoff : callable
        ``payoff(strategies)``: the antisymmetric payoff table of the row strategy against the
        column strategy, shape ``(k, k)``. Called after every addition with the whole set (the
        caller caches what it has fought).
    oracle : callable
        ``oracle(strategies, weights)``: a best response to the mix ``weights`` over ``strategies``
        and its payoff against that mix (``sum_j w_j A[r, j]``).
    tol : float
        Stop when the best response's payoff against the mix is at most ``value + tol``.
    max_iterations : int
        At most this many oracle calls (``converged`` is False if they run out first).
    on_step : callable, optional
        Called with each :class:`OracleStep` (progress).
    """
    strategies = list(initial)
    if not strategies:
        raise InputError("double oracle: no starting strategy")
    if len(set(strategies)) != len(strategies):
        raise InputError("double oracle: a starting strategy is given twice")
    if not isinstance(max_iterations, int) or isinstance(max_iterations, bool) or max_iterations < 1:
        raise InputError(f"max_iterations: got {max_iterations!r}, expected a positive integer")
    history: list[OracleStep] = []
    converged = False
    weights, value = np.ones(1), 0.0
    for it in range(1, max_iterations + 1):
        table = np.asarray(payoff(strategies), float)
        if table.shape != (len(strategies), len(strategies)):
            raise InputError(f"double oracle: payoff table of shape {table.shape}, expected "
                             f"{(len(strategies), len(strategies))}")
        weights, value = solve_game(table)
        response, gain = oracle(strategies, weights)
        done = gain <= value + tol or response in strategies
        step = OracleStep(it, len(strategies), float(value), response, float(gain), not done)
        history.append(step)
        if on_step is not None:
            on_step(step)
        if done:
            converged = True
            break
        strategies.append(response)
    else:
        table = np.asarray(payoff(strategies), float)
        weights, value = solve_game(table)
    return DoubleOracleResult(strategies, np.asarray(weights, float), float(value), converged, history)
