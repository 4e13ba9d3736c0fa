"""The files of a run: a matrix's and a balance summary's tables, written atomically and deterministically.

Runs (:mod:`analysis.runs`) return data; what a person or a spreadsheet reads is
written here (and by the CLI). CSV text goes through :mod:`.safe_csv` (fixed
float format, formulas neutralised), files through :mod:`.io` (temporary file,
then rename): the same seed and settings give byte-identical files, on any machine with the same
versions (the tables the kernels draw from do not depend on the CPU: :mod:`sim.kernels.portable`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..runs.matrix import LONG_COLUMNS
from .io import atomic_write_bytes, atomic_write_text, to_json
from .render import figure_png
from .safe_csv import frame_to_csv, to_csv

__all__ = ["write_matrix", "matrix_png", "write_balance"]


def write_matrix(matrix: Any, out_dir: str | Path, *, png: bool = True) -> list[Path]:
    """Write ``matrix_long.csv``, ``matrix.csv``, ``matrix.json`` and ``matrix.png`` atomically.

    The CSV files are byte-identical for the same seed and settings (no
    timestamps, fixed float format).
    """
    out = Path(out_dir)
    paths = [
        atomic_write_text(out / "matrix_long.csv", frame_to_csv(matrix.long[LONG_COLUMNS])),
        atomic_write_text(out / "matrix.csv", frame_to_csv(matrix.wide("p_attacker"), index=True)),
        atomic_write_text(out / "matrix.json", to_json({"ruleset": matrix.ruleset, "units": matrix.units,
                                                        "excluded": matrix.excluded, "budget": matrix.budget,
                                                        "copies": matrix.copies, "profiles": matrix.profiles,
                                                        "settings": matrix.settings,
                                                        "provenance": matrix.provenance}) + "\n"),
    ]
    if png:
        paths.append(atomic_write_bytes(out / "matrix.png", matrix_png(matrix)))
    return paths


def matrix_png(matrix: Any) -> bytes:
    """The heatmap of ``p_attacker`` as PNG bytes (drawn by :func:`analysis.report.plots.matrix_heatmap`; over 20
    units without the numbers in its cells, which are in ``matrix.csv``)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    from .large_rosters import heatmap_size, numbered
    from .plots import matrix_heatmap

    n = max(len(matrix.units), 1)  # over 20 units colours only, a fifth of an inch a cell (.large_rosters)
    fig = Figure(figsize=(2.0 + 0.75 * n, 1.5 + 0.65 * n) if numbered((n, n)) else
                 heatmap_size(n, n, max((len(str(u)) for u in matrix.units), default=1)))
    ax = fig.add_subplot()
    from .cell_stats import method_note

    note = method_note(matrix.long)
    matrix_heatmap(matrix.wide("p_attacker"), ax=ax, title=f"P(attacker wins) (%){note}" if note else None)
    return figure_png(fig, dpi=110)


def write_balance(summary: Any, out_dir: str | Path) -> list[Path]:
    """Write every balance table as ``<name>.csv`` (atomic, deterministic) and ``balance_model.txt``."""
    out = Path(out_dir)
    paths = [atomic_write_text(out / f"{name}.csv", to_csv(frame)) for name, frame in summary.tables().items()]
    paths.append(atomic_write_text(out / "balance_model.txt", summary.model_text() + "\n"))
    return paths
