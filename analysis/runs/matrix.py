"""Matchup matrices: every unit against every unit, each cell run adaptively in blocks.

A cell is one attacker-defender pair. Its random numbers come from the stream
``(stable_key(attacker), stable_key(defender))``: with a ``half_width``, sub-block
``s`` of block ``b`` from ``sim.rng.sub_block_rng(root, *stream, block=b, sub=s)``;
with fixed trials (``half_width=None``), block ``b`` from
``sim.rng.block_rng(root, *stream, b)``, the addressing of :func:`sim.engine.run_tally`,
so such a cell holds exactly the counts of ``sim.fight(..., stream=stream)``. A
cell's numbers depend neither on the roster order, nor on the other cells, nor on
the number of worker processes (:mod:`analysis.runs.jobs`). Twins (same profile and
points as an earlier unit of the roster) are fought once, on the first twin's
stream (:func:`analysis.runs.fielding.twin_representatives`), and the cells are
streamed: each plan is built when its fights are near and dropped after them
(:mod:`analysis.runs.streaming`), so memory does not grow with the roster.

Cells run sub-block by sub-block (4,096 fights) until the Wilson 95% half-width of
``p_attacker``, ``p_defender`` and ``p_draw`` is at most ``half_width``, or
``max_trials`` is reached.

With a ``budget`` (equal-points matchups) each side fields
``floor(budget / points)`` copies of its unit (:mod:`sim.budget`); the long frame
says how many (``attacker_copies``, ``defender_copies``) and the points actually
on the table (``attacker_fielded``, ``defender_fielded``).

Cells run through the block runner of :mod:`analysis.runs.jobs`; the matrix's
files are written by :mod:`analysis.report.writers` (a run returns data, it
writes no report files).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import sim
from sim.api import provenance as _provenance
from sim.errors import InputError, shown
from sim.limits import MAX_MATRIX_UNITS, check_trials
from sim.results import FightResult
from sim.rng import BLOCK_TRIALS, SUB_BLOCK_TRIALS, SeedLike, root_sequence
from sim.roster import Roster
from sim.ruleset import Rounds, Ruleset
from sim.rulesets import get_ruleset

from ..stats.estimates import row_trials
from ..stats.expected import DEFAULT_TOLERANCE
from .allocation import check_score_half_width, targeted
from .cells import CellBank, mixed_cells
from .fielding import (RunContext, budget_in_force, check_fielding, check_run_arguments, fielded_copies, profile_key,
                       unfieldable)
from .jobs import CellJob, JobResult, ProgressCallback, run_jobs
from .pairs import fixed_cells
from .racing import race, starting_variance
from .settings import RunSettings, check_method, run_settings
from .streams import cell_stream

__all__ = [
    "MatchupMatrix",
    "matchup_matrix",
    "CellJob",
    "JobResult",
    "run_jobs",
    "resolve_roster",
    "check_run_settings",
    "cell_stream",
    "LONG_COLUMNS",
    "saved_matrix",
]

#: Column order of ``MatchupMatrix.long`` and ``matrix_long.csv``.
LONG_COLUMNS = [
    "attacker", "defender", "trials",
    "p_attacker", "p_attacker_lo", "p_attacker_hi", "p_attacker_se",
    "p_defender", "p_defender_lo", "p_defender_hi", "p_defender_se",
    "p_draw", "p_draw_lo", "p_draw_hi", "p_draw_se",
    "damage_to_attacker", "damage_to_attacker_se", "damage_to_defender", "damage_to_defender_se",
    "mean_rounds", "mean_rounds_se", "capped", "points_attacker", "points_defender",
    "attacker_copies", "defender_copies", "attacker_fielded", "defender_fielded", "note", "fights", "method",
]


# ------------------------------------------------------------- shared checks
def resolve_roster(rs: Ruleset, roster: Roster | str | Path | None) -> Roster:
    """The roster object for ``roster`` (a Roster, a file path, or None for the shipped roster)."""
    if roster is None:
        return sim.default_roster(rs.id)
    if isinstance(roster, Roster):
        if roster.ruleset != rs.id:
            raise InputError(f"{roster.source}: a {roster.ruleset} roster, expected a {rs.id} roster")
        return roster
    if not isinstance(roster, (str, Path)):
        raise InputError(f"roster: got {shown(roster)}, expected a Roster, a roster file path or None")
    return sim.load_roster(roster, rs.id)


def check_run_settings(rs: Ruleset, rounds: Rounds | str | None, max_rounds: int | None, trials: int,
                       what: str = "--trials", *, states: Mapping[str, Mapping[str, Any]] | None = None,
                       rules_defaults: bool = False) -> RunSettings:
    """Validate rounds, max_rounds, states and a trial count; return what the run fights under
    (:func:`analysis.runs.settings.run_settings`: the ruleset's balance settings unless told otherwise)."""
    run = run_settings(rs, rounds, max_rounds, states, rules_defaults=rules_defaults)
    check_trials(trials, what)
    return run


def _points(unit: Any) -> float:
    p = getattr(unit, "points", None)
    return float(p) if p is not None else float("nan")


# ------------------------------------------------------------------- matrix
@dataclass
class MatchupMatrix:
    """Every unit as attacker against every unit as defender.

    Attributes
    ----------
    ruleset : str
        Ruleset id.
    units : list of str
        Unit names, in order (units that can fight no one are left out, see ``excluded``).
    long : pandas.DataFrame
        One row per attacker-defender pair (columns :data:`LONG_COLUMNS`). A pair
        that cannot fight (``MatchupError``) has ``trials == 0``, NaN numbers and
        the reason in ``note``.
    results : dict
        ``(attacker, defender) -> sim.FightResult`` for the pairs that fought.
    settings : dict
    provenance : dict
        Seed entropy, versions, block size, stream addressing.
    excluded : dict
        Unit name -> why it was left out (it could fight no one, e.g. a flier in mecha).
    budget : float or None
        Equal-points budget (None: one unit a side).
    copies : dict
        Unit name -> copies it fields (1 without a budget; ``budget / points`` under expected fielding).
    profiles : dict
        Unit name -> :func:`analysis.runs.fielding.profile_key` (same key: the same fighting profile).
    context : RunContext or None
        How to run further cells exactly alike (fights at other copy counts).
    resumed_cells : int
        Cells taken from the results store instead of simulated (not part of
        ``settings``: the numbers are the same either way).
    fielding : str
        ``"expected"`` or ``"whole"`` (:mod:`analysis.runs.fielding`).
    bank : CellBank or None
        Under expected fielding, the whole-copy cells fought (copy curves and
        rebalancing reuse them instead of fighting them again).
    """

    ruleset: str
    units: list[str]
    long: pd.DataFrame
    results: dict[tuple[str, str], FightResult]
    settings: dict[str, Any]
    provenance: dict[str, Any]
    excluded: dict[str, str] = field(default_factory=dict)
    budget: float | None = None
    copies: dict[str, float] = field(default_factory=dict)
    profiles: dict[str, str] = field(default_factory=dict)
    context: Any = field(default=None, repr=False)
    resumed_cells: int = 0
    fielding: str = "whole"
    bank: Any = field(default=None, repr=False)

    def twins(self) -> dict[str, str]:
        """Unit name -> twin key (same profile and same copies: the unit fights exactly like its twins)."""
        return {u: f"{self.profiles.get(u, u)}x{round(float(self.copies.get(u, 1)), 9):g}" for u in self.units}

    def wide(self, value: str = "p_attacker") -> pd.DataFrame:
        """``value`` as attacker rows x defender columns (in unit order)."""
        if not isinstance(value, str) or value not in self.long.columns:
            raise InputError(f"value: got {shown(value)}, expected a column of the matrix "
                             f"({', '.join(self.long.columns)})")
        w = self.long.pivot(index="attacker", columns="defender", values=value)
        w = w.reindex(index=self.units, columns=self.units)
        w.index.name, w.columns.name = "attacker", "defender"
        return w

    def side_averaged(self) -> pd.DataFrame:
        """Each unit against each opponent, averaged over the two roles.

        ``p_win(u, o) = (P(u wins attacking o) + P(u wins defending against o)) / 2``,
        likewise ``p_loss`` and ``p_draw``; ``p_win_se`` from the two cells'
        binomial errors (independent streams); ``payoff = p_win - p_loss``.

        Returns
        -------
        pandas.DataFrame
            Columns ``unit, opponent, p_win, p_loss, p_draw, p_win_se, payoff, payoff_se``.
        """
        by = self.long.set_index(["attacker", "defender"])
        rows = []
        for u in self.units:
            for o in self.units:
                a, d = by.loc[(u, o)], by.loc[(o, u)]  # u attacking o; o attacking u (u defends)
                p_win = (a.p_attacker + d.p_defender) / 2
                p_loss = (a.p_defender + d.p_attacker) / 2
                p_draw = (a.p_draw + d.p_draw) / 2
                win_se = math.sqrt(a.p_attacker_se ** 2 + d.p_defender_se ** 2) / 2
                # per-cell variance of the (win - loss) indicator, combined over the two cells
                var_a = _payoff_var(a.p_attacker, a.p_defender, row_trials(a))  # exact: inf fights, variance 0
                var_d = _payoff_var(d.p_defender, d.p_attacker, row_trials(d))
                rows.append({"unit": u, "opponent": o, "p_win": p_win, "p_loss": p_loss, "p_draw": p_draw,
                             "p_win_se": win_se, "payoff": p_win - p_loss,
                             "payoff_se": math.sqrt(var_a + var_d) / 2})
        return pd.DataFrame(rows, columns=["unit", "opponent", "p_win", "p_loss", "p_draw", "p_win_se", "payoff",
                                           "payoff_se"])

    def payoff_matrix(self) -> pd.DataFrame:
        """Unit x opponent side-averaged ``p_win - p_loss`` (antisymmetric, zero diagonal)."""
        s = self.side_averaged()
        w = s.pivot(index="unit", columns="opponent", values="payoff").reindex(index=self.units, columns=self.units)
        w.index.name, w.columns.name = "unit", "opponent"
        return w


def saved_matrix(frame: pd.DataFrame, ruleset: str, meta: Mapping[str, Any] | None = None) -> MatchupMatrix:
    """A matrix read back from ``matrix_long.csv`` (and ``matrix.json`` when given): no fights, no results.

    With the JSON the units keep their order, copies, budget and profiles, so the
    balance tables pool twins exactly as they did when the matrix ran.
    """
    meta = dict(meta or {})
    names = list(dict.fromkeys(list(frame["attacker"].astype(str)) + list(frame["defender"].astype(str))))
    units = [u for u in meta.get("units", names) if u in names] or names
    frame = frame.copy()
    frame.attrs["ruleset"] = ruleset
    return MatchupMatrix(ruleset, units, frame, {}, dict(meta.get("settings", {})), dict(meta.get("provenance", {})),
                         dict(meta.get("excluded", {})), meta.get("budget"),
                         {u: int(k) for u, k in (meta.get("copies") or {}).items()},
                         dict(meta.get("profiles") or {}), None)


def _payoff_var(p_win: float, p_loss: float, n: int) -> float:
    if not n:
        return float("nan")
    return (p_win + p_loss - (p_win - p_loss) ** 2) / n


def matchup_matrix(
    ruleset: str | Ruleset,
    roster: Roster | str | Path | None = None,
    units: Sequence[str] | None = None,
    *,
    half_width: float | None = 0.005,
    max_trials: int = 2_000_000,
    seed: SeedLike = None,
    rounds: Rounds | str | None = None,
    max_rounds: int | None = None,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    progress: ProgressCallback | None = None,
    from_text: bool = False,
    budget: Any = None,
    executor: Any = None,
    store: Any = None,
    rules_defaults: bool = False,
    fielding: str | None = None,
    method: str = "auto",
    score_half_width: float | None = None,
    race_tolerance: float | None = DEFAULT_TOLERANCE,
) -> MatchupMatrix:
    """Run every unit as attacker against every unit as defender (mirror matches included).

    Parameters
    ----------
    ruleset : str or Ruleset
    roster : Roster, path or None
        Default: the ruleset's shipped roster.
    units : sequence of str, optional
        A subset of the roster's units, in this order (default: all).
    half_width : float or None
        Target Wilson 95% half-width of p_attacker and p_defender per cell
        (0.005 = +-0.5 percentage points). ``None`` runs ``max_trials`` in every cell.
    max_trials : int
        Trial cap per cell.
    seed : int, SeedSequence or None
        ``None`` draws fresh entropy (recorded in ``provenance["seed_entropy"]``).
    rounds : int or "end", optional
        Default: the ruleset's balance settings (:attr:`sim.ruleset.Ruleset.balance_settings`).
    max_rounds : int, optional
        Cap of ``rounds="end"``; default: the balance settings'.
    states, overrides, options : mapping, optional
        As in :func:`sim.fight`; states and overrides apply to every cell by role
        (``{"defender": {"evading": True}}`` makes every defender evade); a state given
        replaces the balance settings' value of that state.
    workers : int
        Processes (results identical for any value).
    progress : callable, optional
        ``progress(cells_done, cells_total)``.
    from_text : bool
        State/override/option values are text (``--set``).
    budget : number, "none" or None
        Equal-points matchups: each side fields ``budget / points`` copies of its
        unit; default the roster's ``budget`` (``"none"``: one unit a side). A unit
        that costs more than the budget, or whose copies a side cannot field, is
        left out (``excluded`` says why).
    fielding : {"expected", "whole"}, optional
        How a budget fields copies (:mod:`analysis.runs.fielding`): ``expected``
        (the default) fields ``k + 1`` copies in a fraction ``f`` of the fights of a
        unit that the budget buys ``k + f`` copies of, ``whole`` always ``k``.
    executor : object, optional
        A ``dask.distributed.Client`` (or anything with its ``submit`` shape) to run
        the blocks on instead of local processes (results identical).
    store : analysis.runs.store.ResultsStore, optional
        Reuse finished cells from it and save new ones as they finish.
    rules_defaults : bool
        Fight under the rules' own defaults instead of the ruleset's balance settings.
    method : {"auto", "exact", "mc"}
        How each cell is answered: ``"exact"`` propagates the matchup's Markov chain
        (no sampling: ``method`` is ``"exact"`` in the long frame, ``trials`` and
        ``fights`` are 0, standard errors 0, intervals of zero width); ``"mc"``
        samples; ``"auto"`` (default) is exact where the ruleset has a chain for the
        cell and it costs less than the cell's Monte Carlo run at ``half_width``
        (:func:`sim.exact.choose_method`). ``"exact"`` where a cell has no chain
        raises a one-line ``MatchupError`` naming the cell and why.
    score_half_width : float, optional
        A target 95% half-width on every unit's score (0.005 = +-0.5 pp), shared out over the cells
        (:mod:`analysis.runs.allocation`): each cell is fought until its score's share of the variance is
        met; a roster of more than :data:`~analysis.runs.allocation.CELL_PRECISION_UNITS` units no longer
        fights each cell to ``half_width``. None (default): every cell to ``half_width`` alone. Ignored
        with fixed trials (``half_width=None``).
    race_tolerance : float or None
        With a score target under expected fielding, the units whose score interval holds a verdict bound
        (``50% +- race_tolerance``, default 2 pp) have their cells fought on (:mod:`analysis.runs.racing`,
        recorded in ``settings["score_target"]["racing"]``); None: no racing.

    Returns
    -------
    MatchupMatrix

    Examples
    --------
    >>> from analysis.runs.matrix import matchup_matrix
    >>> m = matchup_matrix("mecha", units=["AFS", "Nutrocker"], seed=1)
    >>> m.wide().shape
    (2, 2)
    """
    rs = get_ruleset(ruleset)
    method = check_method(method)
    check_run_arguments(states=states, overrides=overrides, options=options, progress=progress, from_text=from_text,
                        store=store)
    ros = resolve_roster(rs, roster)
    run = check_run_settings(rs, rounds, max_rounds, max_trials, "max_trials", states=states,
                             rules_defaults=rules_defaults)
    rounds, max_rounds, states = run.rounds, run.max_rounds, run.states
    if half_width is not None:
        if isinstance(half_width, bool) or not isinstance(half_width, (int, float)) or not 0 < half_width < 0.5:
            raise InputError(f"half_width: got {half_width!r}, expected a number between 0 and 0.5 (0.005 = 0.5 pp)")
    if units is not None and (isinstance(units, str) or not isinstance(units, Sequence)
                              or not all(isinstance(u, str) for u in units)):
        raise InputError(f"units: got {units!r:.60}, expected a list of unit names or None")
    names = list(ros.names if units is None else units)
    if not names:
        raise InputError(f"{ros.source}: no units to put in a matrix")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"--units: {', '.join(dup)} named more than once")
    for n in names:
        ros.unit(n)  # one-line error listing the roster's names
    if len(names) > MAX_MATRIX_UNITS:
        raise InputError(f"{ros.source}: {len(names)} units, a matrix takes at most {MAX_MATRIX_UNITS} "
                         "(pass a subset of them as units)")
    in_force = budget_in_force(rs, ros, budget)
    fielding = check_fielding(fielding) if in_force is not None else "whole"
    left_out = {n: why for n in names if in_force is not None
                and (why := unfieldable(rs, ros.unit(n), in_force, fielding)) is not None}
    if in_force is not None and len(left_out) == len(names):
        cheapest = min(names, key=lambda n: float(ros.unit(n).points))
        raise InputError(f"budget {in_force:g} fields none of these units ({cheapest} {left_out[cheapest]})")
    names = [n for n in names if n not in left_out]
    copies = fielded_copies(rs, ros, names, in_force, fielding)
    if score_half_width is not None:
        check_score_half_width(score_half_width, "score_half_width")
    if race_tolerance is not None and (isinstance(race_tolerance, bool) or not isinstance(race_tolerance, (int, float))
                                       or not 0 < race_tolerance <= 0.25):
        raise InputError(f"race_tolerance: got {shown(race_tolerance)}, expected a score tolerance in (0, 0.25] "
                         "(0.02 = 2 pp) or None")
    root = root_sequence(seed)
    context = RunContext(rs.id, ros, root, rounds, int(max_rounds), dict(states or {}), dict(overrides or {}),
                         dict(options or {}), half_width, int(max_trials), workers, from_text, in_force,
                         executor, store, method=method)
    context, target = targeted(context, score_half_width, names,
                               copies if fielding == "expected" and in_force is not None else None)
    if fielding == "expected" and in_force is not None:
        bank = CellBank(context)
        cells, notes = mixed_cells(bank, names, copies, progress)
        resumed = bank.from_store
        stream_text = ("(blake2b-128(attacker name), blake2b-128(defender name), blake2b-128('whole copies'), "
                       "attacker copies, defender copies, block")
    else:
        bank = None
        cells, notes, resumed = fixed_cells(context, names, progress)
        stream_text = "(blake2b-128(attacker name), blake2b-128(defender name), block"
    excluded = {u: notes[(u, u)] for u in names if all((u, o) in notes and (o, u) in notes for o in names)}
    kept = [u for u in names if u not in excluded]
    if not kept:
        raise InputError(f"{ros.source}: no pair of these units can fight ({next(iter(notes.values()))})")
    profiles = {u: profile_key(rs, ros.unit(u)) for u in kept}
    raced = None
    if bank is not None and target is not None and target.cell_variance is not None and race_tolerance is not None:
        twins = {u: f"{profiles[u]}x{round(float(copies[u]), 9):g}" for u in kept}  # as MatchupMatrix.twins
        start = starting_variance(target.cell_variance, context.half_width)
        cells, raced = race(bank, kept, copies, twins, cells, start, float(race_tolerance), progress)

    some = next(iter(cells.values()), None)
    settings = {
        "rounds": rounds, "max_rounds": int(max_rounds), "half_width": half_width, "max_trials": int(max_trials),
        "block_trials": BLOCK_TRIALS, "roster": ros.source, "units": kept, "budget": in_force,
        "fielding": fielding if in_force is not None else None,
        "states": {k: dict(v) for k, v in (states or {}).items()},
        "overrides": {k: dict(v) for k, v in (overrides or {}).items()},
        "options": dict(some.matchup.options) if some is not None else {},
        "balance_settings": run.describe(),
        "method": method,
        # what each cell was fought to: the cell half-width, unless a large roster's score target replaced it
        "cell_half_width": context.half_width,
        **({"score_target": {**target.settings(), "text": target.describe() + (f"; {raced.describe()}" if raced
                                                                               else ""),
                             **({"racing": raced.settings()} if raced is not None else {})}}
           if target is not None else {}),
    }
    seed_out = int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None
    if context.step_trials != SUB_BLOCK_TRIALS and context.score_variance is not None:
        stream_text += ", sub-block tag, step fights, step)"
    else:
        stream_text += ", sub-block tag, sub-block)" if half_width is not None else ")"
    prov = _provenance(root, ruleset=rs.id, spec=rs.spec, seed=seed_out, stream=stream_text)
    rows, results = [], {}
    for a in kept:
        for d in kept:
            pa, pd_ = _points(ros.unit(a)), _points(ros.unit(d))
            row = {"attacker": a, "defender": d, "points_attacker": pa, "points_defender": pd_,
                   "attacker_copies": copies[a], "defender_copies": copies[d],
                   "attacker_fielded": copies[a] * pa, "defender_fielded": copies[d] * pd_}
            cell = cells.get((a, d))
            if cell is None:
                rows.append({**row, "trials": 0, "fights": 0, "note": notes[(a, d)]})
                continue
            rows.append({**row, **cell.numbers, "note": ""})
            m = cell.matchup
            fielded = {"attacker": cell.copies[0] * pa, "defender": cell.copies[1] * pd_}
            cell_settings = {"rounds": rounds, "max_rounds": int(max_rounds), "states": m.states,
                             "options": m.options, "overrides": settings["overrides"],
                             "attacker_profile": rs.unit_rows(m.attacker), "defender_profile": rs.unit_rows(m.defender),
                             "budget": in_force, "copies": {"attacker": cell.copies[0], "defender": cell.copies[1]},
                             "fielded": fielded}
            results[(a, d)] = FightResult(rs, a, d, cell.tally, cell_settings, {**prov, "stream": list(cell.stream)},
                                          seed_out, cell.exact)
    long = pd.DataFrame(rows).reindex(columns=LONG_COLUMNS)
    for c in ("trials", "fights"):
        long[c] = long[c].astype(np.int64)
    if fielding != "expected" or in_force is None:
        for c in ("attacker_copies", "defender_copies"):
            long[c] = long[c].astype(np.int64)
    long["note"] = long["note"].fillna("")
    return MatchupMatrix(rs.id, kept, long, results, settings, prov, {**left_out, **excluded}, in_force,
                         {u: copies[u] for u in kept}, profiles, context, resumed, fielding, bank)
