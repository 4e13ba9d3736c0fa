"""The weight a unit can take in a mix within a tolerance of equilibrium (rebalance's proof, issue 29)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.stats.equilibrium import nash_ranges


def _table(a: np.ndarray) -> pd.DataFrame:
    names = [f"U{i}" for i in range(len(a))]
    return pd.DataFrame(a, index=names, columns=names)


def test_a_table_balanced_within_the_tolerance_lets_every_unit_into_a_near_equilibrium():
    """Each unit's payoff against the uniform mix is within 0.04 of even (2 pp of score): the uniform mix is then
    within 0.04 of an equilibrium, so every unit has weight in some such mix, although the exact equilibrium of
    this table is a single unit (U0 beats or ties everyone by a hair)."""
    rng = np.random.default_rng(5)
    k = 6
    a = np.zeros((k, k))
    a[0, 1:] = 0.03  # U0 edges everyone: the exact equilibrium is U0 alone
    a = a - a.T
    noise = np.triu(rng.uniform(-0.01, 0.01, (k, k)), 1)
    a = a + noise - noise.T
    against_uniform = a.T.mean(axis=1)  # each opponent's payoff against the uniform mix, from the mix's side
    assert np.all(np.abs(against_uniform) <= 0.04)
    strict = nash_ranges(_table(a))
    near = nash_ranges(_table(a), tol=0.04)
    assert list(strict["weight_max"] > 1e-3) == [True] + [False] * (k - 1)
    assert (near["weight_max"] >= 1 / k - 1e-9).all()
