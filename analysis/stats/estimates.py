"""Estimates with their uncertainty: Wilson intervals for proportions, standard errors for means.

Everything here reads integer tallies (:class:`sim.tally.Tally`) or results
(:class:`sim.FightResult`) and returns plain numbers or tidy pandas frames; no
simulation happens here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

import sim
from sim.stats import Z95, wilson_interval
from sim.tally import Moments, Tally

__all__ = [
    "Estimate",
    "wilson",
    "wilson_half_width",
    "proportion",
    "mean_estimate",
    "result_frame",
    "tally_row",
    "mix_rows",
    "exact_row",
    "sample_sizes",
    "fought_rows",
    "is_exact",
    "row_trials",
    "score_variance",
    "CSV_FLOAT_FORMAT",
    "ORDER_DECIMALS",
    "order_key",
    "portable_float",
]

#: Fixed float formatting of every CSV we write (same seed -> identical bytes).
CSV_FLOAT_FORMAT = "%.6f"

#: Decimals of a sort key (:func:`order_key`). Model fits (Bradley-Terry, Nash weights, fair prices) run on
#: BLAS and optimisers whose last bits differ between machines; values equal to this many decimals keep their
#: table order on every machine instead of swapping.
ORDER_DECIMALS = 9


def order_key(values: Any) -> Any:
    """``values`` (a Series or an array) rounded to :data:`ORDER_DECIMALS`, to sort by (see there)."""
    return np.round(values, ORDER_DECIMALS)


def portable_float(x: float, digits: int = 10) -> float:
    """``x`` to ``digits`` significant digits: a model fit's last bits, which differ between machines, dropped
    (the JSON files print floats in full)."""
    x = float(x)
    return float(f"{x:.{digits}g}") if math.isfinite(x) else x


#: ``wilson(k, n)``: the Wilson 95% score interval (re-export of :func:`sim.stats.wilson_interval`).
wilson = wilson_interval


@dataclass(frozen=True)
class Estimate:
    """A value with its standard error, 95% interval and sample size.

    Attributes
    ----------
    value : float
    se : float
        Standard error (for proportions, ``sqrt(p (1 - p) / n)``).
    lo, hi : float
        95% interval (Wilson for proportions, normal for means).
    n : int
        Trials behind the estimate.
    """

    value: float
    se: float
    lo: float
    hi: float
    n: int

    @property
    def half_width(self) -> float:
        """Half the width of the 95% interval."""
        return (self.hi - self.lo) / 2


def wilson_half_width(successes: int, n: int) -> float:
    """Half-width of the Wilson 95% interval of ``successes / n`` (``inf`` when ``n == 0``)."""
    if n <= 0:
        return math.inf
    lo, hi = wilson_interval(int(successes), int(n))
    return (hi - lo) / 2


def proportion(successes: int, n: int) -> Estimate:
    """A proportion with its binomial standard error and Wilson 95% interval."""
    if n <= 0:
        nan = float("nan")
        return Estimate(nan, nan, nan, nan, 0)
    p = successes / n
    lo, hi = wilson_interval(int(successes), int(n))
    return Estimate(p, math.sqrt(p * (1 - p) / n), lo, hi, int(n))


def mean_estimate(moments: Moments, n: int) -> Estimate:
    """The mean of a tallied quantity, its standard error and a normal 95% interval."""
    mean, se = moments.mean_se(n)
    if not math.isfinite(se):
        return Estimate(mean, se, float("nan"), float("nan"), int(n))
    return Estimate(mean, se, mean - Z95 * se, mean + Z95 * se, int(n))


def tally_row(tally: Tally) -> dict[str, float]:
    """Headline numbers of one matchup's tally as a flat row (the matrix's columns).

    Returns
    -------
    dict
        ``trials``, ``p_attacker``/``p_defender``/``p_draw`` with ``_se``, ``_lo``,
        ``_hi``; ``damage_to_attacker``/``damage_to_defender``/``mean_rounds``
        with ``_se``; ``capped`` (share of fights stopped by ``max_rounds``);
        ``method`` ``"mc"``.
    """
    n = tally.trials
    row: dict[str, Any] = {"trials": n, "method": "mc"}
    for name, code in (("p_attacker", 1), ("p_defender", 2), ("p_draw", 0)):
        e = proportion(int(tally.wins[code]), n)
        row[name], row[f"{name}_se"], row[f"{name}_lo"], row[f"{name}_hi"] = e.value, e.se, e.lo, e.hi
    for name, m in (("damage_to_attacker", tally.damage_to_attacker),
                    ("damage_to_defender", tally.damage_to_defender), ("mean_rounds", tally.rounds)):
        e = mean_estimate(m, n)
        row[name], row[f"{name}_se"] = e.value, e.se
    row["capped"] = tally.capped / n if n else float("nan")
    return row


def exact_row(outcome: Any) -> dict[str, Any]:
    """The row of :func:`tally_row` for an exact cell (a :class:`sim.exact.ExactOutcome`).

    An exact cell sampled nothing: ``trials`` is 0 and ``method`` is ``"exact"``;
    its probabilities and means are the chain's own, every standard error is 0 and
    every interval has zero width (``lo == hi == value``). Consumers that weigh
    cells by their trials read :func:`sample_sizes` instead, where an exact cell
    counts as infinitely many fights (no Monte Carlo error), never as none.
    """
    from sim.exact import ExactOutcome

    win = outcome.win
    row: dict[str, Any] = {"trials": 0, "method": "exact"}
    for name, code in (("p_attacker", 1), ("p_defender", 2), ("p_draw", 0)):
        p = float(win[code])
        row[name], row[f"{name}_se"], row[f"{name}_lo"], row[f"{name}_hi"] = p, 0.0, p, p
    for name, dist in (("damage_to_attacker", outcome.damage_to_attacker),
                       ("damage_to_defender", outcome.damage_to_defender), ("mean_rounds", outcome.rounds)):
        row[name], row[f"{name}_se"] = ExactOutcome.mean(dist), 0.0
    row["capped"] = float(outcome.capped)
    return row


def is_exact(frame: pd.DataFrame) -> np.ndarray:
    """Per row of a long frame: an exact cell (``method == "exact"``; frames without the column have none)."""
    if "method" not in frame:
        return np.zeros(len(frame), bool)
    return (frame["method"].astype(str) == "exact").to_numpy()


def sample_sizes(frame: pd.DataFrame, default: float = np.nan) -> np.ndarray:
    """The fights behind each row of a long frame, as floats: ``trials``, and ``inf`` for an exact cell.

    Standard errors computed as ``variance / n`` are then 0 for an exact cell
    (no Monte Carlo error) and its information is unbounded, not absent.
    ``default`` is used when the frame has no ``trials`` column.
    """
    n = frame["trials"].to_numpy(float) if "trials" in frame else np.full(len(frame), float(default))
    return np.where(is_exact(frame), np.inf, n)


def row_trials(row: Any) -> float:
    """The fights behind one long-frame row (a Series or a mapping): ``trials``, ``inf`` for an exact cell."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    if str(get("method", "mc")) == "exact":
        return math.inf
    return float(get("trials", math.nan))


def score_variance(p_win: float, p_draw: float, n: float) -> float:
    """Variance of one cell's score estimate (win + draw / 2, per fight 1, 1/2 or 0) from ``n`` fights.

    ``(E[x^2] - E[x]^2) / n`` with Agresti and Coull's pseudo-fights added (two
    wins and two losses, ``z^2 / 2`` each): a cell that won all its fights is
    not certain, and a unit whose cells are all near 0 or 1 would otherwise get
    an interval of width zero (measured on mecha: Gustav's covered its exact
    score 58% of the time, 95% with them). ``n`` infinite (an exact cell) gives 0;
    ``n`` zero or missing gives NaN.
    """
    if n == math.inf:
        return 0.0
    if not n or not math.isfinite(n):
        return math.nan
    pseudo = Z95 * Z95 / 2
    m = n + 2 * pseudo
    win, draw = (p_win * n + pseudo) / m, p_draw * n / m
    s = win + draw / 2
    return max(win + draw / 4 - s * s, 0.0) / m


def fought_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a long frame that were answered: Monte Carlo cells with trials, and exact cells."""
    if "trials" not in frame:
        return frame
    return frame[(frame["trials"].fillna(0).to_numpy(float) > 0) | is_exact(frame)]


def mix_rows(rows: Sequence[Mapping[str, Any]], weights: Sequence[float]) -> dict[str, Any]:
    """The row of a mixture of cells (expected fielding): each quantity the weighted sum of the cells'.

    A side fielding ``k + f`` copies on average fights ``k + 1`` copies with
    probability ``f``, so a mixed cell's probabilities and means are exactly the
    weighted sums of its whole-copy cells' (independent streams). Standard errors
    combine as ``sqrt(sum w^2 se^2)``; a probability's 95% interval is Wilson's
    at the mixture's estimate with the effective number of fights
    ``n_eff = 1 / sum(w^2 / n)``, which is the cell's own interval when one cell
    has all the weight and stays inside [0, 1] at 0 and 1. ``trials`` is every
    fight behind the mixture, ``effective_trials`` is ``n_eff`` rounded (the
    ``trials`` a single cell of this precision would have: what later standard
    errors must use).

    Exact cells (``method == "exact"``, :func:`exact_row`) add no variance: a
    mixture of exact cells only is exact (``method`` ``"exact"``, errors 0,
    zero-width intervals, ``effective_trials`` 0 like its ``trials``); a mixture
    with Monte Carlo parts is Monte Carlo, its ``n_eff`` summed over those parts.

    Parameters
    ----------
    rows : sequence of mapping
        :func:`tally_row` or :func:`exact_row` rows of the whole-copy cells.
    weights : sequence of float
        Their weights (summing to 1).
    """
    w = [float(x) for x in weights]
    exact = [r.get("method") == "exact" for r in rows]
    n = [math.inf if e else float(r["trials"]) for r, e in zip(rows, exact)]
    out: dict[str, Any] = {"trials": int(sum(int(r["trials"]) for r in rows))}
    if not rows or any(x <= 0 for x in n):
        nan = float("nan")
        return ({**out, "effective_trials": 0, "method": "mc",
                 **{k: nan for k in rows[0] if k not in ("trials", "method")}} if rows else out)
    all_exact = all(exact)
    out["method"] = "exact" if all_exact else "mc"
    inv = sum(wi * wi / ni for wi, ni in zip(w, n) if math.isfinite(ni))
    n_eff = 1.0 / inv if inv > 0 else math.inf
    out["effective_trials"] = 0 if all_exact else int(round(n_eff))
    for name in ("p_attacker", "p_defender", "p_draw"):
        p = sum(wi * r[name] for wi, r in zip(w, rows))
        out[name] = p
        out[f"{name}_se"] = math.sqrt(sum(wi * wi * r[f"{name}_se"] ** 2 for wi, r in zip(w, rows)))
        out[f"{name}_lo"], out[f"{name}_hi"] = (p, p) if all_exact else wilson_interval(p * n_eff, n_eff)
    for name in ("damage_to_attacker", "damage_to_defender", "mean_rounds"):
        out[name] = sum(wi * r[name] for wi, r in zip(w, rows))
        out[f"{name}_se"] = math.sqrt(sum(wi * wi * r[f"{name}_se"] ** 2 for wi, r in zip(w, rows)))
    out["capped"] = sum(wi * r["capped"] for wi, r in zip(w, rows))
    return out


def result_frame(result: sim.FightResult) -> pd.DataFrame:
    """Every estimate of a fight as tidy rows.

    Parameters
    ----------
    result : sim.FightResult

    Returns
    -------
    pandas.DataFrame
        Columns ``quantity, side, value, se, lo, hi, n`` (an exact result: ``se`` 0,
        ``lo == hi == value``, ``n`` 0). Quantities: ``win``
        (sides attacker, defender, draw), ``damage_to`` (attacker, defender),
        ``rounds`` (side ``both``), ``capped``, ``category:<name>`` per side and
        ``extra:<name>`` (side ``both``). Proportions carry Wilson intervals,
        means normal intervals from their standard errors.

    Examples
    --------
    >>> import sim
    >>> from analysis.stats.estimates import result_frame
    >>> r = sim.fight("mecha", "AFS", "Nutrocker", trials=65_536, seed=1)
    >>> list(result_frame(r).columns)
    ['quantity', 'side', 'value', 'se', 'lo', 'hi', 'n']
    """
    if not isinstance(result, sim.FightResult):
        raise sim.MeleelabError(f"result: got {type(result).__name__}, expected a sim.FightResult (from sim.fight)")
    rows: list[dict[str, object]] = []

    def add(quantity: str, side: str, e: Estimate) -> None:
        rows.append({"quantity": quantity, "side": side, "value": e.value, "se": e.se, "lo": e.lo, "hi": e.hi, "n": e.n})

    if result.exact is not None:
        return _exact_frame(result, rows)
    t = result.tally
    n = t.trials

    for side, code in (("attacker", 1), ("defender", 2), ("draw", 0)):
        add("win", side, proportion(int(t.wins[code]), n))
    add("damage_to", "attacker", mean_estimate(t.damage_to_attacker, n))
    add("damage_to", "defender", mean_estimate(t.damage_to_defender, n))
    add("rounds", "both", mean_estimate(t.rounds, n))
    add("capped", "both", proportion(int(t.capped), n))
    for i, side in enumerate(("attacker", "defender")):
        for j, cat in enumerate(result.ruleset.outcome_categories):
            add(f"category:{cat}", side, proportion(int(t.categories[i, j]), n))
    for extra in result.ruleset.extras:
        m = t.extras[extra.name]
        if extra.kind == "proportion":
            add(f"extra:{extra.name}", "both", proportion(int(m.total), n))
        else:
            add(f"extra:{extra.name}", "both", mean_estimate(m, n))
    return pd.DataFrame(rows, columns=["quantity", "side", "value", "se", "lo", "hi", "n"])


def _exact_frame(result: sim.FightResult, rows: list[dict[str, object]]) -> pd.DataFrame:
    """An exact result's rows: the values themselves, standard error 0, intervals of zero width, n = 0 fights."""
    def add(quantity: str, side: str, value: float) -> None:
        rows.append({"quantity": quantity, "side": side, "value": value, "se": 0.0, "lo": value, "hi": value, "n": 0})

    for side, p in (("attacker", result.win["attacker"]), ("defender", result.win["defender"]),
                    ("draw", result.win["draw"])):
        add("win", side, p)
    for side in ("attacker", "defender"):
        add("damage_to", side, result.damage(side)[0])
    add("rounds", "both", result.mean_rounds[0])
    add("capped", "both", result.capped_share)
    for side, probs in result.outcomes.items():
        for cat, p in probs.items():
            add(f"category:{cat}", side, p)
    for extra in result.ruleset.extras:
        add(f"extra:{extra.name}", "both", result.extra(extra.name)["mean"])
    return pd.DataFrame(rows, columns=["quantity", "side", "value", "se", "lo", "hi", "n"])
