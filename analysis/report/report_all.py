"""``report --all``: a report for the shipped roster of every registered ruleset, one folder each, and an index."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import sim

from .build import Report, build_report
from .io import atomic_write_text, check_output_dir

__all__ = ["write_all"]


def write_all(out_dir: str | Path, *, rulesets: Sequence[str] | None = None, log: Callable[[str], None] | None = None,
              fresh: bool = False, **kwargs: Any) -> dict[str, Any]:
    """A report for the default roster of every registered ruleset, one folder each, plus an index.

    A ruleset that fails is recorded in the index with its error and the others go on.
    ``out_dir`` is replaced as a whole at the end (:class:`analysis.report.outdir.OutputFolder`);
    finished matrix cells are kept in its results store, so a rerun after an
    interruption computes only the rest (``fresh=True`` ignores the store).

    Returns
    -------
    dict
        ``{"ok": [headline rows], "failed": {ruleset: message}, "seconds": float, "paths": [...]}``.
    """
    from sim.errors import InputError
    from sim.limits import check_names

    from ..stats.checks import check_callable, check_flag, check_path
    from .outdir import OutputFolder

    out_dir = check_path(out_dir, "out_dir")
    if rulesets is not None:
        rulesets = check_names(rulesets, "rulesets")
        if not rulesets:
            raise InputError("rulesets: an empty list (None: every registered ruleset)")
    check_callable(log, "log")
    check_flag(fresh, "fresh")
    check_output_dir(out_dir)  # before computing any report
    baseline = kwargs.pop("baseline", None)
    rebalance = check_flag(kwargs.pop("rebalance", False), "rebalance")
    lists = check_flag(kwargs.pop("lists", False), "lists")
    baseline_runs: dict[str, Path] = {}
    if baseline is not None:
        from .diff import find_runs

        baseline_runs = find_runs(check_path(baseline, "baseline"))  # a bad folder: one line before any fight
    folder = OutputFolder(out_dir)
    try:
        store = folder.open_store(fresh=fresh)
    except BaseException:
        folder.close()  # a bad store or key file: the lock goes at once
        raise
    known = {r.id for r in sim.rulesets()}
    ids = list(rulesets) if rulesets else [r.id for r in sim.rulesets()]
    reports: list[Report] = []
    failed: dict[str, str] = {}
    start = time.perf_counter()
    try:
        for rid in ids:
            t0 = time.perf_counter()
            try:
                if rebalance:  # the rulesets that field copies (the others have no balanced table)
                    kwargs["rebalance"] = bool(sim.get_ruleset(rid).fields_copies) if rid in known else False
                if lists:  # the rulesets with mixed sides (the others fight one unit a side)
                    kwargs["lists"] = bool(sim.get_ruleset(rid).fields_lists) if rid in known else False
                if baseline is None:
                    rep = build_report(rid, store=store, **kwargs)
                elif rid in baseline_runs:
                    rep = build_report(rid, store=store, baseline=baseline, **kwargs)
                else:
                    rep = dataclasses.replace(build_report(rid, store=store, **kwargs), baseline_note=(
                        f"The baseline {baseline} has no {rid} report (it has: {', '.join(baseline_runs)})."))
                rep.figures()  # drawn now: a plotting failure is this ruleset's, not the write's
                reports.append(rep)
                if log:
                    log(f"{rid}: {len(rep.matrix.units)} units, {rep.cell_stats()['trials_total']:,} fights, "
                        f"{time.perf_counter() - t0:.1f} s" + (f", {rep.matrix.resumed_cells} cells resumed"
                                                               if rep.matrix.resumed_cells else ""))
            except Exception as e:  # noqa: BLE001 - one broken ruleset must not stop the others
                failed[rid] = f"{type(e).__name__}: {' '.join(str(e).split())}"
                if log:
                    log(f"{rid}: FAILED ({failed[rid]})")
        paths = folder.replace(lambda staging: _write_tree(staging, reports, failed))
    finally:
        folder.close()
    return {"ok": [r.headline() for r in reports], "failed": failed, "seconds": time.perf_counter() - start,
            "paths": paths}


def _write_tree(out: Path, reports: Sequence[Report], failed: Mapping[str, str]) -> list[Path]:
    """Every report's folder and the index, into ``out``."""
    from .html import render_index
    from .markdown import index

    paths: list[Path] = []
    for rep in reports:
        paths += rep.write_files(out / rep.ruleset.id)
    headlines = [rep.headline() for rep in reports]
    flags = [flag for flag, on in (("--rebalance", any(r.settings.get("rebalance") for r in reports)),
                                   ("--lists", any(r.lists is not None for r in reports))) if on]
    command = " ".join(["meleelab report --all", *flags, "--out reports/"])  # the index says how it was made
    paths.append(atomic_write_text(out / "index.html", render_index(headlines, failed, command)))
    paths.append(atomic_write_text(out / "index.md", index(headlines, failed, command)))
    return paths
