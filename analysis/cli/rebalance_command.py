"""``meleelab rebalance``: one balanced points table for a roster, proved by a fresh run."""

from __future__ import annotations

import click

import sim

from ..report.io import check_output_dir
from .options import Failure, OutFolder, count_bar, method_option, precision_options, roster_arg, roster_option
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
              help="A unit whose price stays (repeatable); with none, the roster's total points stay.")
@click.option("--round-to", type=Number(0, 1e9), default=1, show_default=True,
              help="Round every proposed price to a multiple of this many points (down or up, whichever keeps the "
                   "whole table nearest 50%).")
@click.option("--tolerance", type=Number(0, 25), default=2, show_default=True, metavar="PP",
              help="A unit is balanced when its score is within PP percentage points of 50% (0 < PP <= 25).")
@precision_options
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
                  tolerance: float, seed: int, half_width: float, max_trials: int, method: str,
                  settings: tuple[str, ...],
                  rules_defaults: bool, workers: int, scheduler: str | None, out: str | None, quiet: bool,
                  fresh: bool) -> None:
    """Propose one points table under which every unit scores 50% against the repriced roster, and prove it.

    Prices every unit at equal points (expected fielding) against the roster as
    repriced, repeatedly, until every unit is within --tolerance of 50%; rounds
    the prices to --round-to, down or up for the whole table at once; then
    fights the proposed table again at a seed derived from --seed and shows
    each unit's score before and after, the Nash
    mix before and after and the units still flagged. Units that points alone
    cannot balance are named with the reason.
    """
    from sim.budget import parse_budget

    from ..report.rebalance_page import headline, write_rebalance
    from ..runs.rebalance import check_rebalance, rebalance

    if not 0 < tolerance <= 25:
        raise Failure(f"--tolerance: got {tolerance:g}, expected percentage points in (0, 25]")
    if not round_to > 0:
        raise Failure(f"--round-to: got {round_to:g}, expected a positive number of points")
    rs = sim.get_ruleset(ruleset)
    ros = roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    given = parse_budget(budget, "--budget") if budget is not None else None
    # every check that needs no fight, before the output folder is touched
    in_force, _ = check_rebalance(rs, ros, budget=given, lock=list(lock), round_to=float(round_to),
                                  tolerance=tolerance / 100, seed=seed, half_width=half_width, max_trials=max_trials,
                                  states=states, overrides=overrides, options=options, workers=workers,
                                  from_text=True, rules_defaults=rules_defaults, method=method)
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
                                method=method, workers=workers if scheduler is None else 1, store=store)
        with _executor(scheduler, workers) as executor:
            result = rebalance(rs, ros, budget=given, lock=list(lock), round_to=float(round_to),
                               tolerance=float(tolerance) / 100, seed=seed, half_width=half_width,
                               max_trials=max_trials, states=states, overrides=overrides, options=options,
                               workers=workers, from_text=True, executor=executor, rules_defaults=rules_defaults,
                               method=method, store=store,
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
    for r in result.changes.itertuples():
        mark = "" if r.changed else "  (unchanged)"
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
