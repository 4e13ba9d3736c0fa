"""Compare two runs: which matrix cells, rankings and fair prices moved by more than their noise.

``meleelab diff OLD_DIR NEW_DIR`` reads two report folders (``meleelab report``,
or ``meleelab balance --out``/``matrix --out`` folders; a ``report --all``
folder holding one sub-folder per ruleset is compared ruleset by ruleset) and
lists, for every number the two runs share:

* **cells** (``matrix_long.csv``): P(attacker wins) and P(defender wins) of each
  attacker x defender pair;
* **rankings** (``rankings.csv``): each unit's one score, side-averaged win rate
  and Bradley-Terry strength (its rank is shown alongside);
* **fair prices** (``fair_points.csv``): each unit's fair price alone (its
  current points are shown alongside);
* in two ``meleelab lists`` folders, the cells and rankings of the army lists (a
  list's name in place of a unit's) and **unit values** (``unit_value.csv``): each
  unit's value in each list (its error read from its 95% interval, as a fair price's).

The error of a difference
-------------------------
A matrix cell's random stream is addressed by the seed and the two unit names,
so two runs with the same seed put every cell on the same dice (common random
numbers). A cell whose two units and settings did not change is then *exactly*
the same number in both runs: its difference is 0 with no noise, and it is
reported as ``identical``, never as a change. For a number that did move,
we use the error of two independent estimates,

    diff_se = sqrt(se_old**2 + se_new**2),

and call it a change when ``|diff| > z * diff_se`` (``z = 3`` by default). On
common random numbers the two estimates are positively correlated, so the true
standard error of their difference is smaller: this ``diff_se`` is conservative
(a reported change is real; a small real change may be called noise). The files
hold only each number's own standard error, not the trial-by-trial pairing, so
the paired error itself cannot be recovered from them. With different seeds
(or renamed units) the runs are independent and ``diff_se`` is exact. For a fair
price the standard error is read from its 95% interval, ``(hi - lo) / 3.92``.
Exact cells (``method`` ``exact``) have errors of 0: any difference between two is a change (context "exact").

The columns read from each file are named in :data:`COLUMNS` (first name
present wins), so a file that gains or renames a column needs one line changed.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sim.errors import InputError
from sim.files import read_input_text
from sim.limits import MAX_MATRIX_BYTES

from ..stats.checks import check_path
from .diff_columns import COLUMNS, KEYS, QUANTITIES
from .outdir import replacing_writer
from .render import figure_png, plain_text_plots
from .safe_csv import restore_cell

__all__ = ["COLUMNS", "QUANTITIES", "DEFAULT_Z", "RunDiff", "diff_runs", "find_runs", "plot_cells",
           "plot_changes", "diff_figure"]

DEFAULT_Z = 3.0  #: Default threshold: a difference beyond this many standard errors is a change.
_WIDTH_PER_SE = 2 * 1.959963984540054  #: Standard errors in a 95% interval's full width (2 x 1.96).

#: Columns of :attr:`RunDiff.table` (and of ``diff.csv``).
TABLE_COLUMNS = ["ruleset", "kind", "item", "quantity", "old", "new", "diff", "diff_se", "z", "status",
                 "trials_old", "trials_new", "context_old", "context_new"]
STATUSES = ("edited", "flipped", "changed", "within noise", "identical", "only in old", "only in new", "not fought")
#: The order a designer reads a diff in: what they changed, then the verdicts that flipped, then the numbers.
KIND_ORDER = ("roster", "verdict", "fair price", "cell", "ranking", "unit value")
#: Statuses that are a change whatever their z (an edit to the roster, a verdict that flipped).
ALWAYS_SHOWN = ("edited", "flipped")


def find_runs(path: str | Path) -> dict[str, Path]:
    """The run folders under ``path``, by ruleset id.

    ``path`` is one run folder (it holds ``matrix_long.csv``) or a ``report --all``
    folder whose sub-folders are run folders. Raises :class:`InputError` otherwise.
    """
    p = Path(path)
    try:  # a name too long for the file system: one line, like a missing folder
        missing = not p.exists()
    except OSError as e:
        raise InputError(f"{str(path)[:120]}: cannot read it ({e.strerror or type(e).__name__})") from None
    if missing:
        raise InputError(f"{path}: no such folder")
    if not p.is_dir():
        raise InputError(f"{path}: not a folder (expected a report folder)")
    if (p / "matrix_long.csv").is_file():
        return {_ruleset_of(p): p}
    runs = {}
    for sub in sorted(q for q in p.iterdir() if q.is_dir() and (q / "matrix_long.csv").is_file()):
        runs[_ruleset_of(sub)] = sub
    if not runs:
        raise InputError(f"{path}: not a report folder (no matrix_long.csv in it or in its sub-folders)")
    return runs


def _ruleset_of(folder: Path) -> str:
    """The ruleset id recorded in a run folder (metadata.json, else matrix.json), else ``"?"``."""
    for name, keys in (("metadata.json", ("ruleset", "id")), ("matrix.json", ("ruleset",))):
        meta = _json(folder / name)
        value: Any = meta
        for k in keys:
            value = value.get(k) if isinstance(value, Mapping) else None
        if isinstance(value, str) and value:
            return value
    return "?"


def _seed_of(folder: Path) -> Any:
    meta = _json(folder / "metadata.json")
    seed = meta.get("settings", {}).get("seed") if isinstance(meta.get("settings"), Mapping) else None
    if seed is None:
        prov = _json(folder / "matrix.json").get("provenance", {})
        seed = prov.get("seed_entropy") if isinstance(prov, Mapping) else None
    return seed


def _json(path: Path) -> dict[str, Any]:
    """A report's JSON file as a dict; {} when absent. A file that is not a bounded regular file, or not
    JSON, is an error (one line), so a folder holding a link to /dev/zero is refused, not read forever."""
    if not path.exists():
        return {}
    try:
        data = json.loads(read_input_text(path, "report file", MAX_MATRIX_BYTES, encoding="utf-8"))
    except (ValueError, RecursionError) as e:
        if isinstance(e, InputError):
            raise
        return {}
    return data if isinstance(data, dict) else {}


def _read(folder: Path, name: str, required: bool) -> pd.DataFrame | None:
    """The file's columns renamed to their roles (see :data:`COLUMNS`); None when an optional file is absent."""
    path = folder / name
    if not path.exists():  # (a FIFO or a device there is not absent: read_input_text refuses it in one line)
        if required:
            raise InputError(f"{folder}: not a report folder (no {name})")
        return None
    keys = KEYS.get(name, ("unit",))
    if name == "matrix_long.csv":
        # validated cell by cell, as balance --from-matrix does: a hand-edited p = 1.5 is an error, not a change
        from .matrix_file import read_matrix_long

        raw = read_matrix_long(path)
    else:
        text = read_input_text(path, "report table", MAX_MATRIX_BYTES)  # a regular file, bounded (sim.files)
        try:
            # all as text: a unit named "NA" or "None" stays a name; numbers are parsed below, role by role
            raw = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: cannot read ({_one_line(e)})") from None
        raw.columns = [restore_cell(c) for c in raw.columns]
        names = {c for role in keys for c in COLUMNS[name].get(role, (role,))}   # the key columns, as named in the file
        for col in raw.columns:
            raw[col] = raw[col].map(restore_cell) if col in names else \
                pd.to_numeric(raw[col].str.strip().replace("", np.nan), errors="coerce")
    out = pd.DataFrame(index=raw.index)
    for role, names in COLUMNS[name].items():
        col = next((c for c in names if c in raw.columns), None)
        if col is not None:
            out[role] = raw[col]  # names as the roster wrote them (not as neutralised for spreadsheets)
    missing = [k for k in keys if k not in out]
    if missing:
        raise InputError(f"{path}: no column {missing[0]!r} (columns: {', '.join(map(str, raw.columns))})")
    return out


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


@dataclass(frozen=True)
class RunDiff:
    """The comparison of two runs.

    Attributes
    ----------
    table : DataFrame
        One row per compared number (columns :data:`TABLE_COLUMNS`): ``old``,
        ``new``, ``diff = new - old``, ``diff_se``, ``z = diff / diff_se`` and
        ``status`` (one of :data:`STATUSES`).
    z : float
        The threshold used.
    notes : list of str
        What the reader should know (different seeds, rulesets in one run only...).
    old, new : str
        The folders compared.
    """

    table: pd.DataFrame
    z: float
    old: str
    new: str
    notes: list[str] = field(default_factory=list)
    write = replacing_writer("diff")  # write(out_dir): write_files into out_dir, replaced whole like --out

    def changed(self) -> pd.DataFrame:
        """The roster's edits, the verdicts that flipped (whatever their z), then the numbers beyond the noise
        (largest |z| first within each kind)."""
        t = self.table[self.table["status"].isin(["changed", *ALWAYS_SHOWN])]
        order = {k: i for i, k in enumerate(KIND_ORDER)}
        return t.assign(_k=t["kind"].map(order), _z=-t["z"].abs().fillna(math.inf)).sort_values(
            ["ruleset", "_k", "_z"], kind="mergesort").drop(columns=["_k", "_z"]).reset_index(drop=True)

    def counts(self) -> pd.DataFrame:
        """Items compared per ruleset, kind and status: a cell counts once (its most-changed number), as in the plot."""
        return _item_status(self.table).groupby(["ruleset", "kind", "status"], sort=False).size().unstack(
            "status", fill_value=0).pipe(lambda c: c.reindex(columns=[s for s in STATUSES if s in c.columns])
                                         ).reset_index()

    def text(self, limit: int | None = 40) -> str:
        """What ``meleelab diff`` prints: the counts, then the changes (at most ``limit`` rows; None: all)."""
        lines = [f"meleelab diff: {self.old} -> {self.new} (a change: |new - old| > {self.z:g} x its standard error)"]
        lines += [f"note: {n}" for n in self.notes]
        lines += ["", self.counts().to_string(index=False), ""]
        from .diff_edits import in_words

        words, ch = in_words(self.changed())  # edits and flips in words (old -> new), then the numbers
        lines += words
        if not len(ch):
            return "\n".join(lines)
        limit = len(ch) if limit is None else limit
        shown = ch[["ruleset", "kind", "item", "quantity", "old", "new", "diff", "diff_se", "z"]].head(limit)
        lines.append(f"changed beyond the noise ({len(ch)}):")
        lines.append(shown.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        if len(ch) > limit:
            lines.append(f"... and {len(ch) - limit} more (--out writes them all to diff.csv)")
        return "\n".join(lines)

    def write_files(self, out_dir: str | Path) -> list[Path]:
        """``diff.csv`` (every compared number), ``diff_changed.csv`` and ``diff.png``, each written atomically."""
        from .io import atomic_write_bytes, atomic_write_text
        from .safe_csv import frame_to_csv

        out = Path(out_dir)
        return [atomic_write_text(out / "diff.csv", frame_to_csv(self.table)),
                atomic_write_text(out / "diff_changed.csv", frame_to_csv(self.changed())),
                atomic_write_bytes(out / "diff.png", diff_figure(self))]


def diff_runs(old: str | Path, new: str | Path, *, z: float = DEFAULT_Z) -> RunDiff:
    """Compare two run folders (or two ``report --all`` folders, ruleset by ruleset).

    Parameters
    ----------
    old, new : path
        Folders written by ``meleelab report`` (or ``balance --out``, ``matrix --out``).
    z : float
        A difference beyond ``z`` standard errors is a change (default 3).

    Raises
    ------
    InputError
        A folder is missing or is not a report folder, or the two are for different rulesets.
    """
    if isinstance(z, bool) or not (isinstance(z, (int, float)) and math.isfinite(z) and z > 0):
        raise InputError(f"--z: got {z!r}, expected a positive number of standard errors")
    old, new = check_path(old, "old"), check_path(new, "new")
    runs_old, runs_new = find_runs(old), find_runs(new)
    notes: list[str] = []
    if len(runs_old) == 1 and len(runs_new) == 1:
        (r_old, f_old), (r_new, f_new) = next(iter(runs_old.items())), next(iter(runs_new.items()))
        if "?" not in (r_old, r_new) and r_old != r_new:
            raise InputError(f"{old} is a {r_old} run and {new} a {r_new} run: compare runs of one ruleset")
        pairs = [(r_old if r_old != "?" else r_new, f_old, f_new)]
    else:
        common = [r for r in runs_old if r in runs_new]
        if not common:
            raise InputError(f"{old} and {new} have no ruleset in common "
                             f"({', '.join(runs_old)} against {', '.join(runs_new)})")
        for r in runs_old:
            if r not in runs_new:
                notes.append(f"{r} is only in {old}")
        for r in runs_new:
            if r not in runs_old:
                notes.append(f"{r} is only in {new}")
        pairs = [(r, runs_old[r], runs_new[r]) for r in common]
    frames = []
    for ruleset, f_old, f_new in pairs:
        s_old, s_new = _seed_of(f_old), _seed_of(f_new)
        if s_old is not None and s_new is not None and s_old != s_new:
            notes.append(f"{ruleset}: different seeds ({s_old} and {s_new}): the runs are independent, "
                         "so no cell is exactly identical and the standard errors are those of independent runs")
        frames.append(_compare_run(ruleset, f_old, f_new, z))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=TABLE_COLUMNS)
    return RunDiff(table[TABLE_COLUMNS], float(z), str(old), str(new), notes)


def _item_status(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (ruleset, kind, item) with the item's most-changed status (a cell whose P(defender) moved
    changed, whatever its P(attacker) did)."""
    rank = {s: i for i, s in enumerate(STATUSES)}
    t = table.assign(_r=table["status"].map(rank))
    first = t.sort_values("_r", kind="mergesort").drop_duplicates(["ruleset", "kind", "item"])
    return first.drop(columns=["_r"])


def _compare_run(ruleset: str, old: Path, new: Path, z: float) -> pd.DataFrame:
    from .diff_edits import edits, flips

    rows: list[dict[str, Any]] = edits(ruleset, old, new) + flips(ruleset, old, new)
    for name, required in (("matrix_long.csv", True), ("rankings.csv", False), ("fair_points.csv", False),
                           ("unit_value.csv", False)):
        a, b = _read(old, name, required), _read(new, name, required)
        if a is None or b is None:
            continue
        keys = list(KEYS.get(name, ("unit",)))
        merged = a.merge(b, on=keys, how="outer", suffixes=("_old", "_new"), indicator=True)
        for kind, file, quantity, se_how, _ in QUANTITIES:
            if file != name or (quantity not in a and quantity not in b):
                continue
            for _, r in merged.iterrows():
                rows.append(_row(ruleset, kind, keys, r, quantity, se_how, z, name))
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _num(r: pd.Series, col: str) -> float:
    v = r.get(col, np.nan)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _se(r: pd.Series, quantity: str, se_how: str, side: str) -> float:
    if se_how == "interval":
        lo, hi = _num(r, f"fair_lo_{side}"), _num(r, f"fair_hi_{side}")
        return (hi - lo) / _WIDTH_PER_SE if math.isfinite(lo) and math.isfinite(hi) else math.nan
    return _num(r, f"{se_how}_{side}")


def _row(ruleset: str, kind: str, keys: Sequence[str], r: pd.Series, quantity: str, se_how: str, z: float,
         name: str) -> dict[str, Any]:
    item = (" in " if name == "unit_value.csv" else " vs ").join(str(r[k]) for k in keys)
    old, new = _num(r, f"{quantity}_old"), _num(r, f"{quantity}_new")
    context = "trials" if name == "matrix_long.csv" else "rank" if name == "rankings.csv" else "points"
    row: dict[str, Any] = {"ruleset": ruleset, "kind": kind, "item": item, "quantity": quantity, "old": old,
                           "new": new, "diff": math.nan, "diff_se": math.nan, "z": math.nan,
                           "trials_old": _num(r, "trials_old"), "trials_new": _num(r, "trials_new"),
                           "context_old": _context(r, context, "old"), "context_new": _context(r, context, "new")}
    if r["_merge"] == "left_only":
        row["status"] = "only in old"
        return row
    if r["_merge"] == "right_only":
        row["status"] = "only in new"
        return row
    if not (math.isfinite(old) and math.isfinite(new)):
        row["status"] = "not fought" if kind == "cell" else "within noise"
        return row
    row["diff"] = new - old
    if old == new:
        # same seed, same units: the same dice gave the same number; no noise in the difference
        row.update(diff=0.0, diff_se=0.0, z=0.0, status="identical")
        return row
    se = math.hypot(_se(r, quantity, se_how, "old"), _se(r, quantity, se_how, "new"))
    row["diff_se"] = se
    if not math.isfinite(se):
        row["status"] = "within noise"
        return row
    row["z"] = row["diff"] / se if se > 0 else math.copysign(math.inf, row["diff"])
    row["status"] = "changed" if abs(row["z"]) > z else "within noise"
    return row


def _context(r: pd.Series, context: str, side: str) -> str:
    """``"trials 65536"``, ``"rank 2"``, ``"points 30"``; ``"exact"`` for an exact cell (its errors are 0, so any
    difference between two exact cells is a change, however small: what changed, exactly)."""
    if context == "trials" and str(r.get(f"method_{side}", "")) == "exact":
        return "exact"
    return f"{context} {_fmt(_num(r, f'{context}_{side}'))}"


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:.4g}"


# ----------------------------------------------------------------------- plots
@plain_text_plots
def plot_cells(diff: RunDiff, ax: Any = None, *, quantity: str = "p_attacker", title: str | None = None) -> Any:
    """Before against after for every matrix cell: identical cells on the diagonal, changes in colour.

    Each changed cell has a 95% bar for its difference (``1.96 x diff_se``, drawn on
    the after value).
    """
    from .plot_layout import legend_outside
    from .plots import LOSS, WIN, _axes

    ax = _axes(ax, (5.2, 5.0))
    t = diff.table[(diff.table["kind"] == "cell") & (diff.table["quantity"] == quantity)]
    t = t[np.isfinite(t["old"].astype(float)) & np.isfinite(t["new"].astype(float))]
    # a cell's colour is its most-changed number's status, so the legend counts what the table's counts do
    worst = _item_status(diff.table[diff.table["kind"] == "cell"]).set_index(["ruleset", "item"])["status"]
    t = t.assign(status=[worst.get((r, i), s) for r, i, s in zip(t["ruleset"], t["item"], t["status"])])
    styles = (("identical", "#bdbdbd", "identical (same dice)", "o", None),
              ("within noise", WIN, "moved within the noise", "o", None),
              ("changed", LOSS, f"changed (beyond {diff.z:g} s.e.)", "D", 1.96))
    for status, colour, label, marker, bar in styles:
        s = t[t["status"] == status]
        if not len(s):
            continue
        err = bar * s["diff_se"].to_numpy(float) if bar else None
        ax.errorbar(s["old"].to_numpy(float), s["new"].to_numpy(float), yerr=err, fmt=marker, ms=4,
                    color=colour, ecolor=colour, capsize=2 if bar else 0, label=f"{label}: {len(s)}")
    ax.plot([0, 1], [0, 1], color="black", lw=0.6, ls=":")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_aspect("equal")
    label = dict((q, lab) for _, _, q, _, lab in QUANTITIES).get(quantity, quantity)
    ax.set_xlabel(f"before: {label}")
    ax.set_ylabel(f"after: {label}")
    ax.set_title(title or f"Matrix cells, before and after ({label})")
    if len(t):  # beside the axes: any corner of a before/after square can hold data
        legend_outside(ax, fontsize=7)
    else:
        ax.text(0.5, 0.5, "no cell in both runs", ha="center", va="center", transform=ax.transAxes)
    return ax


@plain_text_plots
def plot_changes(diff: RunDiff, ax: Any = None, *, kind: str = "fair price", quantity: str | None = None,
                 top: int = 15, title: str | None = None) -> Any:
    """Before and after of the items of one kind that changed most (largest |z|), with 95% bars.

    Grey dots are before, coloured dots after (red: changed beyond the noise, blue:
    within it); the bar on the after value is ``1.96 x diff_se``.
    """
    from .plot_layout import legend_outside
    from .plots import DRAW, LOSS, WIN, _axes

    t = diff.table[diff.table["kind"] == kind]
    if quantity is not None:
        t = t[t["quantity"] == quantity]
    t = t[t["status"].isin(["changed", "within noise"])]
    t = t.assign(_a=t["z"].abs()).sort_values("_a", ascending=False).head(top).iloc[::-1]
    ax = _axes(ax, (6.4, 1.2 + 0.35 * max(len(t), 1)))
    label = dict((q, lab) for _, _, q, _, lab in QUANTITIES).get(quantity or "", quantity or kind)
    ax.set_title(title or f"{kind.capitalize()}: the largest moves, before and after")
    ax.set_xlabel(label)
    if not len(t):
        ax.text(0.5, 0.5, f"no {kind} moved", ha="center", va="center", transform=ax.transAxes)
        ax.set_yticks([])
        return ax
    y = np.arange(len(t))
    old, new = t["old"].to_numpy(float), t["new"].to_numpy(float)
    changed = (t["status"] == "changed").to_numpy()
    ax.hlines(y, np.minimum(old, new), np.maximum(old, new), color=DRAW, lw=1)
    ax.plot(old, y, "o", color=DRAW, ms=5, label="before")
    err = 1.96 * t["diff_se"].to_numpy(float)
    for mask, colour, what in ((changed, LOSS, "after: changed"), (~changed, WIN, "after: within noise")):
        if mask.any():
            ax.errorbar(new[mask], y[mask], xerr=err[mask], fmt="D", ms=5, color=colour, ecolor=colour, capsize=2,
                        label=what)
    names = t["item"] if t["quantity"].nunique() == 1 else t["item"] + " (" + t["quantity"] + ")"
    ax.set_yticks(y, list(names))
    legend_outside(ax, fontsize=7)  # beside the axes, never over the data
    return ax


def diff_figure(diff: RunDiff) -> bytes:
    """The before/after figure of ``meleelab diff --out`` as PNG bytes: cells, rankings, fair prices.

    Unit names are plain text (never mathtext) and missing glyphs give one warning (:mod:`analysis.report.render`).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(17.0, 5.6))
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.0, 1.15, 1.15]})
    plot_cells(diff, ax=axes[0])
    plot_changes(diff, ax=axes[1], kind="ranking", quantity="strength", title="Bradley-Terry strength")
    plot_changes(diff, ax=axes[2], kind="fair price", quantity="fair_price", title="Fair prices (points)")
    return figure_png(fig, dpi=100)
