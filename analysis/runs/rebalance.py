"""Rebalance: the report's advice written as a roster, and proved on the file written by a fresh run.

The question (Liu and Marschner, AIIDE 2017: one variable per strategy; here
the variable is points and the game is the rules themselves) has one answer in
meleelab: the fewest price changes under which every unit that points can
balance scores within the tolerance of 50% against the repriced roster as
written (:func:`analysis.runs.advice.advise`, the same answer every report
gives at the same settings and seed). ``rebalance`` computes it, writes the
repriced roster, and proves it on exactly that roster:

* a unit that points cannot balance stays in the roster at the price written
  (the nearest price a side can field, when the advice moves it there) and is an
  opponent in the proof; ``drop_unbalanceable`` leaves it out of the file (and the
  proof) instead;
* the proof fights the written table at :func:`verification_seed`, derived from
  the seed and the table's content (a new table is checked on new streams), and
  computes the advice there: "nothing to change" is the proof;
* with ``robustness``, every unit's score in both tables at 0.5x, 1x and 2x the
  budget and three seeds (:mod:`analysis.runs.robustness`).

The roster's total changes by the advised changes (the fewest changes do not
rescale the others); the result says by how much.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sim.errors import InputError
from sim.roster import Roster
from sim.ruleset import Ruleset
from sim.rulesets import get_ruleset

from ..stats.expected import DEFAULT_TOLERANCE
from ..stats.verdicts import CANNOT, PRICE_VERDICTS, Advice
from .advice import advise, check_advice_arguments
from .balance import balance_summary
from .defaults import DEFAULT_HALF_WIDTH, DEFAULT_MAX_TRIALS, DEFAULT_SEED
from .fielding import budget_in_force, unfieldable
from .allocation import CELL_PRECISION_UNITS, DEFAULT_SCORE_HALF_WIDTH, check_score_half_width
from .matrix import matchup_matrix, resolve_roster
from .robustness import robustness as robustness_scores
from .robustness import robustness_seeds

__all__ = ["rebalance", "check_rebalance", "rebalance_budget", "RebalanceResult", "verification_seed",
           "CHANGES_COLUMNS", "VERIFICATION_COLUMNS"]

#: Most units whose rebalance scores its robustness unless told (``robustness=None``): the roster size up to
#: which cells are read one by one (:data:`analysis.runs.allocation.CELL_PRECISION_UNITS`).
ROBUST_UNITS = CELL_PRECISION_UNITS

CHANGES_COLUMNS = ["unit", "old_points", "new_points", "change_pct", "new_lo", "new_hi", "changed", "locked",
                   "balanceable", "note"]
VERIFICATION_COLUMNS = ["unit", "points_before", "points_after", "score_before", "score_before_lo",
                        "score_before_hi", "score_after", "score_after_lo", "score_after_hi", "nash_before",
                        "nash_after", "verdict_before", "verdict_after", "balanceable", "nash_max_before",
                        "nash_max_after"]


def verification_seed(seed: int, prices: Mapping[str, float] | None = None) -> int:
    """The proof's seed: 63 bits of blake2b of the seed and the table written (never ``seed`` itself).

    A different table is checked on different streams, so a proof never reuses the
    search's noise, nor the noise of an earlier proof of another table.
    """
    table = "" if prices is None else ";".join(f"{u}={float(p)!r}" for u, p in sorted(prices.items()))
    digest = hashlib.blake2b(f"{int(seed)}:verification:{table}".encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass(frozen=True)
class RebalanceResult:
    """The advised points table, as written, and its proof.

    Attributes
    ----------
    ruleset : str
    budget : float
    roster, rebalanced : Roster
        The roster as given, and the roster written (``rebalanced.toml``: the advised prices,
        without the dropped units).
    changes : DataFrame
        :data:`CHANGES_COLUMNS`: one row per unit; ``new_lo``/``new_hi`` the price window that keeps the
        unit within the tolerance, the others as written (from its copy curve in the proof).
    verification : DataFrame
        :data:`VERIFICATION_COLUMNS`: every unit's score against the roster before (at ``seed``) and
        after (the written table fought at :attr:`verification_seed`), with 95% intervals, Nash weights
        and verdicts (each the advice's at its table).
    excluded : dict
        Unit -> why points alone cannot balance it (not held to the tolerance; still in the roster
        and the proof unless dropped).
    dropped : dict
        Unit -> why it was left out of the file (``drop_unbalanceable``).
    locked : tuple of str
    tolerance, round_to : float
    max_change : float or None
    seed, verification_seed : int
    matrix_runs : int
        Tables fought: the listed one and the written one.
    cells_fought, cells_reused, cells_from_store : int
    converged : bool
        Every held unit within the tolerance at the advised table on the search's cells.
    max_deviation : float
        The largest ``|score - 50%|`` of a held unit in the proof.
    still_flagged : tuple of str
        Units the proof's own advice would reprice (empty: the proof holds).
    advice, proof : Advice
        The advice at the listed table, and the advice at the written table in the proof.
    robustness : DataFrame or None
        :data:`analysis.runs.robustness.ROBUSTNESS_COLUMNS` (``robustness=True``).
    total_before, total_after : float
        The roster's total points, listed and written.
    settings : dict
    """

    ruleset: str
    budget: float
    roster: Roster
    rebalanced: Roster
    changes: pd.DataFrame
    verification: pd.DataFrame
    excluded: dict[str, str]
    locked: tuple[str, ...]
    tolerance: float
    round_to: float
    seed: int
    verification_seed: int
    matrix_runs: int
    cells_fought: int
    cells_reused: int
    cells_from_store: int
    converged: bool
    max_deviation: float
    still_flagged: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    advice: Advice | None = None
    proof: Advice | None = None
    robustness: pd.DataFrame | None = None
    dropped: dict[str, str] = field(default_factory=dict)
    max_change: float | None = None
    total_before: float = math.nan
    total_after: float = math.nan

    @property
    def prices(self) -> dict[str, float]:
        return dict(zip(self.changes["unit"], self.changes["new_points"]))

    @property
    def proved(self) -> bool:
        """The proof's advice at the written table changes nothing."""
        return not self.still_flagged

    def nash_support(self, when: str = "after") -> list[str]:
        """The units with weight in the equilibrium mix ``"before"`` or ``"after"`` the change."""
        if not isinstance(when, str) or when not in ("before", "after"):
            raise InputError(f"when: got {when!r:.40}, expected 'before' or 'after'")
        col = self.verification[f"nash_{when}"]
        return [u for u, w in zip(self.verification["unit"], col) if w > 1e-9]


def _check(ros: Roster, rs: Ruleset, lock: Sequence[str], round_to: Any, tolerance: Any) -> tuple[str, ...]:
    if isinstance(round_to, bool) or not isinstance(round_to, (int, float)) or not math.isfinite(round_to) \
            or round_to <= 0:
        raise InputError(f"round_to: got {round_to!r}, expected a positive number of points (1 rounds to whole points)")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance <= 0.25:
        raise InputError(f"tolerance: got {tolerance!r}, expected a score tolerance in (0, 0.25] (0.02 = 2 pp)")
    if isinstance(lock, str) or not all(isinstance(u, str) for u in lock):
        raise InputError(f"lock: got {lock!r:.60}, expected a list of unit names")
    for u in lock:
        if u not in ros.units:
            raise InputError(f"--lock {u!r}: no such unit (units: {', '.join(ros.names)})")
    if lock and set(lock) >= set(ros.names):
        raise InputError("every unit is locked: unlock at least one (--lock names the units whose price stays)")
    for u, unit in ros.units.items():
        if not (getattr(unit, "points", None) or 0) > 0:
            raise InputError(f"{ros.source}: unit {u!r} has no points; a rebalance needs a positive price for every "
                             "unit")
    return tuple(dict.fromkeys(lock))


def check_rebalance(rs: Ruleset, ros: Roster, *, budget: Any = None, lock: Any = (), round_to: Any = 1,
                    tolerance: Any = DEFAULT_TOLERANCE, seed: Any = DEFAULT_SEED, max_iterations: Any = 8,
                    progress: Any = None, half_width: Any = DEFAULT_HALF_WIDTH, max_trials: Any = DEFAULT_MAX_TRIALS,
                    rounds: Any = None, max_rounds: Any = None, states: Any = None, overrides: Any = None,
                    options: Any = None, workers: Any = 1, from_text: Any = False, executor: Any = None,
                    store: Any = None, rules_defaults: Any = False, method: Any = "auto",
                    max_change: Any = None, drop_unbalanceable: Any = False, robustness: Any = False,
                    score_half_width: Any = DEFAULT_SCORE_HALF_WIDTH) -> tuple[float, tuple[str, ...]]:
    """Every check of a rebalance that needs no fight (one clear line each, naming the argument): the budget in
    force and the locks.

    Takes every argument of :func:`rebalance` but the ruleset and roster (already resolved), so a call
    with a wrong one fails here, before the first matrix (:mod:`analysis.runs.rebalance_checks`); and
    refuses a ``round_to`` that no fieldable price of a unit is a multiple of.
    """
    from ..stats.checks import check_seed
    from .rebalance_checks import check_round_to, check_run_arguments_of_rebalance

    in_force = rebalance_budget(rs, ros, budget)
    check_seed(seed)
    if score_half_width is not None:
        check_score_half_width(score_half_width, "score_half_width")
    check_run_arguments_of_rebalance(rs, lock=lock, max_iterations=max_iterations, progress=progress,
                                     half_width=half_width, max_trials=max_trials, rounds=rounds,
                                     max_rounds=max_rounds, states=states, overrides=overrides, options=options,
                                     workers=workers, from_text=from_text, executor=executor, store=store,
                                     rules_defaults=rules_defaults, method=method)
    locked = _check(ros, rs, list(lock), round_to, tolerance)
    check_advice_arguments(tolerance, round_to, max_change)
    for name, flag in (("drop_unbalanceable", drop_unbalanceable), ("robustness", robustness)):
        if flag is None and name == "robustness":  # by the roster's size (ROBUST_UNITS)
            continue
        if not isinstance(flag, bool):
            raise InputError(f"{name}: got {flag!r:.40}, expected True or False")
    if len(ros.names) < 2:
        raise InputError(f"{ros.source}: fewer than two units can be balanced (the roster has {len(ros.names)})")
    for u in ros.names:
        why = unfieldable(rs, ros.unit(u), in_force)
        if why is not None:
            raise InputError(f"budget {in_force:g}: {u} {why}")
    check_round_to(rs, ros, in_force, float(round_to), locked)
    return in_force, locked


def rebalance_budget(rs: Ruleset, ros: Roster, budget: Any = None) -> float:
    """The budget a rebalance of this roster fights at; one clear line where copies or a budget are missing."""
    if not rs.fields_copies:
        raise InputError(f"{rs.id}: {rs.copies_refusal}, so a side cannot field copies and points cannot be "
                         "balanced at equal points; its fair prices come from `meleelab report` (the calibration "
                         "model)")
    in_force = budget_in_force(rs, ros, budget)
    if in_force is None:
        raise InputError(f"{rs.id}: a rebalance needs a budget (give --budget POINTS, or budget = N in the roster)")
    return in_force


def _repriced(ros: Roster, prices: Mapping[str, float], drop: Sequence[str] = ()) -> Roster:
    units = {u: dataclasses.replace(ros.unit(u), points=float(prices[u])) for u in ros.names if u not in drop}
    return Roster(ros.ruleset, units, ros.options, ros.source, ros.description, ros.budget)


def _window(proof_fair: pd.DataFrame, unit: str, budget: float, tolerance: float) -> tuple[float, float]:
    """The prices at which ``unit`` scores 50% -+ the tolerance, the others as written (its curve in the proof)."""
    curves = proof_fair.attrs.get("curves") or {}
    curve = next((c for c in curves.values() if unit in c.units), None)
    if curve is None or not curve.usable():
        return math.nan, math.nan
    from ..stats.expected import linear_crossing

    ks, m = curve.means()
    out = []
    for target in (0.5 + tolerance, 0.5 - tolerance):  # more score needs more copies: a lower price
        k = linear_crossing(ks, m - (target - 0.5))
        out.append(budget / k if math.isfinite(k) and k > 0 else math.nan)
    return out[0], out[1]


def robustness_wanted(asked: bool | None, units: int) -> tuple[bool, str]:
    """Whether a rebalance of ``units`` units scores its robustness (``asked``, or by the size when None), and
    the sentence its page shows when the size left it out."""
    if asked is not None:
        return bool(asked), ""
    if units <= ROBUST_UNITS:
        return True, ""
    return False, (f"Robustness not scored: over {ROBUST_UNITS} units ({units} here) it would fight both tables at "
                   "three budgets and three seeds, 18 tables of the roster's square; --robustness asks for it.")


def rebalance(
    ruleset: str | Ruleset,
    roster: Roster | str | Path | None = None,
    *,
    budget: Any = None,
    lock: Sequence[str] = (),
    round_to: float = 1,
    tolerance: float = DEFAULT_TOLERANCE,
    seed: int = DEFAULT_SEED,
    half_width: float | None = DEFAULT_HALF_WIDTH,
    max_trials: int = DEFAULT_MAX_TRIALS,
    rounds: Any = None,
    max_rounds: int | None = None,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    from_text: bool = False,
    executor: Any = None,
    store: Any = None,
    rules_defaults: bool = False,
    max_iterations: int = 8,
    progress: Callable[[str], None] | None = None,
    method: str = "auto",
    max_change: float | None = None,
    drop_unbalanceable: bool = False,
    robustness: bool | None = False,
    score_half_width: float | None = DEFAULT_SCORE_HALF_WIDTH,
) -> RebalanceResult:
    """The fewest price changes that balance the roster, written as a roster and proved on it by a fresh run.

    Parameters
    ----------
    ruleset : str or Ruleset
        A ruleset that fields copies (mecha cannot: one clear line).
    roster : Roster, path or None
        Default: the shipped roster.
    budget : number or None
        Default: the roster's budget.
    lock : sequence of str
        Units whose price stays.
    round_to : float
        Prices are multiples of this (default whole points); the proof fights the rounded table.
    tolerance : float
        A unit is balanced when its score is within this of 50% (0.02 = 2 pp), in (0, 0.25].
    seed : int
        The search's seed; the proof's is :func:`verification_seed` of it and the table.
    half_width, max_trials, rounds, max_rounds, states, overrides, options, workers, from_text, executor, store,
    rules_defaults
        As in :func:`analysis.runs.matrix.matchup_matrix` (the ruleset's balance settings by default).
    max_iterations : int
        Kept for callers of earlier versions: the search's steps are bounded by the advice itself.
    progress : callable, optional
        ``progress(line)`` as the search and the proof go.
    method : {"auto", "exact", "mc"}
        How each whole-copy cell is answered, as in :func:`~analysis.runs.matrix.matchup_matrix`.
    max_change : float, optional
        The most any price may change, relative (0.15 = 15%); a unit that needs more is named with what it
        needs and moved as far as the cap allows.
    drop_unbalanceable : bool
        Leave the units that points cannot balance out of the file and the proof (by default they stay,
        at the price written, as opponents).
    robustness : bool or None
        Also score both tables at 0.5x, 1x and 2x the budget and three seeds (``robustness``); None: for
        rosters of at most :data:`ROBUST_UNITS` units (a larger one says it left it out: ``settings``
        ``robustness_note``; it would fight 18 tables of the roster's square).
    score_half_width : float or None
        Every unit's score to this 95% half-width in the search and the proof (default +-0.5 pp;
        :mod:`analysis.runs.allocation`); None: every cell to ``half_width`` alone.

    Returns
    -------
    RebalanceResult
    """
    rs = get_ruleset(ruleset)
    ros = resolve_roster(rs, roster)
    in_force, locked = check_rebalance(rs, ros, budget=budget, lock=lock, round_to=round_to, tolerance=tolerance,
                                       seed=seed, max_iterations=max_iterations, progress=progress,
                                       half_width=half_width, max_trials=max_trials, rounds=rounds,
                                       max_rounds=max_rounds, states=states, overrides=overrides, options=options,
                                       workers=workers, from_text=from_text, executor=executor, store=store,
                                       rules_defaults=rules_defaults, method=method, max_change=max_change,
                                       drop_unbalanceable=drop_unbalanceable, robustness=robustness,
                                       score_half_width=score_half_width)
    log = progress or (lambda line: None)
    run = dict(half_width=half_width, max_trials=max_trials, rounds=rounds, max_rounds=max_rounds, states=states,
               overrides=overrides, options=options, workers=workers, from_text=from_text, executor=executor,
               store=store, rules_defaults=rules_defaults, budget=in_force, fielding="expected", method=method,
               score_half_width=score_half_width, race_tolerance=tolerance)
    before = matchup_matrix(rs, ros, seed=int(seed), **run)
    if before.excluded:
        u, why = next(iter(before.excluded.items()))
        raise InputError(f"{u} cannot fight in this roster ({why})")
    names = list(ros.names)
    log(f"the listed table: {len(names)} units, {before.bank.fought} whole-copy cells")
    options_ = dict(lock=locked, max_change=max_change, round_to=float(round_to), log=log)
    summary = balance_summary(before, seed=0, tolerance=tolerance, advice=options_)
    advice = summary.advice
    dropped: dict[str, str] = {}
    found_in_proof: dict[str, str] = {}
    runs = 1
    while True:
        if drop_unbalanceable:
            new = {u: why for u, why in {**advice.exempt, **found_in_proof}.items()
                   if "the cap of" not in why and u not in dropped}
            if new:
                dropped |= new
                log(f"left out of the file (--drop-unbalanceable): {', '.join(new)}")
                advice = advise(before, summary.fair_points, tolerance=tolerance,
                                units=[u for u in names if u not in dropped], **options_)
            elif not dropped:
                log("--drop-unbalanceable: every unit can be balanced by points, nothing is left out")
        kept = [u for u in names if u not in dropped]
        if len(kept) < 2:
            raise InputError(f"{rs.id}: fewer than two units are left once the units points cannot balance are "
                             "dropped")
        final = {u: float(advice.prices[u]) for u in kept}
        written = _repriced(ros, final, list(dropped))
        v_seed = verification_seed(int(seed), final)
        log(f"the proof: the written table fought again at seed {v_seed}")
        after = matchup_matrix(rs, written, seed=v_seed, **run)
        runs += 1
        proof_summary = balance_summary(after, seed=0, tolerance=tolerance,
                                        advice=dict(lock=locked, round_to=float(round_to), max_change=max_change))
        proof = proof_summary.advice
        table_a = proof.table.set_index("unit")
        # a unit the listed table could still hold but its new price cannot (e.g. moved to the budget, the
        # dearest price a side can field, and still above 50%): the proof says why; asked to, drop it and prove
        # again (once: the units left are those the listed table and the first proof could both hold)
        found_in_proof = {u: str(table_a.loc[u, "note"]) or "points cannot balance it on the table written"
                          for u in kept if not bool(table_a.loc[u, "held"]) and u not in advice.exempt}
        if not (drop_unbalanceable and found_in_proof and runs == 2):
            break
    still = tuple(proof.changed)
    table_b = advice.table.set_index("unit")
    nash_b, nash_a = summary.nash.set_index("unit"), proof_summary.nash.set_index("unit")
    held_after = [u for u in kept if bool(table_a.loc[u, "held"])]
    dev = max((abs(float(table_a.loc[u, "score"]) - 0.5) for u in held_after), default=0.0)
    changes, rows = [], []
    for u in names:
        old = float(ros.unit(u).points)
        new = final.get(u, math.nan)
        lo, hi = _window(proof_summary.fair_points, u, in_force, tolerance) if u in final else (math.nan, math.nan)
        note = dropped.get(u) or (str(table_b.loc[u, "note"]) if u in table_b.index else "") or \
            found_in_proof.get(u, "")
        changes.append({"unit": u, "old_points": old, "new_points": new,
                        "change_pct": 100 * (new - old) / old if math.isfinite(new) else math.nan,
                        "new_lo": lo, "new_hi": hi, "changed": u in final and not math.isclose(new, old),
                        "locked": u in locked, "balanceable": u not in dropped and u in held_after,
                        "note": ("left out of the file: " if u in dropped else "") + note if note else ""})
        b = table_b.loc[u] if u in table_b.index else None
        a = table_a.loc[u] if u in table_a.index else None
        rows.append({"unit": u, "points_before": old, "points_after": new,
                     "score_before": b["score"] if b is not None else math.nan,
                     "score_before_lo": b["score_lo"] if b is not None else math.nan,
                     "score_before_hi": b["score_hi"] if b is not None else math.nan,
                     "score_after": a["score"] if a is not None else math.nan,
                     "score_after_lo": a["score_lo"] if a is not None else math.nan,
                     "score_after_hi": a["score_hi"] if a is not None else math.nan,
                     "nash_before": float(nash_b.loc[u, "weight"]) if u in nash_b.index else math.nan,
                     "nash_after": float(nash_a.loc[u, "weight"]) if u in nash_a.index else math.nan,
                     "verdict_before": b["verdict"] if b is not None else "",
                     "verdict_after": a["verdict"] if a is not None else "left out of the file",
                     "balanceable": u in held_after,
                     "nash_max_before": float(nash_b.loc[u, "weight_max"]) if u in nash_b.index else math.nan,
                     "nash_max_after": float(nash_a.loc[u, "weight_max"]) if u in nash_a.index else math.nan})
    verification = pd.DataFrame(rows, columns=VERIFICATION_COLUMNS)
    robust = None
    robustness, robust_note = robustness_wanted(robustness, len(names))
    if robustness:
        seeds = robustness_seeds(int(seed))
        robust = robustness_scores(before.context, {"listed": {u: float(ros.unit(u).points) for u in names},
                                                    "proposed": final},
                                   {u: before.profiles[u] for u in names}, seeds=seeds, progress=log,
                                   banks={(1.0, int(seed)): before.bank})
    settings = {**{k: v for k, v in before.settings.items() if k in ("rounds", "max_rounds", "half_width",
                                                                     "max_trials", "states", "options",
                                                                     "balance_settings", "fielding")},
                "budget": in_force, "lock": list(locked), "round_to": float(round_to), "tolerance": tolerance,
                "seed": int(seed), "verification_seed": v_seed, "max_change": max_change,
                "drop_unbalanceable": drop_unbalanceable, "robustness": robustness,
                **({"robustness_note": robust_note} if robust_note else {})}
    excluded = {u: w for u, w in {**advice.exempt, **found_in_proof}.items() if u not in dropped}
    return RebalanceResult(
        rs.id, in_force, ros, written, pd.DataFrame(changes, columns=CHANGES_COLUMNS), verification, excluded,
        locked, tolerance, float(round_to), int(seed), v_seed, runs, before.bank.fought + after.bank.fought,
        before.bank.reused + after.bank.reused, before.bank.from_store + after.bank.from_store, advice.balanced,
        float(dev), still, settings, advice, proof, robust, dropped, max_change,
        float(sum(float(ros.unit(u).points) for u in names)), float(sum(final.values())))
