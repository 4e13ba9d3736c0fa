"""The options and helpers every ``meleelab`` command shares: roster, budget, rounds, precision, progress bars.

Kept light: nothing here imports NumPy or pandas, so ``meleelab --help`` and a
usage error stay instant.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

import sim
from sim.limits import MAX_ROUNDS

from ..runs.defaults import DEFAULT_HALF_WIDTH, DEFAULT_MAX_TRIALS, DEFAULT_SEED
from .scale import scheduler_option as _scheduler_option
from .types import MAX_ROUNDS_TYPE, ROUNDS, SEED, TRIALS, WORKERS, Number

__all__ = ["Failure", "OutFolder", "progress_bar", "count_bar", "roster_arg", "roster_option", "budget_option",
           "rounds_option", "balance_rounds_options", "fielding_option", "method_option", "common_run_options", "run_options",
           "precision_options", "report_run_options", "score_option"]


class Failure(Exception):
    """A one-line error raised by a command."""


def progress_bar(quiet: bool, desc: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """Progress of one fight's trials on stderr: a tqdm bar on a terminal, a plain line now and then in a pipe,
    nothing when quiet (:func:`analysis.cli.progress.counter`)."""
    if quiet:
        return None, lambda: None
    from .progress import PlainLines, stderr_is_terminal

    if not stderr_is_terminal():
        lines = PlainLines(desc, "fights")
        return lines.update, lines.close
    from tqdm import tqdm

    bar = tqdm(total=None, desc=desc, unit="fights", unit_scale=True, file=sys.stderr, delay=0.5, leave=False)

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    return update, bar.close


class OutFolder(click.Path):
    """``--out DIR``: a folder path, never empty (``--out ''`` is a slip, not "no output")."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path: name the output folder", param, ctx)
        return super().convert(value, param, ctx)


def roster_arg(ruleset: str, roster: str | None) -> sim.Roster:
    return sim.load_roster(roster, ruleset) if roster else sim.default_roster(ruleset)


def roster_option(f: Callable | None = None, **kwargs: Any) -> Callable:
    """--roster FILE, the same in every command (sweep adds a flag_value to catch its old bare --roster)."""
    option = click.option("--roster", type=str, default=None, metavar="FILE",
                          help="Roster file (TOML or CSV); default: the shipped roster.", **kwargs)
    return option(f) if f is not None else option


def budget_option(f: Callable | None = None, *, default_text: str = "the roster's budget") -> Callable:
    """--budget POINTS: equal-points fights (the roster's own budget by default), checked as it is read."""
    if f is None:
        return lambda g: budget_option(g, default_text=default_text)

    def parse(ctx: Any, param: Any, value: str | None) -> Any:
        if value is None:
            return None  # nothing to import: --help and the commands without --budget stay light
        from sim.budget import parse_budget

        return parse_budget(value, "--budget")

    return click.option("--budget", type=str, default=None, metavar="POINTS", callback=parse,
                        help="Equal points: each side fields POINTS / points copies of its unit (default: "
                             f"{default_text}; 'none': one unit a side).")(f)


def rounds_option(f: Callable) -> Callable:
    """--rounds and --max-rounds of ``fight``: the rules' own defaults."""
    f = click.option("--max-rounds", type=MAX_ROUNDS_TYPE, default=50, show_default=True,
                     help="Cap for --rounds end: a fight still going is a draw.")(f)
    return click.option("--rounds", type=ROUNDS, default=None,
                        help=f'Rounds per fight: 1..{MAX_ROUNDS} or "end" (default: the ruleset\'s).')(f)


def fielding_option(f: Callable) -> Callable:
    """--fielding expected|whole: how a budget fields copies (expected by default)."""
    return click.option("--fielding", type=click.Choice(["expected", "whole"]), default="expected",
                        show_default=True,
                        help="Under a budget: 'expected' fields budget / points copies on average (k + 1 copies in "
                             "a fraction f of the fights), 'whole' always floor(budget / points).")(f)


def method_option(f: Callable) -> Callable:
    """--method auto|exact|mc: how each cell is answered (auto by default)."""
    return click.option("--method", type=click.Choice(["auto", "exact", "mc"]), default="auto", show_default=True,
                        help="How each cell is answered: 'exact' from the matchup's Markov chain (no noise; an "
                             "error naming the matchup where it has none), 'mc' by Monte Carlo, 'auto' exact "
                             "where that is cheaper than the fights.")(f)


def balance_rounds_options(f: Callable) -> Callable:
    """--rounds, --max-rounds and --rules-defaults of the balance commands: the ruleset's balance settings."""
    f = click.option("--rules-defaults", is_flag=True,
                     help="Fight under the rules' own defaults (rounds, cap, states) instead of the ruleset's "
                          "balance settings (see `meleelab rulesets --balance`).")(f)
    f = click.option("--max-rounds", type=MAX_ROUNDS_TYPE, default=None,
                     help="Cap for --rounds end: a fight still going is a draw (default: the balance settings').")(f)
    return click.option("--rounds", type=ROUNDS, default=None,
                        help=f'Rounds per fight: 1..{MAX_ROUNDS} or "end" (default: the ruleset\'s balance '
                             "settings).")(f)


def count_bar(quiet: bool, desc: str, unit: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """Progress of cells or runs (not fights) on stderr: a tqdm bar with an ETA on a terminal, a plain line
    now and then in a pipe, nothing when quiet (:func:`analysis.cli.progress.counter`).

    The runs report their total before the first cell runs (:func:`analysis.runs.jobs.run_jobs`), so
    the bar knows it from the start and shows the time left. A new batch of cells (another total, or a
    count going back: the next matrix of ``report``, the next round of fair-price fights) starts the
    bar and its clock afresh, so the ETA is that batch's.
    """
    from .progress import counter

    return counter(quiet, desc, unit)


def common_run_options(f: Callable) -> Callable:
    """--seed (fresh entropy by default), then the options of :func:`run_options` (sweep, compare)."""
    f = run_options(f)
    return click.option("--seed", type=SEED, default=None,
                        help="Seed (default: fresh entropy, printed so the run can be repeated).")(f)


def run_options(f: Callable) -> Callable:
    """--set, --rounds/--max-rounds, --workers, --scheduler, --quiet, --out, --budget (matrix, sweep, compare)."""
    f = method_option(f)
    f = fielding_option(f)
    f = budget_option(f)
    f = click.option("--out", type=OutFolder(), default=None,
                     help="Directory for the CSV/PNG files (replaced as a whole when the run ends).")(f)
    f = click.option("--quiet", is_flag=True, help="No progress bar.")(f)
    f = _scheduler_option(f)
    f = click.option("--workers", type=WORKERS, default=1, show_default=True,
                     help="Local processes (same result for any value; at most the cores).")(f)
    f = balance_rounds_options(f)
    return click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
                        help="A state, a unit field by role (attacker.defence=3) or an option (KEY=VALUE).")(f)


def precision_options(f: Callable) -> Callable:
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


def score_option(f: Callable) -> Callable:
    """--score-half-width: the precision target on every unit's score (:mod:`analysis.runs.allocation`)."""
    from ..runs.allocation import CELL_PRECISION_UNITS, DEFAULT_SCORE_HALF_WIDTH, MAX_SCORE_HALF_WIDTH

    return click.option("--score-half-width", type=Number(0, MAX_SCORE_HALF_WIDTH),
                        default=DEFAULT_SCORE_HALF_WIDTH, show_default=True,
                        help="Target 95% half-width of every unit's score (0.005 = +-0.5 pp), in (0, 0.25]: each "
                             "cell is fought for its share of the scores' variance (lopsided cells stop early). "
                             f"Over {CELL_PRECISION_UNITS} units the cells are no longer each fought to "
                             "--half-width, so the fights grow with the roster, not its square.")(f)


def report_run_options(f: Callable) -> Callable:
    """Matrix settings of `balance` and `report` (the precision options as in `matrix`)."""
    f = method_option(f)
    f = fielding_option(f)
    f = budget_option(f)
    f = click.option("--quiet", is_flag=True, help="No progress bar.")(f)
    f = _scheduler_option(f)
    f = click.option("--workers", type=WORKERS, default=1, show_default=True,
                     help="Local processes (same result for any value; at most the cores).")(f)
    f = balance_rounds_options(f)
    f = click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
                     help="A state, a unit field by role (attacker.defence=3) or an option (KEY=VALUE).")(f)
    f = precision_options(f)
    f = score_option(f)
    f = click.option("--unit", "unit_list", multiple=True, metavar="NAME", help="A unit of the subset (repeatable).")(f)
    f = click.option("--units", type=str, default=None, metavar="A,B,...",
                     help='A subset of the roster\'s units (quote names with commas: A,"B, the second").')(f)
    return roster_option(f)
