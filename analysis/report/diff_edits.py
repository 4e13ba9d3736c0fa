"""What the designer changed between two runs, and the verdicts that flipped: the first rows of a diff.

Read from the run folders' own files: ``units.csv`` (every unit field, points included), the switches in
``metadata.json`` and the verdicts of ``fair_points.csv``. An edit or a flip is always shown, whatever the
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

__all__ = ["edits", "flips"]


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
            a_rows = {str(r[key]): r for _, r in ua.iterrows()}
            b_rows = {str(r[key]): r for _, r in ub.iterrows()}
            skip = {key, "in_matrix", "group"}
            for unit in dict.fromkeys([*a_rows, *b_rows]):
                if unit not in b_rows or unit not in a_rows:
                    rows.append(row(unit, "unit", unit if unit in a_rows else None, unit if unit in b_rows else None,
                                    "only in old" if unit not in b_rows else "only in new"))
                    continue
                for col in [c for c in a_rows[unit].index if c in b_rows[unit].index and c not in skip]:
                    va, vb = a_rows[unit][col], b_rows[unit][col]
                    if not _same(va, vb):
                        rows.append(row(unit, col, va, vb, "edited"))
    sa, sb = _json(old / "metadata.json").get("switches"), _json(new / "metadata.json").get("switches")
    if isinstance(sa, list) and isinstance(sb, list):
        a_sw = {s.get("option"): s.get("value") for s in sa if isinstance(s, dict)}
        b_sw = {s.get("option"): s.get("value") for s in sb if isinstance(s, dict)}
        for opt in dict.fromkeys([*a_sw, *b_sw]):
            if not _same(a_sw.get(opt), b_sw.get(opt)):
                rows.append(row("(switch)", str(opt), a_sw.get(opt), b_sw.get(opt), "edited"))
    return rows


def flips(ruleset: str, old: Path, new: Path) -> list[dict[str, Any]]:
    """Units whose verdict differs between the runs (overpriced -> fair...): always shown, whatever the noise."""
    a, b = _read_text(old, "fair_points.csv"), _read_text(new, "fair_points.csv")
    if a is None or b is None or "verdict" not in a or "verdict" not in b:
        return []
    va = dict(zip(a["unit"], a["verdict"]))
    vb = dict(zip(b["unit"], b["verdict"]))
    return [{"ruleset": ruleset, "kind": "verdict", "item": u, "quantity": "verdict", "old": math.nan,
             "new": math.nan, "diff": math.nan, "diff_se": math.nan, "z": math.nan, "status": "flipped",
             "trials_old": math.nan, "trials_new": math.nan, "context_old": va[u], "context_new": vb[u]}
            for u in va if u in vb and va[u] != vb[u]]


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
