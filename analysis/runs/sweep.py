"""Stat sweeps: one field of one unit over a range, on common random numbers.

Every value of the field fights each opponent on the same stream (the matrix
cell's stream of the unit, ``(key(unit), key(opponent))`` when attacking),
so the curves are smooth and the difference between two values is measured
much more precisely than either value alone. Paired standard errors of those
differences come from batch means, as in :mod:`analysis.runs.compare` (at least 16
batches: from ``16 * BLOCK_TRIALS`` trials on a batch is a whole block and each
value's counts equal ``sim.fight(..., stream=cell stream)``; below that the
batches are ``trials / 16`` long, so the streams are cut differently).

Fair prices use the one model of :mod:`analysis.stats.fair_prices`: the points at
which the unit, with each value of the field, would score 50% against the
sweep's opponents at equal points. With a budget (given, or the roster's) each
value gets its own copy curve (fights of the variant at neighbouring copy
counts against every opponent, both roles, on the base unit's streams, so the
values are compared on common random numbers); without one, the calibration
of the one-unit-a-side roster prices each value from its scores against the
roster. Every value's interval comes from the same bootstrap draws, so the
change in fair price per stat point has an interval of its own.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

import sim
from sim.errors import InputError, MatchupError, Where
from sim.limits import MAX_SWEEP_VALUES, PlanBudget, check_kept_batches, check_names, check_side_mappings, table_bytes
from sim.rng import BLOCK_TRIALS, SeedLike, root_sequence
from sim.roster import Roster
from sim.ruleset import SIDES, Rounds, Ruleset
from sim.rulesets import get_ruleset
from sim.stats import Z95, wilson_interval
from sim.tally import Tally

from ..stats.checks import check_frame
from ..stats.fair_prices import FAIR_POINTS_MODEL
from .compare import batch_trials_for, paired_difference, welch_df
from .fielding import RunContext, budget_in_force, check_fair_settings, check_fielding, check_run_arguments
from .jobs import CellJob, JobResult, run_jobs
from .matrix import cell_stream, check_run_settings, resolve_roster
from .methods import exact_side, grouped_methods
from .settings import check_method

__all__ = ["sweep", "marginal_value", "parse_range", "SWEEP_COLUMNS", "FAIR_POINTS_MODEL", "welch_df"]

SWEEP_COLUMNS = [
    "field", "value", "opponent", "side", "trials",
    "p_win", "p_win_lo", "p_win_hi", "p_win_se", "p_loss", "p_loss_lo", "p_loss_hi", "p_draw",
    "score", "score_se", "p_win_step", "p_win_step_se", "p_win_change", "p_win_change_se",
    "damage_dealt", "damage_dealt_se", "damage_taken", "damage_taken_se",
    "points_opponent", "fair_points", "fair_lo", "fair_hi", "copies", "p_win_change_df", "note", "method",
]


def parse_range(text: str) -> tuple[str, list[int]]:
    """``"FIELD=LO..HI"`` -> ``(field, [LO, ..., HI])``: ASCII integers, inclusive, at most MAX_SWEEP_VALUES values."""
    if not isinstance(text, str):
        raise InputError(f"--vary: got {text!r:.60}, expected FIELD=LO..HI, e.g. defence=1..6")
    if "=" not in text:
        raise InputError(f"--vary {text!r}: expected FIELD=LO..HI, e.g. defence=1..6")
    name, rng = (s.strip() for s in text.split("=", 1))
    if ".." not in rng:
        raise InputError(f"--vary {text!r}: expected FIELD=LO..HI, e.g. defence=1..6")
    lo_s, hi_s = (part.strip() for part in rng.split("..", 1))
    if not all(re.fullmatch(r"[+-]?[0-9]{1,18}", part) for part in (lo_s, hi_s)):
        raise InputError(f"--vary {text!r}: LO and HI must be integers (digits 0-9)")
    lo, hi = int(lo_s), int(hi_s)
    if not name:
        raise InputError(f"--vary {text!r}: no field name")
    if hi < lo:
        raise InputError(f"--vary {text!r}: HI ({hi}) is below LO ({lo})")
    if hi - lo + 1 > MAX_SWEEP_VALUES:
        raise InputError(f"--vary {text!r}: {hi - lo + 1:,} values, at most {MAX_SWEEP_VALUES:,} in one sweep")
    return name, list(range(lo, hi + 1))


def _t(df: float) -> float:
    """Two-sided 95% t quantile (normal for infinite df)."""
    return float(stats.t.ppf(0.975, df)) if math.isfinite(df) and df > 0 else Z95


def _role_numbers(t: Tally, side: str) -> tuple[int, int, int]:
    """(wins, losses, draws) of the swept unit playing ``side``."""
    w = t.wins
    return (int(w[1]), int(w[2]), int(w[0])) if side == "attacker" else (int(w[2]), int(w[1]), int(w[0]))


def _estimated_tables(opps: Sequence[str], ends: Sequence[int], built: Mapping[tuple[str, int], tuple[Any, Any]],
                      n_values: int) -> float:
    """Every plan's tables, each opponent's as ``n_values`` times the larger of its first and last value's."""
    total = 0.0
    for o in opps:
        sizes = [table_bytes(built[(o, i)][1]) for i in ends if (o, i) in built]
        total += n_values * max(sizes, default=0)
    return total


def sweep(
    ruleset: str | Ruleset,
    unit: Any,
    field: str,
    values: Sequence[Any],
    opponents: Sequence[str] | None = None,
    *,
    side: str = "attacker",
    roster: Roster | str | Path | None = None,
    trials: int = 4 * BLOCK_TRIALS,
    seed: SeedLike = None,
    rounds: Rounds | str | None = None,
    max_rounds: int | None = None,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    from_text: bool = False,
    budget: Any = None,
    fair: bool = True,
    fair_trials: int = 32_768,
    fair_half_width: float | None = 0.01,
    executor: Any = None,
    store: Any = None,
    rules_defaults: bool = False,
    fielding: str | None = None,
    method: str = "auto",
) -> pd.DataFrame:
    """Win probability and damage of ``unit`` as one of its fields varies.

    Parameters
    ----------
    ruleset : str or Ruleset
    unit : str or unit profile
    field : str
        A unit field (validated like a roster field for every value).
    values : sequence
        The values to try, in order (e.g. ``range(1, 7)``).
    opponents : sequence of str, optional
        Default: every unit of the roster.
    side : {"attacker", "defender"}
        The role of the swept unit.
    trials : int
        Fights per value and opponent.
    roster, seed, rounds, max_rounds, states, overrides, options, workers, from_text, rules_defaults
        As in :func:`analysis.runs.matrix.matchup_matrix` (the ruleset's balance settings unless told otherwise).
    progress : callable, optional
        ``progress(runs_done, runs_total)``.
    budget : number, "none" or None
        Equal-points fights (default the roster's budget): the unit and each
        opponent field ``floor(budget / points)`` copies.
    fair : bool
        Also price each value (``fair_points``, ``fair_lo``, ``fair_hi``; see the module docstring).
    fair_trials, fair_half_width : int, float
        Precision of the fights behind the fair prices (as a matrix cell).
    executor, store : optional
        As in :func:`analysis.runs.matrix.matchup_matrix`; ``frame.attrs["resumed_cells"]``
        counts the runs taken from the store.
    method : {"auto", "exact", "mc"}
        ``"exact"`` answers every value against an opponent from its Markov chain
        (probabilities, changes and slopes with no error; ``method`` ``"exact"``);
        ``"auto"`` (default) does so for an opponent where every value's chain is
        cheaper than its fights (:mod:`analysis.runs.methods`); ``"mc"`` always
        fights. The fair prices follow the same setting.

    Returns
    -------
    pandas.DataFrame
        One row per value and opponent (columns :data:`SWEEP_COLUMNS`):
        ``p_win``/``p_loss`` with Wilson intervals, ``score = p_win + p_draw/2``,
        damage dealt and taken with standard errors, and on common random numbers
        ``p_win_step`` (change from the previous value) and ``p_win_change``
        (change from the first value) with paired standard errors (``p_win_change_df``
        degrees of freedom); ``fair_points`` with its interval: the value's fair
        price against the sweep's opponents (the same on every opponent's row).
        ``frame.attrs["fair"]`` holds one row per value and ``attrs["fair_replicates"]``
        the bootstrap replicates (for :func:`marginal_value`).
    """
    rs = get_ruleset(ruleset)
    check_run_arguments(states=states, overrides=overrides, options=options, progress=progress,
                        from_text=from_text, store=store)
    ros = resolve_roster(rs, roster)
    method = check_method(method)
    run = check_run_settings(rs, rounds, max_rounds, trials, states=states, rules_defaults=rules_defaults)
    rounds, max_rounds, states = run.rounds, run.max_rounds, run.states
    check_fair_settings(fair, fair_trials, fair_half_width)
    overrides = check_side_mappings(overrides, "overrides")
    if not isinstance(side, str) or side not in SIDES:
        raise InputError(f"side: got {side!r:.60}, expected attacker or defender")
    if not isinstance(field, str):
        raise InputError(f"field: got {field!r:.60}, expected the name of a unit field")
    base = ros.unit(unit) if isinstance(unit, str) else unit
    if not isinstance(base, rs.unit_type):
        raise InputError(f"unit: expected a {rs.id} unit or a unit name, got {type(base).__name__}")
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InputError(f"values: got {values!r:.60}, expected a sequence of field values")
    values = list(itertools.islice(values, MAX_SWEEP_VALUES + 1))
    if not values:
        raise InputError(f"--vary {field}: no values")
    if len(values) > MAX_SWEEP_VALUES:
        raise InputError(f"--vary {field}: more than {MAX_SWEEP_VALUES:,} values")
    if field == "name":
        raise InputError("--vary name: the name is not a stat")
    if field in (overrides or {}).get(side, {}):
        raise InputError(f"--set {side}.{field} conflicts with --vary {field}")
    if field == "points":
        raise InputError("--vary points: points do not change a fight; price a unit with `meleelab balance`")
    in_force = budget_in_force(rs, ros, budget)
    opps = list(ros.names) if opponents is None else check_names(opponents, "opponents")
    if not opps:
        raise InputError("sweep: no opponents")
    for o in opps:
        ros.unit(o)
    label = "--vary" if from_text else "values"  # the CLI flag, or the API argument
    variants = [rs.with_overrides(base, {field: v}, Where(label, base.name), from_text=from_text) for v in values]
    batch = batch_trials_for(int(trials))
    check_kept_batches("sweep", len(opps) * len(variants), int(trials), batch)
    root = root_sequence(seed)
    plan_budget = PlanBudget("sweep")

    jobs, notes, opp_points, copies_used = [], {}, {}, {}
    built: dict[tuple[str, int], tuple[Any, Any]] = {}

    def build(o: str, i: int) -> None:
        a, d = (variants[i], o) if side == "attacker" else (o, variants[i])
        try:
            built[(o, i)] = sim.build_matchup(rs, a, d, states=states, overrides=overrides, options=options,
                                              roster=ros, from_text=from_text, budget=in_force or "none")
        except MatchupError as e:
            notes[(o, i)] = str(e)
            return
        plan_budget.add(rs, built[(o, i)][1])

    # the first and last values first: they size the whole sweep before it is built (tables grow with a field)
    ends = sorted({0, len(variants) - 1})
    for o in opps:
        for i in ends:
            build(o, i)
    plan_budget.check_estimate(_estimated_tables(opps, ends, built, len(variants)), len(opps) * len(variants),
                               "estimated from the first and last values")
    for o in opps:
        stream = cell_stream(base.name, o) if side == "attacker" else cell_stream(o, base.name)
        for i in range(len(variants)):
            if (o, i) not in built and (o, i) not in notes:
                build(o, i)
            if (o, i) not in built:
                continue
            matchup, plan = built.pop((o, i))
            p = getattr(ros.unit(o), "points", None)
            opp_points[o] = float(p) if p is not None else float("nan")
            copies_used[(o, i)] = matchup.copies[side]
            jobs.append(CellJob((o, i), plan, stream, int(trials), None, True, batch, identity=matchup))
    # the values against one opponent are read against each other: exact together or Monte Carlo together
    jobs = grouped_methods(rs, jobs, lambda j: j.key[0], lambda j: f"{base.name} ({field} = {values[j.key[1]]!r}) "
                           f"{'v' if side == 'attacker' else 'defending against'} {j.key[0]}",
                           rounds=rounds, max_rounds=int(max_rounds), method=method)
    if not jobs:
        raise InputError(f"sweep: {base.name} can fight none of the opponents ({next(iter(notes.values()))})")
    done = run_jobs(rs, root, jobs, rounds=rounds, max_rounds=int(max_rounds), workers=workers, progress=progress,
                    executor=executor, store=store)

    rows = []
    for o in opps:
        first: JobResult | None = None
        prev: JobResult | None = None
        for i, v in enumerate(values):
            if (o, i) in notes:
                rows.append({"field": field, "value": v, "opponent": o, "side": side, "trials": 0,
                             "note": notes[(o, i)]})
                prev = None
                continue
            res = done[(o, i)]
            first = first or res
            rows.append(_row(field, v, o, side, res, prev, first, opp_points.get(o, float("nan"))))
            rows[-1]["copies"] = copies_used[(o, i)]
            prev = res
    frame = pd.DataFrame(rows).reindex(columns=SWEEP_COLUMNS)
    frame["trials"] = frame["trials"].astype(np.int64)
    frame["note"] = frame["note"].fillna("")
    frame.attrs.update({"unit": base.name, "field": field, "side": side, "ruleset": rs.id,
                        "seed_entropy": root.entropy, "fair_points_model": FAIR_POINTS_MODEL, "budget": in_force,
                        "resumed_cells": sum(r.from_store for r in done.values())})
    if fair:
        from .pricing import price_variants

        context = RunContext(rs.id, ros, root, rounds, int(max_rounds), dict(states or {}), dict(overrides or {}),
                             dict(options or {}), fair_half_width, int(fair_trials), workers, from_text, in_force,
                             executor, store, check_fielding(fielding), method)
        table, reps = price_variants(context, base, variants, values, opps)
        by_value = {v: r for v, r in zip(table["value"], table.to_dict("records"))}
        frame["fair_points"] = frame["value"].map(lambda v: by_value[v]["fair_points"])
        frame["fair_lo"] = frame["value"].map(lambda v: by_value[v]["fair_lo"])
        frame["fair_hi"] = frame["value"].map(lambda v: by_value[v]["fair_hi"])
        frame.attrs.update({"fair": table, "fair_replicates": reps})
    return frame


def _exact_row(field: str, value: Any, opponent: str, side: str, res: JobResult, prev: JobResult | None,
               first: JobResult, points_opp: float) -> dict[str, Any]:
    """An opponent answered exactly: every number is the chain's, every change exact (errors 0)."""
    p_win, p_loss, p_draw, dealt, taken = exact_side(res.exact, side)

    def change(other: JobResult | None) -> float:
        return float("nan") if other is None else p_win - exact_side(other.exact, side)[0]

    return {
        "field": field, "value": value, "opponent": opponent, "side": side, "trials": 0, "method": "exact",
        "p_win": p_win, "p_win_lo": p_win, "p_win_hi": p_win, "p_win_se": 0.0,
        "p_loss": p_loss, "p_loss_lo": p_loss, "p_loss_hi": p_loss, "p_draw": p_draw,
        "score": p_win + p_draw / 2, "score_se": 0.0,
        "p_win_step": change(prev), "p_win_step_se": 0.0 if prev is not None else float("nan"),
        "p_win_change": change(first), "p_win_change_se": 0.0,
        "damage_dealt": dealt, "damage_dealt_se": 0.0, "damage_taken": taken, "damage_taken_se": 0.0,
        "points_opponent": points_opp, "fair_points": float("nan"), "note": "",
        "p_win_change_df": math.inf,  # no sampling: the normal quantile, times an error of 0
    }


def _row(field: str, value: Any, opponent: str, side: str, res: JobResult, prev: JobResult | None,
         first: JobResult, points_opp: float) -> dict[str, Any]:
    if res.exact is not None:
        return _exact_row(field, value, opponent, side, res, prev, first, points_opp)
    t = res.tally
    n = t.trials
    wins, losses, draws = _role_numbers(t, side)
    p_win, p_loss, p_draw = wins / n, losses / n, draws / n
    score = p_win + p_draw / 2
    # per-trial score is 1, 1/2 or 0: var = E[X^2] - score^2
    score_var = max(p_win + p_draw / 4 - score * score, 0.0)
    dealt, taken = (t.damage_to_defender, t.damage_to_attacker) if side == "attacker" else \
        (t.damage_to_attacker, t.damage_to_defender)
    dealt_m, dealt_se = dealt.mean_se(n)
    taken_m, taken_se = taken.mean_se(n)
    lo_w, hi_w = wilson_interval(wins, n)
    lo_l, hi_l = wilson_interval(losses, n)

    def change(other: JobResult | None) -> tuple[float, float]:
        if other is None:
            return float("nan"), float("nan")
        assert other.blocks is not None and res.blocks is not None
        d, se, _, _ = paired_difference([_role_numbers(b, side)[0] for b in other.blocks],
                                        [_role_numbers(b, side)[0] for b in res.blocks],
                                        [b.trials for b in res.blocks])
        return d, se

    step, step_se = change(prev)
    chg, chg_se = change(first)
    return {
        "field": field, "value": value, "opponent": opponent, "side": side, "trials": n,
        "p_win": p_win, "p_win_lo": lo_w, "p_win_hi": hi_w, "p_win_se": math.sqrt(p_win * (1 - p_win) / n),
        "p_loss": p_loss, "p_loss_lo": lo_l, "p_loss_hi": hi_l, "p_draw": p_draw,
        "score": score, "score_se": math.sqrt(score_var / n),
        "p_win_step": step, "p_win_step_se": step_se, "p_win_change": chg, "p_win_change_se": chg_se,
        "damage_dealt": dealt_m, "damage_dealt_se": dealt_se, "damage_taken": taken_m, "damage_taken_se": taken_se,
        "points_opponent": points_opp, "fair_points": float("nan"), "note": "",
        "p_win_change_df": len(res.blocks or []) - 1, "method": "mc",
    }


def marginal_value(frame: pd.DataFrame) -> pd.DataFrame:
    """What one point of the swept field is worth, per opponent and over all of them.

    The average slope over the swept range: ``(p_win(hi) - p_win(lo)) / (hi - lo)``
    in win-probability points per stat point, with its paired standard error
    (the change from the first value is measured on common random numbers) and a
    t interval on the batch-means degrees of freedom; the ``(all)`` row averages
    the opponents with equal weight (independent streams: variances add, degrees
    of freedom by Welch-Satterthwaite). ``fair_points_per_point`` is the change of
    the fair price (:mod:`analysis.stats.fair_prices`) per stat point, with an interval
    from the paired bootstrap replicates of the two fair prices; it belongs to the
    whole sweep, so it is given on the ``(all)`` row (and on the only row when
    there is one opponent).

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`sweep` result.

    Returns
    -------
    pandas.DataFrame
        Columns ``opponent, from_value, to_value, win_points_per_point, se, df, lo, hi,
        fair_points_per_point, fair_lo, fair_hi``.
    """
    cols = ["opponent", "from_value", "to_value", "win_points_per_point", "se", "df", "lo", "hi",
            "fair_points_per_point", "fair_lo", "fair_hi"]
    frame = check_frame(frame, "frame", "a sweep() result",
                        ("opponent", "value", "trials", "p_win_change", "p_win_change_se"),
                        ("value", "trials", "p_win_change", "p_win_change_se", "p_win_change_df"))
    rows = []
    ok = frame[(frame["trials"] > 0) | ((frame["method"] == "exact") if "method" in frame else False)]
    for opp, part in ok.groupby("opponent", sort=False):
        part = part.sort_values("value")
        if len(part) < 2:
            continue
        first, last = part.iloc[0], part.iloc[-1]
        span = float(last["value"]) - float(first["value"])
        if not span:  # one value only (repeated): no slope
            continue
        slope = float(last["p_win_change"]) / span
        se = float(last["p_win_change_se"]) / span
        df = float(last["p_win_change_df"]) if "p_win_change_df" in part else math.inf
        t = _t(df)
        rows.append({"opponent": opp, "from_value": first["value"], "to_value": last["value"],
                     "win_points_per_point": 100 * slope, "se": 100 * se, "df": df, "lo": 100 * (slope - t * se),
                     "hi": 100 * (slope + t * se)})
    out = pd.DataFrame(rows, columns=cols)
    fair_row = _fair_per_point(frame)
    if len(out) > 1:
        k = len(out)
        slope = float(out["win_points_per_point"].mean())
        se = float(np.sqrt((out["se"] ** 2).sum()) / k)
        df = welch_df(out["se"].to_numpy(float) / k, out["df"].to_numpy(float))
        t = _t(df)
        all_row = {"opponent": "(all)", "from_value": out["from_value"].min(), "to_value": out["to_value"].max(),
                   "win_points_per_point": slope, "se": se, "df": df, "lo": slope - t * se, "hi": slope + t * se,
                   **fair_row}
        out = pd.concat([out, pd.DataFrame([all_row], columns=cols)], ignore_index=True)
    elif len(out) == 1:
        for k, v in fair_row.items():
            out.loc[0, k] = v
    return out


def _fair_per_point(frame: pd.DataFrame) -> dict[str, float]:
    """Change of the fair price per stat point from the sweep's first to its last value, with an interval."""
    nan = {"fair_points_per_point": float("nan"), "fair_lo": float("nan"), "fair_hi": float("nan")}
    table = frame.attrs.get("fair")
    reps = frame.attrs.get("fair_replicates") or {}
    if table is None or len(table) < 2:
        return nan
    first, last = table.iloc[0], table.iloc[-1]
    try:
        span = float(last["value"]) - float(first["value"])
        est = (float(last["fair_points"]) - float(first["fair_points"])) / span
    except (KeyError, TypeError, ValueError, ZeroDivisionError):  # a frame's attrs edited by hand: no fair slope
        return nan
    a, b = reps.get(first["value"]), reps.get(last["value"])
    lo = hi = float("nan")
    if a is not None and b is not None and len(a) == len(b):
        from ..stats.fair_prices import _quantiles

        with np.errstate(invalid="ignore"):
            lo, hi = _quantiles((np.asarray(b, float) - np.asarray(a, float)) / span)
        lo = lo if math.isfinite(lo) else float("nan")
        hi = hi if math.isfinite(hi) else float("nan")
    return {"fair_points_per_point": est, "fair_lo": lo, "fair_hi": hi}
