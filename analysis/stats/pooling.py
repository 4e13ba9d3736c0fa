"""Twins: units that fight every matchup exactly alike, pooled so that they get identical answers.

Two units are twins when they have the same fighting profile (every field but
``name`` and ``points``) and field the same copies (so, under a budget, the same
points). A matrix fights their cells once (:mod:`analysis.runs.cells`); cells
fought apart (a matrix saved by an older version) estimate the same probabilities
from different random streams: left apart, Monte Carlo noise would give them
different rankings, prices and flags, and an equilibrium would put all the weight
on whichever drew luckier.

:func:`collapse` pools each twin class into one representative (the first in
roster order): every cell between two classes is the trial-weighted mean of the
cells between their members (a matrix fights twins' cells once, so they hold the
same numbers: identical cells count once, not as independent fights). The
balance metrics run on the collapsed matrix and
:func:`expand_units` copies each class's row back to every member.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from sim.stats import wilson_interval

from .estimates import is_exact

__all__ = ["twin_classes", "collapse", "expand_units", "expand_pairs"]


def twin_classes(matrix: Any, units: list[str]) -> dict[str, list[str]]:
    """Representative -> members (in order), from ``matrix.twins()``; every unit alone without profiles."""
    twins = matrix.twins() if hasattr(matrix, "twins") and getattr(matrix, "profiles", None) else {}
    classes: dict[str, list[str]] = {}
    rep_of: dict[str, str] = {}
    for u in units:
        key = twins.get(u, f"\0{u}")
        rep = rep_of.setdefault(key, u)
        classes.setdefault(rep, []).append(u)
    return classes


_MEAN_COLS = ("damage_to_attacker", "damage_to_defender", "mean_rounds", "capped")


def collapse(frame: pd.DataFrame, classes: dict[str, list[str]]) -> pd.DataFrame:
    """The long frame with each twin class pooled into its representative.

    Probabilities are pooled counts (Wilson intervals and standard errors
    recomputed); means are trial-weighted with standard errors combined. With no
    twins the frame is returned unchanged.
    """
    if all(len(m) == 1 for m in classes.values()):
        return frame
    rep_of = {m: rep for rep, ms in classes.items() for m in ms}
    records = frame.to_dict("records")
    first = {(r["attacker"], r["defender"]): r for r in records}
    # each pair of classes' rows (in frame order), found once: pandas per pair cost 2.6 ms each, 25 s at 100 units
    members: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(records):
        a, d = rep_of.get(r["attacker"]), rep_of.get(r["defender"])
        if a is not None and d is not None:
            members.setdefault((a, d), []).append(i)
    exact = is_exact(frame)
    dedupe = [c for c in ("trials", "p_attacker", "p_defender", "p_draw", *_MEAN_COLS) if c in frame]
    values = {c: frame[c].to_numpy(float) for c in dedupe}
    ses = {c: frame[f"{c}_se"].to_numpy(float) for c in _MEAN_COLS if c in frame and f"{c}_se" in frame}
    trials = values.get("trials")
    rows = []
    for a in classes:
        for d in classes:
            idx = members.get((a, d), [])
            base = dict(first[(a, d)]) if (a, d) in first else {"attacker": a, "defender": d}
            if exact[idx].any():  # twins fight alike: their exact cells hold the same numbers, pooled as they are
                rows.append(_pooled_exact(base, frame.iloc[idx]))
                continue
            # twins are fought once (:mod:`analysis.runs.cells`): their cells hold one fight's numbers, counted once
            kept = np.asarray(_first_of_each(idx, [values[c] for c in dedupe]), dtype=np.intp)
            n = trials[kept] if trials is not None else np.ones(len(kept))
            ok = n > 0
            total = float(n[ok].sum())
            if total <= 0:
                rows.append(base)
                continue
            base["trials"] = int(total)
            for col in ("p_attacker", "p_defender", "p_draw"):
                p = float((values[col][kept][ok] * n[ok]).sum() / total)
                lo, hi = wilson_interval(int(round(p * total)), int(total))
                base.update({col: p, f"{col}_lo": min(lo, p), f"{col}_hi": max(hi, p),
                             f"{col}_se": math.sqrt(p * (1 - p) / total)})
            for col in _MEAN_COLS:
                if col in values:
                    base[col] = float((values[col][kept][ok] * n[ok]).sum() / total)
                    if col in ses:
                        se = ses[col][kept][ok]
                        base[f"{col}_se"] = float(math.sqrt(((n[ok] * se) ** 2).sum()) / total)
            rows.append(base)
    out = pd.DataFrame(rows).reindex(columns=frame.columns)
    out.attrs.update(frame.attrs)
    return out


def _pooled_exact(base: dict[str, Any], part: pd.DataFrame) -> dict[str, Any]:
    """A class pair with an exact cell: the exact cells' numbers (twins' exact cells are the same numbers)."""
    ex = part[is_exact(part)]
    base.update({"trials": 0, "method": "exact"})
    for col in ("p_attacker", "p_defender", "p_draw"):
        p = float(ex[col].astype(float).mean())
        base.update({col: p, f"{col}_lo": p, f"{col}_hi": p, f"{col}_se": 0.0})
    for col in _MEAN_COLS:
        if col in ex:
            base[col] = float(ex[col].astype(float).mean())
            if f"{col}_se" in ex:
                base[f"{col}_se"] = 0.0
    return base


def _first_of_each(idx: list[int], columns: list[np.ndarray]) -> list[int]:
    """The rows of ``idx`` whose values in ``columns`` were not seen in an earlier row (as ``drop_duplicates``)."""
    if len(idx) < 2:
        return idx
    seen, kept = set(), []
    for i in idx:
        key = tuple(None if v != v else v for v in (float(c[i]) for c in columns))  # NaN equals NaN, as in pandas
        if key not in seen:
            seen.add(key)
            kept.append(i)
    return kept


def expand_units(frame: pd.DataFrame, classes: dict[str, list[str]], col: str = "unit") -> pd.DataFrame:
    """One row per member: each representative's row copied to its twins (roster order kept)."""
    if all(len(m) == 1 for m in classes.values()) or not len(frame):
        return frame
    rows = []
    by = {r[col]: r for r in frame.to_dict("records")}
    for rep, members in classes.items():
        if rep in by:
            for m in members:
                rows.append({**by[rep], col: m})
    out = pd.DataFrame(rows, columns=frame.columns)
    for c in frame.columns:
        if c in out and frame[c].dtype.kind in "iub" and not out[c].isna().any():
            out[c] = out[c].astype(frame[c].dtype)
    out.attrs.update(frame.attrs)
    return out


def expand_pairs(frame: pd.DataFrame, classes: dict[str, list[str]], a: str = "unit",
                 b: str = "opponent") -> pd.DataFrame:
    """One row per (member, member) pair of a per-pair frame (side-averaged rates)."""
    if all(len(m) == 1 for m in classes.values()) or not len(frame):
        return frame
    by = {(r[a], r[b]): r for r in frame.to_dict("records")}
    rows = []
    for ra, ma in classes.items():
        for ua in ma:
            for rb, mb in classes.items():
                for ub in mb:
                    if (ra, rb) in by:
                        rows.append({**by[(ra, rb)], a: ua, b: ub})
    out = pd.DataFrame(rows, columns=frame.columns)
    out.attrs.update(frame.attrs)
    return out
