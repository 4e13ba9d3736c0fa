"""Balance solver: the value of one field (or the points) that makes a matchup even.

"Even" means a score of 50%, ``score = P(win) + P(draw) / 2`` (draws count half,
as in chess), so it is reachable even when most fights are draws and it is the
same as ``P(win) == P(loss)``. By default the score is averaged over both roles
(the unit attacking the opponent, and the opponent attacking the unit).

For a field, every candidate value runs on common random numbers (a
:func:`analysis.runs.sweep.sweep`), the value with the score closest to 50% is
chosen, and the crossing is located by linear interpolation between the two
values that straddle 50%, with an interval from where the score's 95% band
crosses 50%.

For ``"points"`` (which does not change a fight) the solver prices the unit
against the opponent with the one fair-price model (:mod:`analysis.stats.fair_prices`,
:mod:`analysis.runs.pricing`): the points at which it would score 50% against that
opponent at equal points (copy curves with a budget, both roles averaged; the
calibration of the one-unit-a-side roster without one).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sim.errors import InputError
from sim.limits import MAX_SWEEP_VALUES
from sim.rng import BLOCK_TRIALS, SeedLike
from sim.roster import Roster
from sim.ruleset import SIDES, Rounds, Ruleset
from sim.rulesets import get_ruleset
from sim.stats import Z95

from ..stats.fair_prices import FAIR_PRICE_DEFINITION
from .fielding import RunContext, budget_in_force
from .matrix import check_run_settings, resolve_roster
from .sweep import sweep

__all__ = ["BalanceSolution", "balance_pair"]


@dataclass(frozen=True)
class BalanceSolution:
    """The value that brings a matchup closest to even.

    Attributes
    ----------
    field : str
    value : float
        Best candidate value (for ``points``: the fair cost).
    score, score_lo, score_hi : float
        The unit's score at ``value`` and its 95% interval.
    crossing : float
        Interpolated value where the score crosses 50% (NaN if it does not in the range).
    crossing_lo, crossing_hi : float
        Where the score's 95% band crosses 50% (the interval of ``crossing``; NaN
        where a band edge does not cross inside the range).
    consistent : list
        Candidate values whose score interval contains 50%.
    table : pandas.DataFrame
        ``value, score, score_se, score_lo, score_hi`` per candidate.
    model : str
    """

    field: str
    value: float
    score: float
    score_lo: float
    score_hi: float
    crossing: float
    crossing_lo: float
    crossing_hi: float
    consistent: list[Any]
    table: pd.DataFrame = field(repr=False)
    model: str = ""


def _crossing(x: np.ndarray, y: np.ndarray, target: float = 0.5) -> float:
    """First value where the piecewise-linear curve (x, y) crosses ``target``."""
    d = y - target
    for i in range(len(x)):
        if d[i] == 0:
            return float(x[i])
        if i + 1 < len(x) and d[i] * d[i + 1] < 0:
            return float(x[i] + (x[i + 1] - x[i]) * d[i] / (d[i] - d[i + 1]))
    return float("nan")


def balance_pair(
    ruleset: str | Ruleset,
    unit: str,
    opponent: str,
    field: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    values: Sequence[Any] | None = None,
    side: str = "both",
    roster: Roster | str | Path | None = None,
    trials: int = 4 * BLOCK_TRIALS,
    seed: SeedLike = None,
    rounds: Rounds | str | None = None,
    max_rounds: int | None = None,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    budget: Any = None,
    executor: Any = None,
    rules_defaults: bool = False,
    method: str = "auto",
) -> BalanceSolution:
    """Find the value of ``field`` of ``unit`` that brings its matchup with ``opponent`` closest to 50%.

    Parameters
    ----------
    ruleset : str or Ruleset
    unit, opponent : str
        Unit names in the roster.
    field : str
        A numeric unit field, or ``"points"``.
    lo, hi : number, optional
        Search range (inclusive); default the field's schema bounds. Integer
        fields try every integer in the range.
    values : sequence, optional
        Explicit candidates instead of ``lo..hi`` (e.g. a grid for a ``number`` field).
    side : {"both", "attacker", "defender"}
        The unit's role; ``both`` averages the two roles.
    trials : int
        Fights per candidate and role.
    roster, seed, rounds, max_rounds, states, overrides, options, workers, budget, executor, rules_defaults, method
        As in :func:`analysis.runs.matrix.matchup_matrix`.

    Returns
    -------
    BalanceSolution
    """
    rs = get_ruleset(ruleset)
    ros = resolve_roster(rs, roster)
    if not isinstance(side, str) or side not in ("both", *SIDES):
        raise InputError(f"side: got {side!r}, expected both, attacker or defender")
    from ..stats.checks import check_number

    lo = check_number(lo, "lo", optional=True)
    hi = check_number(hi, "hi", optional=True)
    sides = list(SIDES) if side == "both" else [side]
    common = dict(roster=ros, trials=trials, seed=seed, rounds=rounds, max_rounds=max_rounds, states=states,
                  overrides=overrides, options=options, workers=workers, budget=budget, fair=False,
                  executor=executor, rules_defaults=rules_defaults, method=method)
    if not isinstance(field, str):
        raise InputError(f"field: got {type(field).__name__}, expected the name of a numeric unit field or 'points'")
    if field == "points":
        return _solve_points(rs, ros, unit, opponent, common)

    spec = next((f for f in rs.unit_fields if f.name == field), None)
    if spec is None or spec.kind not in ("int", "number"):
        numeric = ", ".join(f.name for f in rs.unit_fields if f.kind in ("int", "number"))
        raise InputError(f"balance: field {field!r} is not a numeric unit field of {rs.id} ({numeric})")
    if values is None:
        lo = spec.lo if lo is None else lo
        hi = spec.hi if hi is None else hi
        if lo is None or hi is None:
            raise InputError(f"balance: give lo and hi for field {field!r} (its schema has no bounds)")
        if hi < lo:
            raise InputError(f"balance: hi ({hi}) is below lo ({lo})")
        for name, v in (("lo", lo), ("hi", hi)):  # a value the field cannot take: named now, not by the sweep
            if (spec.lo is not None and v < spec.lo) or (spec.hi is not None and v > spec.hi):
                span = f"{'' if spec.lo is None else f'{spec.lo:g}'}..{'' if spec.hi is None else f'{spec.hi:g}'}"
                raise InputError(f"{name}: got {v:g}, outside the values of field {field!r} ({span})")
        if spec.kind == "int":
            if math.floor(hi) - math.ceil(lo) + 1 > MAX_SWEEP_VALUES:  # every integer is fought: bounded
                raise InputError(f"lo, hi: {lo:g}..{hi:g} is more than {MAX_SWEEP_VALUES:,} values of {field!r}; "
                                 "give a narrower range")
            values = list(range(int(math.ceil(lo)), int(math.floor(hi)) + 1))
        else:
            values = list(np.linspace(float(lo), float(hi), 11))
    elif isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InputError(f"values: got {values!r:.60}, expected a sequence of candidate values or None")
    values = list(itertools.islice(values, MAX_SWEEP_VALUES + 1))  # more is refused by the sweep, in one line
    if len(values) < 1:
        raise InputError(f"balance: no candidate values for {field!r}")

    scores, variances = np.zeros(len(values)), np.zeros(len(values))
    for s in sides:
        f = sweep(rs, unit, field, values, [opponent], side=s, **common)
        if ((f["trials"] == 0) & (f["method"] != "exact")).any():  # an exact value sampled nothing, yet fought
            raise InputError(f"balance: {unit} cannot fight {opponent} as {s}: {f['note'].iloc[0]}")
        scores += f["score"].to_numpy() / len(sides)
        variances += (f["score_se"].to_numpy() / len(sides)) ** 2
    se = np.sqrt(variances)
    table = pd.DataFrame({"value": values, "score": scores, "score_se": se,
                          "score_lo": scores - Z95 * se, "score_hi": scores + Z95 * se})
    best = int(np.argmin(np.abs(scores - 0.5)))
    x = np.asarray(values, float)
    cross = _crossing(x, scores)
    band = [c for c in (_crossing(x, scores - Z95 * se), _crossing(x, scores + Z95 * se)) if math.isfinite(c)]
    consistent = [v for v, a, b in zip(values, table["score_lo"], table["score_hi"]) if a <= 0.5 <= b]
    return BalanceSolution(
        field, values[best], float(scores[best]), float(table["score_lo"][best]), float(table["score_hi"][best]),
        cross, min(band) if len(band) == 2 else float("nan"), max(band) if len(band) == 2 else float("nan"),
        consistent, table,
        f"score = P(win) + P(draw)/2 of {unit} vs {opponent} ({side}); closest to 50% over {len(values)} values "
        "on common random numbers; crossing by linear interpolation",
    )


def _solve_points(rs: Ruleset, ros: Roster, unit: str, opponent: str, common: dict[str, Any]) -> BalanceSolution:
    """The unit's fair price against ``opponent`` alone (both roles averaged), with its interval."""
    from sim.rng import root_sequence

    from .pricing import price_variants

    base = ros.unit(unit)
    for name in (unit, opponent):
        if getattr(ros.unit(name), "points", None) is None:
            raise InputError(f"{ros.source}: unit {name!r} has no points, so no fair price can be derived")
    run = check_run_settings(rs, common["rounds"], common["max_rounds"], common["trials"], states=common["states"],
                             rules_defaults=common["rules_defaults"])
    in_force = budget_in_force(rs, ros, common["budget"])
    context = RunContext(rs.id, ros, root_sequence(common["seed"]), run.rounds, run.max_rounds,
                         run.states, dict(common["overrides"] or {}), dict(common["options"] or {}),
                         0.01, 32_768, common["workers"], False, in_force, common.get("executor"),
                         method=common.get("method", "auto"))
    table, _ = price_variants(context, base, [base], ["points"], [opponent], against=opponent)
    row = table.iloc[0]
    fair, lo, hi = float(row["fair_points"]), float(row["fair_lo"]), float(row["fair_hi"])
    frame = pd.DataFrame({"value": [fair], "score": [0.5], "score_se": [np.nan], "score_lo": [np.nan],
                          "score_hi": [np.nan]})
    model = (f"{FAIR_PRICE_DEFINITION} Here against {opponent} alone ({row['method']}); {row['note']}"
             + (f"; {row['beyond']}" if row["beyond"] else ""))
    return BalanceSolution("points", fair, 0.5, float("nan"), float("nan"), fair, lo, hi,
                           [fair] if np.isfinite(fair) else [], frame, model)
