"""Balance metrics from a matchup matrix: rankings, strengths, equilibrium, dominance, cycles, fair points.

Every function accepts a :class:`analysis.runs.matrix.MatchupMatrix` or its ``long``
frame alone (one row per attacker-defender pair with at least ``attacker``,
``defender``, ``p_attacker``, ``p_defender``, ``p_draw``; ``trials`` gives the
standard errors, ``points_attacker``/``points_defender`` the points), so the
metrics are tested on hand-built matrices with known answers.

Conventions
-----------
* A fight's *score* for a unit is 1 for a win, 1/2 for a draw, 0 for a loss.
* *Side-averaged* numbers average the unit's two roles against an opponent
  (as attacker against it, and as defender against it), so charging advantage
  cancels out. The *payoff* is side-averaged P(win) - P(loss).
* Mirror matches are kept in the matrix but left out of mean win rates.
* A difference "counts" (dominance, cycles) when it exceeds a multiple of the
  Monte Carlo standard error (1.96, Bonferroni-corrected where many pairs are
  compared; point estimates when no ``trials`` column gives errors).

This module assembles every table into a :class:`BalanceSummary`; the metrics
come from :mod:`.strength`, :mod:`.equilibrium`, :mod:`.dominance` and
:mod:`.fair_prices`. Nothing here fights: the copy curves behind fair prices
are completed by :func:`analysis.runs.balance.balance_summary`, which then
calls :func:`summarise`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sim.errors import InputError

from .dominance import dominated_units, intransitive_triples
from .equilibrium import complete_block, nash_equilibrium, nash_ranges, nash_spread
from .estimates import order_key, portable_float
from .fair_prices import fair_prices, points_efficiency
from .pooling import collapse, expand_pairs, expand_units, twin_classes
from .strength import _points, _units, bradley_terry, long_frame, mean_win_rate, payoff_matrix, side_averaged
from .expected import DEFAULT_TOLERANCE, SCORE_DEFINITION
from .verdicts import Advice, PRICE_VERDICTS, per_unit_advice, rank_by_significance, role_decided

__all__ = ["BalanceSummary", "summarise"]


# ---------------------------------------------------------------- summary
@dataclass(frozen=True)
class BalanceSummary:
    """Every balance table for one matrix.

    Attributes
    ----------
    ruleset : str
    units : list of str
    rankings : DataFrame
        Per unit: mean win/draw/loss/score with intervals, Bradley-Terry strength with
        interval and Elo, Nash weight and support share, rank by strength (ties share a rank).
    side_averaged, payoff, bradley_terry, nash, dominated, cycles, fair_points, efficiency : DataFrame
    attacker_advantage : dict
        Logit advantage of attacking, its s.e. and the BT dispersion.
    misfit : dict
        How far the strength model is from the cells (see :func:`analysis.stats.strength.bt_misfit`).
    model : str
        The statistical conventions and the fair-price model, stated in words.
    notes : list of str
    budget : float or None
        Equal-points budget of the matrix (None: one unit a side).
    twins : dict
        Representative -> units pooled with it (identical profile and copies).
    """

    ruleset: str
    units: list[str]
    rankings: pd.DataFrame
    side_averaged: pd.DataFrame
    payoff: pd.DataFrame
    bradley_terry: pd.DataFrame
    nash: pd.DataFrame
    dominated: pd.DataFrame
    cycles: pd.DataFrame
    fair_points: pd.DataFrame
    efficiency: pd.DataFrame
    attacker_advantage: dict[str, float]
    model: str
    notes: list[str] = field(default_factory=list)
    misfit: dict[str, Any] = field(default_factory=dict)
    budget: float | None = None
    twins: dict[str, list[str]] = field(default_factory=dict)
    #: Every unit's verdict and advice from the one solution (verdicts.csv: :data:`analysis.stats.verdicts.ADVICE_COLUMNS`).
    verdicts: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Pairs whose cells go to the attacker at least 90% both ways (decided by who charges).
    role_decided: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: The one answer: the fewest price changes that balance the roster (:class:`analysis.stats.verdicts.Advice`).
    advice: Advice | None = None

    def tables(self) -> dict[str, pd.DataFrame]:
        """CSV name -> frame for every table."""
        out = {"rankings": self.rankings, "side_averaged": self.side_averaged,
               "payoff": self.payoff.rename_axis("unit").reset_index(), "nash": self.nash,
               "dominated": self.dominated, "cycles": self.cycles, "fair_points": self.fair_points,
               "points_efficiency": self.efficiency, "verdicts": self.verdicts,
               "role_decided": self.role_decided}
        worst = self.misfit.get("worst")
        if isinstance(worst, pd.DataFrame):
            out["model_misfit"] = worst
        curves = self.fair_points.attrs.get("curves")
        if curves:
            from .copy_curves import curves_frame
            from .expected import ExpectedCurve, expected_curves_frame

            expected = all(isinstance(c, ExpectedCurve) for c in curves.values())
            out["copy_curves"] = expected_curves_frame(curves) if expected else curves_frame(curves)
        return out

    def model_text(self) -> str:
        return "\n".join([self.model] + self.notes)


class _Collapsed:
    """A matrix-like view (``long``, ``units``) of the twin-collapsed long frame."""

    def __init__(self, long: pd.DataFrame, units: list[str]) -> None:
        self.long = long
        self.units = units


def _rank_with_ties(values: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """Competition ranks by value (descending); values equal to 1e-9 share a rank."""
    order = np.argsort(-order_key(values), kind="mergesort")
    ranks = np.empty(len(values), int)
    for pos, i in enumerate(order):
        if pos and abs(values[i] - values[order[pos - 1]]) <= 1e-9:
            ranks[i] = ranks[order[pos - 1]]
        else:
            ranks[i] = pos + 1
    return ranks


def _rates_over_every_opponent(sa: pd.DataFrame, classes: dict[str, list[str]], rates: pd.DataFrame) -> pd.DataFrame:
    """Win, draw and loss rates against every other unit of the roster (``opponents`` = units - 1).

    The balance tables run on twin classes; here each other class counts as many
    times as it has units, and a unit's own twins count through the class's
    mirror cell (side-averaged: a win as often as a loss), so a roster of eight
    units gives every unit seven opponents, twins or not.
    """
    if all(len(m) == 1 for m in classes.values()):
        return rates
    by = sa.set_index(["unit", "opponent"])
    n = sum(len(m) for m in classes.values())
    out = rates.set_index("unit")
    for c, members in classes.items():
        parts = [(len(d) - (1 if d_rep == c else 0), by.loc[(c, d_rep)]) for d_rep, d in classes.items()
                 if (c, d_rep) in by.index]
        parts = [(w, row) for w, row in parts if w > 0]
        total = sum(w for w, _ in parts)
        if not total:
            continue
        win = sum(w * row.p_win for w, row in parts) / total
        se = math.sqrt(sum((w * row.p_win_se) ** 2 for w, row in parts)) / total
        for u in members:
            out.loc[u, ["opponents", "win_rate", "win_rate_se", "draw_rate", "loss_rate"]] = [
                n - 1, win, se, sum(w * row.p_draw for w, row in parts) / total,
                sum(w * row.p_loss for w, row in parts) / total]
            out.loc[u, "win_rate_lo"], out.loc[u, "win_rate_hi"] = max(0.0, win - 1.96 * se), min(1.0, win + 1.96 * se)
    out = out.reset_index()
    out["opponents"] = out["opponents"].astype(int)
    return out


def summarise(matrix: Any, *, seed: int = 0, curves: Any = None, fair: pd.DataFrame | None = None,
              advice: Advice | None = None, tolerance: float = DEFAULT_TOLERANCE) -> BalanceSummary:
    """Compute every balance metric for ``matrix`` (a MatchupMatrix or its long frame).

    Twins (units with the same profile that field the same copies) are pooled
    first (:mod:`.pooling`), so they get identical rows, prices and flags, and
    share one Nash weight equally. With a budget and ``curves`` (the copy curves
    completed by :func:`analysis.runs.balance.balance_summary`) the fair prices
    come from equal-points fights at neighbouring copy counts; otherwise from the
    calibration model; ``fair`` gives the fair-price table instead (expected
    fielding, :mod:`.expected`). ``advice`` is the one answer
    (:func:`analysis.runs.advice.advise`: the fewest price changes, found on the
    fights); without it each unit outside its interval is priced alone (a model
    whose fair prices do not move with the others'). Every unit's score, in every
    table, is the advice's (:data:`analysis.stats.expected.SCORE_DEFINITION`).
    Nothing is fought here.
    """
    frame = long_frame(matrix)
    units = _units(matrix, frame)
    if len(units) < 2:
        raise InputError(f"balance: needs at least two units that fought (got {len(units)}: {', '.join(units)})")
    if isinstance(matrix, pd.DataFrame):
        ruleset = str(matrix.attrs.get("ruleset", ""))
    else:
        ruleset = getattr(matrix.ruleset, "id", None) or str(matrix.ruleset)
    classes = twin_classes(matrix, units)
    if len(classes) < 2:
        raise InputError(f"balance: {', '.join(units)} fight exactly alike (same profile and copies): "
                         "a balance needs at least two units that differ")
    cm = _Collapsed(collapse(frame, classes), list(classes))
    sa = side_averaged(cm)
    pay = payoff_matrix(cm, sa=sa)
    pay_se = payoff_matrix(cm, "payoff_se", sa=sa)
    rates = mean_win_rate(cm, sa=sa)
    bt, info = bradley_terry(cm, full=True)
    weights = nash_equilibrium(pay)
    ranges = nash_ranges(pay).set_index("unit")
    spread = nash_spread(pay, pay_se, seed=seed).set_index("unit")
    reps = list(classes)
    nash_rows = []
    for r in reps:
        w, n = weights.get(r, np.nan), len(classes[r])  # twins share their class's weight equally
        for m in classes[r]:
            nash_rows.append({"unit": m, "weight": w / n if w == w else np.nan,
                              "weight_min": ranges.loc[r, "weight_min"] / n, "weight_max": ranges.loc[r, "weight_max"] / n,
                              "weight_lo": spread.loc[r, "weight_lo"] / n, "weight_hi": spread.loc[r, "weight_hi"] / n,
                              "support_share": spread.loc[r, "support_share"]})
    nash = pd.DataFrame(nash_rows, columns=["unit", "weight", "weight_min", "weight_max", "weight_lo", "weight_hi",
                                            "support_share"])
    if fair is None:
        fair = fair_prices(matrix, seed=seed, bt=(bt, info), classes=classes, curves=curves)
    dominated = dominated_units(cm, sa=sa)
    if len(dominated):
        dominated = expand_units(dominated, classes)
        dominated["dominated_by"] = ["; ".join(m for d in str(by).split("; ") for m in classes.get(d, [d]))
                                     for by in dominated["dominated_by"]]
    cycles = intransitive_triples(cm, sa=sa)
    points = _points(matrix)
    if advice is None:
        listed = {u: float(points.get(u, np.nan)) if points is not None else np.nan for u in units}
        advice = per_unit_advice(frame, classes, units, listed, fair, tolerance=tolerance,
                                 budget=getattr(matrix, "budget", None))
    one = advice.table.set_index("unit")
    rates_x = _rates_over_every_opponent(sa, classes, expand_units(rates, classes))
    for col in ("score", "score_se", "score_lo", "score_hi"):  # one score per unit, the advice's, in every table
        rates_x[col] = rates_x["unit"].map(one[col])
    rates_x = rates_x.drop(columns=[c for c in ("payoff",) if c in rates_x])
    bt_x = expand_units(bt, classes)
    eff = points_efficiency(rates_x, fair, points)
    rk = rates_x.merge(bt_x.rename(columns={"lo": "strength_lo", "hi": "strength_hi", "se": "strength_se"}), on="unit")
    rk["nash_weight"] = rk["unit"].map(dict(zip(nash["unit"], nash["weight"])))
    # ranked by the one score, units whose intervals overlap (or equal exact scores) sharing a rank; the
    # Bradley-Terry strength is a summary shown beside it
    rk = rk.sort_values(["score", "strength"], ascending=False, kind="mergesort", key=order_key).reset_index(drop=True)
    if rk["score_lo"].notna().all():
        rk.insert(0, "rank", rank_by_significance(rk["score"], rk["score_lo"], rk["score_hi"]).to_numpy(int))
    else:
        rk.insert(0, "rank", _rank_with_ties(rk["score"].to_numpy(float), rk["score"].to_numpy(float)))
    rk["verdict"] = rk["unit"].map(one["verdict"])
    decided = role_decided(frame, units)
    counts = {u: int(((decided["unit_a"] == u) | (decided["unit_b"] == u)).sum()) for u in units}
    rk["role_decided"] = rk["unit"].map(counts)
    sa_x = expand_pairs(sa, classes)
    pay_x = payoff_matrix(_Collapsed(frame, units), sa=sa_x) if any(len(m) > 1 for m in classes.values()) else pay
    verdicts = advice.table.copy()
    attrs = dict(fair.attrs)
    fair = fair.copy()
    # the fair price alone (every other price as listed) beside the one answer: its verdict, advised price, score
    for col in ("score", "score_lo", "score_hi"):
        if col in fair or advice.method == "joint":
            fair[col] = fair["unit"].map(one[col])
    fair["verdict"] = fair["unit"].map(one["verdict"])
    fair["flagged"] = fair["verdict"].isin(PRICE_VERDICTS)
    fair["advised_points"] = fair["unit"].map(one["advised_points"])
    fair["role_decided"] = fair["unit"].map(counts)
    fair.attrs.update(attrs)
    misfit = info.get("misfit", {})
    notes = [f"Nash value {abs(weights.attrs.get('value', float('nan'))):.2e} (0 for a symmetric game); "
             "support_share: share of 100 payoff tables redrawn within Monte Carlo error whose equilibrium "
             "gives the unit weight.",
             "Bradley-Terry intervals measure Monte Carlo noise only. Model misfit: "
             f"{misfit.get('rms_pp', float('nan')):.2f} pp RMS between model and cells against "
             f"{misfit.get('noise_rms_pp', float('nan')):.2f} pp of noise"
             + (f" ({misfit['warning']})" if misfit.get("warning") else " (within the noise)") + ".",
             f"Fair prices: {fair.attrs.get('note', '')}."]
    twins = {r: m for r, m in classes.items() if len(m) > 1}
    if twins:
        notes.append("Twins pooled (same profile and copies, identical answers): "
                     + "; ".join(", ".join(m) for m in twins.values()) + ".")
    left_out = [u for u in reps if u not in complete_block(pay).index]
    if left_out:
        notes.append("Left out of the equilibrium and dominance (some of their matchups were not fought): "
                     + ", ".join(left_out) + ".")
    budget = getattr(matrix, "budget", None)
    if budget is None:
        fielding = "One unit a side (no budget)."
    elif getattr(matrix, "fielding", "whole") == "expected":
        fielding = (f"Equal points, expected fielding: a unit costing p fields {budget:g} / p copies on average "
                    f"(k + 1 copies in a fraction f of its fights when {budget:g} / p = k + f), so every side puts "
                    f"{budget:g} points on the table on average.")
    else:
        fielding = f"Equal points: each side fields floor({budget:g} / points) copies of its unit."
    model = (f"{fielding}\n{SCORE_DEFINITION}\nConventions: side-averaged = the mean of the unit's attacker and "
             "defender cells against an opponent; payoff = side-averaged P(win) - P(loss); the win, draw and "
             "loss rates are against the other units (mirror matches excluded); dominance needs no opponent where the dominator is worse by 1.96 s.e. "
             "(an exact tie is not worse) and one where it is better by a Bonferroni-corrected margin; cycle "
             "edges are Bonferroni-corrected over pairs.\n"
             + " ".join(str(fair.attrs.get(k, "")) for k in ("definition", "model", "intervals") if fair.attrs.get(k)))
    adv = {k: portable_float(info[k]) for k in ("attacker_advantage", "attacker_advantage_se", "dispersion")}
    return BalanceSummary(ruleset, units, rk, sa_x, pay_x, bt_x, nash, dominated, cycles, fair, eff, adv, model,
                          notes, misfit, budget, twins, verdicts, decided, advice)
