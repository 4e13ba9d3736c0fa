"""Shared statistical assertions: tolerances come from the standard error, never by eye.

Every Monte Carlo check compares an estimate with an exact value computed
independently (enumeration, binomials, Markov chains) and allows ``z`` standard
errors (6 by default, as in NumPy's own random tests): a real rules bug at the
sample sizes used here is many more standard errors away, while a change of seed
or NumPy version does not cause false failures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

Z = 6.0


def assert_proportion(successes: int, n: int, p: float, z: float = Z, what: str = "") -> None:
    """|p_hat - p| < z * sqrt(p(1-p)/n); ``p`` of exactly 0 or 1 must be matched exactly."""
    phat = successes / n
    if p in (0.0, 1.0):
        assert phat == p, f"{what}: p_hat={phat} but the exact value is {p}"
        return
    se = math.sqrt(p * (1 - p) / n)
    assert abs(phat - p) < z * se, f"{what}: p_hat={phat:.6f} vs exact {p:.6f} ({abs(phat - p) / se:.1f} SE)"


def assert_mean(mean: float, exact_mean: float, exact_sd: float, n: int, z: float = Z, what: str = "") -> None:
    """|mean - exact| < z * exact_sd / sqrt(n)."""
    if exact_sd == 0:
        assert math.isclose(mean, exact_mean, abs_tol=1e-12), f"{what}: {mean} vs exact {exact_mean} (no variance)"
        return
    se = exact_sd / math.sqrt(n)
    assert abs(mean - exact_mean) < z * se, f"{what}: mean={mean:.6f} vs exact {exact_mean:.6f} ({abs(mean - exact_mean) / se:.1f} SE)"


def assert_distribution(counts: Sequence[int] | np.ndarray, probs: Sequence[float] | np.ndarray, alpha: float = 1e-6,
                        what: str = "") -> None:
    """Chi-square goodness of fit of observed ``counts`` to exact ``probs`` at level ``alpha``.

    Cells with zero exact probability must be empty; cells with expected count
    below 5 are pooled into one.
    """
    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    k = max(len(counts), len(probs))
    counts = np.pad(counts, (0, k - len(counts)))
    probs = np.pad(probs, (0, k - len(probs)))
    assert abs(probs.sum() - 1) < 1e-9, f"{what}: exact probabilities sum to {probs.sum()}"
    impossible = probs == 0
    assert counts[impossible].sum() == 0, f"{what}: outcomes with exact probability 0 occurred: {np.flatnonzero(impossible & (counts > 0))}"
    n = counts.sum()
    expected = probs * n
    big = expected >= 5
    obs = list(counts[big])
    exp = list(expected[big])
    if (~big & ~impossible).any():
        obs.append(counts[~big & ~impossible].sum())
        exp.append(expected[~big & ~impossible].sum())
    if len(obs) < 2:
        return
    chi2 = float(((np.array(obs) - np.array(exp)) ** 2 / np.array(exp)).sum())
    threshold = float(stats.chi2.ppf(1 - alpha, len(obs) - 1))
    assert chi2 < threshold, f"{what}: chi2={chi2:.1f} over threshold {threshold:.1f} (df={len(obs) - 1}, alpha={alpha})"


def assert_same_distribution(counts_a: Sequence[int] | np.ndarray, counts_b: Sequence[int] | np.ndarray,
                             alpha: float = 1e-6, what: str = "") -> None:
    """Two-sample chi-square test of homogeneity (kernel vs reference histograms)."""
    a = np.asarray(counts_a, dtype=float)
    b = np.asarray(counts_b, dtype=float)
    k = max(len(a), len(b))
    a, b = np.pad(a, (0, k - len(a))), np.pad(b, (0, k - len(b)))
    keep = (a + b) > 0
    a, b = a[keep], b[keep]
    if len(a) < 2:
        return
    # pool sparse cells so the chi-square approximation holds
    table = np.vstack([a, b])
    exp = table.sum(0) * (table.sum(1)[:, None] / table.sum())
    sparse = (exp < 5).any(0)
    if sparse.any():
        table = np.hstack([table[:, ~sparse], table[:, sparse].sum(1, keepdims=True)])
    table = table[:, table.sum(0) > 0]
    if table.shape[1] < 2:
        return
    chi2, pvalue, dof, _ = stats.chi2_contingency(table, correction=False)
    assert pvalue > alpha, f"{what}: distributions differ, chi2={chi2:.1f}, df={dof}, p={pvalue:.2e} (alpha={alpha})"


def outcome_probabilities(tally_counts: Mapping[str, int], n: int) -> dict[str, float]:
    return {k: v / n for k, v in tally_counts.items()}


def assert_fits_exact(out, ex, what: str = "") -> None:
    """Kernel outcomes (``sim.outcomes.Outcomes``, weighted or not) against an exact outcome distribution
    (``sim.exact.ExactOutcome``): chi-square goodness of fit of the winner, both sides' categories, damage,
    rounds and every extra, and z-tests of the mean damage and rounds (6 standard errors)."""
    w = None if out.weights is None else np.asarray(out.weights, float)
    n = int(out.n_trials)

    def hist(values):
        return np.rint(np.bincount(np.asarray(values, np.int64), weights=w)).astype(np.int64)

    quantities = [("winner", out.winner, ex.win), ("attacker category", out.category_attacker, ex.categories[0]),
                  ("defender category", out.category_defender, ex.categories[1]),
                  ("damage to attacker", out.damage_to_attacker, ex.damage_to_attacker),
                  ("damage to defender", out.damage_to_defender, ex.damage_to_defender),
                  ("rounds", out.rounds, ex.rounds)]
    quantities += [(f"extra {k}", out.extras[k], ex.extras[k]) for k in ex.extras]
    for name, values, probs in quantities:
        p = np.asarray(probs, float)
        assert_distribution(hist(values), p / p.sum(), what=f"{what}: {name}")
        if name.startswith(("damage", "rounds")):
            k = np.arange(len(p))
            mean = float(k @ p / p.sum())
            sd = math.sqrt(max(float((k - mean) ** 2 @ p / p.sum()), 0.0))
            if sd * math.sqrt(n) > 1e-9:
                assert_mean(float(np.average(np.asarray(values, float), weights=w)), mean, sd, n,
                            what=f"{what}: mean {name}")
