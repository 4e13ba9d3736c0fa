"""The report side of ``--baseline``: find the earlier report, compare this one with it.

:func:`compare_with_baseline` writes the files the comparison reads
(``matrix_long.csv``, ``rankings.csv``, ``fair_points.csv`` and the ruleset and
seed of ``metadata.json``, exactly as :meth:`analysis.report.build.Report.write` writes
them) to a temporary folder and runs :func:`analysis.report.diff.diff_runs` on the two
folders, so a report's "Changes since the baseline" section and ``meleelab diff
OLD NEW`` always agree.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from sim.errors import InputError

from .io import atomic_write_text, to_json
from .safe_csv import to_csv

__all__ = ["baseline_folder", "compare_with_baseline"]


def baseline_folder(baseline: str | Path, ruleset: str) -> Path:
    """The run of ``ruleset`` in the report folder ``baseline`` (a ``report`` or a ``report --all`` folder).

    Raises
    ------
    InputError
        ``baseline`` is not a report folder, or holds no run of this ruleset.
    """
    from ..stats.checks import check_path
    from .diff import find_runs

    runs = find_runs(check_path(baseline, "baseline"))
    if ruleset in runs:
        return runs[ruleset]
    if list(runs) == ["?"]:
        return runs["?"]
    raise InputError(f"--baseline {baseline}: no {ruleset} report there (it has: {', '.join(runs)})")


def compare_with_baseline(rep: Any, old: str | Path) -> Any:
    """``rep`` against the report folder ``old`` (:func:`analysis.report.diff.diff_runs`, on the files ``rep`` would write)."""
    from ..runs.matrix import LONG_COLUMNS
    from .diff import diff_runs
    from .safe_csv import frame_to_csv

    with tempfile.TemporaryDirectory(prefix="meleelab-baseline-") as tmp:
        new = Path(tmp)
        atomic_write_text(new / "matrix_long.csv", frame_to_csv(rep.matrix.long[LONG_COLUMNS]))
        for name in ("rankings", "fair_points"):
            atomic_write_text(new / f"{name}.csv", to_csv(rep.balance.tables()[name]))
        atomic_write_text(new / "metadata.json", to_json({"ruleset": {"id": rep.ruleset.id},
                                                          "settings": {"seed": rep.settings["seed"]}}))
        diff = diff_runs(old, new)
    return dataclasses.replace(diff, new="this report")
