"""Streaming accumulators: everything a result needs, in integers.

Sums are kept in ``int64`` (damage, rounds and extras are integral), so merging
tallies is exact and the same whatever order blocks finish in. Memory is fixed by
the histogram lengths, never by the number of trials.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .outcomes import Outcomes

__all__ = ["Moments", "Tally"]


def _add_hist(a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
    if len(a) < len(b):
        a, b = b, a
    out = a.copy()
    out[: len(b)] += b
    return out


@dataclass
class Moments:
    """Count-weighted sum, sum of squares and histogram of a non-negative integer quantity."""

    total: int = 0
    total_sq: int = 0
    hist: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))

    def add(self, values: NDArray[np.integer], weights: NDArray[np.int64] | None) -> None:
        v = np.asarray(values, dtype=np.int64)
        if v.size and v.min() < 0:
            raise ValueError("tallied quantities must be non-negative")
        if weights is None:
            h = np.bincount(v) if v.size else np.zeros(0, np.int64)
        else:
            h = np.bincount(v, weights=weights).astype(np.int64) if v.size else np.zeros(0, np.int64)
        h = np.asarray(h, dtype=np.int64)
        idx = np.arange(len(h), dtype=np.int64)
        self.total += int(h @ idx)
        self.total_sq += int(h @ (idx * idx))
        self.hist = _add_hist(self.hist, h)

    def merge(self, other: "Moments") -> "Moments":
        return Moments(self.total + other.total, self.total_sq + other.total_sq, _add_hist(self.hist, other.hist))

    def mean_se(self, n: int) -> tuple[float, float]:
        """Mean and its standard error over ``n`` trials."""
        if n == 0:
            return float("nan"), float("nan")
        mean = self.total / n
        if n < 2:
            return mean, float("nan")
        var = max(self.total_sq - self.total * self.total / n, 0.0) / (n - 1)
        return mean, float(np.sqrt(var / n))


@dataclass
class Tally:
    """Counts for one matchup over any number of blocks."""

    n_categories: int
    extra_names: tuple[str, ...] = ()
    trials: int = 0
    wins: NDArray[np.int64] = field(default_factory=lambda: np.zeros(3, np.int64))
    capped: int = 0
    damage_to_attacker: Moments = field(default_factory=Moments)
    damage_to_defender: Moments = field(default_factory=Moments)
    rounds: Moments = field(default_factory=Moments)
    categories: NDArray[np.int64] = field(init=False)
    extras: dict[str, Moments] = field(init=False)

    def __post_init__(self) -> None:
        self.categories = np.zeros((2, self.n_categories), np.int64)
        self.extras = {k: Moments() for k in self.extra_names}

    def add(self, out: Outcomes) -> None:
        """Fold one block's outcomes in."""
        w = out.weights
        n = out.n_trials
        self.trials += n
        cnt = lambda x, m: np.bincount(np.asarray(x, np.int64), weights=w, minlength=m)[:m].astype(np.int64)  # noqa: E731
        self.wins += cnt(out.winner, 3)
        self.capped += int(cnt(out.capped, 2)[1])
        self.categories[0] += cnt(out.category_attacker, self.n_categories)
        self.categories[1] += cnt(out.category_defender, self.n_categories)
        self.damage_to_attacker.add(out.damage_to_attacker, w)
        self.damage_to_defender.add(out.damage_to_defender, w)
        self.rounds.add(out.rounds, w)
        for k in self.extra_names:
            self.extras[k].add(out.extras[k], w)

    def merge(self, other: "Tally") -> "Tally":
        t = Tally(self.n_categories, self.extra_names)
        t.trials = self.trials + other.trials
        t.wins = self.wins + other.wins
        t.capped = self.capped + other.capped
        t.categories = self.categories + other.categories
        t.damage_to_attacker = self.damage_to_attacker.merge(other.damage_to_attacker)
        t.damage_to_defender = self.damage_to_defender.merge(other.damage_to_defender)
        t.rounds = self.rounds.merge(other.rounds)
        t.extras = {k: self.extras[k].merge(other.extras[k]) for k in self.extra_names}
        return t

    def same_as(self, other: "Tally") -> bool:
        """Exact equality of every count (for reproducibility tests)."""
        def eq(a: Moments, b: Moments) -> bool:
            return a.total == b.total and a.total_sq == b.total_sq and np.array_equal(a.hist, b.hist)
        return (
            self.trials == other.trials and np.array_equal(self.wins, other.wins)
            and self.capped == other.capped and np.array_equal(self.categories, other.categories)
            and eq(self.damage_to_attacker, other.damage_to_attacker)
            and eq(self.damage_to_defender, other.damage_to_defender)
            and eq(self.rounds, other.rounds)
            and all(eq(self.extras[k], other.extras[k]) for k in self.extra_names)
        )
