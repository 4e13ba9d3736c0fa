"""``duel`` plan: per-side numbers the kernel and the reference share, and the outcome assembly.

Side index 0 is the attacker, 1 the defender. Everything here is derived once per
matchup in ``prepare``; nothing is random.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...outcomes import ATTACKER, DEFENDER, DRAW, Outcomes
from ...ruleset import END, Matchup, Rounds

__all__ = ["SideSpec", "DuelPlan", "check_pass_probability", "make_outcomes", "winner_code", "SURVIVED",
           "ELIMINATED", "EXTRA_NAMES", "line_up"]

SURVIVED, ELIMINATED = 0, 1
EXTRA_NAMES = ("misted_attacker", "misted_defender", "models_lost_attacker", "models_lost_defender")


def check_pass_probability(effective_toughness: int, die: str) -> Fraction:
    """Chance that one Toughness check against ``T' = T - S >= 1`` is passed.

    ``d6``: pass on a roll <= T', a 6 always fails. ``2d6``: pass on a total <= T',
    a double six always fails (the same "natural maximum fails" rule).
    """
    if die == "d6":
        return Fraction(sum(1 for r in range(1, 7) if r != 6 and r <= effective_toughness), 6)
    return Fraction(sum(1 for a in range(1, 7) for b in range(1, 7)
                        if a + b != 12 and a + b <= effective_toughness), 36)


@dataclass(frozen=True)
class SideSpec:
    """One side's numbers as the procedure uses them.

    Attributes
    ----------
    count, wounds, toughness, ws : int
        From the profile.
    hit_strength, hit_damage : int
        Of the hits this side inflicts (primary weapon, or bare hands).
    extra_die, extra_hit : int
        0 or 1 per model: the "+1A" of two identical weapons, as the
        ``dual_wield`` option reads it.
    prone : bool
        Rolls no dice (counts as a 1) and cannot back up.
    space : int or None
        Yards each model can back up (``None``: unlimited).
    """

    count: int
    wounds: int
    toughness: int
    ws: int
    hit_strength: int
    hit_damage: int
    extra_die: int
    extra_hit: int
    prone: bool
    space: int | None


@dataclass(frozen=True)
class DuelPlan:
    """Everything ``simulate`` and ``resolve_one`` need for one matchup.

    Attributes
    ----------
    matchup : Matchup
    sides : tuple of SideSpec
        Attacker, defender.
    instant : tuple of bool
        ``instant[i]``: side i's hits are instant death on the other side (S >= T).
    p_fail : tuple of float
        ``p_fail[i]``: chance a hit from side i fails the other side's check (when not instant).
    check_target : tuple of int
        ``T - S`` of the check side i's hits force (<= 0 when instant).
    initiative : int
        Side that pairs off the combats (0 attacker, 1 defender).
    assignment : str
        ``fewest_wounds`` or ``spread``.
    toughness_die : str
        ``d6`` or ``2d6``.
    chain : object or None
        Precomputed Markov-chain alias tables (the fastest kernel), if small enough.
    tables : object or None
        Exact per-combat outcome tables of the group kernel (:class:`.tables.DuelTables`).
    engine : str
        Who plays the group kernel's fights: ``"auto"`` (the compiled loop of :mod:`.compiled`
        when Numba imports) or ``"numpy"`` (the vectorised :mod:`.fast`, which the tests hold
        to the same answers).
    """

    matchup: Matchup
    sides: tuple[SideSpec, SideSpec]
    instant: tuple[bool, bool]
    p_fail: tuple[float, float]
    check_target: tuple[int, int]
    initiative: int
    assignment: str
    toughness_die: str
    chain: Any = None
    tables: Any = None
    engine: str = "auto"

    @property
    def start_wounds(self) -> tuple[int, int]:
        return tuple(s.count * s.wounds for s in self.sides)  # type: ignore[return-value]

    @property
    def counts(self) -> tuple[int, int]:
        return self.sides[0].count, self.sides[1].count


def line_up(plan: Any, side: int) -> tuple[SideSpec, ...]:
    """The models of side ``side`` in listed order, each as its profile's :class:`SideSpec`: the side's
    one profile ``count`` times, or an army list's models (:class:`.mixed.MixedDuelPlan`)."""
    models = getattr(plan, "models", None)
    if models is not None:
        return models[side]
    return (plan.sides[side],) * plan.sides[side].count


def winner_code(lost: NDArray, start: tuple[int, int], alive: NDArray, rounds: Rounds,
                capped: NDArray) -> NDArray[np.int8]:
    """Winner per trial: the side with models left; with ``rounds = N`` and both standing,
    the side that lost the smaller share of its starting wounds (cross-multiplied, exact)."""
    a_gone, d_gone = alive[0] == 0, alive[1] == 0
    share_a = lost[0].astype(np.int64) * start[1]
    share_d = lost[1].astype(np.int64) * start[0]
    both = ~a_gone & ~d_gone
    by_share = np.where(share_a < share_d, ATTACKER, np.where(share_a > share_d, DEFENDER, DRAW))
    out = np.where(a_gone & d_gone, DRAW, np.where(d_gone, ATTACKER, np.where(a_gone, DEFENDER, DRAW)))
    if rounds != END:
        out = np.where(both, by_share, out)
    return np.where(capped, DRAW, out).astype(np.int8)


def make_outcomes(plan: DuelPlan, remaining: tuple[NDArray, NDArray], alive: tuple[NDArray, NDArray],
                  misted: tuple[NDArray, NDArray], n_rounds: NDArray, rounds: Rounds, limit: int,
                  weights: NDArray | None = None) -> Outcomes:
    """Outcomes from per-trial (or per-distinct-outcome) final wounds, models left and misted counts."""
    start = plan.start_wounds
    lost = (start[0] - np.asarray(remaining[0], np.int64), start[1] - np.asarray(remaining[1], np.int64))
    alive_a, alive_d = np.asarray(alive[0], np.int64), np.asarray(alive[1], np.int64)
    n_rounds = np.asarray(n_rounds, np.int64)
    capped = (rounds == END) & (n_rounds >= limit) & (alive_a > 0) & (alive_d > 0)
    capped = np.asarray(capped, bool)
    winner = winner_code(lost, start, (alive_a, alive_d), rounds, capped)
    extras = {
        "misted_attacker": np.asarray(misted[0], np.int64),
        "misted_defender": np.asarray(misted[1], np.int64),
        "models_lost_attacker": plan.counts[0] - alive_a,
        "models_lost_defender": plan.counts[1] - alive_d,
    }
    cat_a = np.where(alive_a == 0, ELIMINATED, SURVIVED).astype(np.int8)
    cat_d = np.where(alive_d == 0, ELIMINATED, SURVIVED).astype(np.int8)
    return Outcomes(winner, lost[0], lost[1], cat_a, cat_d, n_rounds, capped, extras, weights=weights)
