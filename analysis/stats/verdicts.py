"""One verdict per unit, reconciled across its price, its rank, dominance and the equilibrium.

The balance tables answer different questions (is the price right? who is
stronger on average? is some unit always at least as good? which mix can no
opponent exploit?), so read alone they can seem to disagree: a unit dominated
by another yet "underpriced", a strong unit that no equilibrium uses. A
designer needs one sentence per unit that says what to do and why, so
:func:`unit_verdicts` settles each unit in this order:

1. a unit that **cannot be harmed** (it never takes damage) or **cannot harm**
   (it never deals any) is said in plain words: points cannot fix what the rules
   make certain;
2. a unit **dominated** by another at its price is told to change its role, not
   its cost, unless it is also overpriced (then a lower cost may cure both) or
   its dominator is underpriced (then that unit's price comes first);
3. otherwise the **price** verdict (over- or underpriced beyond the tolerance,
   with the fair price, or fair);
4. a fairly priced unit that **no equilibrium uses** (its Nash weight is 0 in
   every equilibrium) is said to be beaten by a mix of others: worth its points
   on average, but never the best pick.

It also counts the cells whose result is **decided by who charges** (the
attacker wins at least 90% both ways): a side-averaged 50% there says nothing
about the units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .estimates import fought_rows

__all__ = ["unit_verdicts", "role_decided", "harmless_or_invulnerable", "rank_by_significance", "ROLE_DECIDED",
           "VERDICT_COLUMNS"]

#: P(attacker wins) in both directions at or above which a pair is decided by who charges.
ROLE_DECIDED = 0.9

VERDICT_COLUMNS = ["unit", "verdict", "advice", "reason"]


def role_decided(long: pd.DataFrame, units: list[str], threshold: float = ROLE_DECIDED) -> pd.DataFrame:
    """Pairs whose cells go to the attacker at least ``threshold`` both ways: ``unit_a, unit_b, p_ab, p_ba``."""
    by = long.set_index(["attacker", "defender"])["p_attacker"]
    rows = []
    for i, a in enumerate(units):
        for b in units[i + 1:]:
            pab, pba = by.get((a, b), math.nan), by.get((b, a), math.nan)
            if pab >= threshold and pba >= threshold:
                rows.append({"unit_a": a, "unit_b": b, "p_ab": float(pab), "p_ba": float(pba)})
    return pd.DataFrame(rows, columns=["unit_a", "unit_b", "p_ab", "p_ba"])


def harmless_or_invulnerable(long: pd.DataFrame, units: list[str]) -> dict[str, str]:
    """Units that take no damage in any fight (``"invulnerable"``) or deal none (``"harmless"``)."""
    out: dict[str, str] = {}
    if not {"damage_to_attacker", "damage_to_defender"} <= set(long.columns):
        return out  # a frame without damage (hand-built tables) says nothing about harm
    f = fought_rows(long)
    for u in units:
        taken = pd.concat([f.loc[f["attacker"] == u, "damage_to_attacker"], f.loc[f["defender"] == u,
                                                                                  "damage_to_defender"]])
        dealt = pd.concat([f.loc[f["attacker"] == u, "damage_to_defender"], f.loc[f["defender"] == u,
                                                                                 "damage_to_attacker"]])
        others = ((f["attacker"] == u) != (f["defender"] == u))  # cells against another unit
        if not others.any():
            continue
        if len(taken) and float(taken.abs().max()) == 0.0:
            out[u] = "invulnerable"
        elif len(dealt) and float(dealt.abs().max()) == 0.0:
            out[u] = "harmless"
    return out


def rank_by_significance(values: pd.Series, lo: pd.Series, hi: pd.Series) -> pd.Series:
    """Competition ranks where a unit's rank is 1 + the number of units surely better (their interval lies above).

    Units whose intervals overlap therefore share a rank (shown ``=3``): two units
    with the same roll distributions never get different places by noise.
    """
    v, low, high = values.to_numpy(float), lo.to_numpy(float), hi.to_numpy(float)
    ranks = []
    for i in range(len(v)):
        surely_better = sum(1 for j in range(len(v)) if j != i and low[j] > high[i])
        ranks.append(1 + surely_better)
    return pd.Series(ranks, index=values.index)


def _fmt(p: float) -> str:
    return f"{p:,.0f}" if math.isfinite(p) else "?"


#: An overpriced unit with at least this weight in the equilibrium mix is a counter (its verdict says both).
COUNTER_WEIGHT = 0.05

def unit_verdicts(units: list[str], fair: pd.DataFrame, dominated: pd.DataFrame, nash: pd.DataFrame,
                  long: pd.DataFrame, ranks: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One verdict per unit: ``verdict`` (a short word), ``advice`` (what to do) and ``reason`` (why).

    Parameters
    ----------
    units : list of str
    fair : DataFrame
        The fair-price table (``unit, points, fair_points, verdict``; optionally ``fieldable``,
        ``nearest_price``, ``score``).
    dominated : DataFrame
        ``unit, dominated_by``.
    nash : DataFrame
        ``unit, weight`` and optionally ``weight_max`` (the most any equilibrium gives it).
    long : DataFrame
        The matrix's long frame (damage columns, for units that cannot be harmed or cannot harm).
    ranks : mapping, optional
        Unit -> its rank label (for the reason).
    """
    fp = fair.set_index("unit") if len(fair) else pd.DataFrame()
    dom = dict(zip(dominated["unit"], dominated["dominated_by"])) if len(dominated) else {}
    nmax = nash.set_index("unit")["weight_max" if "weight_max" in nash else "weight"] if len(nash) else pd.Series()
    weights = pd.to_numeric(nash.set_index("unit")["weight"], errors="coerce").fillna(0) if len(nash) else pd.Series()
    special = harmless_or_invulnerable(long, units)
    rows = []
    for u in units:
        row = fp.loc[u] if u in fp.index else None
        points = float(row["points"]) if row is not None else math.nan
        fair_p = float(row["fair_points"]) if row is not None else math.nan
        price_verdict = str(row["verdict"]) if row is not None and isinstance(row.get("verdict"), str) else ""
        fieldable = bool(row.get("fieldable", True)) if row is not None else True
        nearest = float(row.get("nearest_price", math.nan)) if row is not None else math.nan
        rank = f" (rank {ranks[u]})" if ranks and u in ranks else ""
        if u in special:
            what = special[u]
            text = ("cannot be harmed: no fight ever damages it" if what == "invulnerable"
                    else "cannot harm: it never damages an opponent")
            rows.append({"unit": u, "verdict": what, "reason": text + rank,
                         "advice": "change its profile: points cannot fix what the rules make certain"})
            continue
        if u in dom:
            by = str(dom[u]).split("; ")[0]
            by_verdict = str(fp.loc[by, "verdict"]) if by in fp.index else ""
            if by in special and price_verdict != "overpriced":
                # its dominator is out of reach of points: saying "raise its cost" would contradict its own verdict
                what = "no fight can harm" if special[by] == "invulnerable" else "cannot harm"
                rows.append({"unit": u, "verdict": f"dominated by an {special[by]} unit",
                             "reason": f"dominated by {by}, which {what}{rank}",
                             "advice": f"change {by}'s profile first, then look again"})
            elif by_verdict == "underpriced" and price_verdict != "overpriced":
                rows.append({"unit": u, "verdict": "dominated by an underpriced unit",
                             "reason": f"dominated by {by}, which is itself underpriced{rank}",
                             "advice": f"raise {by}'s cost first, then look again"})
            elif price_verdict == "overpriced":
                target = (_fmt(fair_p) if fieldable or not math.isfinite(nearest) else
                          f"{_fmt(nearest)}, the nearest price this budget can field (its fair price "
                          f"{_fmt(fair_p)} cannot be fielded)")
                rows.append({"unit": u, "verdict": "overpriced, dominated",
                             "reason": f"dominated by {by} and overpriced{rank}",
                             "advice": f"lower its cost from {_fmt(points)} towards {target}, or give it a "
                                       f"role {by} does not fill"})
            else:
                rows.append({"unit": u, "verdict": "dominated",
                             "reason": f"dominated by {by}: {by} does at least as well against every unit{rank}",
                             "advice": "change its role, not its cost"})
            continue
        if price_verdict in ("overpriced", "underpriced"):
            verb = "lower" if price_verdict == "overpriced" else "raise"
            if fieldable and math.isfinite(fair_p):
                advice = f"{verb} its cost from {_fmt(points)} to about {_fmt(fair_p)}"
            elif math.isfinite(nearest) and math.isclose(nearest, points):
                advice = (f"change its profile: its fair price {_fmt(fair_p)} cannot be fielded at this budget, and "
                          f"{_fmt(points)} is already the nearest price that can")
            elif math.isfinite(nearest):
                advice = (f"{verb} its cost to {_fmt(nearest)}, the nearest price this budget can field (its fair "
                          f"price {_fmt(fair_p)} cannot be fielded)")
            else:
                advice = f"{verb} its cost well {'below' if verb == 'lower' else 'above'} {_fmt(points)}"
            score = float(row.get("score", math.nan)) if row is not None else math.nan
            why = (f"scores {100 * score:.1f}% against the roster at its price, its own mirror match included"
                   if math.isfinite(score) else f"its fair price is {_fmt(fair_p)}")
            in_mix = float(weights.get(u, 0.0)) if len(weights) else 0.0
            if price_verdict == "overpriced" and in_mix >= COUNTER_WEIGHT:
                # weak on average, yet the equilibrium fields it: a counter to the strong units. "Lower its
                # cost" alone would contradict the Nash mix; say both, and point to the whole-table answer
                rows.append({"unit": u, "verdict": "overpriced, a counter",
                             "reason": f"{why}, yet {100 * in_mix:.0f}% of the equilibrium mix: it beats the units "
                                       f"that mix is built against{rank}",
                             "advice": f"{advice} only with the whole table (meleelab rebalance): a cheaper counter "
                                       "can take over the mix"})
                continue
            rows.append({"unit": u, "verdict": price_verdict, "reason": why + rank, "advice": advice})
            continue
        weight = float(nmax.get(u, math.nan)) if len(nmax) else math.nan
        if price_verdict == "fair" and weight == 0.0:
            rows.append({"unit": u, "verdict": "fair, never in the mix",
                         "reason": f"fairly priced on average{rank}, but every equilibrium mix does without it: some "
                                   "mix of other units beats it",
                         "advice": "give it a matchup it wins, or accept it as a niche pick"})
            continue
        rows.append({"unit": u, "verdict": price_verdict or "no price",
                     "reason": ("its price is within the tolerance" if price_verdict == "fair" else
                                "no fair price could be computed") + rank,
                     "advice": "keep its cost" if price_verdict == "fair" else ""})
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)
