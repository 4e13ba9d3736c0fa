"""``meleelab matrix``, ``sweep`` and ``compare``: many fights, written to a folder of CSV files."""

from __future__ import annotations

from typing import Any

import click

import sim

from ..report.io import check_output_dir
from .options import (
    Failure,
    common_run_options,
    count_bar,
    precision_options,
    roster_arg,
    roster_option,
    run_options,
)
from .scale import announce_long_runs as _announce_long_runs
from .scale import echo_written as _echo_written
from .scale import executor_for as _executor
from .scale import fresh_option as _fresh_option
from .scale import note_shortfall as _note_shortfall
from .scale import out_folder as _out_folder
from .scale import write_metadata as _write_metadata
from .types import NOTES, TRIALS, unit_names

__all__ = ["matrix_cmd", "sweep_cmd", "compare_cmd"]


@click.command("matrix")
@click.argument("ruleset")
@roster_option
@click.option("--units", type=str, default=None, metavar="A,B,...",
              help='A subset of the roster\'s units, in order (quote names with commas: A,"B, the second").')
@click.option("--unit", "unit_list", multiple=True, metavar="NAME", help="A unit of the subset (repeatable).")
@precision_options
@run_options
@_fresh_option
def matrix_cmd(ruleset: str, roster: str | None, units: str | None, unit_list: tuple[str, ...], half_width: float,
               max_trials: int, seed: int | None, settings: tuple[str, ...], rounds: str | None,
               max_rounds: int | None, rules_defaults: bool, fielding: str, method: str,
               workers: int, scheduler: str | None, quiet: bool, out: str | None, fresh: bool,
               budget: str | None) -> None:
    """Every unit as attacker against every unit as defender, each cell run to a target precision.

    Writes OUT/matrix_long.csv (one row per pair), OUT/matrix.csv (attacker rows x
    defender columns of P(attacker wins)), OUT/matrix.json (settings, seed), OUT/matrix.png
    and OUT/metadata.json (resumed_cells, the cells short of --half-width). Finished
    cells are kept in OUT's results store: the same command again computes only the
    cells still missing.
    """
    from ..report.writers import write_matrix
    from ..runs.jobs import shortfall
    from ..runs.matrix import matchup_matrix
    from .tables import matrix_text

    rs = sim.get_ruleset(ruleset)
    ros = roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster)], "matrix")
    update, close = count_bar(quiet, f"{rs.id} matrix", "cells")
    click.get_current_context().with_resource(_announce_long_runs(quiet))  # until the command ends: the store's notes
    try:
        with _executor(scheduler, workers) as executor:
            m = matchup_matrix(rs, ros, unit_names(units, unit_list), half_width=half_width, max_trials=max_trials,
                               seed=seed, rounds=rounds, max_rounds=max_rounds, rules_defaults=rules_defaults,
                               fielding=fielding, method=method, states=states, overrides=overrides,
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
    exact = int((m.long["method"] == "exact").sum())
    fought = m.long[m.long["trials"] > 0]["trials"]
    counted = (f"trials per cell: {int(fought.min()):,} to {int(fought.max()):,} ({int(fought.sum()):,} in all)"
               if len(fought) else "trials per cell: 0")
    if exact:
        counted += (f"; {exact} exact cell{'s' if exact != 1 else ''} (from the Markov chain: no sampling, no "
                    "noise)")
    click.echo(f"{counted}; seed entropy {m.provenance['seed_entropy']}")
    for unit, why in m.excluded.items():
        click.echo(f"left out {unit}: {why}")
    gap = shortfall(((f"{a} vs {d}", r.tally) for (a, d), r in m.results.items()), half_width)
    _note_shortfall(gap, half_width, max_trials)
    if folder:
        meta = {"command": "matrix", "ruleset": rs.id, "cells": int(len(m.long)), "resumed_cells": m.resumed_cells,
                "half_width": half_width, "max_trials": max_trials, "method": method, "cells_exact": exact,
                **{k: v for k, v in gap.items() if k != "cells"}}
        _echo_written(folder.replace(lambda d: write_matrix(m, d) + [_write_metadata(d, meta)]))


def _answered(frame: Any) -> Any:
    """Rows of a sweep or compare that were fought or answered exactly (exact rows have 0 trials)."""
    exact = frame["method"] == "exact" if "method" in frame else False
    return (frame["trials"] > 0) | exact


def _fights_each(frame: Any, trials: int) -> str:
    """``"65,536 fights each"``, saying which rows are exact instead (no fights, no noise)."""
    exact = int((frame["method"] == "exact").sum()) if "method" in frame else 0
    if exact and exact == int(_answered(frame).sum()):
        return "exact (from the Markov chains: no sampling, errors 0)"
    return f"{trials:,} fights each" + (f" ({exact} rows exact)" if exact else "")


#: What a bare ``--roster`` (no FILE) parses to: before --all-opponents, it meant "every unit" in sweep.
_NO_FILE = "\0no file"


@click.command("sweep")
@click.argument("ruleset")
@click.argument("unit")
@click.argument("opponent", required=False)
@click.option("--vary", "vary", required=True, metavar="FIELD=LO..HI",
              help="The field of UNIT to vary and its integer range, inclusive (defence=1..6).")
@roster_option(is_flag=False, flag_value=_NO_FILE)
@click.option("--all-opponents", is_flag=True, help="Without OPPONENT: sweep against every unit of the roster.")
@click.option("--roster-file", type=str, default=None, hidden=True)  # deprecated spelling of --roster FILE
@click.option("--side", type=click.Choice(["attacker", "defender"]), default="attacker", show_default=True,
              help="UNIT's role.")
@click.option("--trials", type=TRIALS, default=262_144, show_default=True, help="Fights per value and opponent.")
@common_run_options
@_fresh_option
def sweep_cmd(ruleset: str, unit: str, opponent: str | None, vary: str, roster: str | None, all_opponents: bool,
              roster_file: str | None, side: str, trials: int, seed: int | None, settings: tuple[str, ...],
              rounds: str | None, max_rounds: int | None, rules_defaults: bool, fielding: str, method: str,
              workers: int,
              scheduler: str | None, quiet: bool, out: str | None,
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
    from ..report.safe_csv import frame_to_csv
    from ..runs.sweep import marginal_value, parse_range, sweep
    from .tables import marginal_text, prices_text, sweep_text

    rs = sim.get_ruleset(ruleset)
    ros = roster_arg(rs.id, roster or roster_file)
    field, values = parse_range(vary)
    states, overrides, options = sim.parse_settings(rs, settings)
    if out:
        check_output_dir(out)
    folder = _out_folder(out, [("--roster", roster or roster_file)], "sweep")
    update, close = count_bar(quiet, f"sweep {field}", "runs")
    click.get_current_context().with_resource(_announce_long_runs(quiet))  # until the command ends: the store's notes
    try:
        with _executor(scheduler, workers) as executor:
            frame = sweep(rs, unit, field, values, [opponent] if opponent else None, side=side, roster=ros,
                          trials=trials, seed=seed, rounds=rounds, max_rounds=max_rounds,
                          rules_defaults=rules_defaults, fielding=fielding, method=method, states=states,
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
    click.echo(f"{rs.id}: {unit} ({side}) with {field} = {values[0]}..{values[-1]}, {_fights_each(frame, trials)}, "
               f"seed entropy {frame.attrs['seed_entropy']}")
    click.echo(sweep_text(frame[_answered(frame)], field))
    if fair is not None:
        click.echo(f"\nfair price of {unit} by {field} (points at which it would score 50% against these opponents "
                   "at equal points):")
        click.echo(prices_text(fair, field))
    if len(marginal):
        click.echo(f"\nvalue of one point of {field} (change in P(win) per point, t interval; fair points per point):")
        click.echo(marginal_text(marginal, field))
    if folder:
        from ..report.io import atomic_write_bytes, atomic_write_text

        meta = {"command": "sweep", "ruleset": rs.id, "runs": int(_answered(frame).sum()),
                "resumed_cells": int(frame.attrs.get("resumed_cells", 0))}
        _echo_written(folder.replace(lambda d: [
            atomic_write_text(d / "sweep.csv", frame_to_csv(frame)),
            atomic_write_text(d / "sweep_marginal.csv", frame_to_csv(marginal)),
            atomic_write_bytes(d / "sweep.png", _sweep_png(frame)), _write_metadata(d, meta)]))


def _sweep_png(frame: Any) -> bytes:
    from matplotlib.figure import Figure

    from ..report.plots import sweep_curves
    from ..report.render import figure_png

    fig = Figure(figsize=(7.5, 5.0))
    a = frame.attrs
    sweep_curves(frame[_answered(frame)], ax=fig.add_subplot(), field=a.get("field"),
                 title=f"{a.get('unit')} ({a.get('side')}): P(win) against {a.get('field')}, 95% bands")
    return figure_png(fig, dpi=110)


@click.command("compare")
@click.argument("ruleset")
@click.argument("base")
@click.argument("variant")
@click.argument("opponents", nargs=-1)
@roster_option
@click.option("--role", type=click.Choice(["both", "attacker", "defender"]), default="both", show_default=True,
              help="The roles BASE and VARIANT play.")
@click.option("--trials", type=TRIALS, default=1_048_576, show_default=True, help="Fights per opponent, role and unit.")
@click.option("--price/--no-price", default=True, show_default=True,
              help="Also give the fair price of BASE and VARIANT against the opponents.")
@common_run_options
def compare_cmd(ruleset: str, base: str, variant: str, opponents: tuple[str, ...], roster: str | None, role: str,
                trials: int, price: bool, seed: int | None, settings: tuple[str, ...], rounds: str | None,
                max_rounds: int | None, rules_defaults: bool, fielding: str, method: str, workers: int,
                scheduler: str | None,
                quiet: bool, out: str | None,
                budget: str | None) -> None:
    """Compare BASE with VARIANT against OPPONENTS (default: the whole roster) on common random numbers.

    VARIANT is another unit of the roster, or field changes to BASE:
    FIELD=VALUE[,FIELD=VALUE...] (e.g. defence=3). Writes OUT/compare.csv.
    """
    from ..report.safe_csv import frame_to_csv
    from ..runs.compare import compare
    from .tables import compare_text, prices_text

    rs = sim.get_ruleset(ruleset)
    ros = roster_arg(rs.id, roster)
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
    folder = _out_folder(out, [("--roster", roster)], "compare")
    update, close = count_bar(quiet, "compare", "runs")
    click.get_current_context().with_resource(_announce_long_runs(quiet))  # until the command ends: the store's notes
    try:
        with _executor(scheduler, workers) as executor:
            frame = compare(rs, base, var, list(opponents) or None, roster=ros,
                            roles=["attacker", "defender"] if role == "both" else [role], trials=trials, seed=seed,
                            rounds=rounds, max_rounds=max_rounds, rules_defaults=rules_defaults, fielding=fielding,
                            method=method,
                            states=states, overrides=overrides,
                            options=options, workers=workers, progress=update, from_text=True, budget=budget,
                            fair=price, executor=executor)
    finally:
        close()
    click.echo(f"{rs.id}: {frame.attrs['variant']} vs {frame.attrs['base']}, paired on common random numbers, "
               f"{_fights_each(frame, trials)}, seed entropy {frame.attrs['seed_entropy']}")
    click.echo(compare_text(frame[_answered(frame)]))
    for _, r in frame[~_answered(frame)].iterrows():
        click.echo(f"not fought: {r['opponent']} ({r['role']}): {r['note']}")
    fair = frame.attrs.get("fair")
    if fair is not None:
        click.echo("\nfair price (points at which it would score 50% against these opponents at equal points):")
        click.echo(prices_text(fair, "unit", {"base": frame.attrs["base"], "variant": frame.attrs["variant"]}))
    if folder:
        from ..report.io import atomic_write_text

        _echo_written(folder.replace(lambda d: [atomic_write_text(d / "compare.csv", frame_to_csv(frame))]))
