"""Which folders meleelab wrote, so that only those are ever replaced (and so deleted) as a whole.

Every folder a run writes gets a marker file, :data:`MARKER` (``.meleelab``):
JSON naming the program, its version, the command and every entry of that
folder (files, and sub-folders with a trailing ``/``). A folder may be replaced
only if every entry in it, at every depth, is named by its folder's marker,
apart from the results store and the temporary files of an interrupted write.
So a file the user dropped into an output folder later, or a folder of the
user's own CSV, Markdown or HTML files, is never swept away: :func:`foreign_entry`
names the first entry meleelab did not write and the run is refused.

Folders written before markers existed (the committed ``reports/`` and its
per-ruleset folders) are recognised by their exact file names instead
(:data:`KINDS`, a transition rule): a folder without a marker is meleelab's if
its files are one command's known output (its required files present, nothing
else), and its sub-folders are meleelab's in turn. A report folder's own
``metadata.json`` lists the files it wrote (``files``), which are accepted too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MARKER", "KINDS", "foreign_entry", "write_markers", "STORE_DIR", "STORE_FILE"]

#: The marker file written into every output folder.
MARKER = ".meleelab"
#: The results store's folder inside an output folder, and its database file.
STORE_DIR = ".meleelab-store"
STORE_FILE = "results.sqlite"
#: What the store folder may hold: the database, SQLite's journal files.
_STORE_NAMES = {STORE_FILE, f"{STORE_FILE}-wal", f"{STORE_FILE}-shm", f"{STORE_FILE}-journal"}

_BALANCE = {"rankings.csv", "side_averaged.csv", "payoff.csv", "nash.csv", "dominated.csv", "cycles.csv",
            "fair_points.csv", "points_efficiency.csv", "model_misfit.csv", "copy_curves.csv", "balance_model.txt"}
_MATRIX = {"matrix_long.csv", "matrix.csv", "matrix.json", "matrix.png"}
_REPORT = _BALANCE | _MATRIX | {"report.html", "summary.md", "metadata.json", "units.csv", "switches.csv",
                                "one_for_one_long.csv", "one_for_one.png", "baseline_diff.csv"}

#: Output folders written before markers, by their file names: kind -> (required names, allowed names).
KINDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "report": (frozenset({"report.html", "summary.md", "metadata.json", "matrix_long.csv"}), frozenset(_REPORT)),
    "report --all": (frozenset({"index.html", "index.md"}), frozenset({"index.html", "index.md"})),
    "matrix": (frozenset({"matrix_long.csv", "matrix.csv", "matrix.json"}), frozenset(_MATRIX | {"metadata.json"})),
    "balance": (frozenset({"rankings.csv", "balance_model.txt"}),
                frozenset(_BALANCE | _MATRIX | {"metadata.json"})),
    "sweep": (frozenset({"sweep.csv"}), frozenset({"sweep.csv", "sweep_marginal.csv", "sweep.png", "metadata.json"})),
    "compare": (frozenset({"compare.csv"}), frozenset({"compare.csv"})),
    "diff": (frozenset({"diff.csv"}), frozenset({"diff.csv", "diff_changed.csv", "diff.png"})),
}


def _transient(entry: Path) -> bool:
    """A temporary file of an interrupted atomic write or folder check (removed by the next write anyway)."""
    name = entry.name
    return entry.is_file() and not entry.is_symlink() and name.startswith(".") and \
        (name.endswith(".tmp") or name.startswith(".meleelab-write-check."))


def _store_foreign(store: Path) -> Path | None:
    """The first entry of the store folder that is not the store's database or its journals."""
    if store.is_symlink() or not store.is_dir():
        return store
    for entry in sorted(store.iterdir()):
        if entry.name not in _STORE_NAMES or entry.is_symlink() or not entry.is_file():
            return entry
    return None


def _marker_names(folder: Path) -> set[str] | None:
    """The entries named by ``folder``'s marker, or None when it has no readable marker of meleelab's."""
    marker = folder / MARKER
    if marker.is_symlink() or not marker.is_file():
        return None
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeError):
        return None
    if not isinstance(data, dict) or data.get("written_by") != "meleelab" or not isinstance(data.get("entries"), list):
        return None
    return {e for e in data["entries"] if isinstance(e, str)}


def _listed_files(folder: Path) -> set[str]:
    """Names a report folder's ``metadata.json`` says it wrote (plain names of the usual output types)."""
    try:
        files = json.loads((folder / "metadata.json").read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, UnicodeError, AttributeError):
        return set()
    if not isinstance(files, list):
        return set()
    suffixes = (".csv", ".png", ".txt", ".html", ".md", ".json")
    return {f for f in files if isinstance(f, str) and "/" not in f and f.endswith(suffixes)}


def _unknown_file(files: set[str], folders: list[Path], folder: Path) -> str | None:
    """For a folder without a marker: None if its files are exactly one command's output (transition
    rule), else the file to name (one no such output holds, or the first when no output matches at all)."""
    if not files:
        return None if not folders else f"{folders[0].name}/"  # only folders: nobody's known output
    best = None
    for kind, (required, allowed) in KINDS.items():
        if folders and kind != "report --all" or not required <= files:
            continue
        if kind == "report":
            allowed = allowed | _listed_files(folder)
        extra = sorted(files - allowed)
        if not extra:
            return None
        best = best or extra[0]
    return best or min(files)


def foreign_entry(folder: Path) -> Path | None:
    """The first entry under ``folder`` that meleelab did not write, or None (see the module docstring).

    Symbolic links are never meleelab's (replacing the folder would follow none,
    but their targets are the user's).
    """
    entries = sorted(folder.iterdir())
    listed = _marker_names(folder)
    files: set[str] = set()
    folders: list[Path] = []
    for entry in entries:
        if entry.name == MARKER and listed is not None:
            continue
        if entry.name == STORE_DIR:
            bad = _store_foreign(entry)
            if bad is not None:
                return bad
            continue
        if _transient(entry):
            continue
        if entry.is_symlink():
            return entry
        if entry.is_dir():
            if listed is not None and f"{entry.name}/" not in listed:
                return entry
            folders.append(entry)
        elif not entry.is_file() or (listed is not None and entry.name not in listed):
            return entry
        else:
            files.add(entry.name)
    if listed is None:
        unknown = _unknown_file(files, folders, folder)
        if unknown is not None:
            return folder / unknown.rstrip("/")
    for sub in folders:
        bad = foreign_entry(sub)
        if bad is not None:
            return bad
    return None


def write_markers(root: Path, command: str, version: str) -> list[Path]:
    """Write a marker into ``root`` and every folder below it, each naming that folder's entries."""
    written = []
    for here, dirs, names in os.walk(root):
        folder = Path(here)
        dirs[:] = [d for d in dirs if d != STORE_DIR]
        entries = sorted([f"{d}/" for d in dirs] + [n for n in names if n != MARKER])
        written.append(_write_marker(folder / MARKER, command, version, entries))
    return written


def _write_marker(path: Path, command: str, version: str, entries: Iterable[str]) -> Path:
    from .io import atomic_write_text

    text = json.dumps({"written_by": "meleelab", "version": version, "command": command,
                       "entries": list(entries)}, indent=2) + "\n"
    return atomic_write_text(path, text)
