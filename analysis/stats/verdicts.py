"""One answer per roster: the advice (the fewest price changes that balance it) and every unit's verdict from it.

A verdict that prices one unit while every other price stays put cannot tell a
cause from its victims: one unit 16% too cheap pushes every other unit's score
down, and each would be told to get cheaper. So the verdicts come from one
joint solution (:mod:`analysis.stats.advice`):

* a unit whose price the solution changes is ``underpriced`` or ``overpriced``,
  with its new price;
* every other unit is ``fair``; where it is outside the tolerance at the listed
  prices and inside once the changed units are repriced, the verdict says so
  (``fair once Sellsword is repriced``);
* a unit points cannot balance (it would need more copies than a side can
  field, or fewer than one, or more copies never help; or more than the
  ``--max-change`` cap) is not held to the tolerance: ``cannot be balanced by
  points``, with why, and the nearest price it can take when the solution
  moves it there;
* a unit that cannot be harmed (it never takes damage) or cannot harm (it never
  deals any) is said in plain words: points cannot fix what the rules make certain.

:class:`Advice` holds the answer; its :attr:`~Advice.table` is ``verdicts.csv``
(``unit``, ``verdict``, ``advice`` first). It also counts the cells whose result
is decided by who charges (the attacker wins at least 90% both ways): a
side-averaged 50% there says nothing about the units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .estimates import fought_rows

__all__ = ["Advice", "advice_table", "per_unit_advice", "role_decided", "harmless_or_invulnerable", "rank_by_significance",
           "ROLE_DECIDED", "ADVICE_COLUMNS", "VERDICT_COLUMNS", "PRICE_VERDICTS", "CANNOT"]

#: P(attacker wins) in both directions at or above which a pair is decided by who charges.
ROLE_DECIDED = 0.9

#: The columns of verdicts.csv: the verdict and advice of every unit, from the one solution.
ADVICE_COLUMNS = ["unit", "verdict", "advice", "reason", "points", "advised_points", "change_pct", "score",
                  "score_se", "score_lo", "score_hi", "score_advised", "score_advised_lo", "score_advised_hi", "held",
                  "outside_tolerance", "note"]
VERDICT_COLUMNS = ADVICE_COLUMNS[:4]
#: The verdicts that change a price.
PRICE_VERDICTS = ("underpriced", "overpriced")
#: The verdict of a unit that points cannot balance.
CANNOT = "cannot be balanced by points"


@dataclass(frozen=True)
class Advice:
    """The fewest price changes that balance the roster, and every unit's verdict from them.

    Attributes
    ----------
    table : DataFrame
        :data:`ADVICE_COLUMNS`, one row per unit (``verdicts.csv``): its verdict and advice,
        its price now and advised, its score now and at the advised table, with 95% intervals.
    tolerance : float
        A held unit is balanced within ``50% +- tolerance``.
    method : str
        ``"joint"`` (the fights at every price the search tried) or ``"per unit"`` (a model whose
        fair prices do not depend on the others', e.g. the calibration of one unit a side).
    balanced : bool
        Every held unit within the tolerance at the advised table (on the cells it was found with).
    worst : float
        The largest ``|score - 50%|`` of a held unit at the advised table (NaN when not computed).
    round_to : float
    max_change : float or None
    locked : tuple of str
    tried : int
        Candidate sets refined on the fights.
    fallback : bool
        No smaller set held, so every unit that may move changed.
    note : str
        How the advice was found, in one sentence.
    """

    table: pd.DataFrame
    tolerance: float
    method: str = "joint"
    balanced: bool = True
    worst: float = math.nan
    round_to: float = 1.0
    max_change: float | None = None
    locked: tuple[str, ...] = ()
    tried: int = 0
    fallback: bool = False
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> list[str]:
        """Units whose price the advice changes, in roster order."""
        t = self.table
        return [u for u, a, p in zip(t["unit"], t["advised_points"], t["points"]) if _moved(p, a)]

    @property
    def prices(self) -> dict[str, float]:
        """Unit -> advised price (its listed price when unchanged)."""
        return dict(zip(self.table["unit"], self.table["advised_points"]))

    @property
    def exempt(self) -> dict[str, str]:
        """Unit -> why it is not held to the tolerance."""
        t = self.table[~self.table["held"].astype(bool)]
        return dict(zip(t["unit"], t["note"]))

    @property
    def nothing_to_change(self) -> bool:
        return not self.changed

    def verdicts(self) -> pd.DataFrame:
        """``unit, verdict, advice, reason``."""
        return self.table[VERDICT_COLUMNS].copy()


def _moved(old: float, new: float) -> bool:
    return math.isfinite(old) and math.isfinite(new) and not math.isclose(old, new, rel_tol=1e-12)


def _pts(p: float) -> str:
    return f"{p:,.0f}" if math.isfinite(p) and float(p).is_integer() else f"{p:,.4g}" if math.isfinite(p) else "?"


def _pct(s: float) -> str:
    return f"{100 * s:.1f}%" if math.isfinite(s) else "?"


def _names(units: Sequence[str], most: int = 3) -> str:
    units = list(units)
    if len(units) <= most:
        return " and ".join([", ".join(units[:-1]), units[-1]] if len(units) > 1 else units)
    return f"{', '.join(units[:most])} and {len(units) - most} more"


def advice_table(units: Sequence[str], listed: Mapping[str, float], advised: Mapping[str, float],
                 scores: pd.DataFrame, after: pd.DataFrame | None, *, tolerance: float,
                 exempt: Mapping[str, str], special: Mapping[str, str] | None = None,
                 locked: Sequence[str] = (), needs: Mapping[str, float] | None = None,
                 max_change: float | None = None) -> pd.DataFrame:
    """Every unit's verdict, advice and reason from one solution (:data:`ADVICE_COLUMNS`).

    Parameters
    ----------
    units : sequence of str
    listed, advised : mapping
        Unit -> its listed and its advised price (the same where the solution keeps it).
    scores : DataFrame
        ``unit, score, score_lo, score_hi`` at the listed prices (the one score).
    after : DataFrame or None
        The same at the advised prices (None: not computed, e.g. a per-unit model).
    tolerance : float
    exempt : mapping
        Unit -> why it is not held to the tolerance.
    special : mapping, optional
        Unit -> ``"invulnerable"`` or ``"harmless"`` (:func:`harmless_or_invulnerable`).
    locked : sequence of str
    needs : mapping, optional
        Exempt unit -> the price at which it alone would score 50%.
    max_change : float, optional
        The cap on a relative change (named in a capped unit's advice).
    """
    s = scores.set_index("unit")
    a = after.set_index("unit") if after is not None and len(after) else None
    special = dict(special or {})
    changed = [u for u in units if _moved(listed[u], advised[u])]
    rows = []
    for u in units:
        old, new = float(listed[u]), float(advised[u])
        sc, se, lo, hi = (float(s.loc[u, c]) if u in s.index and c in s.columns else math.nan
                          for c in ("score", "score_se", "score_lo", "score_hi"))
        sa, sa_lo, sa_hi = ((float(a.loc[u, c]) for c in ("score", "score_lo", "score_hi")) if a is not None
                            and u in a.index else (math.nan,) * 3)
        held = u not in exempt
        outside = bool(math.isfinite(sc) and (hi < 0.5 - tolerance or lo > 0.5 + tolerance))
        moved = u in changed
        now = f"scores {_pct(sc)} ({_pct(lo)}–{_pct(hi)}) against the roster as listed"
        then = (f"; {_pct(sa)} at {_pts(new)}" + (" with the other changes" if len(changed) > 1 else "")
                if moved and math.isfinite(sa) else
                f"; {_pct(sa)} once {_names([c for c in changed if c != u])} "
                f"{'is' if len([c for c in changed if c != u]) == 1 else 'are'} repriced"
                if changed and math.isfinite(sa) and not moved else "")
        note = str(exempt.get(u, ""))
        if u in special:
            verdict = special[u]
            text = ("cannot be harmed: no fight ever damages it" if verdict == "invulnerable"
                    else "cannot harm: it never damages an opponent")
            advice = "change its profile: points cannot fix what the rules make certain"
            reason = f"{text}; {now}"
        elif not held and (max_change is not None and note.startswith("needs") and "cap" in note):
            verdict = "underpriced" if new > old else "overpriced"
            verb = "raise" if new > old else "lower"
            advice = f"{verb} its cost from {_pts(old)} to {_pts(new)}, the most the cap allows; {note}"
            reason = now + then
        elif not held:
            verdict = CANNOT
            if moved:
                verb = "raise" if new > old else "lower"
                advice = (f"{verb} its cost from {_pts(old)} to {_pts(new)}, the nearest price this budget can "
                          f"field, then change its profile: {note}")
            else:
                advice = f"change its profile (or the budget): {note}"
            reason = now + then
        elif moved:
            verdict = "underpriced" if new > old else "overpriced"
            verb = "raise" if new > old else "lower"
            advice = f"{verb} its cost from {_pts(old)} to {_pts(new)}"
            reason = now + then
        elif u in locked:
            verdict, advice, reason = "locked", "keep its cost (locked)", now + then
        else:
            others = [c for c in changed if c != u]
            inside = math.isfinite(sa) and abs(sa - 0.5) <= tolerance
            if others and (outside or abs(sc - 0.5) > tolerance) and inside:
                verdict = f"fair once {_names(others)} {'is' if len(others) == 1 else 'are'} repriced"
            else:
                verdict = "fair"
            advice = "keep its cost"
            reason = now + then
        rows.append({"unit": u, "verdict": verdict, "advice": advice, "reason": reason, "points": old,
                     "advised_points": new, "change_pct": 100 * (new - old) / old if old else math.nan,
                     "score": sc, "score_se": se, "score_lo": lo, "score_hi": hi, "score_advised": sa, "score_advised_lo": sa_lo,
                     "score_advised_hi": sa_hi, "held": held, "outside_tolerance": outside, "note": note})
    return pd.DataFrame(rows, columns=ADVICE_COLUMNS)


def per_unit_advice(frame: pd.DataFrame, classes: Mapping[str, Sequence[str]], units: Sequence[str],
                    listed: Mapping[str, float], fair: pd.DataFrame | None, *, tolerance: float,
                    budget: float | None, round_to: float = 1.0, lock: Sequence[str] = ()) -> Advice:
    """Each unit outside its fair-price interval moved to its own fair price, every other unit fair.

    The answer of a model whose fair prices do not move with the others' (one
    unit a side: the calibration model; whole copies: a price change within one
    step of copies changes no fight), so there is no joint answer to give.
    """
    from .expected import unit_scores

    order = {u: i for i, u in enumerate(units)}
    scores = unit_scores(frame, classes, tolerance).sort_values("unit", key=lambda c: c.map(order), kind="stable")
    special = harmless_or_invulnerable(frame, list(units))
    fp = fair.set_index("unit") if fair is not None and len(fair) else pd.DataFrame()
    advised, exempt = dict(listed), {}
    for u in units:
        if u not in fp.index or u in special or u in lock:
            continue
        row = fp.loc[u]
        p = float(row.get("fair_points", math.nan))
        if str(row.get("verdict", "")) in PRICE_VERDICTS:
            if math.isfinite(p) and p > 0 and not str(row.get("beyond") or ""):
                advised[u] = max(round_to, round_to * round(p / round_to))
            else:
                exempt[u] = str(row.get("beyond") or "its fair price lies beyond what this roster can measure")
    table = advice_table(units, listed, advised, scores, None, tolerance=tolerance, exempt=exempt, special=special,
                         locked=[u for u in units if u in lock])
    if len(fp):  # the model's own flag: outside the fair price's interval
        table["outside_tolerance"] = [bool(fp.loc[u, "flagged"]) if u in fp.index else False for u in table["unit"]]
    why = ("one unit a side: points do not enter the fights, so each unit's fair price comes from the calibration "
           "model and does not move with the others'" if budget is None else
           "whole copies: a price change within one step of copies changes no fight, so each unit is priced alone")
    return Advice(table, tolerance, "per unit", True, math.nan, float(round_to), None, tuple(lock), 0, False,
                  f"per unit: {why}")


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
    with the same roll distributions never get different places by noise, and
    equal exact scores (intervals of zero width) share theirs.
    """
    v, low, high = values.to_numpy(float), lo.to_numpy(float), hi.to_numpy(float)
    ranks = []
    for i in range(len(v)):
        surely_better = sum(1 for j in range(len(v)) if j != i and low[j] > high[i] + 1e-9)
        ranks.append(1 + surely_better)
    return pd.Series(ranks, index=values.index)
