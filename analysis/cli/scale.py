"""CLI pieces for scaling out and resuming: ``--scheduler``, ``--fresh``, ``--out`` folders, and what a run tells.

Kept apart from :mod:`analysis.cli` so that the commands only thread them
through; see ``docs/scale.md``. Besides the folders, this is where a command
says, in one line each on stderr: what a long run will cost before it starts
(:func:`announce_long_runs`), which cells the trial cap stopped short of the
target half-width (:func:`note_shortfall`), and how many cells came from the
results store or were ignored there (:func:`note_store`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click

from sim.errors import InputError

from ..report.io import atomic_write_text, to_json

__all__ = ["scheduler_option", "fresh_option", "executor_for", "out_folder", "echo_written", "write_metadata",
           "refuse_out_holding", "announce_long_runs", "note_shortfall", "note_store"]


def scheduler_option(f: Callable) -> Callable:
    return click.option("--scheduler", type=str, default=None, metavar="ADDRESS|local:N",
                        help='Run on a Dask cluster: a scheduler address (tcp://host:8786) or local:N to start N '
                             'local workers (same result; needs pip install "meleelab[cluster]").')(f)


def fresh_option(f: Callable) -> Callable:
    return click.option("--fresh", is_flag=True,
                        help="Ignore the results store in --out (recompute every cell).")(f)


@contextlib.contextmanager
def executor_for(scheduler: str | None, workers: int) -> Iterator[Any]:
    """The Dask client of ``--scheduler`` (None without it), closed when the command ends."""
    if scheduler is not None and workers != 1:
        raise InputError("give --workers or --scheduler, not both")
    from ..runs.executor import local_workers, parse_scheduler, scheduler_client

    if scheduler is not None:
        kind, value = parse_scheduler(scheduler)
        if kind == "local" and local_workers(value) < value:  # clamped like --workers, with the same note
            from .types import NOTES

            NOTES.append(f"--scheduler local:{value} is more than the {local_workers(value)} cores here; "
                         f"used local:{local_workers(value)}")
    with scheduler_client(scheduler) as client:
        yield client


def out_folder(out: str | None, inputs: Sequence[tuple[str, str | None]] = (), command: str = "meleelab") -> Any:
    """The ``--out`` folder (:class:`analysis.report.outdir.OutputFolder`, checked and locked now, before any
    work), or None.

    ``inputs`` are the command's input paths, ``(flag, path)``: an ``--out`` that holds one is refused
    (:func:`refuse_out_holding`). The folder is closed (its store closed, its lock released) when the
    command ends, whether it succeeds or fails.
    """
    refuse_out_holding(out, inputs)
    if not out:
        return None
    from ..report.outdir import OutputFolder

    folder = OutputFolder(out, command)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(folder.close)
    return folder


def refuse_out_holding(out: str | None, inputs: Sequence[tuple[str, str | None]]) -> None:
    """Refuse an ``--out`` folder that is, or holds, one of the command's inputs.

    The output folder is replaced as a whole, so the input would be deleted.
    ``inputs`` are ``(what, path)`` pairs such as ``("--from-matrix", path)``.
    """
    import os
    from pathlib import Path

    if not out:
        return
    target = Path(os.path.realpath(out))
    for what, path in inputs:
        if path is None:
            continue
        inside = Path(os.path.realpath(path))
        if inside == target or target in inside.parents:
            raise InputError(f"--out {out}: holds the {what} input {path}, and the output folder is replaced as a "
                             "whole: give another --out folder")


def echo_written(paths: Sequence[Any]) -> None:
    for p in paths:
        click.echo(f"wrote {p}")


def write_metadata(folder: Any, meta: dict[str, Any]) -> Any:
    """``metadata.json`` of a matrix or sweep folder: what ran, and ``resumed_cells``."""
    from ..report.outdir import STORE_DIR, STORE_FILE

    return atomic_write_text(f"{folder}/metadata.json", to_json({**meta, "store": f"{STORE_DIR}/{STORE_FILE}"}) + "\n")


#: With --quiet, a run whose estimate is over this many CPU seconds is still announced before it starts (one
#: line: a run of hours should not start without a word); without it, every run over
#: :data:`analysis.cli.progress.SPEAK_SECONDS` is.
ANNOUNCE_SECONDS = 60.0


def told(estimate: Any, quiet: bool) -> bool:
    """Whether an estimate is printed: over two seconds, or with ``--quiet`` over a minute of CPU."""
    from .progress import SPEAK_SECONDS

    if quiet:
        return estimate.cpu_seconds > ANNOUNCE_SECONDS
    return estimate.wall_seconds > SPEAK_SECONDS or estimate.cpu_seconds > ANNOUNCE_SECONDS


@contextlib.contextmanager
def announce_long_runs(quiet: bool = False) -> Iterator[None]:
    """While the command runs: print the estimate of every batch of cells, and of every batch of matchups to
    build, that will take more than two seconds (over a minute of CPU with ``--quiet``), before it starts (one
    line each); show the building of matchups like the cells (:func:`analysis.cli.progress.phase_display`); and
    note what each results store closed meanwhile gave and ignored (:func:`note_store`)."""
    from ..runs.cost import cost_listener
    from ..runs.progress import build_listener, progress_listener
    from ..runs.store import store_listener
    from .progress import phase_display

    def tell(estimate: Any) -> None:
        if told(estimate, quiet):
            click.echo(f"meleelab: estimate: {estimate.text()}; Ctrl-C stops it (finished cells are kept with "
                       "--out)", err=True)

    with cost_listener(tell), build_listener(tell), progress_listener(phase_display(quiet)), \
            store_listener(note_store):
        yield


def note_shortfall(summary: dict[str, Any], half_width: float, max_trials: int) -> None:
    """One note when the trial cap stopped cells short of the target (``summary`` from
    :func:`analysis.runs.jobs.shortfall`, or several merged)."""
    from .types import NOTES

    short = int(summary.get("cells_short_of_half_width") or 0)
    if short:
        NOTES.append(f"{short:,} of {int(summary['cells']):,} cells stopped at --max-trials {max_trials:,} wider than "
                     f"--half-width {half_width:g} (widest +-{summary['widest_half_width']:.4f}); raise --max-trials "
                     "to reach it (metadata.json names them)")
    units = summary.get("units_short_of_score_target") or []
    if units:
        named = ", ".join(f"{u} (+-{100 * hw:.2f} pp)" for u, hw in units[:8])
        more = f" and {len(units) - 8} more" if len(units) > 8 else ""
        NOTES.append(f"{len(units):,} unit score(s) stopped at --max-trials {max_trials:,} wider than "
                     f"--score-half-width: {named}{more}; raise --max-trials to reach it")


def note_store(store: Any) -> None:
    """Notes on the results store: the signing key's trouble, cells taken from it, rows ignored in it."""
    from .types import NOTES

    if store is None:
        return
    if store.signer.problem:
        NOTES.append(f"{store.signer.problem}: cells stored now cannot be reused by a later run")
    if store.reused:
        from ..runs.cost import human_seconds

        saved = float(getattr(store, "saved_seconds", 0.0) or 0.0)
        when = f"{saved:.2g} s" if saved < 10 else human_seconds(saved)
        took = f", saving about {when} of computing" if saved > 0 else ""
        NOTES.append(f"{len(store.reused):,} cells came from the results store {store.path}{took} (--fresh "
                     "recomputes them)")
    if store.ignored:
        from ..runs.store_check import REASONS

        why = "; ".join(f"{n:,} {REASONS.get(reason, reason)}" for reason, n in store.ignored_counts().items())
        NOTES.append(f"{len(store.ignored):,} cells in the results store {store.path} were ignored and computed "
                     f"again: {why}")
