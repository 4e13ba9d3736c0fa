"""What a kernel returns for a block of trials, and what a reference returns for one.

Both carry the same fields, so tests compare the kernel and the reference field
by field. Codes: ``winner`` is 0 draw, 1 attacker, 2 defender; categories index
the ruleset's ``outcome_categories``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

__all__ = ["DRAW", "ATTACKER", "DEFENDER", "WINNER_NAMES", "Outcomes", "TrialOutcome"]

DRAW, ATTACKER, DEFENDER = 0, 1, 2
WINNER_NAMES = ("draw", "attacker", "defender")


@dataclass
class Outcomes:
    """Per-trial results of one block (arrays of equal length).

    A kernel may return each distinct outcome once with a ``weights`` array
    (the number of trials that ended that way) instead of one row per trial.

    Attributes
    ----------
    winner : ndarray of int8
    damage_to_attacker, damage_to_defender : ndarray of int
        In the ruleset's damage unit (always integral).
    category_attacker, category_defender : ndarray of int8
    rounds : ndarray of int
        Rounds fought.
    capped : ndarray of bool
        Stopped by ``max_rounds`` (counted as a draw).
    extras : dict of str to ndarray of int
        Ruleset-specific per-trial counts (see ``Ruleset.extras``).
    weights : ndarray of int64, optional
    """

    winner: NDArray[np.integer]
    damage_to_attacker: NDArray[np.integer]
    damage_to_defender: NDArray[np.integer]
    category_attacker: NDArray[np.integer]
    category_defender: NDArray[np.integer]
    rounds: NDArray[np.integer]
    capped: NDArray[np.bool_]
    extras: dict[str, NDArray[np.integer]] = field(default_factory=dict)
    weights: NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return len(self.winner)

    @property
    def n_trials(self) -> int:
        return int(self.weights.sum()) if self.weights is not None else len(self.winner)

    def expand(self) -> "Outcomes":
        """One row per trial (repeat weighted rows); for tests and small inspections."""
        if self.weights is None:
            return self
        w = self.weights
        rep = lambda a: np.repeat(a, w)  # noqa: E731
        return Outcomes(
            rep(self.winner), rep(self.damage_to_attacker), rep(self.damage_to_defender),
            rep(self.category_attacker), rep(self.category_defender), rep(self.rounds),
            rep(self.capped), {k: rep(v) for k, v in self.extras.items()},
        )

    @staticmethod
    def stack(rows: list["TrialOutcome"]) -> "Outcomes":
        """Outcomes from a list of scalar results (used to tally reference runs)."""
        keys = rows[0].extras.keys() if rows else ()
        return Outcomes(
            np.array([r.winner for r in rows], dtype=np.int8),
            np.array([r.damage_to_attacker for r in rows], dtype=np.int64),
            np.array([r.damage_to_defender for r in rows], dtype=np.int64),
            np.array([r.category_attacker for r in rows], dtype=np.int8),
            np.array([r.category_defender for r in rows], dtype=np.int8),
            np.array([r.rounds for r in rows], dtype=np.int64),
            np.array([r.capped for r in rows], dtype=bool),
            {k: np.array([r.extras[k] for r in rows], dtype=np.int64) for k in keys},
        )


@dataclass(frozen=True)
class TrialOutcome:
    """The result of one fight, from a scalar reference ``resolve_one``."""

    winner: int
    damage_to_attacker: int
    damage_to_defender: int
    category_attacker: int
    category_defender: int
    rounds: int
    capped: bool = False
    extras: dict[str, int] = field(default_factory=dict)

    def row(self) -> tuple:
        """The fields as a tuple, for exact comparison with a kernel row."""
        return (self.winner, self.damage_to_attacker, self.damage_to_defender,
                self.category_attacker, self.category_defender, self.rounds, self.capped,
                tuple(sorted(self.extras.items())))
