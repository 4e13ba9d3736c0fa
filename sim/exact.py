"""Exact answers: a fight's outcome distribution computed from its Markov chain, with no sampling.

Many matchups a designer asks for are small Markov chains, and the kernels
already build their transition tables to sample from them. Propagating the
distribution round by round instead gives every probability a result reports
with no noise, usually in less time than the Monte Carlo run it replaces.

A ruleset offers exact answers by implementing two optional methods of
:class:`sim.ruleset.Ruleset`: ``exact_work(plan, rounds, max_rounds)`` (an
estimate of the work, or ``None`` where it has no exact chain) and
``exact(plan, rounds, max_rounds)`` (an :class:`ExactOutcome`). This module holds
that result, the helpers rulesets build it with (:func:`propagate` a chain round
by round, :func:`from_rows` to collapse final states into distributions), and the
two functions callers use: :func:`exact_outcome` and :func:`choose_method`.

Conventions (the kernels'): a fight to the ``end`` that has not absorbed after
``max_rounds`` is capped, a draw, counted in ``capped``; every probability is a
float64. Chains here are propagated in full: no state is dropped, so
``truncated`` is 0, except where a ruleset documents a cut (``grimdark``: binomial
tails below :data:`TAIL_CUT`), whose mass it reports.

Work units
----------
``exact_work`` counts about a nanosecond of one core each (a transition-entry
update in NumPy, plus the Python overhead of each round); :data:`MC_WORK_PER_FIGHT`
and :data:`MC_WORK_PER_RUN` put a Monte Carlo run in the same units, so
:func:`choose_method` compares like with like. The estimates are deterministic
(never timed), so the choice, and with it every number, is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .errors import InputError, MatchupError
from .outcomes import DRAW, WINNER_NAMES, Outcomes

if TYPE_CHECKING:  # annotations only: the protocol module imports this one
    from .ruleset import Rounds, Ruleset

__all__ = ["ExactOutcome", "ChainRun", "from_rows", "combine", "propagate", "exact_outcome", "choose_method",
           "trials_for_half_width", "mc_work", "METHODS", "TOLERANCE", "TAIL_CUT", "MC_WORK_PER_FIGHT",
           "MC_WORK_PER_RUN", "ROUND_OVERHEAD"]

#: The values of ``method``: choose by cost, always exact, always Monte Carlo.
METHODS = ("auto", "exact", "mc")
#: Probabilities of an exact outcome sum to 1 (with the truncated mass) within this.
TOLERANCE = 1e-12
#: Where a ruleset must cut a tail (an unbounded binomial), it cuts probabilities below this and reports them.
TAIL_CUT = 1e-15
#: Work of one Monte Carlo fight: the fastest kernels (mecha's and pools' single rounds) take 4-6 ns a fight,
#: the others 70-700 ns, so exact is chosen only where it beats Monte Carlo even at its fastest.
MC_WORK_PER_FIGHT = 10
#: Fixed work of any Monte Carlo run (engine, blocks, tally): about a millisecond.
MC_WORK_PER_RUN = 1_000_000
#: Python overhead of one round of an exact propagation (a few NumPy calls), in work units.
ROUND_OVERHEAD = 10_000
#: z of a two-sided 95% interval.
Z95 = 1.959963984540054


def _frozen(values: Any) -> NDArray[np.float64]:
    a = np.array(values, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class ExactOutcome:
    """The exact outcome distribution of one matchup: a Tally's content, as probabilities.

    Attributes
    ----------
    win : ndarray, shape (3,)
        P(draw), P(attacker wins), P(defender wins), indexed by the winner codes
        ``DRAW, ATTACKER, DEFENDER`` (capped fights are draws).
    capped : float
        P(a fight to the end reached ``max_rounds``), included in P(draw).
    categories : ndarray, shape (2, n_categories)
        Per side (attacker, defender), P(final state = each outcome category).
    damage_to_attacker, damage_to_defender : ndarray
        ``p[k]`` = P(the side takes exactly ``k`` damage).
    rounds : ndarray
        ``p[k]`` = P(the fight lasted exactly ``k`` rounds).
    extras : mapping of str to ndarray
        ``p[k]`` = P(the ruleset's extra count = ``k``), per declared extra.
    truncated : float
        Probability mass cut where the ruleset documents a cut (0 for a chain
        propagated in full); the distributions above sum to ``1 - truncated``.
    """

    win: NDArray[np.float64]
    capped: float
    categories: NDArray[np.float64]
    damage_to_attacker: NDArray[np.float64]
    damage_to_defender: NDArray[np.float64]
    rounds: NDArray[np.float64]
    extras: Mapping[str, NDArray[np.float64]] = field(default_factory=dict)
    truncated: float = 0.0

    def __post_init__(self) -> None:
        # read-only float64 copies: a frozen result whose arrays cannot change under it either
        for name in ("win", "categories", "damage_to_attacker", "damage_to_defender", "rounds"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "extras", {k: _frozen(v) for k, v in self.extras.items()})
        object.__setattr__(self, "capped", float(self.capped))
        object.__setattr__(self, "truncated", float(self.truncated))

    @property
    def total(self) -> float:
        """Probability accounted for: 1 up to rounding, less the truncated mass."""
        return float(self.win.sum())

    def win_probability(self, who: str) -> float:
        """P(``"attacker"``, ``"defender"`` or ``"draw"``)."""
        return float(self.win[WINNER_NAMES.index(who)])

    @staticmethod
    def mean(pmf: NDArray[np.float64]) -> float:
        """Mean of a distribution over 0, 1, 2, ... (normalised by its total)."""
        # exactly rounded sums (math.fsum): the same last bits on every machine, which a BLAS dot is not
        p = np.asarray(pmf, np.float64)
        total = math.fsum(p)
        return math.fsum(np.arange(len(p)) * p) / total if total > 0 else float("nan")

    def problems(self, tol: float = TOLERANCE) -> list[str]:
        """Why this is not a probability distribution (empty if it is).

        Every probability is finite and non-negative (``-tol`` allowed for
        rounding), the win probabilities and the truncated mass sum to 1 within
        ``tol``, every other distribution sums to what the win probabilities sum
        to, and ``capped`` is at most P(draw).
        """
        out = []
        arrays = {"win": self.win, "categories (attacker)": self.categories[0],
                  "categories (defender)": self.categories[1], "damage to attacker": self.damage_to_attacker,
                  "damage to defender": self.damage_to_defender, "rounds": self.rounds,
                  **{f"extra {k}": v for k, v in self.extras.items()}}
        for name, a in arrays.items():
            if not np.isfinite(a).all() or (a < -tol).any():
                out.append(f"{name}: a probability is negative or not finite ({a.min():.3g})")
        if not 0 <= self.truncated <= tol:
            out.append(f"truncated mass {self.truncated:.3g} is outside 0..{tol:g}")
        if abs(self.total + self.truncated - 1) > tol:
            out.append(f"win probabilities and truncated mass sum to {self.total + self.truncated!r}, not 1")
        for name, a in arrays.items():
            if name != "win" and abs(float(a.sum()) - self.total) > tol:
                out.append(f"{name} sums to {float(a.sum())!r}, the win probabilities to {self.total!r}")
        if not -tol <= self.capped <= float(self.win[DRAW]) + tol:
            out.append(f"P(capped) {self.capped!r} is not between 0 and P(draw) {float(self.win[DRAW])!r}")
        return out

    def check(self, tol: float = TOLERANCE) -> "ExactOutcome":
        """``self``, after checking :meth:`problems`; raise ValueError listing them."""
        found = self.problems(tol)
        if found:
            raise ValueError("exact outcome is not a distribution: " + "; ".join(found))
        return self

    def to_jsonable(self) -> dict[str, Any]:
        return {"win": dict(zip(WINNER_NAMES, self.win.tolist())), "capped": self.capped,
                "categories": self.categories.tolist(), "damage_to_attacker": self.damage_to_attacker.tolist(),
                "damage_to_defender": self.damage_to_defender.tolist(), "rounds": self.rounds.tolist(),
                "extras": {k: v.tolist() for k, v in self.extras.items()}, "truncated": self.truncated}


def _pmf(values: NDArray, prob: NDArray[np.float64], length: int = 0) -> NDArray[np.float64]:
    v = np.asarray(values, np.int64)
    if v.size and v.min() < 0:
        raise ValueError("exact outcomes: tallied quantities must be non-negative")
    return np.bincount(v, weights=prob, minlength=length) if v.size else np.zeros(max(length, 1))


def from_rows(out: Outcomes, prob: NDArray[np.float64] | None = None, *, n_categories: int,
              extra_names: Sequence[str] = (), truncated: float = 0.0) -> ExactOutcome:
    """Collapse final states into an :class:`ExactOutcome`.

    Parameters
    ----------
    out : Outcomes
        One row per distinct final state of the chain (winner, damage, categories,
        rounds fought, capped, extras), as a kernel returns outcomes: rulesets
        build it with the same function their kernel uses, so both read the
        final state alike.
    prob : ndarray, optional
        The probability of each row (default: ``out.weights``).
    n_categories : int
        The ruleset's number of outcome categories.
    extra_names : sequence of str
        The ruleset's extras, in declared order.
    truncated : float
        Mass the ruleset cut before (see :class:`ExactOutcome`).

    Returns
    -------
    ExactOutcome
    """
    p = np.asarray(out.weights if prob is None else prob, np.float64)
    if p.shape != np.shape(out.winner):
        raise ValueError("exact outcomes: one probability per row")
    keep = p > 0
    p = p[keep]

    def col(a: Any) -> NDArray:
        return np.asarray(a)[keep]

    cats = np.stack([_pmf(col(out.category_attacker), p, n_categories)[:n_categories],
                     _pmf(col(out.category_defender), p, n_categories)[:n_categories]])
    return ExactOutcome(
        win=_pmf(col(out.winner), p, 3)[:3],
        capped=float(p[col(out.capped).astype(bool)].sum()),
        categories=cats,
        damage_to_attacker=_pmf(col(out.damage_to_attacker), p),
        damage_to_defender=_pmf(col(out.damage_to_defender), p),
        rounds=_pmf(col(out.rounds), p),
        extras={k: _pmf(col(out.extras[k]), p) for k in extra_names},
        truncated=truncated,
    )


def _padded_sum(arrays: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
    out = np.zeros(max(len(a) for a in arrays))
    for a in arrays:
        out[: len(a)] += a
    return out


def combine(parts: Sequence[ExactOutcome], truncated: float = 0.0) -> ExactOutcome:
    """The sum of partial outcomes (each a share of the probability, e.g. the fights ending in one round).

    Rulesets whose final states are too many to hold at once collapse them as
    they go (:func:`from_rows` per round) and add the parts here.
    """
    if not parts:
        raise ValueError("combine: no parts")
    extras = {k: _padded_sum([p.extras[k] for p in parts]) for k in parts[0].extras}
    return ExactOutcome(
        win=_padded_sum([p.win for p in parts]), capped=sum(p.capped for p in parts),
        categories=sum(p.categories for p in parts[1:]) + parts[0].categories if len(parts) > 1 else parts[0].categories,
        damage_to_attacker=_padded_sum([p.damage_to_attacker for p in parts]),
        damage_to_defender=_padded_sum([p.damage_to_defender for p in parts]),
        rounds=_padded_sum([p.rounds for p in parts]), extras=extras,
        truncated=truncated + sum(p.truncated for p in parts))


@dataclass(frozen=True)
class ChainRun:
    """Where a chain's probability went: one row per (final state, rounds fought).

    Attributes
    ----------
    state : ndarray of int
        The state the fight ended in (absorbed, or still going at the limit).
    rounds : ndarray of int
        Rounds fought.
    prob : ndarray of float64
    absorbed : ndarray of bool
        The row's state is absorbing (else the fight reached the round limit still going).
    """

    state: NDArray[np.int64]
    rounds: NDArray[np.int64]
    prob: NDArray[np.float64]
    absorbed: NDArray[np.bool_]


def propagate(step: Callable[[NDArray[np.float64], int], NDArray[np.float64]], start: NDArray[np.float64],
              absorbing: NDArray[np.bool_], limit: int) -> ChainRun:
    """Propagate a distribution over a chain's states for at most ``limit`` rounds.

    Parameters
    ----------
    step : callable
        ``step(p, r)``: the distribution after round ``r`` from ``p`` before it
        (e.g. ``p @ P`` for a transition matrix ``P``; round 1 may differ).
    start : ndarray
        The distribution before round 1.
    absorbing : ndarray of bool
        States that end the fight: their mass is recorded in the round it
        arrives and leaves the propagation (nothing is cut).
    limit : int
        Rounds at most (``max_rounds`` for a fight to the end).

    Returns
    -------
    ChainRun
        Absorbed mass by (state, round), then what is still going after ``limit``
        rounds (rounds fought = ``limit``).
    """
    p = np.asarray(start, np.float64).copy()
    ends = np.flatnonzero(np.asarray(absorbing, bool))
    if (p[ends] != 0).any():
        raise ValueError("propagate: the start distribution is on an absorbing state")
    arrived = np.zeros((limit, ends.size))  # arrived[r - 1, i]: mass that reached ends[i] in round r
    for r in range(1, limit + 1):
        p = np.array(step(p, r), np.float64)
        arrived[r - 1] = p[ends]
        p[ends] = 0.0
        if not p.any():
            break
    r_idx, e_idx = np.nonzero(arrived)
    going = np.flatnonzero(p)
    cat = np.concatenate
    return ChainRun(cat([ends[e_idx], going]).astype(np.int64),
                    cat([r_idx + 1, np.full(going.size, limit)]).astype(np.int64),
                    cat([arrived[r_idx, e_idx], p[going]]),
                    cat([np.ones(r_idx.size, bool), np.zeros(going.size, bool)]))


# ------------------------------------------------------------------ callers
def exact_outcome(rs: Ruleset, plan: Any, rounds: Rounds, max_rounds: int) -> ExactOutcome:
    """The exact outcome distribution of a prepared matchup, checked.

    Parameters
    ----------
    rs : Ruleset
    plan : object
        ``rs.prepare(matchup)`` (e.g. from :func:`sim.build_matchup`).
    rounds : int or "end"
    max_rounds : int
        The cap of a fight to the end (what is still going there is a capped draw).

    Returns
    -------
    ExactOutcome
        Probabilities summing to 1 within :data:`TOLERANCE` (checked).

    Raises
    ------
    MatchupError
        The ruleset has no exact chain for this matchup; the one-line message
        names the matchup and says why (a ruleset without ``exact`` says so).

    Examples
    --------
    >>> import sim
    >>> from sim.exact import exact_outcome
    >>> rs = sim.get_ruleset("mecha")
    >>> _, plan = sim.build_matchup(rs, "AFS", "Nutrocker")
    >>> round(exact_outcome(rs, plan, 1, 50).win_probability("attacker") * 36, 9)
    4.0
    """
    out = rs.exact(plan, rounds, max_rounds)
    if not isinstance(out, ExactOutcome):
        raise TypeError(f"{rs.id}: exact() returned {type(out).__name__}, expected sim.exact.ExactOutcome")
    return out.check()


def trials_for_half_width(half_width: float, p: float = 0.5) -> int:
    """Fights a Monte Carlo run needs for a 95% half-width ``half_width`` at probability ``p`` (normal approximation).

    A half-width so small that the count passes :data:`sim.limits.MAX_TRIALS` gives that limit (``1e-300``
    squared is 0 in floating point: no division by it); the run's own ``max_trials`` caps it below that.
    """
    from .limits import MAX_TRIALS

    if not 0 < half_width < 1:
        raise InputError(f"half_width: got {half_width!r}, expected a number between 0 and 1")
    square = half_width**2
    n = Z95**2 * p * (1 - p) / square if square > 0 else math.inf
    return max(1, math.ceil(n)) if n < MAX_TRIALS else MAX_TRIALS


def mc_work(trials: int) -> int:
    """Work units of a Monte Carlo run of ``trials`` fights (see the module docstring)."""
    return MC_WORK_PER_RUN + MC_WORK_PER_FIGHT * int(trials)


def choose_method(rs: Ruleset, plan: Any, rounds: Rounds, max_rounds: int, *, trials: int | None = None,
                  half_width: float | None = None, max_trials: int | None = None, method: str = "auto") -> str:
    """``"exact"`` or ``"mc"``: how to answer one matchup at the precision asked.

    The rule (``method="auto"``): exact where the ruleset has an exact chain for
    the matchup (``rs.exact_work`` is not None) and its estimated work is at most
    the work of the Monte Carlo run it replaces,
    ``exact_work <= MC_WORK_PER_RUN + MC_WORK_PER_FIGHT * fights``; otherwise Monte Carlo.
    A work unit is about a nanosecond of one core; ``MC_WORK_PER_FIGHT`` is the cost
    of a fight on the fastest kernels, so exact is chosen only where it is at least
    as fast as Monte Carlo at its fastest.

    Parameters
    ----------
    rs : Ruleset
    plan : object
        The prepared matchup.
    rounds : int or "end"
    max_rounds : int
    trials : int, optional
        Fights the Monte Carlo run would make (``fight``'s ``trials``).
    half_width : float, optional
        Instead of ``trials``: the 95% half-width asked for; the run would make
        :func:`trials_for_half_width` fights (p = 1/2, the most), at most ``max_trials``.
    max_trials : int, optional
        Cap of the fights a ``half_width`` run makes.
    method : {"auto", "exact", "mc"}
        ``"exact"`` and ``"mc"`` are returned as asked, except that ``"exact"``
        where the ruleset has no exact chain raises.

    Returns
    -------
    str
        ``"exact"`` or ``"mc"``.

    Raises
    ------
    InputError
        An unknown ``method``, or neither/both of ``trials`` and ``half_width``.
    MatchupError
        ``method="exact"`` where the ruleset has no exact chain (one line: the matchup and why).

    Examples
    --------
    >>> import sim
    >>> from sim.exact import choose_method
    >>> rs = sim.get_ruleset("mecha")
    >>> _, plan = sim.build_matchup(rs, "AFS", "Nutrocker")
    >>> choose_method(rs, plan, "end", 50, trials=1_000_000)
    'exact'
    """
    if method not in METHODS:
        raise InputError(f"method: got {method!r}, expected one of {', '.join(METHODS)}")
    if method == "mc":
        return "mc"
    work = rs.exact_work(plan, rounds, max_rounds)
    if method == "exact":
        if work is None:
            rs.exact(plan, rounds, max_rounds)  # raises the ruleset's one-line reason
            raise MatchupError(f"{rs.id}: no exact chain for this matchup")
        return "exact"
    if (trials is None) == (half_width is None):
        raise InputError("choose_method: give trials or half_width (one of them)")
    fights = int(trials) if trials is not None else trials_for_half_width(float(half_width))
    if max_trials is not None:
        fights = min(fights, int(max_trials))
    return "exact" if work is not None and work <= mc_work(fights) else "mc"

