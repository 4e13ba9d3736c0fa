"""Probability tables that come out the same to the last bit on every machine.

A kernel maps each uniform to an outcome through its tables (alias thresholds,
cumulative probabilities, the cells of a multinomial draw), so one bit of
difference in a table can send a uniform to another outcome, and a fixed seed
then gives other counts. The usual ways of computing a table differ between
machines with the same versions of everything:

* ``@`` / ``np.dot`` (BLAS): the library picks its kernels for the CPU (and
  ``OPENBLAS_CORETYPE``), with other summation orders and fused multiply-adds;
* ``np.exp``, ``np.log``, ``np.log1p``, ``np.power`` (and ``**`` on float
  arrays other than squares): NumPy has separate SIMD versions (AVX-512 and
  others), picked at run time;
* the C library's ``exp``, ``log``, ``lgamma``, ``pow`` (Python's ``**`` on
  floats, ``math.exp``, ``scipy.stats``): glibc picks variants with fused
  multiply-adds on CPUs that have them.

The functions here use only IEEE-754 ``+``, ``-``, ``*`` and ``/``, which are
correctly rounded everywhere, each in one fixed order (NumPy's element-wise
operations and its sums apply them the same way on every CPU:
``tests/sim/test_portable_tables.py`` runs the kernels with NumPy's SIMD
features, BLAS's kernels and glibc's FMA variants switched off and compares
the counts).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = ["iter_binomial_rows", "binomial_rows", "binomial_pmf", "matmul", "int_power", "max_of_d6_pmf"]


def iter_binomial_rows(n_max: int, p: float) -> Iterator[NDArray[np.float64]]:
    """P(Binomial(n, p) = k) for ``k = 0 .. n``, for ``n = 0, 1, .., n_max`` in turn (one vector reused:
    copy a row to keep it).

    Pascal's recurrence ``B[n + 1, k] = q B[n, k] + p B[n, k - 1]``: sums of
    positive terms, so each entry is within about ``2 n`` ulps of the exact
    value, far tails underflow quietly to 0, and nothing overflows however
    large ``n``. ``p`` of exactly 0 or 1 gives the certain outcome.
    """
    n_max, p = int(n_max), float(p)
    q = 1.0 - p
    row = np.zeros(n_max + 1)
    row[0] = 1.0
    yield row[:1]
    for n in range(n_max):
        if p <= 0.0 or p >= 1.0:
            row[n + 1] = 0.0
            if p >= 1.0:
                row[n], row[n + 1] = 0.0, 1.0
        else:
            head = row[: n + 1].copy()
            row[: n + 1] = q * head          # the two products first, then one sum each: no fused multiply-add
            row[1: n + 2] += p * head
        yield row[: n + 2]


def binomial_rows(n_max: int, p: float) -> NDArray[np.float64]:
    """``B[n, k]`` = P(Binomial(n, p) = k) for ``0 <= k <= n <= n_max``, zero above the diagonal
    (:func:`iter_binomial_rows`, kept as one square array)."""
    B = np.zeros((int(n_max) + 1, int(n_max) + 1))
    for n, row in enumerate(iter_binomial_rows(n_max, p)):
        B[n, : n + 1] = row
    return B


def binomial_pmf(n: int, p: float) -> NDArray[np.float64]:
    """P(Binomial(n, p) = k) for ``k = 0 .. n``: row ``n`` of :func:`binomial_rows`. Read-only: kept per
    process for the table builders, which ask for the same few rows many times."""
    return _binomial_pmf(int(n), float(p))


@lru_cache(maxsize=4096)
def _binomial_pmf(n: int, p: float) -> NDArray[np.float64]:
    for row in iter_binomial_rows(n, p):
        pass
    out = row.copy()
    out.flags.writeable = False
    return out


def matmul(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a @ b`` for finite 2-D float arrays, summed over the inner index in increasing order.

    ``out += a[:, j] (outer) b[j]`` for ``j = 0, 1, ...``: each product rounded,
    then added, in that order on every machine (BLAS blocks and fuses the sums
    differently per CPU). Only the span of rows where ``a[:, j]`` is not zero and
    of columns where ``b[j]`` is not zero is updated: the products left out are
    zeros, and adding zero changes nothing, so the triangular and banded
    tables of the rulesets cost a fraction of a full product.
    """
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not multiply")
    out = np.zeros((a.shape[0], b.shape[1]))
    for j in range(a.shape[1]):
        rows = np.flatnonzero(a[:, j])
        cols = np.flatnonzero(b[j])
        if rows.size and cols.size:
            r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
            out[r0:r1, c0:c1] += np.multiply.outer(a[r0:r1, j], b[j, c0:c1])
    return out


def int_power(x: float | NDArray[np.float64], k: int) -> float | NDArray[np.float64]:
    """``x ** k`` for an integer ``k >= 0`` by ``k - 1`` multiplications in order (``pow`` differs by machine)."""
    k = int(k)
    if k < 0:
        raise ValueError(f"int_power: negative exponent {k}")
    if k == 0:
        return np.ones_like(x, dtype=np.float64) if isinstance(x, np.ndarray) else 1.0
    out = x * 1.0
    for _ in range(k - 1):
        out = out * x
    return out


def max_of_d6_pmf(n_dice: int) -> list[float]:
    """P(highest of ``n_dice`` d6 = k) for k = 1..6, each ``(k**n - (k-1)**n) / 6**n`` rounded once
    (exact integers, one correctly rounded division). No dice (a prone side) counts as a 1."""
    n = int(n_dice)
    if n <= 0:
        return [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    whole = 6 ** n
    return [(k ** n - (k - 1) ** n) / whole for k in range(1, 7)]
