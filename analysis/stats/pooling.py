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
    f = frame[frame["attacker"].isin(rep_of) & frame["defender"].isin(rep_of)].copy()
    f["_a"] = f["attacker"].map(rep_of)
    f["_d"] = f["defender"].map(rep_of)
    rows = []
    first = {(a, d): r for a, d, r in zip(frame["attacker"], frame["defender"], frame.to_dict("records"))}
    # each pair of classes' rows, found once (a boolean filter per pair grew with the square of the roster's rows)
    parts = {key: part for key, part in f.groupby(["_a", "_d"], sort=False)}
    empty = f.iloc[:0]
    for a in classes:
        for d in classes:
            part = parts.get((a, d), empty)
            base = dict(first[(a, d)]) if (a, d) in first else {"attacker": a, "defender": d}
            exact = is_exact(part)
            if exact.any():  # twins fight alike: their exact cells hold the same numbers, pooled as they are
                ex = part[exact]
                base.update({"trials": 0, "method": "exact"})
                for col in ("p_attacker", "p_defender", "p_draw"):
                    p = float(ex[col].astype(float).mean())
                    base.update({col: p, f"{col}_lo": p, f"{col}_hi": p, f"{col}_se": 0.0})
                for col in _MEAN_COLS:
                    if col in ex:
                        base[col] = float(ex[col].astype(float).mean())
                        if f"{col}_se" in ex:
                            base[f"{col}_se"] = 0.0
                rows.append(base)
                continue
            # twins are fought once (:mod:`analysis.runs.cells`): their cells hold one fight's numbers, counted once
            part = part.drop_duplicates(subset=[c for c in ("trials", "p_attacker", "p_defender", "p_draw",
                                                            *_MEAN_COLS) if c in part])
            n = part["trials"].to_numpy(float) if "trials" in part else np.ones(len(part))
            ok = n > 0
            total = float(n[ok].sum())
            if total <= 0:
                rows.append(base)
                continue
            base["trials"] = int(total)
            for col in ("p_attacker", "p_defender", "p_draw"):
                p = float((part[col].to_numpy(float)[ok] * n[ok]).sum() / total)
                lo, hi = wilson_interval(int(round(p * total)), int(total))
                base.update({col: p, f"{col}_lo": min(lo, p), f"{col}_hi": max(hi, p),
                             f"{col}_se": math.sqrt(p * (1 - p) / total)})
            for col in _MEAN_COLS:
                if col in part:
                    base[col] = float((part[col].to_numpy(float)[ok] * n[ok]).sum() / total)
                    se_col = f"{col}_se"
                    if se_col in part:
                        se = part[se_col].to_numpy(float)[ok]
                        base[se_col] = float(math.sqrt(((n[ok] * se) ** 2).sum()) / total)
            rows.append(base)
    out = pd.DataFrame(rows).reindex(columns=frame.columns)
    out.attrs.update(frame.attrs)
    return out


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
