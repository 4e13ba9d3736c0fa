"""What the designer changed between two runs, and the verdicts that flipped: the first rows of a diff.

Read from the run folders' own files: ``units.csv`` (every unit field, points included; a squad of several model
groups row by row), the switches in ``metadata.json`` and the verdicts of ``verdicts.csv`` (or, in older folders,
``fair_points.csv``). An edit or a flip is always shown, whatever the
noise of the numbers around it (:mod:`analysis.report.diff`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from sim.errors import InputError

from .diff import _json, _one_line
from .safe_csv import restore_cell

__all__ = ["edits", "flips", "change_lines", "in_words"]


def _read_text(folder: Path, name: str) -> pd.DataFrame | None:
    """Every column of an optional file as text (names and verdicts as written), or None when it is absent."""
    path = folder / name
    if not path.is_file():
        return None
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read ({_one_line(e)})") from None
    raw.columns = [restore_cell(c) for c in raw.columns]
    return raw.apply(lambda col: col.map(restore_cell))



def edits(ruleset: str, old: Path, new: Path) -> list[dict[str, Any]]:
    """The designer's edits: unit fields (units.csv) and switches (metadata.json) that differ between the runs."""
    rows: list[dict[str, Any]] = []

    def row(item: str, quantity: str, a: Any, b: Any, status: str) -> dict[str, Any]:
        fa, fb = _as_float(a), _as_float(b)
        return {"ruleset": ruleset, "kind": "roster", "item": item, "quantity": quantity, "old": fa, "new": fb,
                "diff": fb - fa if math.isfinite(fa) and math.isfinite(fb) else math.nan, "diff_se": math.nan,
                "z": math.nan, "status": status, "trials_old": math.nan, "trials_new": math.nan,
                "context_old": "" if a is None else str(a), "context_new": "" if b is None else str(b)}

    ua, ub = _read_text(old, "units.csv"), _read_text(new, "units.csv")
    if ua is not None and ub is not None:
        key = next((k for k in ("name", "unit") if k in ua and k in ub), None)
        if key is not None:
            a_units, b_units = _unit_rows(ua, key), _unit_rows(ub, key)
            skip = {key, "in_matrix", "group"}
            for unit in dict.fromkeys([*a_units, *b_units]):
                if unit not in b_units or unit not in a_units:
                    rows.append(row(unit, "unit", unit if unit in a_units else None, unit if unit in b_units else None,
                                    "only in old" if unit not in b_units else "only in new"))
                    continue
                # a squad of several model groups is one row per group (its points on the first): compared
                # group by group, so a points edit on the first row is seen whatever the other rows hold
                ra, rb = a_units[unit], b_units[unit]
                several = max(len(ra), len(rb)) > 1
                for k in range(max(len(ra), len(rb))):
                    ga, gb = (ra[k] if k < len(ra) else None), (rb[k] if k < len(rb) else None)
                    item = _group_item(unit, k, ga if ga is not None else gb, several)
                    if ga is None or gb is None:
                        name = _group_name(ga if ga is not None else gb, k)
                        rows.append(row(item, "group", name if ga is not None else None,
                                        name if gb is not None else None,
                                        "only in old" if gb is None else "only in new"))
                        continue
                    for col in [c for c in ga.index if c in gb.index and c not in skip]:
                        va, vb = ga[col], gb[col]
                        if not _same(va, vb):
                            rows.append(row(item, col, va, vb, "edited"))
    sa, sb = _json(old / "metadata.json").get("switches"), _json(new / "metadata.json").get("switches")
    if isinstance(sa, list) and isinstance(sb, list):
        a_sw = {s.get("option"): s.get("value") for s in sa if isinstance(s, dict)}
        b_sw = {s.get("option"): s.get("value") for s in sb if isinstance(s, dict)}
        for opt in dict.fromkeys([*a_sw, *b_sw]):
            if not _same(a_sw.get(opt), b_sw.get(opt)):
                rows.append(row("(switch)", str(opt), a_sw.get(opt), b_sw.get(opt), "edited"))
    return rows


def _unit_rows(frame: pd.DataFrame, key: str) -> dict[str, list[pd.Series]]:
    """Unit name -> its rows of units.csv in order (one per model group for squads of several groups)."""
    out: dict[str, list[pd.Series]] = {}
    for _, r in frame.iterrows():
        out.setdefault(str(r[key]), []).append(r)
    return out


def _group_name(r: pd.Series, k: int) -> str:
    g = str(r.get("group", "") or "")
    return g if g else f"group {k + 1}"


def _group_item(unit: str, k: int, r: pd.Series, several: bool) -> str:
    """The unit itself for its first row (the one that holds its points), ``Unit, Group`` for its other groups."""
    return unit if k == 0 or not several else f"{unit}, {_group_name(r, k)}"


def flips(ruleset: str, old: Path, new: Path) -> list[dict[str, Any]]:
    """Units whose verdict differs between the runs (overpriced -> fair...): always shown, whatever the noise.

    The verdicts are the reconciled ones of ``verdicts.csv`` when both runs have it, else the price verdicts of
    ``fair_points.csv`` (older folders); never one run's of one file against the other's of the other.
    """
    for name in ("verdicts.csv", "fair_points.csv"):
        a, b = _read_text(old, name), _read_text(new, name)
        if a is not None and b is not None and {"unit", "verdict"} <= set(a.columns) & set(b.columns):
            break
    else:
        return []
    va = dict(zip(a["unit"], a["verdict"]))
    vb = dict(zip(b["unit"], b["verdict"]))
    return [{"ruleset": ruleset, "kind": "verdict", "item": u, "quantity": "verdict", "old": math.nan,
             "new": math.nan, "diff": math.nan, "diff_se": math.nan, "z": math.nan, "status": "flipped",
             "trials_old": math.nan, "trials_new": math.nan, "context_old": va[u], "context_new": vb[u]}
            for u in va if u in vb and va[u] != vb[u]]


def change_lines(changed: pd.DataFrame) -> list[str]:
    """The edits and flips of :meth:`analysis.report.diff.RunDiff.changed` in words, for the terminal:
    ``Roster edits (1):`` then ``  Assault squad: points 150 → 132``, ``Verdicts that flipped (1):`` then
    ``  Troopers: fair → underpriced`` (each line led by its ruleset when the diff holds several)."""
    several = changed["ruleset"].nunique() > 1
    out: list[str] = []
    for kind, heading in (("roster", "Roster edits"), ("verdict", "Verdicts that flipped")):
        rows = changed[changed["kind"] == kind]
        if not len(rows):
            continue
        out.append(f"{heading} ({len(rows)}):")
        for _, r in rows.iterrows():
            lead = f"  {r['ruleset']}, {r['item']}" if several else f"  {r['item']}"
            old, new = _shown(r["context_old"]), _shown(r["context_new"])
            if r["status"] in ("only in old", "only in new"):
                what = "unit" if r["quantity"] == "unit" else str(r["quantity"])
                out.append(f"{lead}: {what} {r['status']}")
            elif kind == "verdict":
                out.append(f"{lead}: {old} → {new}")
            else:
                out.append(f"{lead}: {r['quantity']} {old} → {new}")
        out.append("")
    return out


def in_words(changed: pd.DataFrame) -> tuple[list[str], pd.DataFrame]:
    """The lines of :func:`change_lines` (or what nothing changing means), and the numbers left for a table."""
    if not len(changed):
        return ["no number changed by more than its noise"], changed
    words = changed["kind"].isin(["roster", "verdict"])
    lines, rest = change_lines(changed[words]), changed[~words]
    if not len(rest):  # an edit that changes no fight (a price, one a side) is still what the designer did
        lines.append("no cell, ranking or fair price moved beyond its noise")
    return lines, rest


def _shown(v: Any) -> str:
    """A value as read from a CSV file, as a person writes it: ``150.000000`` is ``150``; empty is ``none``."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or str(v).strip() == "":
        return "none"
    x = _as_float(v)
    if math.isfinite(x) and str(v).strip().lower() not in ("true", "false"):
        return f"{x:,.6g}"
    return str(v)


def _as_float(v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _same(a: Any, b: Any) -> bool:
    fa, fb = _as_float(a), _as_float(b)
    if math.isfinite(fa) and math.isfinite(fb):
        return fa == fb
    if (a is None or (isinstance(a, float) and math.isnan(a))) and (b is None or (isinstance(b, float)
                                                                                 and math.isnan(b))):
        return True
    return str(a) == str(b)
