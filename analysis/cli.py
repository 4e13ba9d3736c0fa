"""``meleelab``: a thin command line over the library.

Every command parses its arguments, calls one library function and prints or
writes what it returns. Bad input prints one line on stderr and exits 2.
"""

from __future__ import annotations

import errno
import io
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import click

import sim
from sim.errors import MeleelabError
from sim.limits import MAX_ROUNDS

from .cli_scale import echo_written as _echo_written
from .cli_scale import executor_for as _executor
from .cli_scale import fresh_option as _fresh_option
from .cli_scale import out_folder as _out_folder
from .cli_scale import scheduler_option as _scheduler_option
from .cli_scale import write_metadata as _write_metadata
from .cli_types import MAX_ROUNDS_TYPE, NOTES, ROUNDS, SEED, TRIALS, WORKERS, Number, unit_names
from .console import rows_text
from .defaults import DEFAULT_HALF_WIDTH, DEFAULT_MAX_TRIALS, DEFAULT_SEED
from .io import check_output_dir, to_json

__all__ = ["main", "cli"]


class Failure(Exception):
    """A one-line error raised by a command."""


def _progress_bar(quiet: bool, desc: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A tqdm progress callback on stderr, or nothing when quiet or not a terminal."""
    if quiet or not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=None, desc=desc, unit="fights", unit_scale=True, file=sys.stderr, delay=0.5, leave=False)

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    return update, bar.close


def _roster_arg(ruleset: str, roster: str | None) -> sim.Roster:
    return sim.load_roster(roster, ruleset) if roster else sim.default_roster(ruleset)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """--version, read when asked (the package metadata is not loaded for every command)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"meleelab, version {sim.__version__}")
        ctx.exit()


def _roster_option(f: Callable | None = None, **kwargs: Any) -> Callable:
    """--roster FILE, the same in every command (sweep adds a flag_value to catch its old bare --roster)."""
    option = click.option("--roster", type=str, default=None, metavar="FILE",
                          help="Roster file (TOML or CSV); default: the shipped roster.", **kwargs)
    return option(f) if f is not None else option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def cli() -> None:
    """meleelab: Monte Carlo balance analysis for melee rules."""


@cli.command("rulesets")
@click.option("--json", "as_json", is_flag=True, help="One JSON array on stdout.")
def rulesets_cmd(as_json: bool) -> None:
    """List the rulesets: id, title, source text, default rounds, origin (built-in or plugin).

    A plugin that could not be loaded is left out, with one warning line on
    stderr saying why; the listing still succeeds.
    """
    from sim.plugins import origin, problems

    rows = [r.describe() | {"origin": origin(r.id)} for r in sim.rulesets()]
    for problem in problems():
        click.echo(f"meleelab: warning: {problem.line}", err=True)
    if as_json:
        click.echo(to_json(rows))
        return
    click.echo(rows_text(rows, ["id", "title", "source", "default_rounds", "origin"],
                         {"source": "source text", "default_rounds": "default rounds"}))


@cli.command("units")
@click.argument("ruleset")
@_roster_option
@click.option("--json", "as_json", is_flag=True)
def units_cmd(ruleset: str, roster: str | None, as_json: bool) -> None:
    """Show the units of a roster and their fields."""
    rs = sim.get_ruleset(ruleset)
    ros = _roster_arg(rs.id, roster)
    rows = [row for u in ros.units.values() for row in rs.unit_rows(u)]
    if as_json:
        click.echo(to_json({"ruleset": rs.id, "source": ros.source, "units": rows}))
        return
    click.echo(f"{rs.id} roster: {ros.source}" + (f" ({ros.description})" if ros.description else ""))
    click.echo(rows_text(rows, list(rows[0]) if rows else []))


def _budget_option(f: Callable) -> Callable:
    """--budget POINTS: equal-points fights (the roster's own budget by default), checked as it is read."""
    def parse(ctx: Any, param: Any, value: str | None) -> Any:
        if value is None:
            return None  # nothing to import: --help and the commands without --budget stay light
        from sim.budget import parse_budget

        return parse_budget(value, "--budget")

    return click.option("--budget", type=str, default=None, metavar="POINTS", callback=parse,
                        help="Equal points: each side fields floor(POINTS / points) copies of its unit "
                             "(default: the roster's budget; 'none': one unit a side).")(f)


def _rounds_option(f: Callable) -> Callable:
    f = click.option("--max-rounds", type=MAX_ROUNDS_TYPE, default=50, show_default=True,
                     help="Cap for --rounds end: a fight still going is a draw.")(f)
    return click.option("--rounds", type=ROUNDS, default=None,
                        help=f'Rounds per fight: 1..{MAX_ROUNDS} or "end" (default: the ruleset\'s).')(f)


@cli.command("fight")
@click.argument("ruleset")
@click.argument("attacker")
@click.argument("defender")
@_roster_option
@click.option("--trials", type=TRIALS, default=1_000_000, show_default=True)
@click.option("--seed", type=SEED, default=None,
              help="Seed (default: fresh entropy, printed so the run can be repeated).")
@_rounds_option
@click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
              help="A state (attacker.evading=true), a unit field (attacker.defence=3) or an option (KEY=VALUE).")
@click.option("--workers", type=WORKERS, default=1, show_default=True,
              help="Local processes (same result for any value; at most the cores).")
@_scheduler_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_budget_option
def fight_cmd(ruleset: str, attacker: str, defender: str, roster: str | None, trials: int, seed: int | None,
              rounds: str | None, max_rounds: int, settings: tuple[str, ...], workers: int, scheduler: str | None,
              as_json: bool, quiet: bool, budget: str | None) -> None:
    """Simulate TRIALS fights of ATTACKER against DEFENDER."""
    rs = sim.get_ruleset(ruleset)
    ros = _roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    update, close = _progress_bar(quiet, f"{attacker} vs {defender}")
    try:
        with _executor(scheduler, workers) as executor:
            result = sim.fight(rs, attacker, defender, trials=trials, seed=seed, rounds=rounds, max_rounds=max_rounds,
                               states=states, overrides=overrides, options=options, workers=workers, roster=ros,
                               progress=update, from_text=True, budget=budget, executor=executor)
    finally:
        close()
    if as_json:
        click.echo(to_json(result.to_dict()))
    else:
        from .cli_tables import fight_text

        click.echo(fight_text(result))


@cli.command("bench")
@click.argument("rulesets", nargs=-1)
@click.option("--json", "as_json", is_flag=True)
@click.option("--seconds", type=Number(0, 60), default=0.5, show_default=True,
              help="Minimum time per measurement (more than 0, at most 60).")
def bench_cmd(rulesets: tuple[str, ...], as_json: bool, seconds: float) -> None:
    """Kernel vs scalar reference speed, and cost in bare d6 draws, per ruleset."""
    from .bench import bench

    for r in rulesets:
        sim.get_ruleset(r)
    out = bench(list(rulesets) or None, seconds=seconds)
    if as_json:
        click.echo(to_json(out))
        return
    click.echo(f"bare d6 draws: {out['d6_per_second']:,.0f} per second (int8, one core)")
    rows = []
    for rid, entry in out["rulesets"].items():
        for e in [entry, *entry.get("extra", [])]:
            rows.append({"ruleset": rid, "matchup": e["matchup"], "kernel/s": f"{e['kernel_per_second']:,.0f}",
                         "reference/s": f"{e['reference_per_second']:,.0f}", "speedup": f"{e['speedup']:,.0f}x",
                         "d6-equivalents": f"{e['d6_equivalents']:.2f}"})
    click.echo(rows_text(rows, list(rows[0]), numeric=("kernel/s", "reference/s", "speedup", "d6-equivalents")))


# ------------------------------------------------- matrix, sweep, compare
def _count_bar(quiet: bool, desc: str, unit: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A tqdm bar counting cells or runs (not fights) on stderr; nothing when quiet or not a terminal."""
    if quiet or not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=None, desc=desc, unit=unit, file=sys.stderr, delay=0.5, leave=False)

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    return update, bar.close


def _common_run_options(f: Callable) -> Callable:
    """--seed (fresh entropy by default), then the options of :func:`_run_options` (sweep, compare)."""
    f = _run_options(f)
    return click.option("--seed", type=SEED, default=None,
                        help="Seed (default: fresh entropy, printed so the run can be repeated).")(f)


def _run_options(f: Callable) -> Callable:
    """--set, --rounds/--max-rounds, --workers, --scheduler, --quiet, --out, --budget (matrix, sweep, compare)."""
    f = _budget_option(f)
    f = click.option("--out", type=click.Path(file_okay=False), default=None,
                     help="Directory for the CSV/PNG files (replaced as a whole when the run ends).")(f)
    f = click.option("--quiet", is_flag=True, help="No progress bar.")(f)
    f = _scheduler_option(f)
    f = click.option("--workers", type=WORKERS, default=1, show_default=True,
                     help="Local processes (same result for any value; at most the cores).")(f)
    f = _rounds_option(f)
    return click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
                        help="A state, a unit field by role (attacker.defence=3) or an option (KEY=VALUE).")(f)


def _precision_options(f: Callable) -> Callable:
    """--seed, --half-width, --max-trials: the same defaults in matrix, balance and report (analysis/defaults.py),
    so the three commands run the same cells."""
    f = click.option("--max-trials", type=TRIALS, default=DEFAULT_MAX_TRIALS, show_default=True,
                     help="Trial cap per cell (the same default in matrix, balance and report).")(f)
    f = click.option("--half-width", type=Number(0, 0.5, hi_open=True), default=DEFAULT_HALF_WIDTH, show_default=True,
                     help="Target 95% half-width of each cell's win probabilities (0.01 = +-1 percentage point; "
                          "for a roster decision: --half-width 0.005 --max-trials 2000000).")(f)
    return click.option("--seed", type=SEED, default=DEFAULT_SEED, show_default=True,
                        help="Seed of the matrix run (fixed by default: the same command gives the same numbers, "
                             "in matrix, balance and report alike).")(f)




@cli.command("matrix")
@click.argument("ruleset")
@_roster_option
@click.option("--units", type=str, default=None, metavar="A,B,...",
              help='A subset of the roster\'s units, in order (quote names with commas: A,"B, the second").')
@click.option("--unit", "unit_list", multiple=True, metavar="NAME", help="A unit of the subset (repeatable).")
@_precision_options
@_run_options
@_fresh_option
def matrix_cmd(ruleset: str, roster: str | None, units: str | None, unit_list: tuple[str, ...], half_width: float,
               max_trials: int, seed: int | None, settings: tuple[str, ...], rounds: str | None, max_rounds: int,
               workers: int, scheduler: str | None, quiet: bool, out: str | None, fresh: bool,
               budget: str | None) -> None:
    """Every unit as attacker against every unit as defender, each cell run to a target precision.

    Writes OUT/matrix_long.csv (one row per pair), OUT/matrix.csv (attacker rows x
    defender columns of P(attacker wins)), OUT/matrix.json (settings, seed), OUT/matrix.png
    and OUT/metadata.json (resumed_cells). Finished cells are kept in OUT's results
    store: the same command again computes only the cells still missing.
    """
    from .cli_tables import matrix_text
    from .matrix import matchup_matrix

    rs = sim.get_ruleset(ruleset)
    ros = _roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster)])
    update, close = _count_bar(quiet, f"{rs.id} matrix", "cells")
    try:
        with _executor(scheduler, workers) as executor:
            m = matchup_matrix(rs, ros, unit_names(units, unit_list), half_width=half_width, max_trials=max_trials,
                               seed=seed, rounds=rounds, max_rounds=max_rounds, states=states, overrides=overrides,
                               options=options, workers=workers, progress=update, from_text=True, budget=budget,
                               executor=executor, store=folder.open_store(fresh=fresh) if folder else None)
    except BaseException:
        if folder:
            folder.close()
        raise
    finally:
        close()
    wide = m.wide("p_attacker")
    fielding = (f"equal points, budget {m.budget:g}: " + ", ".join(f"{u} x{k}" for u, k in m.copies.items())
                if m.budget is not None else "one unit a side")
    click.echo(f"{rs.id}: P(attacker wins), attacker rows x defender columns ({ros.source}; {fielding})")
    click.echo(matrix_text(wide))
    fought = m.long[m.long["trials"] > 0]["trials"]
    click.echo(f"trials per cell: {int(fought.min()):,} to {int(fought.max()):,} ({int(fought.sum()):,} in all); "
               f"seed entropy {m.provenance['seed_entropy']}")
    for unit, why in m.excluded.items():
        click.echo(f"left out {unit}: {why}")
    if folder:
        meta = {"command": "matrix", "ruleset": rs.id, "cells": int(len(m.long)), "resumed_cells": m.resumed_cells}
        _echo_written(folder.replace(lambda d: m.write(d) + [_write_metadata(d, meta)]))


#: What a bare ``--roster`` (no FILE) parses to: before --all-opponents, it meant "every unit" in sweep.
_NO_FILE = "\0no file"


@cli.command("sweep")
@click.argument("ruleset")
@click.argument("unit")
@click.argument("opponent", required=False)
@click.option("--vary", "vary", required=True, metavar="FIELD=LO..HI",
              help="The field of UNIT to vary and its integer range, inclusive (defence=1..6).")
@_roster_option(is_flag=False, flag_value=_NO_FILE)
@click.option("--all-opponents", is_flag=True, help="Without OPPONENT: sweep against every unit of the roster.")
@click.option("--roster-file", type=str, default=None, hidden=True)  # deprecated spelling of --roster FILE
@click.option("--side", type=click.Choice(["attacker", "defender"]), default="attacker", show_default=True,
              help="UNIT's role.")
@click.option("--trials", type=TRIALS, default=262_144, show_default=True, help="Fights per value and opponent.")
@_common_run_options
@_fresh_option
def sweep_cmd(ruleset: str, unit: str, opponent: str | None, vary: str, roster: str | None, all_opponents: bool,
              roster_file: str | None, side: str, trials: int, seed: int | None, settings: tuple[str, ...],
              rounds: str | None, max_rounds: int, workers: int, scheduler: str | None, quiet: bool, out: str | None,
              fresh: bool, budget: str | None) -> None:
    """Vary one field of UNIT against OPPONENT (or, with --all-opponents, every roster unit) on common random numbers.

    Writes OUT/sweep.csv (one row per value and opponent), OUT/sweep_marginal.csv
    (win-probability points and fair points per stat point), OUT/sweep.png and
    OUT/metadata.json; finished runs are kept in OUT's results store for a rerun.
    """
    if roster == _NO_FILE:
        raise Failure("sweep: --roster takes a roster FILE, as in every command; "
                      "to sweep against every unit of the roster, give --all-opponents")
    if roster_file is not None:
        if roster is not None:
            raise Failure("give the roster file once (--roster FILE)")
        NOTES.append("--roster-file is deprecated: use --roster FILE")
    if opponent is None and not all_opponents:
        raise Failure("sweep: name an OPPONENT or give --all-opponents (against every unit of the roster)")
    if opponent is not None and all_opponents:
        raise Failure(f"sweep: name an OPPONENT ({opponent!r}) or give --all-opponents, not both")
    # imported after the checks above: a usage error stays instant (no pandas)
    from .cli_tables import marginal_text, prices_text, sweep_text
    from .matrix import frame_to_csv
    from .sweep import marginal_value, parse_range, sweep

    rs = sim.get_ruleset(ruleset)
    ros = _roster_arg(rs.id, roster or roster_file)
    field, values = parse_range(vary)
    states, overrides, options = sim.parse_settings(rs, settings)
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster or roster_file)])
    update, close = _count_bar(quiet, f"sweep {field}", "runs")
    try:
        with _executor(scheduler, workers) as executor:
            frame = sweep(rs, unit, field, values, [opponent] if opponent else None, side=side, roster=ros,
                          trials=trials, seed=seed, rounds=rounds, max_rounds=max_rounds, states=states,
                          overrides=overrides, options=options, workers=workers, progress=update, from_text=True,
                          budget=budget, executor=executor, store=folder.open_store(fresh=fresh) if folder else None)
    except BaseException:
        if folder:
            folder.close()
        raise
    finally:
        close()
    marginal = marginal_value(frame)
    fair = frame.attrs.get("fair")
    click.echo(f"{rs.id}: {unit} ({side}) with {field} = {values[0]}..{values[-1]}, {trials:,} fights each, "
               f"seed entropy {frame.attrs['seed_entropy']}")
    click.echo(sweep_text(frame[frame["trials"] > 0], field))
    if fair is not None:
        click.echo(f"\nfair price of {unit} by {field} (points at which it would score 50% against these opponents "
                   "at equal points):")
        click.echo(prices_text(fair, field))
    if len(marginal):
        click.echo(f"\nvalue of one point of {field} (change in P(win) per point, t interval; fair points per point):")
        click.echo(marginal_text(marginal, field))
    if folder:
        from .io import atomic_write_bytes, atomic_write_text

        meta = {"command": "sweep", "ruleset": rs.id, "runs": int((frame["trials"] > 0).sum()),
                "resumed_cells": int(frame.attrs.get("resumed_cells", 0))}
        _echo_written(folder.replace(lambda d: [
            atomic_write_text(d / "sweep.csv", frame_to_csv(frame)),
            atomic_write_text(d / "sweep_marginal.csv", frame_to_csv(marginal)),
            atomic_write_bytes(d / "sweep.png", _sweep_png(frame)), _write_metadata(d, meta)]))


def _sweep_png(frame: Any) -> bytes:
    from matplotlib.figure import Figure

    from .plots import sweep_curves
    from .render import figure_png

    fig = Figure(figsize=(7.5, 5.0))
    a = frame.attrs
    sweep_curves(frame[frame["trials"] > 0], ax=fig.add_subplot(), field=a.get("field"),
                 title=f"{a.get('unit')} ({a.get('side')}): P(win) against {a.get('field')}, 95% bands")
    return figure_png(fig, dpi=110)


@cli.command("compare")
@click.argument("ruleset")
@click.argument("base")
@click.argument("variant")
@click.argument("opponents", nargs=-1)
@_roster_option
@click.option("--role", type=click.Choice(["both", "attacker", "defender"]), default="both", show_default=True,
              help="The roles BASE and VARIANT play.")
@click.option("--trials", type=TRIALS, default=1_048_576, show_default=True, help="Fights per opponent, role and unit.")
@click.option("--price/--no-price", default=True, show_default=True,
              help="Also give the fair price of BASE and VARIANT against the opponents.")
@_common_run_options
def compare_cmd(ruleset: str, base: str, variant: str, opponents: tuple[str, ...], roster: str | None, role: str,
                trials: int, price: bool, seed: int | None, settings: tuple[str, ...], rounds: str | None,
                max_rounds: int, workers: int, scheduler: str | None, quiet: bool, out: str | None,
                budget: str | None) -> None:
    """Compare BASE with VARIANT against OPPONENTS (default: the whole roster) on common random numbers.

    VARIANT is another unit of the roster, or field changes to BASE:
    FIELD=VALUE[,FIELD=VALUE...] (e.g. defence=3). Writes OUT/compare.csv.
    """
    from .cli_tables import compare_text, prices_text
    from .compare import compare
    from .matrix import frame_to_csv

    rs = sim.get_ruleset(ruleset)
    ros = _roster_arg(rs.id, roster)
    var: Any = variant
    if "=" in variant:
        var = {}
        for part in variant.split(","):
            if "=" not in part or not part.split("=", 1)[0].strip():
                raise Failure(f"variant {variant!r}: expected FIELD=VALUE[,FIELD=VALUE...] or a unit name")
            k, v = part.split("=", 1)
            var[k.strip()] = v.strip()
    states, overrides, options = sim.parse_settings(rs, settings)
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster)])
    update, close = _count_bar(quiet, "compare", "runs")
    try:
        with _executor(scheduler, workers) as executor:
            frame = compare(rs, base, var, list(opponents) or None, roster=ros,
                            roles=["attacker", "defender"] if role == "both" else [role], trials=trials, seed=seed,
                            rounds=rounds, max_rounds=max_rounds, states=states, overrides=overrides,
                            options=options, workers=workers, progress=update, from_text=True, budget=budget,
                            fair=price, executor=executor)
    finally:
        close()
    click.echo(f"{rs.id}: {frame.attrs['variant']} vs {frame.attrs['base']}, paired on common random numbers, "
               f"{trials:,} fights each, seed entropy {frame.attrs['seed_entropy']}")
    click.echo(compare_text(frame[frame["trials"] > 0]))
    for _, r in frame[frame["trials"] == 0].iterrows():
        click.echo(f"not fought: {r['opponent']} ({r['role']}): {r['note']}")
    fair = frame.attrs.get("fair")
    if fair is not None:
        click.echo("\nfair price (points at which it would score 50% against these opponents at equal points):")
        click.echo(prices_text(fair, "unit", {"base": frame.attrs["base"], "variant": frame.attrs["variant"]}))
    if folder:
        from .io import atomic_write_text

        _echo_written(folder.replace(lambda d: [atomic_write_text(d / "compare.csv", frame_to_csv(frame))]))


# ---------------------------------------------------------- balance, report
def _report_run_options(f: Callable) -> Callable:
    """Matrix settings of `balance` and `report` (the precision options as in `matrix`)."""
    f = _budget_option(f)
    f = click.option("--quiet", is_flag=True, help="No progress bar.")(f)
    f = _scheduler_option(f)
    f = click.option("--workers", type=WORKERS, default=1, show_default=True,
                     help="Local processes (same result for any value; at most the cores).")(f)
    f = _rounds_option(f)
    f = click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
                     help="A state, a unit field by role (attacker.defence=3) or an option (KEY=VALUE).")(f)
    f = _precision_options(f)
    f = click.option("--unit", "unit_list", multiple=True, metavar="NAME", help="A unit of the subset (repeatable).")(f)
    f = click.option("--units", type=str, default=None, metavar="A,B,...",
                     help='A subset of the roster\'s units (quote names with commas: A,"B, the second").')(f)
    return _roster_option(f)


@cli.command("balance")
@click.argument("ruleset")
@_report_run_options
@click.option("--from-matrix", type=click.Path(exists=True), default=None,
              help="Use a saved matrix_long.csv (or the folder of `meleelab matrix --out`) instead of simulating.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Directory for the CSV tables (written atomically).")
def balance_cmd(ruleset: str, roster: str | None, units: str | None, unit_list: tuple[str, ...], seed: int,
                half_width: float, max_trials: int, settings: tuple[str, ...], rounds: str | None, max_rounds: int,
                workers: int, scheduler: str | None, quiet: bool, budget: str | None, from_matrix: str | None,
                out: str | None) -> None:
    """Rankings, Nash weights, dominated units, cycles and fair points for a roster.

    Runs the matchup matrix (or reads one with --from-matrix) and prints the
    tables; --out writes rankings.csv, nash.csv, dominated.csv, cycles.csv,
    fair_points.csv, points_efficiency.csv, side_averaged.csv, payoff.csv and
    balance_model.txt (plus matrix_long.csv and matrix.csv when simulated).
    """
    from pathlib import Path

    from .balance import balance_summary

    rs = sim.get_ruleset(ruleset)
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster), ("--from-matrix", from_matrix)])
    # the cluster stays up until the command ends (click closes it): the fair prices fight more copy counts on it
    executor = click.get_current_context().with_resource(_executor(scheduler, workers)) if not from_matrix else None
    if from_matrix:
        from .matrix_file import read_matrix_long

        path = Path(from_matrix)
        path = path / "matrix_long.csv" if path.is_dir() else path
        frame = read_matrix_long(path)
        import json

        from .matrix import saved_matrix

        meta_path = path.parent / "matrix.json"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else None
        except (OSError, ValueError):
            meta = None  # the matrix alone still balances; only the twins' pooling needs matrix.json
        if isinstance(meta, dict) and isinstance(meta.get("ruleset"), str) and meta["ruleset"] != rs.id:
            raise Failure(f"{meta_path}: a {meta['ruleset']} matrix, not {rs.id}: "
                          f"run balance {meta['ruleset']} --from-matrix {from_matrix}")
        matrix: Any = saved_matrix(frame, rs.id, meta if isinstance(meta, dict) else None)
        source = str(path)
    else:
        from .matrix import matchup_matrix

        ros = _roster_arg(rs.id, roster)
        states, overrides, options = sim.parse_settings(rs, settings)
        update, close = _count_bar(quiet, f"{rs.id} matrix", "cells")
        try:
            matrix = matchup_matrix(rs, ros, unit_names(units, unit_list), half_width=half_width,
                                    max_trials=max_trials, seed=seed, rounds=rounds, max_rounds=max_rounds,
                                    states=states, overrides=overrides, options=options, workers=workers,
                                    progress=update, from_text=True, budget=budget, executor=executor)
        finally:
            close()
        source = f"{ros.source}, seed {seed}"
    update, close = _count_bar(quiet, "fair prices", "cells")
    try:
        summary = balance_summary(matrix, progress=update)
    finally:
        close()
    from .cli_tables import balance_text

    click.echo(f"({source})")
    click.echo(balance_text(summary))
    if folder:
        def write(d: Any) -> list[Any]:
            paths = summary.write(d)
            if not from_matrix:
                paths += [p for p in matrix.write(d, png=False) if p.suffix in (".csv", ".json")]
            return paths

        _echo_written(folder.replace(write))


@cli.command("report")
@click.argument("ruleset", required=False)
@click.option("--all", "all_rulesets", is_flag=True, help="One report per registered ruleset (shipped rosters) + index.")
@click.option("--out", type=click.Path(file_okay=False), required=True,
              help="Output directory (replaced as a whole when the run ends).")
@click.option("--feature", "features", multiple=True, metavar='"A vs B"',
              help="A matchup to show in detail (repeatable; default: the most lopsided and the most even cell).")
@click.option("--baseline", type=str, default=None, metavar="DIR",
              help="An earlier report folder: adds a section of what changed beyond the noise since then.")
@_report_run_options
@_fresh_option
def report_cmd(ruleset: str | None, all_rulesets: bool, out: str, features: tuple[str, ...], baseline: str | None,
               roster: str | None, units: str | None,
               unit_list: tuple[str, ...], seed: int, half_width: float, max_trials: int, settings: tuple[str, ...],
               rounds: str | None, max_rounds: int, workers: int, scheduler: str | None, quiet: bool, fresh: bool,
               budget: str | None) -> int:
    """A self-contained HTML balance report, a Markdown summary and every CSV for a roster.

    `meleelab report RULESET --out DIR` writes DIR/report.html, summary.md,
    metadata.json and the CSV tables; `meleelab report --all --out reports/`
    writes one folder per ruleset (its shipped roster) and reports/index.html.
    The same seed and settings give byte-identical CSV files. Finished cells are
    kept in DIR's results store: after an interruption, the same command computes
    only the cells still missing (metadata.json: resumed_cells).
    """
    import os
    import time

    from .report import build_report, write_all

    if all_rulesets:
        if ruleset or roster or units or unit_list or settings or budget is not None or features:
            raise Failure("report --all uses each ruleset's shipped roster and its own budget: "
                          "give no RULESET, --roster, --units, --set, --budget or --feature")
        check_output_dir(out)  # before computing five reports
        with _executor(scheduler, workers) as executor:
            result = write_all(out, log=None if quiet else lambda s: click.echo(s, err=True), seed=seed,
                               half_width=half_width, max_trials=max_trials, rounds=rounds, max_rounds=max_rounds,
                               workers=workers, executor=executor, fresh=fresh, baseline=baseline)
        click.echo(f"wrote {len(result['ok'])} reports to {out} in {result['seconds']:.1f} s "
                   f"(index: {os.path.join(out, 'index.html')})")
        for rid, why in result["failed"].items():
            click.echo(f"not generated: {rid}: {why}", err=True)
        return 1 if result["failed"] else 0
    if not ruleset:
        raise Failure("report: name a RULESET or give --all")
    rs = sim.get_ruleset(ruleset)
    ros = _roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster)])
    update, close = _count_bar(quiet, f"{rs.id} report", "cells")
    start = time.perf_counter()
    try:
        with _executor(scheduler, workers) as executor:
            rep = build_report(rs, ros, units=unit_names(units, unit_list), seed=seed, half_width=half_width,
                               max_trials=max_trials, rounds=rounds, max_rounds=max_rounds, states=states,
                               overrides=overrides, options=options, workers=workers, progress=update,
                               from_text=True, budget=budget, executor=executor,
                               store=folder.open_store(fresh=fresh), feature=list(features) or None, baseline=baseline)
        paths = folder.replace(rep.write)
    finally:
        folder.close()
        close()
    click.echo(f"{rs.id}: {len(rep.matrix.units)} units, {rep.cell_stats()['trials_total']:,} fights, "
               f"{time.perf_counter() - start:.1f} s; wrote {len(paths)} files ({os.path.join(out, 'report.html')})")
    return 0


@cli.command("diff")
@click.argument("old_dir")
@click.argument("new_dir")
@click.option("--z", type=float, default=3.0, show_default=True,
              help="A difference beyond Z standard errors is a change (see analysis/diff.py for the error used).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Directory for diff.csv (every number), diff_changed.csv and diff.png (before/after); "
                   "replaced as a whole.")
@click.option("--all", "show_all", is_flag=True, help="Print every change (default: the 40 largest).")
def diff_cmd(old_dir: str, new_dir: str, z: float, out: str | None, show_all: bool) -> None:
    """Which matrix cells, rankings and fair prices changed beyond their noise from OLD_DIR to NEW_DIR.

    Both are folders of `meleelab report` (or `balance --out`), or two `report --all`
    folders (compared ruleset by ruleset). With the same seed, cells whose units did
    not change are identical (the same dice); a change is |new - old| > Z standard errors.
    """
    from .cli_tables import diff_text
    from .diff import diff_runs

    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("OLD_DIR", old_dir), ("NEW_DIR", new_dir)])  # replaced whole, like every output
    result = diff_runs(old_dir, new_dir, z=z)
    click.echo(diff_text(result, limit=None if show_all else 40))
    if folder:
        for p in folder.replace(result.write):
            click.echo(f"wrote {p}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 2 bad input or an output that cannot be written, 130 interrupted).

    A failing command prints exactly one line on stderr; notes and warnings (a
    clamped ``--workers``, glyphs missing from the plot font) are printed, one
    line each, only when the command succeeds.
    """
    NOTES.clear()
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *args, **kwargs: NOTES.append(_one_line(str(message)))
        code = _run(argv)
    if code == 0:
        for note in dict.fromkeys(NOTES):  # once each, in order
            click.echo(f"meleelab: note: {note}", err=True)
    NOTES.clear()
    return code


def _run(argv: Sequence[str] | None) -> int:
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, prog_name="meleelab", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not at exit
        return rv if isinstance(rv, int) else 0
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.exceptions.Abort:
        click.echo("meleelab: aborted", err=True)
        return 130
    except click.ClickException as e:
        click.echo(f"meleelab: error: {_one_line(e.format_message())}", err=True)
        return 2
    except (MeleelabError, Failure) as e:
        click.echo(f"meleelab: error: {_one_line(str(e))}", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("meleelab: interrupted", err=True)
        return 130
    except OSError as e:
        return _output_failed(e)


#: errno values of a failed write: without a file name, they come from standard output.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.EBADF}


def _output_failed(e: OSError) -> int:
    """An operating-system error: one line, exit 2.

    When standard output is what failed (``> /dev/full``, a closed pipe), what is
    still buffered for it is dropped (stdout is pointed at the null device), so
    the interpreter does not fail again at exit with a traceback.
    """
    why = e.strerror or type(e).__name__
    try:
        sys.stdout.flush()
        stdout_broken = getattr(e, "filename", None) is None and e.errno in _WRITE_ERRNOS
    except (OSError, ValueError):
        stdout_broken = True
    if not stdout_broken:
        text = f"{e.filename}: {why}" if getattr(e, "filename", None) else why
    else:
        text = f"cannot write standard output ({why})"
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass
    try:
        click.echo(f"meleelab: error: {_one_line(text)}", err=True)
    except OSError:
        pass
    return 2


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
