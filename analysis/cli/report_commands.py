"""``meleelab balance``, ``report`` and ``diff``: the balance tables, the designer's report, what changed."""

from __future__ import annotations

from typing import Any

import click

import sim

from ..report.io import check_output_dir
from .options import (
    Failure,
    OutFolder,
    count_bar,
    report_run_options,
    roster_arg,
)
from .scale import announce_long_runs as _announce_long_runs
from .scale import echo_written as _echo_written
from .scale import executor_for as _executor
from .scale import fresh_option as _fresh_option
from .scale import note_shortfall as _note_shortfall
from .scale import out_folder as _out_folder
from .scale import write_metadata as _write_metadata
from .types import unit_names

__all__ = ["balance_cmd", "report_cmd", "diff_cmd"]


@click.command("balance")
@click.argument("ruleset")
@report_run_options
@click.option("--from-matrix", type=click.Path(exists=True), default=None,
              help="Use a saved matrix_long.csv (or the folder of `meleelab matrix --out`) instead of simulating.")
@click.option("--out", type=OutFolder(), default=None,
              help="Directory for the CSV tables (written atomically).")
def balance_cmd(ruleset: str, roster: str | None, units: str | None, unit_list: tuple[str, ...], seed: int,
                half_width: float, max_trials: int, score_half_width: float, settings: tuple[str, ...],
                rounds: str | None, max_rounds: int | None, rules_defaults: bool, fielding: str, method: str,
                workers: int, scheduler: str | None, quiet: bool, budget: str | None, from_matrix: str | None,
                out: str | None) -> None:
    """The advice (the fewest price changes that balance the roster), rankings, Nash weights, dominance, cycles.

    Runs the matchup matrix (or reads one with --from-matrix) and prints the
    advice, every unit's verdict from it and the tables; --out writes
    verdicts.csv, rankings.csv, nash.csv, dominated.csv, cycles.csv,
    fair_points.csv, points_efficiency.csv, side_averaged.csv, payoff.csv and
    balance_model.txt (plus matrix_long.csv, matrix.csv and metadata.json when simulated).
    """
    from pathlib import Path

    from ..report.writers import write_balance, write_matrix
    from ..runs.balance import balance_summary

    rs = sim.get_ruleset(ruleset)
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster), ("--from-matrix", from_matrix)], "balance")
    click.get_current_context().with_resource(_announce_long_runs(quiet))
    # the cluster stays up until the command ends (click closes it): the fair prices fight more copy counts on it
    executor = click.get_current_context().with_resource(_executor(scheduler, workers)) if not from_matrix else None
    if from_matrix:
        from ..report.matrix_file import read_matrix_long

        path = Path(from_matrix)
        path = path / "matrix_long.csv" if path.is_dir() else path
        frame = read_matrix_long(path)
        import json

        from sim.files import read_input_text
        from sim.limits import MAX_MATRIX_BYTES

        from ..runs.matrix import saved_matrix

        meta_path = path.parent / "matrix.json"
        try:
            meta = (json.loads(read_input_text(meta_path, "matrix.json", MAX_MATRIX_BYTES, encoding="utf-8"))
                    if meta_path.exists() else None)
        except (ValueError, RecursionError) as e:
            if isinstance(e, sim.MeleelabError):  # a link to a device, a huge file: refused, not read
                raise
            meta = None  # the matrix alone still balances; only the twins' pooling needs matrix.json
        if isinstance(meta, dict) and isinstance(meta.get("ruleset"), str) and meta["ruleset"] != rs.id:
            raise Failure(f"{meta_path}: a {meta['ruleset']} matrix, not {rs.id}: "
                          f"run balance {meta['ruleset']} --from-matrix {from_matrix}")
        matrix: Any = saved_matrix(frame, rs.id, meta if isinstance(meta, dict) else None)
        source = str(path)
    else:
        from ..runs.matrix import matchup_matrix

        ros = roster_arg(rs.id, roster)
        states, overrides, options = sim.parse_settings(rs, settings)
        update, close = count_bar(quiet, f"{rs.id} matrix", "cells")
        try:
            matrix = matchup_matrix(rs, ros, unit_names(units, unit_list), half_width=half_width,
                                    max_trials=max_trials, seed=seed, rounds=rounds, max_rounds=max_rounds,
                                    rules_defaults=rules_defaults, fielding=fielding, method=method,
                                    states=states, overrides=overrides, options=options, workers=workers,
                                    progress=update, from_text=True, budget=budget, executor=executor,
                                    score_half_width=score_half_width)
        finally:
            close()
        source = f"{ros.source}, seed {seed}"
    update, close = count_bar(quiet, "fair prices", "cells")
    try:
        summary = balance_summary(matrix, progress=update)
    finally:
        close()
    from .tables import balance_text

    click.echo(f"({source})")
    click.echo(balance_text(summary))
    meta: dict[str, Any] = {}
    if not from_matrix:
        from ..runs.jobs import shortfall

        gap = shortfall(((f"{a} vs {d}", r.tally) for (a, d), r in matrix.results.items()), half_width)
        _note_shortfall(gap, half_width, max_trials)
        meta = {"command": "balance", "ruleset": rs.id, "cells": len(matrix.long), "half_width": half_width,
                "max_trials": max_trials, **{k: v for k, v in gap.items() if k != "cells"}}
    if folder:
        def write(d: Any) -> list[Any]:
            paths = write_balance(summary, d)
            if not from_matrix:
                paths += [p for p in write_matrix(matrix, d, png=False) if p.suffix in (".csv", ".json")]
                paths.append(_write_metadata(d, meta))
            return paths

        _echo_written(folder.replace(write))


@click.command("report")
@click.argument("ruleset", required=False)
@click.option("--all", "all_rulesets", is_flag=True,
              help="One report per registered ruleset (shipped rosters) + index.")
@click.option("--out", type=OutFolder(), required=True,
              help="Output directory (replaced as a whole when the run ends).")
@click.option("--feature", "features", multiple=True, metavar='"A vs B"',
              help="A matchup to show in detail (repeatable; default: the most lopsided and the most even cell).")
@click.option("--baseline", type=str, default=None, metavar="DIR",
              help="An earlier report folder: adds a section of what changed beyond the noise since then.")
@click.option("--rebalance", "with_rebalance", is_flag=True,
              help="Also propose the whole balanced points table at these settings and prove it with a fresh run "
                   "(the 'Balanced table' section and DIR/rebalance/; 1.7-2.5x the report's time).")
@click.option("--lists", "with_lists", is_flag=True,
              help="Also fight the roster's army lists and search the meta at its budget (warband, duel; "
                   "minutes): DIR/lists/ and DIR/meta/ (as `meleelab lists` and `meleelab meta` write them).")
@click.option("--one-a-side/--no-one-a-side", "one_a_side", default=None,
              help="With a budget, also fight the roster one unit a side (its own section; default: for rosters "
                   "of at most 20 units, a larger report says it left it out).")
@report_run_options
@_fresh_option
def report_cmd(ruleset: str | None, all_rulesets: bool, out: str, features: tuple[str, ...], baseline: str | None,
               with_rebalance: bool, with_lists: bool, one_a_side: bool | None,
               roster: str | None, units: str | None,
               unit_list: tuple[str, ...], seed: int, half_width: float, max_trials: int, score_half_width: float,
               settings: tuple[str, ...],
               rounds: str | None, max_rounds: int | None, rules_defaults: bool, fielding: str, method: str, workers: int,
               scheduler: str | None, quiet: bool, fresh: bool,
               budget: str | None) -> int:
    """A self-contained HTML balance report, a Markdown summary and every CSV for a roster.

    `meleelab report RULESET --out DIR` writes DIR/report.html, summary.md,
    metadata.json and the CSV tables; `meleelab report --all --out reports/`
    writes one folder per ruleset (its shipped roster) and reports/index.html.
    The same seed and settings give byte-identical CSV files (on any machine with the same
    versions of meleelab, NumPy, SciPy and Numba). Finished cells are
    kept in DIR's results store: after an interruption, the same command computes
    only the cells still missing (metadata.json: resumed_cells).
    """
    import os
    import time

    from ..report.build import build_report, write_all

    if all_rulesets:
        if ruleset or roster or units or unit_list or settings or budget is not None or features:
            raise Failure("report --all uses each ruleset's shipped roster and its own budget: "
                          "give no RULESET, --roster, --units, --set, --budget or --feature")
        check_output_dir(out)  # before computing five reports
        update, close = count_bar(quiet, "report --all", "cells")
        try:
            click.get_current_context().with_resource(_announce_long_runs(quiet))
            with _executor(scheduler, workers) as executor:
                result = write_all(out, log=None if quiet else lambda s: click.echo(s, err=True), seed=seed,
                                   half_width=half_width, max_trials=max_trials, rounds=rounds,
                                   max_rounds=max_rounds, rules_defaults=rules_defaults, fielding=fielding,
                                   method=method, workers=workers, executor=executor, fresh=fresh, baseline=baseline,
                                   progress=update, rebalance=with_rebalance, lists=with_lists,
                                   score_half_width=score_half_width)
        finally:
            close()
        click.echo(f"wrote {len(result['ok'])} reports to {out} in {result['seconds']:.1f} s "
                   f"(index: {os.path.join(out, 'index.html')})")
        for rid, why in result["failed"].items():
            click.echo(f"not generated: {rid}: {why}", err=True)
        _note_shortfall(_written_shortfall(out, [h["ruleset"] for h in result["ok"]]), half_width, max_trials)
        return 1 if result["failed"] else 0
    if not ruleset:
        raise Failure("report: name a RULESET or give --all")
    rs = sim.get_ruleset(ruleset)
    ros = roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    if with_lists and not rs.fields_lists:
        raise Failure(f"{rs.id}: {rs.lists_refusal}, so army lists are not available (--lists)")
    check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster)], "report")
    update, close = count_bar(quiet, f"{rs.id} report", "cells")
    start = time.perf_counter()
    click.get_current_context().with_resource(_announce_long_runs(quiet))  # until the command ends: the store's notes
    try:
        with _executor(scheduler, workers) as executor:
            rep = build_report(rs, ros, units=unit_names(units, unit_list), seed=seed, half_width=half_width,
                               max_trials=max_trials, rounds=rounds, max_rounds=max_rounds,
                               rules_defaults=rules_defaults, fielding=fielding, method=method, states=states,
                               overrides=overrides, options=options, workers=workers, progress=update,
                               from_text=True, budget=budget, executor=executor,
                               store=folder.open_store(fresh=fresh), feature=list(features) or None, baseline=baseline,
                               rebalance=with_rebalance, lists=with_lists, score_half_width=score_half_width,
                               one_a_side=one_a_side)
        paths = folder.replace(rep.write_files)
    finally:
        folder.close()
        close()
    if with_rebalance and rep.rebalance is None and rep.rebalance_note:  # the report says so too
        from .types import NOTES

        NOTES.append(f"--rebalance: no balanced table: {rep.rebalance_note}")
    click.echo(f"{rs.id}: {len(rep.matrix.units)} units, {rep.cell_stats()['trials_total']:,} fights, "
               f"{time.perf_counter() - start:.1f} s; wrote {len(paths)} files ({os.path.join(out, 'report.html')})")
    _note_shortfall(_written_shortfall(out, ["."]), half_width, max_trials)
    return 0


@click.command("diff")
@click.argument("old_dir")
@click.argument("new_dir")
@click.option("--z", type=float, default=3.0, show_default=True,
              help="A difference beyond Z standard errors is a change (see analysis/diff.py for the error used).")
@click.option("--out", type=OutFolder(), default=None,
              help="Directory for diff.csv (every number), diff_changed.csv and diff.png (before/after); "
                   "replaced as a whole.")
@click.option("--all", "show_all", is_flag=True, help="Print every change (default: the 40 largest).")
def diff_cmd(old_dir: str, new_dir: str, z: float, out: str | None, show_all: bool) -> None:
    """Which matrix cells, rankings and fair prices changed beyond their noise from OLD_DIR to NEW_DIR.

    Both are folders of `meleelab report` (or `balance --out`), or two `report --all`
    folders (compared ruleset by ruleset). With the same seed, cells whose units did
    not change are identical (the same dice); a change is |new - old| > Z standard errors.
    """
    from ..report.diff import diff_runs
    from .tables import diff_text

    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("OLD_DIR", old_dir), ("NEW_DIR", new_dir)], "diff")  # replaced whole, like every output
    result = diff_runs(old_dir, new_dir, z=z)
    click.echo(diff_text(result, limit=None if show_all else 40))
    if folder:
        for p in folder.replace(result.write_files):
            click.echo(f"wrote {p}")


def _written_shortfall(out: str, folders: list[str]) -> dict[str, Any]:
    """The cells short of the target, summed over the reports just written (read back from their metadata.json)."""
    import json
    from pathlib import Path

    cells, short, widths, units = 0, 0, [], []
    for name in folders:
        try:
            meta = json.loads((Path(out) / name / "metadata.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        cells += int(meta.get("half_width_cells") or 0)
        short += int(meta.get("cells_short_of_half_width") or 0)
        if meta.get("widest_half_width") is not None:
            widths.append(float(meta["widest_half_width"]))
        where = "" if name == "." else f"{name}: "
        units += [(where + str(u["unit"]), float(u["score_half_width"]))
                  for u in meta.get("units_short_of_score_target") or []]
    return {"cells": cells, "cells_short_of_half_width": short, "widest_half_width": max(widths, default=None),
            "units_short_of_score_target": sorted(units, key=lambda uv: -uv[1])}
