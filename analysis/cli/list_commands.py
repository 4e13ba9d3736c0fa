"""``meleelab lists`` and ``meleelab meta``: army lists against each other, and the lists the prices make strong."""

from __future__ import annotations

import sys
from typing import Any

import click

import sim

from ..report.io import check_output_dir
from .options import Failure, OutFolder, balance_rounds_options, budget_option, count_bar, method_option, \
    precision_options, roster_arg, roster_option
from .scale import announce_long_runs as _announce_long_runs
from .scale import echo_written as _echo_written
from .scale import executor_for as _executor
from .scale import fresh_option as _fresh_option
from .scale import note_shortfall as _note_shortfall
from .scale import out_folder as _out_folder
from .scale import scheduler_option as _scheduler_option
from .scale import write_metadata as _write_metadata
from .types import NOTES, TRIALS, WORKERS, Number

__all__ = ["lists_cmd", "meta_cmd"]


def _common(f: Any) -> Any:
    """--set, rounds, --workers, --scheduler, --quiet, --out, --method, --budget, --lists, --roster, --fresh."""
    f = _fresh_option(f)
    f = method_option(f)
    f = budget_option(f)
    f = click.option("--out", type=OutFolder(), default=None,
                     help="Directory for the CSV/PNG files and report.md (replaced as a whole when the run ends).")(f)
    f = click.option("--quiet", is_flag=True, help="No progress.")(f)
    f = _scheduler_option(f)
    f = click.option("--workers", type=WORKERS, default=1, show_default=True,
                     help="Local processes (same result for any value; at most the cores).")(f)
    f = balance_rounds_options(f)
    f = click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
                     help="A state by role (attacker.charging=false) or an option (pairing=random).")(f)
    f = click.option("--lists", "lists_file", type=str, default=None, metavar="FILE",
                     help="A TOML file of [[list]] tables (name, units) over the roster's units, besides the "
                          "roster's own lists.")(f)
    return roster_option(f)


def _checked(ruleset: str, roster: str | None, lists_file: str | None, settings: tuple[str, ...]) -> tuple:
    """The ruleset, the roster with its lists, and the --set values: refused in one line before any output."""
    rs = sim.get_ruleset(ruleset)
    if not rs.fields_lists:
        raise Failure(f"{rs.id}: {rs.lists_refusal}, so army lists are not available (they are in "
                      + ", ".join(r.id for r in sim.rulesets() if r.fields_lists) + ")")
    from ..runs.lists import roster_with_lists

    ros = roster_with_lists(rs, roster_arg(rs.id, roster), lists_file)
    states, overrides, options = sim.parse_settings(rs, settings)
    if overrides:
        side, fields = next(iter(overrides.items()))
        raise Failure(f"--set {side}.{next(iter(fields))}: a list's units fight as the roster defines them; "
                      "change the unit in the roster (or add a variant of it) instead")
    return rs, ros, states, options


@click.command("lists")
@click.argument("ruleset")
@_common
@precision_options
@click.option("--values/--no-values", default=True, show_default=True,
              help="Also find what each unit adds to each list (unit_value.csv): more fights.")
def lists_cmd(ruleset: str, roster: str | None, lists_file: str | None, settings: tuple[str, ...], rounds: str | None,
              max_rounds: int | None, rules_defaults: bool, workers: int, scheduler: str | None, quiet: bool,
              out: str | None, budget: Any, method: str, fresh: bool, seed: int, half_width: float, max_trials: int,
              values: bool) -> None:
    """Every army list as attacker against every list as defender; their rankings, Nash mix and the units' values.

    Lists are the roster's [[list]] tables and those of --lists FILE; each must cost at most
    the budget (--budget, default the roster's). Writes OUT/matrix_long.csv (attacker and
    defender are lists), matrix.csv, matrix.json, matrix.png, lists.csv, rankings.csv,
    nash.csv, unit_value.csv, unit_ranking.csv, unit_value.png, report.md and metadata.json.
    """
    rs, ros, states, options = _checked(ruleset, roster, lists_file, settings)
    from sim.budget import resolve_budget

    from ..runs.lists import check_lists

    in_force = resolve_budget(budget, ros.budget, "--budget")
    check_lists(rs, ros, list(ros.lists), in_force)
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster), ("--lists", lists_file)], "lists")
    from ..report.lists_files import ListsReport, nash_table, write_lists
    from ..runs.lists import list_matrix, list_scores, list_table
    from ..runs.unit_value import unit_values
    from .tables import matrix_text

    update, close = count_bar(quiet, f"{rs.id} lists", "cells")
    click.get_current_context().with_resource(_announce_long_runs())
    try:
        with _executor(scheduler, workers) as executor:
            m = list_matrix(rs, ros, half_width=half_width, max_trials=max_trials, seed=seed, rounds=rounds,
                            max_rounds=max_rounds, rules_defaults=rules_defaults, method=method, states=states,
                            options=options, workers=workers, progress=update, from_text=True, budget=budget,
                            executor=executor, store=folder.open_store(fresh=fresh) if folder else None)
            uv = unit_values(m, progress=update) if values else None
    except BaseException:
        if folder:
            folder.close()
        raise
    finally:
        close()
    scores = list_scores(m)
    rep = ListsReport(m, list_table(ros, m.units), scores, nash_table(m), uv)
    click.echo(f"{rs.id}: {len(m.units)} army lists ({ros.source}; "
               + (f"budget {m.budget:g}" if m.budget is not None else "no budget") + "), P(attacker wins):")
    click.echo(matrix_text(m.wide("p_attacker")))
    click.echo("\nrankings (score: win + draw/2 against every list, both roles; Nash: the equilibrium mix):")
    weights = dict(zip(rep.nash["list"], rep.nash["weight"]))
    for r in scores.itertuples():
        click.echo(f"  {r.rank:>2}. {r.list}: {100 * r.score:.1f}% ± {196 * r.score_se:.1f}  "
                   f"(Nash {100 * weights.get(r.list, 0):.0f}%; {r.points:g} points)")
    if uv is not None:
        click.echo("\nwhat each unit adds to a list (points of the list's other units it is worth; median over the "
                   "lists holding it):")
        for r in uv.ranking.itertuples():
            med = f"{r.median_value:.1f}" if r.lists else "-"
            click.echo(f"  {r.unit}: price {r.price:g}, value {med} in {r.lists} list{'s' if r.lists != 1 else ''}"
                       f" ({r.verdict})")
    from ..runs.jobs import shortfall

    gap = shortfall(((f"{a} vs {d}", r.tally) for (a, d), r in m.results.items()), half_width)
    _note_shortfall(gap, half_width, max_trials)
    if folder:
        meta = {"command": "lists", "ruleset": rs.id, "lists": len(m.units), "cells": int(len(m.long)),
                "resumed_cells": m.resumed_cells + (uv.resumed if uv is not None else 0), "half_width": half_width,
                "max_trials": max_trials, "method": method, "budget": m.budget,
                "variants": len(uv.variants) if uv is not None else 0,
                **{k: v for k, v in gap.items() if k != "cells"}}
        _echo_written(folder.replace(lambda d: write_lists(rep, d) + [_write_metadata(d, meta)]))


@click.command("meta")
@click.argument("ruleset")
@_common
@click.option("--seed", type=int, default=2026, show_default=True, help="Seed (the same command gives the same meta).")
@click.option("--half-width", type=Number(0, 0.5, hi_open=True), default=0.01, show_default=True,
              help="Target 95% half-width of each cell between the meta's candidate lists.")
@click.option("--max-trials", type=TRIALS, default=32_768, show_default=True, help="Trial cap per cell.")
@click.option("--screen-trials", type=TRIALS, default=4096, show_default=True,
              help="Fights per cell when the search screens candidate lists against the mix.")
@click.option("--tolerance", type=Number(0, 0.5), default=0.02, show_default=True,
              help="Stop when no list the search finds scores more than 50% + this against the meta's mix.")
@click.option("--max-iterations", type=click.IntRange(1, 1000), default=30, show_default=True,
              help="At most this many lists added.")
def meta_cmd(ruleset: str, roster: str | None, lists_file: str | None, settings: tuple[str, ...], rounds: str | None,
             max_rounds: int | None, rules_defaults: bool, workers: int, scheduler: str | None, quiet: bool,
             out: str | None, budget: Any, method: str, fresh: bool, seed: int, half_width: float, max_trials: int,
             screen_trials: int, tolerance: float, max_iterations: int) -> None:
    """The lists the prices make strong at a budget: a double oracle over compositions (see docs/guide.md).

    Starts from the roster's lists within the budget and each unit alone at it, solves their
    game, searches for a list that beats the mix, adds it, and stops when none beats it by
    more than --tolerance. Writes OUT/meta.csv (list, weight, units), meta_units.csv (each
    unit's share of the meta; the units no meta list takes), meta_lists.csv, meta_log.csv,
    meta.png, meta.json, report.md and metadata.json.
    """
    rs, ros, states, options = _checked(ruleset, roster, lists_file, settings)
    from sim.budget import resolve_budget

    in_force = resolve_budget(budget, ros.budget, "--budget")
    if in_force is None:
        raise Failure(f"meta {rs.id}: give --budget POINTS (the roster has no budget): the lists are built at it")
    from ..runs.meta import meta_units

    meta_units(rs, ros, in_force)  # a budget that fields no unit: one line before the output folder
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster), ("--lists", lists_file)], "meta")
    from ..report.lists_files import write_meta
    from ..runs.meta import meta

    def say(text: str) -> None:
        if not quiet:
            click.echo(f"meleelab: {text}", err=True)

    say(f"meta: the search fights its candidate lists against the mix ({screen_trials:,} fights a cell) and the "
        "lists it keeps against each other; expect minutes (a line per iteration follows)")
    try:
        with _executor(scheduler, workers) as executor:
            res = meta(rs, ros, budget=in_force, seed=seed, half_width=half_width, max_trials=max_trials,
                       screen_trials=screen_trials, tolerance=tolerance, max_iterations=max_iterations,
                       rounds=rounds, max_rounds=max_rounds, rules_defaults=rules_defaults, states=states,
                       options=options, method=method, workers=workers, executor=executor,
                       store=folder.open_store(fresh=fresh) if folder else None, progress=say)
    except BaseException:
        if folder:
            folder.close()
        raise
    click.echo(f"{rs.id} meta at {in_force:g} points ({ros.source}): "
               + ("converged" if res.converged else f"not converged after {max_iterations} iterations")
               + f" in {len(res.log)} iterations, {res.seconds:.0f} s")
    for r in res.lists.itertuples():
        click.echo(f"  {100 * r.weight:5.1f}%  {r.list}  ({r.points:g} points: {r.units})")
    used, left = res.units_used, res.units_left_out
    click.echo(f"its lists use {len(used)} of {len(used) + len(left)} units: " + ", ".join(
        f"{r.unit} {100 * r.share:.0f}%" for r in res.units[res.units["in_meta"]].itertuples()))
    click.echo("no meta list takes: " + (", ".join(left) if left else "(every unit is used)"))
    if not res.converged:
        NOTES.append(f"the meta did not converge in {max_iterations} iterations (--max-iterations): its mix may still "
                     "be beaten")
    if folder:
        meta_json = {"command": "meta", "ruleset": rs.id, "budget": in_force, "converged": res.converged,
                     "iterations": len(res.log), "seconds": res.seconds, "cells": res.settings.get("cells_fought"),
                     "units_used": len(used)}
        _echo_written(folder.replace(lambda d: write_meta(res, d) + [_write_metadata(d, meta_json)]))
    sys.stdout.flush()
