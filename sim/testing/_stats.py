"""Two-sample tests for the kit: kernel histogram against reference histogram.

Tolerances come from the sample sizes: the chi-square statistic of a
homogeneity test, and the z of a difference of means, already scale with the
number of fights on each side, so a fixed significance level means a smaller
detectable bias the more fights are run.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy import stats

__all__ = ["histogram", "homogeneity", "goodness_of_fit", "mean_against", "mean_difference", "detectable_shift"]


def histogram(values: NDArray[np.integer], weights: NDArray[np.integer] | None = None) -> NDArray[np.int64]:
    """Counts of each non-negative integer value (weighted rows count ``weight`` times)."""
    v = np.asarray(values, dtype=np.int64)
    if not v.size:
        return np.zeros(0, np.int64)
    return np.rint(np.bincount(v, weights=weights)).astype(np.int64)


def homogeneity(a: NDArray[np.integer], b: NDArray[np.integer]) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom of "two histograms, one distribution".

    Cells whose expected count is below 5 on either side are pooled into one
    cell so the chi-square approximation holds; a pooled cell that is still
    sparse joins the smallest other cell.

    Returns
    -------
    (chi2, dof)
        ``dof == 0`` when there is nothing to compare (one occupied cell).
    """
    k = max(len(a), len(b))
    table = np.vstack([np.pad(np.asarray(a, float), (0, k - len(a))), np.pad(np.asarray(b, float), (0, k - len(b)))])
    table = table[:, table.sum(0) > 0]
    if table.shape[1] < 2 or (table.sum(1) == 0).any():
        return 0.0, 0
    share = table.sum(1, keepdims=True) / table.sum()
    sparse = ((table.sum(0) * share) < 5).any(0)
    if sparse.any():
        table = np.hstack([table[:, ~sparse], table[:, sparse].sum(1, keepdims=True)])
        if ((table[:, -1].sum() * share) < 5).any() and table.shape[1] > 2:
            small = int(np.argmin(table[:, :-1].sum(0)))
            table[:, small] += table[:, -1]
            table = table[:, :-1]
    if table.shape[1] < 2:
        return 0.0, 0
    expected = table.sum(0) * share
    return float(((table - expected) ** 2 / expected).sum()), int(table.shape[1] - 1)


def goodness_of_fit(counts: NDArray[np.integer], probs: NDArray[np.floating]) -> tuple[float, int, int]:
    """Chi-square statistic and degrees of freedom of "this histogram comes from ``probs``", and how many
    fights fell where ``probs`` says nothing can.

    Cells whose expected count is below 5 are pooled into one (joining the
    smallest other cell if still sparse), as in :func:`homogeneity`.
    """
    k = max(len(counts), len(probs))
    c = np.pad(np.asarray(counts, float), (0, k - len(counts)))
    p = np.clip(np.pad(np.asarray(probs, float), (0, k - len(probs))), 0.0, None)
    impossible = int(c[p <= 0].sum())
    n = c.sum()
    keep = p > 0
    c, e = c[keep], p[keep] / p[keep].sum() * n
    sparse = e < 5
    if sparse.any():
        c, e = np.append(c[~sparse], c[sparse].sum()), np.append(e[~sparse], e[sparse].sum())
        if e[-1] < 5 and len(e) > 2:
            small = int(np.argmin(e[:-1]))
            c[small] += c[-1]
            e[small] += e[-1]
            c, e = c[:-1], e[:-1]
    if len(e) < 2:
        return 0.0, 0, impossible
    return float(((c - e) ** 2 / e).sum()), int(len(e) - 1), impossible


def mean_against(counts: NDArray[np.integer], probs: NDArray[np.floating]) -> float:
    """Two-sided p-value that a histogram's mean is the mean of ``probs`` (z with the exact standard deviation)."""
    c = np.asarray(counts, float)
    p = np.asarray(probs, float) / float(np.sum(probs))
    n = c.sum()
    mean = float(np.arange(len(c)) @ c / n)
    mu = float(np.arange(len(p)) @ p)
    sd = math.sqrt(max(float((np.arange(len(p)) - mu) ** 2 @ p), 0.0))
    if sd == 0:
        return 1.0 if abs(mean - mu) < 1e-9 else 0.0
    return float(2 * stats.norm.sf(abs(mean - mu) / (sd / math.sqrt(n))))


def mean_difference(a: NDArray[np.integer], b: NDArray[np.integer]) -> float:
    """Two-sided p-value that two histograms have the same mean (Welch's z, normal approximation).

    Equal constant samples give 1; different constant samples give 0.
    """
    def moments(h: NDArray[np.integer]) -> tuple[float, float, float]:
        h = np.asarray(h, float)
        x = np.arange(len(h))
        n = h.sum()
        mean = float(h @ x / n)
        var = float(h @ (x - mean) ** 2 / max(n - 1, 1))
        return n, mean, var

    na, ma, va = moments(a)
    nb, mb, vb = moments(b)
    se = math.sqrt(va / na + vb / nb)
    if se == 0:
        return 1.0 if ma == mb else 0.0
    return float(2 * stats.norm.sf(abs(ma - mb) / se))


def detectable_shift(n_kernel: int, n_reference: int, alpha_each: float) -> float:
    """The smallest change of a probability near 1/2 one test flags: z(alpha/2) * sqrt(1/4 (1/n + 1/m))."""
    z = float(stats.norm.isf(alpha_each / 2))
    return z * math.sqrt(0.25 * (1 / n_kernel + 1 / n_reference))
