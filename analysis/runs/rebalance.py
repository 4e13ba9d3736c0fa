"""Rebalance: one points table under which every unit scores 50% against the repriced roster, proved by a fresh run.

The question (Liu and Marschner, AIIDE 2017: one variable per strategy; here
the variable is points and the game is the rules themselves): find prices such
that every unit, fielded at ``budget / price`` expected copies
(:mod:`analysis.runs.fielding`), scores 50% (win + draw / 2, both roles)
against the roster at those prices, so the uniform mix is an equilibrium: no
unit is a trap and none an auto-include.

The solver is a fixed point of fair prices. Each step prices every class of
identical units against the roster as it now stands
(:func:`analysis.runs.expected_curves.complete_expected_curves`: the exact
piecewise-linear crossing of its score), moves the units whose score is further
than half the tolerance from 50% to their fair price (the others keep theirs:
the fewest changes), and, with no unit locked, rescales the unlocked prices so
that the roster's total points stay as they were (the scores of all units always
average 50%, so the system fixes prices only up to a scale; the locked units
fix it otherwise). It stops when every balanceable unit is within half the
tolerance, or after ``max_iterations``. All steps share one
:class:`~analysis.runs.cells.CellBank`: a whole-copy cell is fought once, and the
results store keeps it for the next run.

Units that points alone cannot balance (their fair price needs more copies than
a side can field, fewer than one copy, or more copies never help) are named
with the reason, moved to the nearest fieldable price and left out of the 50%
target. Prices are rounded to ``round_to``, down or up for the whole table at
once (:func:`analysis.runs.rounding.round_jointly`), and the rounded table is
fought again at a seed derived from ``seed`` (:func:`verification_seed`): the proof.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sim.errors import InputError
from sim.roster import Roster
from sim.ruleset import Ruleset
from sim.rulesets import get_ruleset

from ..stats.equilibrium import nash_equilibrium, nash_ranges
from ..stats.expected import DEFAULT_TOLERANCE, ExpectedCurve, price_curve, roster_scores
from ..stats.pooling import twin_classes
from ..stats.rebalancing import Estimate, fixed_point_prices
from ..stats.strength import payoff_matrix
from .defaults import DEFAULT_HALF_WIDTH, DEFAULT_MAX_TRIALS, DEFAULT_SEED
from .expected_curves import complete_expected_curves, price_rng
from .fielding import budget_in_force, profile_key, unfieldable
from .matrix import matchup_matrix, resolve_roster
from .rounding import round_jointly

__all__ = ["rebalance", "check_rebalance", "rebalance_budget", "RebalanceResult", "verification_seed", "CHANGES_COLUMNS", "VERIFICATION_COLUMNS"]

CHANGES_COLUMNS = ["unit", "old_points", "new_points", "change_pct", "new_lo", "new_hi", "changed", "locked",
                   "balanceable", "note"]
VERIFICATION_COLUMNS = ["unit", "points_before", "points_after", "score_before", "score_before_lo",
                        "score_before_hi", "score_after", "score_after_lo", "score_after_hi", "nash_before",
                        "nash_after", "verdict_before", "verdict_after", "balanceable", "nash_max_before",
                        "nash_max_after"]


def verification_seed(seed: int) -> int:
    """The verification run's seed: 63 bits of blake2b of ``"<seed>:verification"`` (recorded, never ``seed``)."""
    digest = hashlib.blake2b(f"{int(seed)}:verification".encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass(frozen=True)
class RebalanceResult:
    """A proposed points table and its proof.

    Attributes
    ----------
    ruleset : str
    budget : float
    roster, rebalanced : Roster
        The roster as given, and with the proposed points.
    changes : DataFrame
        :data:`CHANGES_COLUMNS`: one row per unit (``new_lo``/``new_hi`` the new price's
        95% Monte Carlo interval at the last step).
    verification : DataFrame
        :data:`VERIFICATION_COLUMNS`: every unit's score against the roster before (at
        ``seed``) and after (the rounded table fought at :attr:`verification_seed`),
        with 95% intervals, Nash weights and verdicts.
    excluded : dict
        Unit -> why points alone cannot balance it (left out of the 50% target).
    locked : tuple of str
    tolerance, round_to : float
    seed, verification_seed : int
    matrix_runs : int
        Rosters fought: the original, each solver step that moved a price, and the verification.
    cells_fought, cells_reused : int
        Whole-copy cells fought (or taken from the results store), and requests for a cell
        already fought in this run (the store saved ``cells_from_store`` more).
    cells_from_store : int
    converged : bool
        Every balanceable unit came within half the tolerance of 50% during the search.
    max_deviation : float
        The largest ``|score - 50%|`` of a balanceable unit in the verification.
    still_flagged : tuple of str
        Balanceable units whose verified score is surely further than the tolerance from 50%.
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

    @property
    def prices(self) -> dict[str, float]:
        return dict(zip(self.changes["unit"], self.changes["new_points"]))

    def nash_support(self, when: str = "after") -> list[str]:
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


def _classes(rs: Ruleset, ros: Roster, prices: Mapping[str, float]) -> dict[str, list[str]]:
    """Representative -> units with its profile and price (they get one price and one score)."""
    out: dict[str, list[str]] = {}
    rep_of: dict[tuple[str, float], str] = {}
    for u in ros.names:
        key = (profile_key(rs, ros.unit(u)), round(float(prices[u]), 9))
        out.setdefault(rep_of.setdefault(key, u), []).append(u)
    return out


def _repriced(ros: Roster, prices: Mapping[str, float]) -> Roster:
    units = {u: dataclasses.replace(ros.unit(u), points=float(prices[u])) for u in ros.names}
    return Roster(ros.ruleset, units, ros.options, ros.source, ros.description, ros.budget)


def _rounded(p: float, step: float) -> float:
    r = max(step, step * round(p / step))
    return float(r)


def _round_nearest_even(price: float, step: float, est: Any, curves: Mapping[str, ExpectedCurve],
                        classes: Mapping[str, list[str]], unit: str, budget: float) -> float:
    """``price`` rounded to a multiple of ``step``: down or up, whichever scores nearer 50% on the unit's curve.

    A whole point is several per cent of a cheap unit's price, enough to move its
    score by more than a point; the curve of the last step says which way is nearer.
    """
    rep = next((r for r, m in classes.items() if unit in m), None)
    lo = max(step, step * math.floor(price / step))
    hi = max(step, step * math.ceil(price / step))
    if rep is None or lo == hi:
        return _rounded(price, step)
    curve = curves[rep]
    scores = {p: curve.at(budget / p)[0] for p in (lo, hi)}
    if not all(math.isfinite(v) for v in scores.values()):
        return _rounded(price, step)
    best = min((lo, hi), key=lambda p: (abs(scores[p] - 0.5), abs(p - price)))
    return float(best)


def _evaluate(matrix: Any, tolerance: float, excluded: Sequence[str] = ()) -> pd.DataFrame:
    """Scores (with intervals and verdicts; the balanceable units against each other) and Nash weights."""
    classes = twin_classes(matrix, list(matrix.units))  # twins fight exactly alike: one score, one weight
    twins = {m: members for members in classes.values() for m in members}
    kept = [u for u in matrix.units if u not in excluded]
    scores = roster_scores(matrix.long, kept, twins, tolerance).set_index("unit")
    if excluded:  # each excluded unit against the whole roster (it is not held to 50%)
        whole = roster_scores(matrix.long, matrix.units, twins, tolerance).set_index("unit")
        scores = pd.concat([scores, whole.loc[list(excluded)]]).reindex(matrix.units)
    payoff = payoff_matrix(matrix)
    # the game is solved once per twin class and the weight split, so twins get one answer
    reps = list(classes)
    weights = nash_equilibrium(payoff.loc[reps, reps])
    scores["nash"] = _split(weights, classes).reindex(scores.index).fillna(0.0)
    # equilibria are rarely unique, and the solver returns one vertex: the most weight each balanceable unit gets
    # in a mix of the balanceable units that none of them beats by more than the tolerance (a score tolerance t
    # is a payoff tolerance 2t); a balanced table makes the uniform mix one such, so every unit reaches 1/n
    kept_reps = [r for r in reps if r in kept]
    most = nash_ranges(payoff.loc[kept_reps, kept_reps], tol=2 * tolerance).set_index("unit")["weight_max"]
    scores["nash_max"] = _split(most, {r: classes[r] for r in kept_reps}).reindex(scores.index).fillna(0.0)
    return scores


def _split(weights: pd.Series, classes: Mapping[str, list[str]]) -> pd.Series:
    """A class's weight shared equally by its members."""
    return pd.Series({m: float(weights.get(r, math.nan)) / len(ms) for r, ms in classes.items() for m in ms})


def check_rebalance(rs: Ruleset, ros: Roster, *, budget: Any = None, lock: Any = (), round_to: Any = 1,
                    tolerance: Any = DEFAULT_TOLERANCE, seed: Any = DEFAULT_SEED, max_iterations: Any = 8,
                    progress: Any = None, half_width: Any = DEFAULT_HALF_WIDTH, max_trials: Any = DEFAULT_MAX_TRIALS,
                    rounds: Any = None, max_rounds: Any = None, states: Any = None, overrides: Any = None,
                    options: Any = None, workers: Any = 1, from_text: Any = False, executor: Any = None,
                    store: Any = None, rules_defaults: Any = False, method: Any = "auto"
                    ) -> tuple[float, tuple[str, ...]]:
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
    check_run_arguments_of_rebalance(rs, lock=lock, max_iterations=max_iterations, progress=progress,
                                     half_width=half_width, max_trials=max_trials, rounds=rounds,
                                     max_rounds=max_rounds, states=states, overrides=overrides, options=options,
                                     workers=workers, from_text=from_text, executor=executor, store=store,
                                     rules_defaults=rules_defaults, method=method)
    locked = _check(ros, rs, list(lock), round_to, tolerance)
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
) -> RebalanceResult:
    """Propose one points table that balances the roster, and fight it again to prove it.

    Parameters
    ----------
    ruleset : str or Ruleset
        A ruleset that fields copies (mecha cannot: one clear line).
    roster : Roster, path or None
        Default: the shipped roster.
    budget : number or None
        Default: the roster's budget.
    lock : sequence of str
        Units whose price stays; with none, the roster's total points stay.
    round_to : float
        Prices are rounded to a multiple of this (default whole points); the verification fights the rounded table.
    tolerance : float
        A unit is balanced when its score is within this of 50% (0.02 = 2 pp), in (0, 0.25].
    seed : int
        The search's seed; the verification's is :func:`verification_seed` of it.
    half_width, max_trials, rounds, max_rounds, states, overrides, options, workers, from_text, executor, store,
    rules_defaults
        As in :func:`analysis.runs.matrix.matchup_matrix` (the ruleset's balance settings by default).
    max_iterations : int
        Solver steps at most.
    progress : callable, optional
        ``progress(line)`` after each step.
    method : {"auto", "exact", "mc"}
        How each whole-copy cell is answered, as in :func:`~analysis.runs.matrix.matchup_matrix`
        (the search, its matrices and the verification alike).

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
                                       rules_defaults=rules_defaults, method=method)
    log = progress or (lambda line: None)
    run = dict(half_width=half_width, max_trials=max_trials, rounds=rounds, max_rounds=max_rounds, states=states,
               overrides=overrides, options=options, workers=workers, from_text=from_text, executor=executor,
               store=store, rules_defaults=rules_defaults, budget=in_force, fielding="expected", method=method)
    before = matchup_matrix(rs, ros, seed=int(seed), **run)
    if before.excluded:
        u, why = next(iter(before.excluded.items()))
        raise InputError(f"{u} cannot fight in this roster ({why})")
    bank, names = before.bank, list(ros.names)
    log(f"step 0: {len(names)} units at their listed prices, {bank.fought} whole-copy cells")
    last: dict[str, Any] = {}

    def evaluate(prices: Mapping[str, float], excluded: frozenset[str]) -> dict[str, Estimate]:
        copies = {u: in_force / prices[u] for u in names}
        classes = _classes(rs, ros, prices)
        # a unit points cannot balance leaves the others' roster (their scores then can all be 50%)
        curves = {rep: ExpectedCurve(list(m), [o for o in names if o not in m and o not in excluded],
                                     len([o for o in names if o not in excluded or o in m]))
                  for rep, m in classes.items()}
        complete_expected_curves(bank, curves, copies)
        out, raw = {}, {}
        for rep, members in classes.items():
            est = price_curve(curves[rep], in_force, prices[rep], tolerance=tolerance, rng=price_rng(seed, rep))
            for u in members:
                raw[u] = est
                out[u] = Estimate(est["score"], est["fair_points"], est["fieldable"], est["nearest_price"],
                                  est["note"])
        last.update(classes=classes, curves=curves, raw=raw)
        return out

    point = fixed_point_prices(evaluate, {u: float(ros.unit(u).points) for u in names}, locked=locked,
                               tolerance=tolerance, max_iterations=max_iterations, log=log,
                               adjust=lambda p: _fieldable_prices(rs, ros, p, in_force))
    prices, estimates, unbalanceable = dict(point.prices), last["raw"], point.unbalanceable
    classes, curves, converged, runs = last["classes"], last["curves"], point.converged, 1 + point.steps
    if len(names) - len(unbalanceable) < 2:
        raise InputError(f"{rs.id}: fewer than two units can be balanced by points at {in_force:g} points "
                         f"({'; '.join(f'{u}: {w}' for u, w in unbalanceable.items())})")
    # the fewest changes: a unit whose old price still scores within half the tolerance in the final roster keeps it
    kept = []
    for rep, members in classes.items():
        for u in members:
            old = float(ros.unit(u).points)
            if u in locked or u in unbalanceable or math.isclose(old, prices[u]):
                continue
            s_old, _ = curves[rep].at(in_force / old)
            if math.isfinite(s_old) and abs(s_old - 0.5) <= tolerance / 2:
                prices[u] = old
                kept.append(u)
    if kept:
        log(f"kept at their listed price (still within half the tolerance): {', '.join(kept)}")
    final = {u: prices[u] if u in locked else _round_nearest_even(prices[u], float(round_to), estimates.get(u),
                                                                    curves, classes, u, in_force)
             for u in names}
    final = round_jointly(bank, rs, ros, prices, final, [*locked, *kept], list(unbalanceable), float(round_to),
                          in_force, log)
    final = _fieldable_prices(rs, ros, final, in_force)
    rebalanced = _repriced(ros, final)
    v_seed = verification_seed(int(seed))
    after = matchup_matrix(rs, rebalanced, seed=v_seed, **run)
    runs += 1
    eval_before = _evaluate(before, tolerance, list(unbalanceable))
    eval_after = _evaluate(after, tolerance, list(unbalanceable))
    balanceable = [u for u in names if u not in unbalanceable]
    changes = []
    for u in names:
        e = estimates.get(u, {})
        old, new_p = float(ros.unit(u).points), final[u]
        changes.append({"unit": u, "old_points": old, "new_points": new_p, "change_pct": 100 * (new_p - old) / old,
                        "new_lo": e.get("fair_lo", math.nan), "new_hi": e.get("fair_hi", math.nan),
                        "changed": not math.isclose(new_p, old), "locked": u in locked,
                        "balanceable": u in balanceable, "note": unbalanceable.get(u, "")})
    rows = []
    for u in names:
        b, a = eval_before.loc[u], eval_after.loc[u]
        rows.append({"unit": u, "points_before": float(ros.unit(u).points), "points_after": final[u],
                     "score_before": b.score, "score_before_lo": b.score_lo, "score_before_hi": b.score_hi,
                     "score_after": a.score, "score_after_lo": a.score_lo, "score_after_hi": a.score_hi,
                     "nash_before": b.nash, "nash_after": a.nash, "verdict_before": b.verdict,
                     "verdict_after": a.verdict, "balanceable": u in balanceable,
                     "nash_max_before": b.nash_max, "nash_max_after": a.nash_max})
    verification = pd.DataFrame(rows, columns=VERIFICATION_COLUMNS)
    dev = (verification.loc[verification.balanceable, "score_after"] - 0.5).abs()
    flagged = tuple(verification.loc[verification.balanceable & verification.verdict_after.isin(
        ["overpriced", "underpriced"]), "unit"])
    settings = {**{k: v for k, v in before.settings.items() if k in ("rounds", "max_rounds", "half_width",
                                                                     "max_trials", "states", "options",
                                                                     "balance_settings", "fielding")},
                "budget": in_force, "lock": list(locked), "round_to": float(round_to), "tolerance": tolerance,
                "seed": int(seed), "verification_seed": v_seed, "max_iterations": max_iterations}
    return RebalanceResult(rs.id, in_force, ros, rebalanced, pd.DataFrame(changes, columns=CHANGES_COLUMNS),
                           verification, unbalanceable, locked, tolerance, float(round_to), int(seed), v_seed, runs,
                           bank.fought + after.bank.fought, bank.reused + after.bank.reused,
                           bank.from_store + after.bank.from_store, converged, float(dev.max()), flagged, settings)


def _fieldable_prices(rs: Ruleset, ros: Roster, prices: Mapping[str, float], budget: float) -> dict[str, float]:
    """Prices nudged up until the larger whole copy count fits the side (a rescale may push one just past it)."""
    out = dict(prices)
    for u, p in prices.items():
        unit = dataclasses.replace(ros.unit(u), points=p)
        tries = 0
        while unfieldable(rs, unit, budget) is not None and tries < 50:
            p = min(budget, p * 1.01) if p < budget else budget
            unit = dataclasses.replace(unit, points=p)
            tries += 1
        out[u] = p
    return out
