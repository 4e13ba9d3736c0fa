"""``meleelab rebalance``: one balanced points table for a roster, proved by a fresh run."""

from __future__ import annotations

import click

import sim

from ..report.io import check_output_dir
from .options import (Failure, OutFolder, count_bar, method_option, precision_options, roster_arg, roster_option,
                      score_option)
from .scale import announce_long_runs as _announce_long_runs
from .scale import echo_written as _echo_written
from .scale import executor_for as _executor
from .scale import fresh_option as _fresh_option
from .scale import out_folder as _out_folder
from .scale import scheduler_option as _scheduler_option
from .types import WORKERS, Number

__all__ = ["rebalance_cmd"]


@click.command("rebalance")
@click.argument("ruleset")
@roster_option
@click.option("--budget", type=str, default=None, metavar="POINTS",
              help="Equal-points budget (default: the roster's).")
@click.option("--lock", "lock", multiple=True, metavar="UNIT",
              help="A unit whose price stays, whatever the advice (repeatable).")
@click.option("--round-to", type=Number(0, 1e9), default=1, show_default=True,
              help="Round every proposed price to a multiple of this many points (down or up, whichever keeps the "
                   "whole table nearest 50%).")
@click.option("--tolerance", type=Number(0, 25), default=2, show_default=True, metavar="PP",
              help="A unit is balanced when its score is within PP percentage points of 50% (0 < PP <= 25).")
@click.option("--max-change", type=float, default=None, metavar="PCT",
              help="The most any one price may change, in per cent (0 < PCT < 1000); a unit that needs more is named "
                   "with the change it needs and moved as far as the cap allows.")
@click.option("--drop-unbalanceable", is_flag=True,
              help="Leave the units that points cannot balance out of rebalanced.toml and the proof (by default they "
                   "stay, at the price written, as opponents).")
@click.option("--robustness/--no-robustness", default=None,
              help="Also score both tables at 0.5x, 1x and 2x the budget and three seeds (robustness.csv and a plot; "
                   "default: for rosters of at most 20 units, a larger one says it left it out).")
@precision_options
@score_option
@method_option
@click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
              help="A state, a unit field by role (attacker.defence=3) or an option (KEY=VALUE).")
@click.option("--rules-defaults", is_flag=True,
              help="Fight under the rules' own defaults instead of the ruleset's balance settings.")
@click.option("--workers", type=WORKERS, default=1, show_default=True,
              help="Local processes (same result for any value; at most the cores).")
@_scheduler_option
@click.option("--out", type=OutFolder(), default=None,
              help="Directory for rebalanced.toml, changes.csv, verification.csv, report.html and summary.md "
                   "(replaced as a whole when the run ends).")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@_fresh_option
def rebalance_cmd(ruleset: str, roster: str | None, budget: str | None, lock: tuple[str, ...], round_to: float,
                  tolerance: float, max_change: float | None, drop_unbalanceable: bool, robustness: bool | None,
                  seed: int, half_width: float, max_trials: int, score_half_width: float, method: str,
                  settings: tuple[str, ...],
                  rules_defaults: bool, workers: int, scheduler: str | None, out: str | None, quiet: bool,
                  fresh: bool) -> None:
    """The fewest price changes that balance the roster, written as rebalanced.toml and proved on that file.

    The same advice as `meleelab report` at the same settings and seed: the
    fewest price changes under which every unit that points can balance scores
    within --tolerance of 50% against the repriced roster at equal points
    (expected fielding), rounded to --round-to down or up for the whole table
    at once. Every other price stays, so the roster's total moves by the
    changes (the output says by how much). The file written is then fought
    again at a seed derived from --seed and the table, and its advice there is
    the proof ("nothing to change"). Units that points alone cannot balance stay
    in the file at the price written, as opponents, and are named with the
    reason (--drop-unbalanceable leaves them out).
    """
    from sim.budget import parse_budget

    from ..report.rebalance_page import headline, write_rebalance
    from ..runs.rebalance import check_rebalance, rebalance

    if not 0 < tolerance <= 25:
        raise Failure(f"--tolerance: got {tolerance:g}, expected percentage points in (0, 25]")
    if not round_to > 0:
        raise Failure(f"--round-to: got {round_to:g}, expected a positive number of points")
    if max_change is not None and not 0 < max_change < 1000:
        raise Failure(f"--max-change: got {max_change:g}, expected a percentage in (0, 1000)")
    rs = sim.get_ruleset(ruleset)
    ros = roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    given = parse_budget(budget, "--budget") if budget is not None else None
    # every check that needs no fight, before the output folder is touched
    in_force, _ = check_rebalance(rs, ros, budget=given, lock=list(lock), round_to=float(round_to),
                                  tolerance=tolerance / 100, seed=seed, half_width=half_width, max_trials=max_trials,
                                  states=states, overrides=overrides, options=options, workers=workers,
                                  from_text=True, rules_defaults=rules_defaults, method=method,
                                  score_half_width=score_half_width)
    if out is not None:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster)], "rebalance")
    click.get_current_context().with_resource(_announce_long_runs(quiet))  # estimates, and the store's notes
    update, close = count_bar(True, "rebalance", "cells")
    try:
        store = folder.open_store(fresh=fresh) if folder else None
        if not quiet:  # what the run will cost, before it starts
            _announce_rebalance(rs, ros, in_force, seed=seed, half_width=half_width, max_trials=max_trials,
                                states=states, overrides=overrides, options=options, rules_defaults=rules_defaults,
                                method=method, workers=workers if scheduler is None else 1, store=store,
                                score_half_width=score_half_width)
        with _executor(scheduler, workers) as executor:
            result = rebalance(rs, ros, budget=given, lock=list(lock), round_to=float(round_to),
                               tolerance=float(tolerance) / 100, seed=seed, half_width=half_width,
                               max_trials=max_trials, states=states, overrides=overrides, options=options,
                               workers=workers, from_text=True, executor=executor, rules_defaults=rules_defaults,
                               method=method, store=store, max_change=None if max_change is None else max_change / 100,
                               drop_unbalanceable=drop_unbalanceable, robustness=robustness,
                               score_half_width=score_half_width,
                               progress=None if quiet else lambda line: click.echo(line, err=True))
        paths = folder.replace(lambda d: write_rebalance(result, d)) if folder else []
    except BaseException:
        if folder:
            folder.close()
        raise
    finally:
        close()
    if folder:
        folder.close()
    click.echo(f"{rs.id}: rebalanced at {result.budget:g} points ({ros.source})")
    for line in headline(result):
        click.echo(line)
    click.echo("")
    width = max(len(u) for u in result.changes["unit"])
    verdicts = dict(zip(result.verification["unit"], result.verification["verdict_before"]))
    for r in result.changes.itertuples():
        mark = (f"  ({verdicts.get(r.unit, '')})" if r.changed else
                "  (left out of the file)" if r.unit in result.dropped else "  (unchanged)")
        click.echo(f"  {r.unit:<{width}}  {r.old_points:>8g} -> {r.new_points:<8g}{mark}")
    _echo_written(paths)


def _announce_rebalance(rs: sim.Ruleset, ros: sim.Roster, budget: float, **run: object) -> None:
    """The estimate of the first matrix and the bound of the search (:func:`analysis.runs.preview.rebalance_preview`),
    printed when it is over two seconds."""
    from ..runs.preview import rebalance_preview
    from .scale import told

    preview = rebalance_preview(rs, ros, budget, from_text=True, **run)  # type: ignore[arg-type]
    if told(preview, False):
        click.echo(f"meleelab: estimate: {preview.text()}; Ctrl-C stops it (finished cells are kept with --out)",
                   err=True)
