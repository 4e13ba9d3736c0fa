"""``meleelab``: the command group, and how a command's failure becomes one line and an exit status.

Every command parses its arguments, calls one library function and prints or
writes what it returns (:mod:`.basic_commands`, :mod:`.run_commands`,
:mod:`.report_commands`). Bad input prints one line on stderr and exits 2.
"""

from __future__ import annotations

import errno
import io
import os
import sys
import warnings
from collections.abc import Sequence

import click

import sim
from sim.errors import MeleelabError

from .basic_commands import bench_cmd, fight_cmd, rulesets_cmd, units_cmd
from .list_commands import lists_cmd, meta_cmd
from .options import Failure
from .rebalance_command import rebalance_cmd
from .report_commands import balance_cmd, diff_cmd, report_cmd
from .run_commands import compare_cmd, matrix_cmd, sweep_cmd
from .types import NOTES

__all__ = ["main", "cli"]


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """--version, read when asked (the package metadata is not loaded for every command)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"meleelab, version {sim.__version__}")
        ctx.exit()


class _StdoutClosed(Exception):
    """Standard output's reader went away (``meleelab units mecha | head``)."""


class _Group(click.Group):
    """The ``meleelab`` group: a closed pipe on standard output ends the command quietly.

    Click turns a broken pipe into ``sys.exit(1)`` with nothing said; the usual
    Unix behaviour is to stop quietly, as ``head`` asked for no more (see :func:`main`).
    """

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as e:
            if getattr(e, "filename", None) is not None:  # a file, not standard output
                raise
            raise _StdoutClosed() from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def cli() -> None:
    """meleelab: Monte Carlo balance analysis for melee rules."""


for _command in (rulesets_cmd, units_cmd, fight_cmd, bench_cmd, matrix_cmd, sweep_cmd, compare_cmd, balance_cmd,
                 report_cmd, diff_cmd, rebalance_cmd, lists_cmd, meta_cmd):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 2 bad input or an output that cannot be written, 130 interrupted).

    A failing command prints exactly one line on stderr; notes and warnings (a
    clamped ``--workers``, glyphs missing from the plot font, cells short of the
    target half-width, cells taken from the results store) are printed, one line
    each, only when the command succeeds (or, for ``report --all``, writes the
    reports that did not fail).
    """
    NOTES.clear()
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *args, **kwargs: NOTES.append(_one_line(str(message)))
        code = _run(argv)
    if code in (0, 1):  # 1: report --all wrote the reports that did not fail
        for note in dict.fromkeys(NOTES):  # once each, in order
            click.echo(f"meleelab: note: {note}", err=True)
    NOTES.clear()
    return code


def _run(argv: Sequence[str] | None) -> int:
    if sys.stdout is None:  # started with standard output closed (``meleelab rulesets >&-``)
        click.echo("meleelab: error: cannot write standard output (it is closed)", err=True)
        return 2
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, prog_name="meleelab", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not at exit
        return rv if isinstance(rv, int) else 0
    except _StdoutClosed:
        return _stdout_closed()
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
    except Exception as e:  # noqa: BLE001 - sorted below: the cluster, an OS error, or a bug (re-raised)
        from ..runs.executor import cluster_failure

        why = cluster_failure(e)
        if why is not None:
            click.echo(f"meleelab: error: {_one_line(why)}", err=True)
            return 2
        if isinstance(e, OSError):
            return _output_failed(e)
        raise


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
    if stdout_broken and e.errno == errno.EPIPE:  # the reader stopped reading: not an error of ours
        return _stdout_closed()
    if not stdout_broken:
        text = f"{e.filename}: {why}" if getattr(e, "filename", None) else why
    else:
        text = f"cannot write standard output ({why})"
        _point_stdout_at_null()
    try:
        click.echo(f"meleelab: error: {_one_line(text)}", err=True)
    except OSError:
        pass
    return 2


def _stdout_closed() -> int:
    """Standard output's pipe was closed by its reader: stop quietly, status 0 (what ``head`` asked for).

    What is still buffered for it is dropped (stdout pointed at the null device), so the
    interpreter does not fail again at exit.
    """
    _point_stdout_at_null()
    return 0


def _point_stdout_at_null() -> None:
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())