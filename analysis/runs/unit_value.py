"""What a unit adds to a list: its value in points, from the list fought with one of it removed and swapped.

For a list ``L`` (``P`` points) holding unit ``u`` (price ``p``), against the field of
every list of the run:

* ``S(L)``: the list's score (win + draw / 2, side-averaged, mean over the field);
* ``S(L-)``: one ``u`` removed, its points not spent (the list is ``p`` points poorer);
* ``S(L~)``: one ``u`` swapped for the same ``p`` points of the list's *other* units, spread
  over them in proportion to their points in the list. Whole units cannot split points,
  so, as expected fielding does for copies, the swap is a mixture of whole lists whose
  average composition is exactly that spread (:func:`proportional_swap`: systematic
  rounding, at most one list more than there are other units); its score is the
  weighted mean of theirs.

The other units' score per point is ``(S(L~) - S(L-)) / p``, and ``u``'s **value** is the
points of the other units that add as much as one ``u`` does:

    value = p * (S(L) - S(L-)) / (S(L~) - S(L-))

``value > p`` exactly when ``S(L) > S(L~)``: the list scores more with ``u`` than with its
points spent on the rest, so ``u`` is worth more than its price there. Its 95% interval
comes from redrawing the three scores within their Monte Carlo errors (independent cells).
A list holding no other unit has no swap (value NaN, said in ``note``); nor does a swap
the ruleset cannot field (too many models).

:func:`unit_ranking` ranks the units by their median value over the lists that hold
them: a unit whose value is surely above its price in every list is underpriced for list
play, surely below in every list overpriced.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sim.lists import ArmyList

from .jobs import ProgressCallback
from .list_checks import check_unit_values_arguments
from .lists import canonical_list, field_scores, list_scores
from .matrix import MatchupMatrix

__all__ = ["proportional_swap", "UnitValues", "unit_values", "unit_ranking", "VALUE_COLUMNS", "RANKING_COLUMNS"]

VALUE_COLUMNS = ["unit", "list", "count", "price", "value", "value_lo", "value_hi", "ratio", "score", "score_se",
                 "score_removed", "score_removed_se", "score_swapped", "score_swapped_se", "gain", "gain_se",
                 "per_point", "swapped_for", "note"]
RANKING_COLUMNS = ["unit", "price", "lists", "median_value", "min_value", "max_value", "median_ratio",
                   "above_price", "below_price", "verdict"]


def proportional_swap(counts: Mapping[str, int], unit: str, prices: Mapping[str, float],
                      order: Sequence[str]) -> list[tuple[float, dict[str, int]]]:
    """One ``unit`` of ``counts`` swapped for its price of the list's other units, as whole lists.

    The freed points go to the other units in proportion to their points in the list
    (``x_i = c_i * p / Q`` more of unit ``i``, ``Q`` the other units' points); fractional
    counts become a mixture of whole counts by systematic rounding (one uniform ``U`` for all
    units: unit ``i`` gets one more where ``U`` falls in its interval of length ``frac(x_i)``,
    the intervals laid end to end), so each unit's mean count is exactly ``c_i + x_i`` and the
    mean points exactly those of ``counts``.

    Returns
    -------
    list of (weight, counts)
        Weights sum to 1; empty when the list holds no other unit.
    """
    others = [u for u in order if u != unit and counts.get(u, 0) > 0]
    if not others:
        return []
    base = {u: int(counts.get(u, 0)) for u in order}
    base[unit] -= 1
    q = sum(base[u] * float(prices[u]) for u in others)
    x = {u: base[u] * float(prices[unit]) / q for u in others}
    whole = {u: math.floor(x[u] + 1e-9) for u in others}
    frac = {u: max(x[u] - whole[u], 0.0) for u in others}
    starts, s = {}, 0.0
    for u in others:
        starts[u] = s
        s += frac[u]
    cuts = sorted({0.0, 1.0} | {(starts[u]) % 1.0 for u in others} | {(starts[u] + frac[u]) % 1.0 for u in others})
    mix: dict[tuple[tuple[str, int], ...], float] = {}
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if hi - lo < 1e-12:
            continue
        mid = (lo + hi) / 2
        out = dict(base)
        for u in others:
            extra = math.floor(starts[u] + frac[u] - mid) - math.floor(starts[u] - mid)  # U + k in [start, end)
            out[u] += whole[u] + extra
        key = tuple((u, out[u]) for u in order if out[u] > 0)
        mix[key] = mix.get(key, 0.0) + (hi - lo)
    return [(w, dict(k)) for k, w in mix.items()]


@dataclass
class UnitValues:
    """``values`` (one row per unit and list, :data:`VALUE_COLUMNS`), ``ranking`` (one per unit) and the
    variant lists fought (``variants``: name -> composition text, ``scores``: their field scores)."""

    values: pd.DataFrame
    ranking: pd.DataFrame
    variants: dict[str, str] = field(default_factory=dict)
    scores: pd.DataFrame | None = None
    resumed: int = 0


def unit_values(matrix: MatchupMatrix, *, progress: ProgressCallback | None = None, draws: int = 4000,
                seed: int = 0, half_width: float | None = None, max_trials: int | None = None) -> UnitValues:
    """Every unit's value in every list of a list matrix (:func:`analysis.runs.lists.list_matrix`).

    The variants (each list with one unit removed, and its swaps) are fought against every list of
    the matrix, both roles, at the matrix's precision (or ``half_width`` / ``max_trials``), on
    streams named by their compositions.

    Parameters
    ----------
    matrix : MatchupMatrix
        A list matrix (:func:`analysis.runs.lists.list_matrix`).
    progress : callable, optional
        ``progress(cells_done, cells_total)`` while the variants fight.
    draws : int
        Redraws of the three scores behind each value's 95% interval
        (1 .. :data:`analysis.runs.list_checks.MAX_DRAWS`).
    seed : int
        Seed of those redraws.
    half_width, max_trials : float or None, int or None
        The variants' cell precision (default: the matrix's).

    Returns
    -------
    UnitValues
    """
    check_unit_values_arguments(matrix, progress=progress, draws=draws, seed=seed, half_width=half_width,
                                max_trials=max_trials)
    ctx = matrix.context
    ros = ctx.roster
    order = ros.names
    prices = {u: float(ros.unit(u).points) if ros.unit(u).points is not None else float("nan") for u in order}
    base = list_scores(matrix).set_index("list")
    plans: list[dict[str, Any]] = []
    variants: dict[str, ArmyList] = {}

    def variant(counts: Mapping[str, int]) -> str:
        lst = canonical_list(counts, order)
        variants.setdefault(lst.name, lst)
        return lst.name

    for name in matrix.units:
        lst = ros.army_list(name)
        counts = lst.counts
        for u, c in lst.units:
            row: dict[str, Any] = {"unit": u, "list": name, "count": c, "price": prices[u], "removed": None,
                                   "swap": [], "note": ""}
            rest = {**counts, u: c - 1}
            if sum(rest.values()) > 0:
                row["removed"] = variant(rest)
            swap = proportional_swap(counts, u, prices, order)
            if not swap:
                row["note"] = "the list holds no other unit to swap it for"
            row["swap"] = [(w, variant(k)) for w, k in swap]
            plans.append(row)
    fs = field_scores(ctx, list(variants.values()), {n: 1.0 for n in matrix.units}, progress,
                      half_width=half_width, max_trials=max_trials)
    sc = fs.table.set_index("name")
    rng = np.random.default_rng(seed)
    rows = []
    for p in plans:
        s, s_se = float(base.loc[p["list"], "score"]), float(base.loc[p["list"], "score_se"])
        out = {k: p[k] for k in ("unit", "list", "count", "price")}
        out.update(score=s, score_se=s_se, note=p["note"])
        rem = p["removed"]
        sr, sr_se = (float(sc.loc[rem, "score"]), float(sc.loc[rem, "score_se"])) if rem else (math.nan, math.nan)
        if p["swap"]:
            ws = [w for w, _ in p["swap"]]
            vals = [float(sc.loc[n, "score"]) for _, n in p["swap"]]
            ses = [float(sc.loc[n, "score_se"]) for _, n in p["swap"]]
            sw = float(np.dot(ws, vals))
            sw_se = float(math.sqrt(sum((w * e) ** 2 for w, e in zip(ws, ses))))
            notes = [sc.loc[n, "note"] for _, n in p["swap"] if sc.loc[n, "note"]]
            if notes:
                out["note"] = f"a swap cannot be fielded: {notes[0]}"
            out["swapped_for"] = "; ".join(f"{w:.3g} x [{n}]" for w, n in p["swap"])
        else:
            sw, sw_se = math.nan, math.nan
            out["swapped_for"] = ""
        if rem and not math.isfinite(sr) and not out["note"]:
            out["note"] = f"the list without it cannot be fielded: {sc.loc[rem, 'note']}"
        out.update(score_removed=sr, score_removed_se=sr_se, score_swapped=sw, score_swapped_se=sw_se)
        out["gain"], out["gain_se"] = s - sw, math.hypot(s_se, sw_se)
        price = p["price"]
        out["per_point"] = (sw - sr) / price if price > 0 else math.nan
        out["value"], out["value_lo"], out["value_hi"] = _value(price, (s, s_se), (sr, sr_se), (sw, sw_se), rng, draws)
        out["ratio"] = out["value"] / price if price > 0 else math.nan
        rows.append(out)
    values = pd.DataFrame(rows).reindex(columns=VALUE_COLUMNS)
    return UnitValues(values, unit_ranking(values), {n: v.units_text() for n, v in variants.items()}, fs.table,
                      fs.resumed)


def _value(price: float, s: tuple[float, float], sr: tuple[float, float], sw: tuple[float, float],
           rng: np.random.Generator, draws: int) -> tuple[float, float, float]:
    """``price * (S - S-) / (S~ - S-)`` and its 95% interval (scores redrawn within their errors; a redraw whose
    denominator is not positive, the other units adding nothing, sends the bound to infinity)."""
    if not all(math.isfinite(x) for x in (*s, *sr, *sw)) or not price > 0:
        return math.nan, math.nan, math.nan
    den = sw[0] - sr[0]
    value = price * (s[0] - sr[0]) / den if den > 0 else (math.inf if s[0] > sw[0] else -math.inf)
    a = rng.normal(s[0], s[1], draws)
    b = rng.normal(sr[0], sr[1], draws)
    c = rng.normal(sw[0], sw[1], draws)
    d = c - b
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(d > 0, price * (a - b) / d, np.where(a > c, np.inf, -np.inf))
    lo, hi = np.quantile(v, [0.025, 0.975], method="inverted_cdf")
    return float(value), float(lo), float(hi)


def unit_ranking(values: pd.DataFrame) -> pd.DataFrame:
    """One row per unit, by median value over the lists that hold it (highest first).

    ``above_price`` / ``below_price``: the lists where the value's whole interval lies above / below the
    price; ``verdict``: ``underpriced`` when that holds in every list that gives it a value,
    ``overpriced`` likewise, else ``as priced or mixed`` (``no value`` without one).
    """
    rows = []
    for u, g in values.groupby("unit", sort=False):
        ok = g[np.isfinite(g["value"].to_numpy(float))]
        price = float(g["price"].iloc[0])
        above = int((ok["value_lo"] > ok["price"]).sum())
        below = int((ok["value_hi"] < ok["price"]).sum())
        n = len(ok)
        verdict = ("no value" if n == 0 else "underpriced" if above == n else "overpriced" if below == n
                   else "as priced or mixed")
        med = float(ok["value"].median()) if n else math.nan
        rows.append({"unit": u, "price": price, "lists": n, "median_value": med,
                     "min_value": float(ok["value"].min()) if n else math.nan,
                     "max_value": float(ok["value"].max()) if n else math.nan,
                     "median_ratio": med / price if n and price > 0 else math.nan,
                     "above_price": above, "below_price": below, "verdict": verdict})
    out = pd.DataFrame(rows, columns=RANKING_COLUMNS)
    return out.sort_values(["median_ratio", "unit"], ascending=[False, True], kind="mergesort",
                           na_position="last").reset_index(drop=True)

