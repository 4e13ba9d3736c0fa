"""Stat sweeps: one field of one unit over a range, on common random numbers.

Every value of the field fights each opponent on the same stream (the matrix
cell's stream of the unit, ``(crc32(unit), crc32(opponent))`` when attacking),
so the curves are smooth and the difference between two values is measured
much more precisely than either value alone. Paired standard errors of those
differences come from batch means, as in :mod:`analysis.compare` (at least 16
batches: from ``16 * BLOCK_TRIALS`` trials on a batch is a whole block and each
value's counts equal ``sim.fight(..., stream=cell stream)``; below that the
batches are ``trials / 16`` long, so the streams are cut differently).

Fair points use one stated model (the same as :mod:`analysis.solver`): with
strength proportional to cost (Bradley-Terry), a unit costed fairly against an
opponent of ``c`` points has score odds ``score / (1 - score)`` equal to its cost
ratio, so its fair cost there is ``c * score / (1 - score)``, where
``score = p_win + p_draw / 2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import sim
from sim.errors import InputError, MatchupError, Where
from sim.rng import BLOCK_TRIALS, SeedLike, root_sequence
from sim.roster import Roster
from sim.ruleset import SIDES, Rounds, Ruleset
from sim.rulesets import get_ruleset
from sim.stats import Z95, wilson_interval
from sim.tally import Tally

from .compare import batch_trials_for, paired_difference
from .matrix import CellJob, JobResult, cell_stream, check_run_settings, resolve_roster, run_jobs

__all__ = ["sweep", "marginal_value", "parse_range", "score_odds_points", "SWEEP_COLUMNS", "FAIR_POINTS_MODEL"]

FAIR_POINTS_MODEL = ("fair cost against an opponent of c points = c * score / (1 - score), score = P(win) + P(draw)/2 "
                     "(Bradley-Terry with strength proportional to points: at fair cost the score odds equal the cost ratio)")

SWEEP_COLUMNS = [
    "field", "value", "opponent", "side", "trials",
    "p_win", "p_win_lo", "p_win_hi", "p_win_se", "p_loss", "p_loss_lo", "p_loss_hi", "p_draw",
    "score", "score_se", "p_win_step", "p_win_step_se", "p_win_change", "p_win_change_se",
    "damage_dealt", "damage_dealt_se", "damage_taken", "damage_taken_se",
    "points_opponent", "fair_points", "note",
]


def parse_range(text: str) -> tuple[str, list[int]]:
    """``"FIELD=LO..HI"`` (integers, inclusive) -> ``(field, [LO, ..., HI])``."""
    if "=" not in text:
        raise InputError(f"--vary {text!r}: expected FIELD=LO..HI, e.g. defence=1..6")
    name, rng = (s.strip() for s in text.split("=", 1))
    if ".." not in rng:
        raise InputError(f"--vary {text!r}: expected FIELD=LO..HI, e.g. defence=1..6")
    lo_s, hi_s = rng.split("..", 1)
    try:
        lo, hi = int(lo_s), int(hi_s)
    except ValueError:
        raise InputError(f"--vary {text!r}: LO and HI must be integers") from None
    if not name:
        raise InputError(f"--vary {text!r}: no field name")
    if hi < lo:
        raise InputError(f"--vary {text!r}: HI ({hi}) is below LO ({lo})")
    return name, list(range(lo, hi + 1))


def score_odds_points(score: float, opponent_points: float) -> float:
    """Fair cost under :data:`FAIR_POINTS_MODEL` (``inf`` for a certain win, NaN without points)."""
    if not math.isfinite(opponent_points) or not math.isfinite(score):
        return float("nan")
    if score >= 1:
        return math.inf
    return opponent_points * score / (1 - score)


def _role_numbers(t: Tally, side: str) -> tuple[int, int, int]:
    """(wins, losses, draws) of the swept unit playing ``side``."""
    w = t.wins
    return (int(w[1]), int(w[2]), int(w[0])) if side == "attacker" else (int(w[2]), int(w[1]), int(w[0]))


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
    max_rounds: int = 50,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    from_text: bool = False,
    executor: Any = None,
    store: Any = None,
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
    roster, seed, rounds, max_rounds, states, overrides, options, workers, from_text
        As in :func:`analysis.matrix.matchup_matrix`.
    progress : callable, optional
        ``progress(runs_done, runs_total)``.
    executor, store : optional
        As in :func:`analysis.matrix.matchup_matrix`; ``frame.attrs["resumed_cells"]``
        counts the runs taken from the store.

    Returns
    -------
    pandas.DataFrame
        One row per value and opponent (columns :data:`SWEEP_COLUMNS`):
        ``p_win``/``p_loss`` with Wilson intervals, ``score = p_win + p_draw/2``,
        damage dealt and taken with standard errors, and on common random numbers
        ``p_win_step`` (change from the previous value) and ``p_win_change``
        (change from the first value) with paired standard errors; ``fair_points``
        under :data:`FAIR_POINTS_MODEL` when the opponent has points.
    """
    rs = get_ruleset(ruleset)
    ros = resolve_roster(rs, roster)
    rounds = check_run_settings(rs, rounds, max_rounds, trials)
    if side not in SIDES:
        raise InputError(f"--side: got {side!r}, expected attacker or defender")
    base = ros.unit(unit) if isinstance(unit, str) else unit
    if not isinstance(base, rs.unit_type):
        raise InputError(f"unit: expected a {rs.id} unit or a unit name, got {type(base).__name__}")
    values = list(values)
    if not values:
        raise InputError(f"--vary {field}: no values")
    if field == "name":
        raise InputError("--vary name: the name is not a stat")
    if field in (overrides or {}).get(side, {}):
        raise InputError(f"--set {side}.{field} conflicts with --vary {field}")
    opp_side = "defender" if side == "attacker" else "attacker"
    opps = list(ros.names if opponents is None else opponents)
    if not opps:
        raise InputError("sweep: no opponents")
    for o in opps:
        ros.unit(o)
    variants = [rs.with_overrides(base, {field: v}, Where("--vary", base.name), from_text=from_text) for v in values]
    batch = batch_trials_for(int(trials))
    root = root_sequence(seed)

    jobs, notes, opp_points = [], {}, {}
    for o in opps:
        stream = cell_stream(base.name, o) if side == "attacker" else cell_stream(o, base.name)
        for i, u in enumerate(variants):
            a, d = (u, o) if side == "attacker" else (o, u)
            try:
                matchup, plan = sim.build_matchup(rs, a, d, states=states, overrides=overrides, options=options,
                                                  roster=ros, from_text=from_text)
            except MatchupError as e:
                notes[(o, i)] = str(e)
                continue
            p = getattr(matchup.unit(opp_side), "points", None)
            opp_points[o] = float(p) if p is not None else float("nan")
            jobs.append(CellJob((o, i), plan, stream, int(trials), None, True, batch, identity=matchup))
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
            prev = res
    frame = pd.DataFrame(rows).reindex(columns=SWEEP_COLUMNS)
    frame["trials"] = frame["trials"].astype(np.int64)
    frame["note"] = frame["note"].fillna("")
    frame.attrs.update({"unit": base.name, "field": field, "side": side, "ruleset": rs.id,
                        "seed_entropy": root.entropy, "fair_points_model": FAIR_POINTS_MODEL,
                        "resumed_cells": sum(r.from_store for r in done.values())})
    return frame


def _row(field: str, value: Any, opponent: str, side: str, res: JobResult, prev: JobResult | None,
         first: JobResult, points_opp: float) -> dict[str, Any]:
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
        "points_opponent": points_opp, "fair_points": score_odds_points(score, points_opp), "note": "",
    }


def marginal_value(frame: pd.DataFrame) -> pd.DataFrame:
    """What one point of the swept field is worth, per opponent and over all of them.

    The average slope over the swept range: ``(p_win(hi) - p_win(lo)) / (hi - lo)``
    in win-probability points per stat point, with its paired standard error
    (the change from the first value is measured on common random numbers), and
    the same slope of the fair cost (:data:`FAIR_POINTS_MODEL`) when the
    opponents have points.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`sweep` result.

    Returns
    -------
    pandas.DataFrame
        Columns ``opponent, from_value, to_value, win_points_per_point, se, lo, hi,
        fair_points_per_point``; the last row, ``opponent == "(all)"``, averages the
        opponents with equal weight.
    """
    rows = []
    ok = frame[frame["trials"] > 0]
    for opp, part in ok.groupby("opponent", sort=False):
        part = part.sort_values("value")
        if len(part) < 2:
            continue
        first, last = part.iloc[0], part.iloc[-1]
        span = float(last["value"]) - float(first["value"])
        slope = float(last["p_win_change"]) / span
        se = float(last["p_win_change_se"]) / span
        fair = (float(last["fair_points"]) - float(first["fair_points"])) / span
        rows.append({"opponent": opp, "from_value": first["value"], "to_value": last["value"],
                     "win_points_per_point": 100 * slope, "se": 100 * se, "lo": 100 * (slope - Z95 * se),
                     "hi": 100 * (slope + Z95 * se), "fair_points_per_point": fair})
    out = pd.DataFrame(rows, columns=["opponent", "from_value", "to_value", "win_points_per_point", "se", "lo", "hi",
                                      "fair_points_per_point"])
    if len(out) > 1:
        k = len(out)
        slope = float(out["win_points_per_point"].mean())
        se = float(np.sqrt((out["se"] ** 2).sum()) / k)
        fair = out["fair_points_per_point"]
        fair = fair[np.isfinite(fair)]
        all_row = {"opponent": "(all)", "from_value": out["from_value"].min(), "to_value": out["to_value"].max(),
                   "win_points_per_point": slope, "se": se, "lo": slope - Z95 * se, "hi": slope + Z95 * se,
                   "fair_points_per_point": float(fair.mean()) if len(fair) else float("nan")}
        out = pd.concat([out, pd.DataFrame([all_row])], ignore_index=True)
    return out
