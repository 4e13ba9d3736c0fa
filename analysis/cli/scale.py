"""CLI pieces for scaling out and resuming: ``--scheduler``, ``--fresh`` and ``--out`` folders.

Kept apart from :mod:`analysis.cli` so that the commands only thread them
through; see ``docs/scale.md``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click

from sim.errors import InputError

from ..report.io import atomic_write_text, to_json

__all__ = ["scheduler_option", "fresh_option", "executor_for", "out_folder", "echo_written", "write_metadata",
           "refuse_out_holding"]


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


def out_folder(out: str | None, inputs: Sequence[tuple[str, str | None]] = ()) -> Any:
    """The ``--out`` folder (:class:`analysis.report.outdir.OutputFolder`, checked now, before any work), or None.

    ``inputs`` are the command's input paths, ``(flag, path)``: an ``--out`` that holds one is refused
    (:func:`refuse_out_holding`).
    """
    refuse_out_holding(out, inputs)
    if not out:
        return None
    from ..report.outdir import OutputFolder

    return OutputFolder(out)


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
