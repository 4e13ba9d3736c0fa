"""How units are fielded in an analysis: copies under a budget, identical profiles, the run context.

Two fieldings under a budget ``B`` (``fielding=``, ``--fielding``):

``expected`` (the default)
    A unit costing ``p`` fields ``B / p = k + f`` copies *on average*: ``k + 1``
    copies in a fraction ``f`` of its fights and ``k`` in the rest
    (:func:`copy_mixture`), so the points on the table average exactly ``B``
    and a unit's results move continuously with its price. A cell is the
    weighted sum of its whole-copy cells (:mod:`analysis.runs.cells`).
``whole``
    Every fight fields ``floor(B / p)`` copies (the behaviour before expected
    fielding): a price change within one step of copies changes nothing.

* :func:`fielded_copies` checks a budget against a roster once, up front: a
  unit that costs more than the budget, or whose copies exceed the ruleset's
  per-side limits, is left out with the reason (:func:`unfieldable`), and a
  budget that no unit can field (mecha) is one clear line.
* :func:`profile_key` names a unit's fighting profile (every field but ``name``
  and ``points``): units with the same key fight exactly alike, so analyses pool
  them and give them identical answers. :func:`twin_key` adds the copies fielded,
  so units that also cost the same (and so field the same copies) are *twins*.
  :func:`twin_representatives` names the first unit of the roster with each
  profile and price: a matrix fights the cells of twins once, on the streams of
  that first unit (:mod:`analysis.runs.cells`, :mod:`analysis.runs.pairs`).
* :class:`RunContext` keeps everything needed to run further cells on the same
  streams and settings as a matrix (fights at other copy counts for fair prices).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import sim
from sim.budget import copies_for, resolve_budget
from sim.errors import InputError, MatchupError, shown
from sim.rng import SUB_BLOCK_TRIALS
from sim.stats import Z95
from sim.roster import Roster
from sim.ruleset import Rounds, Ruleset
from sim.rulesets import get_ruleset

__all__ = ["profile_key", "twin_key", "twin_representatives",
           "fielded_copies", "unfieldable", "copy_mixture", "expected_copies",
           "check_fielding", "FIELDINGS", "RunContext", "budget_in_force", "check_run_arguments",
           "check_fair_settings"]

#: The ways a budget fields copies (``expected`` by default).
FIELDINGS = ("expected", "whole")


def check_fielding(fielding: Any) -> str:
    """``"expected"`` or ``"whole"`` (None: expected)."""
    if fielding is None:
        return "expected"
    if not isinstance(fielding, str) or fielding not in FIELDINGS:
        raise InputError(f"fielding: got {shown(fielding)}, expected one of {', '.join(FIELDINGS)}")
    return str(fielding)


def expected_copies(unit: Any, budget: float) -> float:
    """Copies ``budget`` buys of ``unit`` on average: ``budget / points`` (a float)."""
    copies_for(unit, budget)  # one clear line for a unit without a positive price
    return float(budget) / float(unit.points)


def copy_mixture(copies: float) -> tuple[tuple[int, float], ...]:
    """The whole copies behind ``copies`` expected ones and their weights.

    ``k + f`` copies (``0 <= f < 1``) are ``k`` copies with weight ``1 - f`` and
    ``k + 1`` with weight ``f``; a whole number is itself alone. A tolerance keeps
    exact multiples exact (``300 / 15`` is 20 copies even when the division rounds
    just below).

    Examples
    --------
    >>> copy_mixture(6.25)
    ((6, 0.75), (7, 0.25))
    >>> copy_mixture(20.0)
    ((20, 1.0),)
    """
    k = math.floor(copies + 1e-9)
    f = copies - k
    if f <= 1e-9:
        return ((int(k), 1.0),)
    return ((int(k), 1.0 - f), (int(k) + 1, f))
def check_run_arguments(*, states: Any = None, overrides: Any = None, options: Any = None, progress: Any = None,
                        from_text: Any = False, store: Any = None) -> None:
    """The arguments every run (matrix, sweep, compare) shares, checked before any work: one line naming the
    argument instead of an error from deep in the runner."""
    from sim.limits import check_mapping, check_side_mappings

    from ..stats.checks import check_callable, check_flag

    check_side_mappings(states, "states")
    check_side_mappings(overrides, "overrides")
    check_mapping(options, "options")
    check_callable(progress, "progress")
    check_flag(from_text, "from_text")
    if store is not None and not all(callable(getattr(store, m, None)) for m in ("key", "get", "put")):
        raise InputError(f"store: got {type(store).__name__}, expected a results store "
                         "(analysis.runs.store.ResultsStore) or None")


def check_fair_settings(fair: Any, fair_trials: Any, fair_half_width: Any) -> None:
    """``fair``, ``fair_trials`` and ``fair_half_width`` of a sweep or a compare, checked before any work."""
    from sim.limits import check_trials

    from ..stats.checks import check_flag

    check_flag(fair, "fair")
    check_trials(fair_trials, "fair_trials")
    if fair_half_width is not None and (isinstance(fair_half_width, bool) or
                                        not isinstance(fair_half_width, (int, float, np.integer, np.floating))
                                        or not 0 < fair_half_width < 0.5):
        raise InputError(f"fair_half_width: got {fair_half_width!r:.60}, expected a number between 0 and 0.5 "
                         "or None")


def _canonical(x: Any) -> Any:
    """Plain JSON-able values with a fixed order (tuples as lists, dataclasses as dicts)."""
    if isinstance(x, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        return float(x)
    if hasattr(x, "to_dict"):
        return _canonical(x.to_dict())
    if hasattr(x, "__dataclass_fields__"):
        import dataclasses

        return _canonical(dataclasses.asdict(x))
    return x


def _digest(obj: Any) -> str:
    text = json.dumps(_canonical(obj), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def profile_key(rs: Ruleset, unit: Any) -> str:
    """Digest of the unit's fighting profile: every field except ``name`` and ``points``."""
    d = {k: v for k, v in rs.unit_to_dict(unit).items() if k not in ("name", "points")}
    return _digest({"ruleset": rs.id, "profile": d})


def twin_key(rs: Ruleset, unit: Any, copies: float = 1) -> str:
    """Digest of the profile and the copies fielded: twins fight every matchup exactly alike."""
    return _digest({"profile": profile_key(rs, unit), "copies": round(float(copies), 9)})


def twin_representatives(rs: Ruleset, roster: Roster) -> dict[str, str]:
    """Each roster unit's name -> the name of the first unit in roster order with the same fighting profile
    and the same points (its *twin*; a unit without an earlier twin is its own representative).

    Twins fight every matchup exactly alike, so a matrix fights their cells once, on the
    streams of the representatives' names: a unit keeps its own streams unless an earlier
    unit of the roster is its twin. It depends on the roster alone, not on the units a
    run picks from it. (Same-profile units at other prices keep their own streams, so a
    changed unit's clones at other prices keep their numbers: ``meleelab diff``.)
    """
    first: dict[tuple[str, str], str] = {}
    return {n: first.setdefault((profile_key(rs, roster.unit(n)), repr(getattr(roster.unit(n), "points", None))), n)
            for n in roster.names}


def budget_in_force(rs: Ruleset, roster: Roster, budget: Any) -> float | None:
    """The budget an analysis uses (given, else the roster's), refused where copies cannot be fielded."""
    b = resolve_budget(budget, roster.budget)
    if b is not None and not rs.fields_copies:
        raise InputError(f"{rs.id}: {rs.copies_refusal}, so equal-points fights (--budget) are not available; "
                         "its fair prices come from the calibration model")
    return b


def unfieldable(rs: Ruleset, unit: Any, budget: float, fielding: str = "expected") -> str | None:
    """Why ``unit`` cannot be fielded at ``budget`` (None when it can).

    A unit that costs more than the budget cannot be fielded at all; one whose
    copies (the larger whole count, under expected fielding) exceed the
    ruleset's per-side limits cannot be fielded at that budget.
    """
    copies_for(unit, budget)  # one clear line for a unit without a positive price
    points = float(unit.points)
    if points > budget * (1 + 1e-9):
        return f"costs {points:g} points, more than the budget of {budget:g}"
    copies = float(budget) / points
    most = max(k for k, _ in copy_mixture(copies)) if fielding == "expected" else math.floor(copies + 1e-9)
    try:
        rs.copies(unit, most)
    except MatchupError as e:
        return f"at {budget:g} points it fields {copies:.3g} copies, and {e}"
    return None


def fielded_copies(rs: Ruleset, roster: Roster, names: Sequence[str], budget: float | None,
                   fielding: str = "whole") -> dict[str, float]:
    """Copies each fieldable unit fields under ``budget`` (1 each without one).

    ``fielding="whole"`` gives ``floor(budget / points)``, ``"expected"`` gives
    ``budget / points``; units that :func:`unfieldable` refuses are left out.
    """
    if budget is None:
        return {n: 1 for n in names}
    out: dict[str, float] = {}
    for n in names:
        unit = roster.unit(n)
        if unfieldable(rs, unit, budget, fielding) is not None:
            continue
        out[n] = expected_copies(unit, budget) if fielding == "expected" else copies_for(unit, budget)
    return out


@dataclass(frozen=True)
class RunContext:
    """The settings a matrix ran with, so further cells run exactly alike (same root seed and streams).

    Attributes
    ----------
    ruleset : str
    roster : Roster
    root : numpy.random.SeedSequence
    rounds, max_rounds : run length
    states, overrides, options : mapping
        As given to the matrix (text when ``from_text``).
    half_width, max_trials : cell precision
    workers : int
    from_text : bool
    budget : float or None
    executor : object or None
        Where cells run (a Dask client; None: local processes).
    store : analysis.runs.store.ResultsStore or None
        Finished cells kept across runs (further cells are stored and reused too).
    fielding : {"expected", "whole"}
        How the budget fields copies.
    method : {"auto", "exact", "mc"}
        How each cell is answered (:func:`analysis.runs.jobs.pick_method`).
    score_variance : float or None
        A cell is also fought until both sides' cell-score variance is at most this (a score target's
        share of one cell, :mod:`analysis.runs.allocation`); None: no score target.
    step_trials : int
        Fights per step of an adaptive cell (the grain of its stopping rule).
    """

    ruleset: str
    roster: Roster
    root: np.random.SeedSequence
    rounds: Rounds
    max_rounds: int
    states: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    half_width: float | None = 0.01
    max_trials: int = 32_768
    workers: int = 1
    from_text: bool = False
    budget: float | None = None
    executor: Any = field(default=None, repr=False, compare=False)
    store: Any = field(default=None, repr=False, compare=False)
    fielding: str = "expected"
    method: str = "auto"
    score_variance: float | None = None
    step_trials: int = SUB_BLOCK_TRIALS

    @property
    def rs(self) -> Ruleset:
        return get_ruleset(self.ruleset)

    def job(self, key: Any, plan: Any, stream: tuple[int, ...], label: str, **kw: Any) -> Any:
        """The :class:`~analysis.runs.jobs.CellJob` of one cell at this context's precision and method."""
        from .jobs import CellJob, pick_method

        method = pick_method(self.rs, plan, self.rounds, self.max_rounds, half_width=self._method_half_width,
                             max_trials=self.max_trials, method=self.method, label=label)
        return CellJob(key, plan, stream, self.max_trials, self.half_width, method=method, asked=self._asked,
                       **self._precision, **kw)

    @property
    def _precision(self) -> dict[str, Any]:
        """The score target's fields of a cell job (none without a target: the job keeps its old store key)."""
        if self.score_variance is None:
            return {}
        return {"score_variance": self.score_variance, "step_trials": self.step_trials}

    @property
    def _method_half_width(self) -> float | None:
        """The half-width that weighs a cell's fights against its exact chain: a score target's cell score
        half-width, or the cell's own target when that is tighter (the cell is fought to both)."""
        if self.score_variance is None:
            return self.half_width
        score = Z95 * math.sqrt(self.score_variance)
        return score if self.half_width is None else min(self.half_width, score)

    @property
    def _asked(self) -> str:
        return self.method  # each cell's own plan chooses its method: the key holds what was asked

    def build(self, attacker: Any, defender: Any, copies: Mapping[str, int] | None = None) -> tuple[Any, Any]:
        """``sim.build_matchup`` with this context's settings; ``copies`` overrides the budget's."""
        matchup = self.matchup(attacker, defender, copies)
        return matchup, self.plan(matchup)

    def matchup(self, attacker: Any, defender: Any, copies: Mapping[str, int] | None = None) -> Any:
        """The matchup of :meth:`build`, without its plan (cheap: see :meth:`stored`)."""
        from sim.api import make_matchup

        kw: dict[str, Any] = {"copies": copies} if copies is not None else {"budget": self.budget or "none"}
        return make_matchup(self.rs, attacker, defender, states=self.states, overrides=self.overrides,
                            options=self.options, roster=self.roster, from_text=self.from_text, **kw)

    def plan(self, matchup: Any) -> Any:
        """The plan of a matchup from :meth:`matchup` (``sim.build_matchup``'s second half)."""
        from sim.api import prepare_plan

        return prepare_plan(self.rs, matchup)

    def stored(self, key: Any, matchup: Any, stream: tuple[int, ...], **kw: Any) -> Any:
        """The result of a cell in the results store, found before its plan is built; None when absent.

        A rerun of a killed run, or a rebalance after its report, then builds no plan
        for the cells it finished (a plan can cost more than the fights of a cell). The
        key holds the method asked for, which decides from the plan, always alike, whether
        the cell is sampled (a tally, checked against its job as
        :func:`~analysis.runs.jobs.run_jobs` checks it) or answered exactly (an exact
        outcome, checked to be a distribution of the ruleset's shape).
        """
        from .jobs import CellJob, JobResult, stored_result_fits

        if self.store is None:
            return None
        job = CellJob(key, None, stream, self.max_trials, self.half_width, identity=matchup, asked=self._asked,
                      **self._precision, **kw)
        rs = self.rs
        k = self.store.key(rs, self.root, self.rounds, self.max_rounds, job)
        if not k:
            return None
        if self.method != "mc" and callable(getattr(self.store, "get_exact", None)):  # a cell answered exactly
            exact = self.store.get_exact(k, len(rs.outcome_categories), tuple(e.name for e in rs.extras))
            if exact is not None:
                return JobResult(key, None, exact=exact, from_store=True)
        hit = self.store.get(k) if self.method != "exact" else None
        if hit is None:
            return None
        if not stored_result_fits(job, rs, *hit):
            self.store.reject(k)
            return None
        return JobResult(key, hit[0], hit[1], from_store=True)
