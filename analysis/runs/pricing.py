"""Fair prices of profiles that are not (or not only) roster units: a sweep's values, a compare's variant.

The same model as a report's fair prices (:mod:`analysis.stats.fair_prices`), applied
to any profile against a set of opponents (:func:`price_variants`):

* with a budget, each profile gets a copy curve (fights at its budget copies and
  the neighbouring counts, both roles, against every opponent at its own budget
  copies) and is priced ``budget / k*``;
* without one, the one-unit-a-side roster is calibrated (a matrix of the roster,
  then :func:`analysis.stats.calibration.calibrate`) and each profile is priced from its
  side-averaged scores against every unit of the roster.

Every profile is priced with the same bootstrap draws, so differences between
them (the value of one stat point) have intervals too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sim.budget import copies_for
from sim.errors import InputError, shown
from sim.limits import check_int

from ..stats.checks import check_callable, check_seed
from ..stats.copy_curves import CopyCurve, curves_from_matrix
from ..stats.fair_prices import REPLICATES, _quantiles, _row, curve_price, fair_prices, price_range, roster_calibration
from .copy_curves import extend_curves
from .fielding import RunContext, fielded_copies, unfieldable

__all__ = ["fair_points", "complete_curves", "price_variants", "PRICE_COLUMNS"]

PRICE_COLUMNS = ["value", "fair_points", "fair_lo", "fair_hi", "beyond", "method", "note"]


def complete_curves(matrix: Any, progress: Any = None) -> dict[str, CopyCurve] | None:
    """The roster's copy curves, completed by fights at neighbouring copy counts (None without a budget).

    Only a matrix that can run more fights (a budgeted
    :class:`~analysis.runs.matrix.MatchupMatrix` with its run context) has them;
    ``progress(cells_done, cells_total)`` reports the fights.
    """
    context = getattr(matrix, "context", None)
    if getattr(matrix, "budget", None) is None or context is None:
        return None
    curves = curves_from_matrix(matrix)
    extend_curves(curves, context, dict(matrix.copies), progress=progress)
    return curves


def fair_points(matrix: Any, *, replicates: int = REPLICATES, seed: int = 0,
                bt: tuple[pd.DataFrame, dict[str, Any]] | None = None, curves: dict[str, CopyCurve] | None = None,
                classes: dict[str, list[str]] | None = None, progress: Any = None) -> pd.DataFrame:
    """Fair price per unit (:func:`analysis.stats.fair_prices.fair_prices`), fighting what the price needs.

    With a budget and a matrix that can run more fights, the copy curves are
    completed by fights at neighbouring copy counts (method ``copies``);
    ``curves`` may be given instead (no fights run). Otherwise the calibration
    model prices the units from the matrix alone.
    """
    seed = check_seed(seed)
    replicates = check_int(replicates, "replicates", 1, 100_000)
    check_callable(progress, "progress")
    if bt is not None and not (isinstance(bt, (tuple, list)) and len(bt) == 2 and isinstance(bt[0], pd.DataFrame)
                               and isinstance(bt[1], dict)):
        raise InputError(f"bt: got {shown(bt)}, expected None or bradley_terry(matrix, full=True): "
                         "(a DataFrame, a dict)")
    if curves is not None and not isinstance(curves, dict):
        raise InputError(f"curves: got {shown(curves)}, expected None or a dict of copy curves by unit")
    if classes is not None and not (isinstance(classes, dict) and all(
            isinstance(k, str) and isinstance(v, (list, tuple)) and all(isinstance(u, str) for u in v)
            for k, v in classes.items())):
        raise InputError(f"classes: got {shown(classes)}, expected None or a dict of unit -> list of unit names")
    if curves is None:
        curves = complete_curves(matrix, progress)
    return fair_prices(matrix, replicates=replicates, seed=seed, bt=bt, curves=curves, classes=classes)


def _pairing_rng(context: RunContext) -> np.random.Generator:
    """The same bootstrap draws for every profile priced in one call (paired differences)."""
    return np.random.default_rng([int(context.root.entropy) % (1 << 63), 7])


def _price_expected(context: RunContext, base: Any, variants: Sequence[Any], labels: Sequence[Any],
                    opponents: Sequence[str]) -> tuple[pd.DataFrame, dict[Any, np.ndarray]]:
    """:func:`price_variants` under expected fielding: each variant in the base's place among ``opponents``.

    A variant fights on the base's streams (common random numbers), so the
    variant equal to the base gets exactly the base's price in a report of the
    same settings; against itself at the candidate price it scores 1/2.
    """
    from ..stats.expected import ExpectedCurve, price_curve
    from .cells import CellBank
    from .expected_curves import complete_expected_curves, price_rng

    ros, budget = context.roster, float(context.budget)
    others = [o for o in dict.fromkeys(opponents) if o != base.name]
    labels_of = {f"variant {i}": v for i, v in enumerate(variants)}
    bank = CellBank(context, units=dict(labels_of), stream_names={k: base.name for k in labels_of})
    copies = fielded_copies(context.rs, ros, others, budget, "expected")
    missing = [o for o in others if o not in copies]
    if missing:
        raise InputError(f"budget {budget:g}: {missing[0]} cannot be fielded "
                         f"({unfieldable(context.rs, ros.unit(missing[0]), budget)})")
    rows, reps = [], {}
    curves = {}
    for key, v in labels_of.items():
        why = unfieldable(context.rs, v, budget)
        if why is None:
            copies[key] = budget / float(v.points)
            curves[key] = ExpectedCurve([key], others, len(others) + 1)
    complete_expected_curves(bank, curves, copies)
    for key, label in zip(labels_of, labels):
        v = labels_of[key]
        points = float(getattr(v, "points", None) or math.nan)
        if key not in curves:
            rows.append({"value": label, "fair_points": math.nan, "fair_lo": math.nan, "fair_hi": math.nan,
                         "beyond": unfieldable(context.rs, v, budget), "method": "expected", "note": ""})
            reps[label] = np.full(1, np.nan)
            continue
        est = price_curve(curves[key], budget, points, rng=price_rng(context.root, "variants"))
        rows.append({"value": label, "fair_points": est["fair_points"], "fair_lo": est["fair_lo"],
                     "fair_hi": est["fair_hi"], "beyond": "" if est["fieldable"] else est["note"],
                     "method": "expected", "note": est["note"], "roster_lo": est["roster_lo"],
                     "roster_hi": est["roster_hi"]})
        reps[label] = est["replicates"]
    return pd.DataFrame(rows, columns=PRICE_COLUMNS + ["roster_lo", "roster_hi"]), reps


def price_variants(context: RunContext, base: Any, variants: Sequence[Any], labels: Sequence[Any],
                   opponents: Sequence[str], *, against: str | None = None
                   ) -> tuple[pd.DataFrame, dict[Any, np.ndarray]]:
    """Fair price of each variant (a profile of ``context.ruleset``) against ``opponents``.

    Parameters
    ----------
    context : RunContext
        Seed, precision and settings; ``context.budget`` picks the method.
    base : unit profile
        Its name addresses the streams (every variant fights on the base's streams).
    variants : sequence of unit profiles
    labels : sequence
        One label per variant (the ``value`` column).
    opponents : sequence of str
        Roster units (with a budget: the curve's opponents; without: ignored, the
        calibration prices against the whole roster).
    against : str, optional
        Price against this one roster unit (the solver's pair question): with a
        budget the curve's only opponent; without, its value is the par.

    Returns
    -------
    (DataFrame, dict)
        :data:`PRICE_COLUMNS` per variant, and label -> bootstrap replicate prices.
    """
    ros = context.roster
    limits = price_range(np.array([float(getattr(ros.unit(u), "points", None) or math.nan) for u in ros.names]))
    base_points = float(getattr(base, "points", None) or math.nan)
    rows, reps = [], {}
    if against is not None:
        opponents = [against]
    if context.budget is not None and context.fielding == "expected":
        return _price_expected(context, base, variants, labels, opponents)
    if context.budget is not None:
        opp_copies = fielded_copies(context.rs, ros, list(opponents), context.budget)
        curves = {f"variant {i}": CopyCurve(f"variant {i}", [base.name], list(opponents), subject=v,
                                            stream_name=base.name, start=copies_for(v, context.budget))
                  for i, v in enumerate(variants)}
        extend_curves(curves, context, opp_copies)
        for i, label in enumerate(labels):
            est = curve_price(curves[f"variant {i}"], context.budget, rng=_pairing_rng(context))
            row = _row(str(label), base_points, None, est["fair"], est["lo"], est["hi"], limits, "copies", est["note"])
            rows.append({"value": label, **{k: row[k] for k in PRICE_COLUMNS if k != "value"}})
            reps[label] = est["replicates"]
        return pd.DataFrame(rows, columns=PRICE_COLUMNS), reps

    from .matrix import matchup_matrix

    matrix = matchup_matrix(context.rs, ros, None, half_width=context.half_width, max_trials=context.max_trials,
                            seed=context.root, rounds=context.rounds, max_rounds=context.max_rounds,
                            states=context.states, overrides=context.overrides, options=context.options,
                            workers=context.workers, from_text=context.from_text, budget="none")
    cal, classes, twins = roster_calibration(matrix)
    cls = None
    if against is not None:
        cls = next(i for i, rep in enumerate(classes) if against in twins.get(rep, [rep]))
    curves = {f"variant {i}": CopyCurve(f"variant {i}", [base.name], list(classes), subject=v, stream_name=base.name,
                                        start=1) for i, v in enumerate(variants)}
    extend_curves(curves, context, {u: 1 for u in classes}, rounds_cap=1)
    for i, label in enumerate(labels):
        curve = curves[f"variant {i}"]
        if 1 not in curve.scores or not cal.ok:
            fair, boot = math.nan, np.full(1, np.nan)
            note = cal.note if not cal.ok else "could not fight the roster"
        else:
            s, v = curve.scores[1]
            fair, boot = cal.price_of(s, v, _pairing_rng(context), against=cls)
            note = cal.note
        lo, hi = _quantiles(boot)
        row = _row(str(label), base_points, None, fair, lo, hi, limits, "calibration", note)
        rows.append({"value": label, **{k: row[k] for k in PRICE_COLUMNS if k != "value"}})
        reps[label] = boot
    return pd.DataFrame(rows, columns=PRICE_COLUMNS), reps
