"""Interval estimates used by every result: Wilson intervals for proportions."""

from __future__ import annotations

import math

__all__ = ["wilson_interval", "Z95"]

#: Two-sided 95% normal quantile: ``scipy.stats.norm.ppf(0.975)`` to the last bit (a test checks it). Written
#: out because importing ``scipy.stats`` takes about a second, which a fight of a few milliseconds or a roster
#: error should not pay; ``statistics.NormalDist`` is one ulp away, which could move published intervals.
Z95: float = 1.959963984540054


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Parameters
    ----------
    successes : int
    n : int
    confidence : float

    Returns
    -------
    (float, float)
        Lower and upper bound; ``(nan, nan)`` when ``n == 0``.

    Notes
    -----
    The same interval as ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``
    (tested against it), in closed form because ``binomtest`` also computes an
    exact p-value we do not need, which is slow for the 10^8-trial runs.
    """
    if n <= 0:
        return float("nan"), float("nan")
    if confidence == 0.95:
        z = Z95
    else:
        from scipy import stats

        z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # The interval always contains p; at k = 0 or k = n rounding can put the bound 1e-17 on the wrong side.
    return min(max(0.0, centre - half), p), max(min(1.0, centre + half), p)
