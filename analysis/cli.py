"""``meleelab``: a thin command line over the library.

Every command parses its arguments, calls one library function and prints or
writes what it returns. Bad input prints one line on stderr and exits 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

import sim
from sim.errors import MeleelabError

from .io import to_json

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(sim.__version__, prog_name="meleelab")
def cli() -> None:
    """meleelab: Monte Carlo balance analysis for melee rules."""


@cli.command("rulesets")
@click.option("--json", "as_json", is_flag=True, help="One JSON array on stdout.")
def rulesets_cmd(as_json: bool) -> None:
    """List the rulesets: id, title, source text, default rounds."""
    rows = [r.describe() for r in sim.rulesets()]
    if as_json:
        click.echo(to_json(rows))
        return
    _print_table(rows, ["id", "title", "source", "default_rounds"])


@cli.command("units")
@click.argument("ruleset")
@click.option("--roster", type=str, default=None, help="Roster file (TOML or CSV); default: the shipped roster.")
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
    _print_table(rows, list(rows[0]) if rows else [])


def _rounds_option(f: Callable) -> Callable:
    f = click.option("--max-rounds", type=int, default=50, show_default=True,
                     help="Cap for --rounds end: a fight still going is a draw.")(f)
    return click.option("--rounds", type=str, default=None, help='Rounds per fight: N or "end" (default: the ruleset\'s).')(f)


@cli.command("fight")
@click.argument("ruleset")
@click.argument("attacker")
@click.argument("defender")
@click.option("--roster", type=str, default=None, help="Roster file (TOML or CSV); default: the shipped roster.")
@click.option("--trials", type=int, default=1_000_000, show_default=True)
@click.option("--seed", type=int, default=None, help="Seed (default: fresh entropy, printed so the run can be repeated).")
@_rounds_option
@click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
              help="A state (attacker.evading=true), a unit field (attacker.defence=3) or an option (KEY=VALUE).")
@click.option("--workers", type=int, default=1, show_default=True, help="Local processes (same result for any value).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def fight_cmd(ruleset: str, attacker: str, defender: str, roster: str | None, trials: int, seed: int | None,
              rounds: str | None, max_rounds: int, settings: tuple[str, ...], workers: int, as_json: bool,
              quiet: bool) -> None:
    """Simulate TRIALS fights of ATTACKER against DEFENDER."""
    rs = sim.get_ruleset(ruleset)
    ros = _roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    update, close = _progress_bar(quiet, f"{attacker} vs {defender}")
    try:
        result = sim.fight(rs, attacker, defender, trials=trials, seed=seed, rounds=rounds, max_rounds=max_rounds,
                           states=states, overrides=overrides, options=options, workers=workers, roster=ros,
                           progress=update, from_text=True)
    finally:
        close()
    if as_json:
        click.echo(to_json(result.to_dict()))
    else:
        click.echo("\n".join(result.summary_lines()))


@cli.command("bench")
@click.argument("rulesets", nargs=-1)
@click.option("--json", "as_json", is_flag=True)
@click.option("--seconds", type=float, default=0.5, show_default=True, help="Minimum time per measurement.")
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
    for rid, e in out["rulesets"].items():
        rows.append({"ruleset": rid, "matchup": e["matchup"], "kernel/s": f"{e['kernel_per_second']:,.0f}",
                     "reference/s": f"{e['reference_per_second']:,.0f}", "speedup": f"{e['speedup']:,.0f}x",
                     "d6-equivalents": f"{e['d6_equivalents']:.2f}"})
    _print_table(rows, list(rows[0]))


def _print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    import pandas as pd

    if not rows:
        click.echo("(none)")
        return
    frame = pd.DataFrame(rows, columns=columns)
    click.echo(frame.to_string(index=False, na_rep="-"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 2 bad input, 1 other failure)."""
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, prog_name="meleelab", standalone_mode=False)
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


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
