"""Reading the files a user names: bounded in size, regular files only, TOML bounded in depth.

Every input file (a roster, a mecha chart file, a saved matrix, a report
folder's tables) goes through :func:`read_input_text`, which refuses, in one
line and before reading a byte:

* what is not a regular file once symlinks are resolved: a device such as
  ``/dev/zero`` (which never ends), a FIFO (which blocks until a writer comes),
  a socket; the file is opened without blocking and checked again through the
  open descriptor, so a file swapped in between is caught too;
* a file larger than its limit (:mod:`sim.limits`: ``MAX_ROSTER_BYTES``...):
  parsing takes about 15 times the file's size in memory, so the limits keep a
  command within a few hundred MB whatever it is given. At most ``limit + 1``
  bytes are ever read (a file that grows while it is read is refused too).

:func:`parse_toml` parses TOML text and refuses nesting deeper than
:data:`~sim.limits.MAX_TOML_DEPTH` (arrays in arrays, dotted keys of thousands
of parts), which would otherwise end in a ``RecursionError``.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from .errors import InputError
from .limits import MAX_TOML_DEPTH, human_bytes

__all__ = ["read_input_text", "read_input_bytes", "parse_toml", "check_depth", "is_regular_file"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_input_bytes(path: str | os.PathLike[str], what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``limit`` of them.

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        What the file is, for the message (``"roster file"``, ``"matrix file"``).
    limit : int
        Largest size accepted, in bytes.

    Raises
    ------
    sim.errors.InputError
        One line naming the path: missing, a folder, not a regular file, too
        large, or unreadable.
    """
    shown = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{shown}: no such {what}") from None
    except IsADirectoryError:
        raise InputError(f"{shown}: is a folder, expected a {what}") from None
    except OSError as e:
        raise InputError(f"{shown}: cannot read {what} ({e.strerror or type(e).__name__})") from None
    except ValueError as e:  # an embedded NUL in the path
        raise InputError(f"{shown!r}: not a usable file path ({e})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _kind(info.st_mode)
            raise InputError(f"{shown}: is {kind}, expected a {what}" if kind == "a folder" else
                             f"{shown}: is {kind}, not a regular file: a {what} must be a file")
        if info.st_size > limit:
            raise _too_large(shown, what, human_bytes(info.st_size), limit)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while being read (or lied about its size)
            raise _too_large(shown, what, f"more than {human_bytes(limit)}", limit)
        return b"".join(chunks)
    except OSError as e:
        raise InputError(f"{shown}: cannot read {what} ({e.strerror or type(e).__name__})") from None
    finally:
        os.close(fd)


def _too_large(shown: str, what: str, size: str, limit: int) -> InputError:
    return InputError(f"{shown}: the {what} is {size}, over the {human_bytes(limit)} limit "
                      "(see the guide, section 12)")


def read_input_text(path: str | os.PathLike[str], what: str, limit: int, *, encoding: str = "utf-8-sig") -> str:
    """:func:`read_input_bytes` decoded (``utf-8-sig``: spreadsheets' "CSV UTF-8" starts with a byte-order mark).

    Raises
    ------
    sim.errors.InputError
        As :func:`read_input_bytes`, or the file is not text in ``encoding``.
    """
    data = read_input_bytes(path, what, limit)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise InputError(f"{os.fspath(path)}: {what} is not UTF-8 text") from None


def parse_toml(text: str, source: str, what: str = "TOML") -> dict[str, Any]:
    """``tomllib.loads(text)``, refusing nesting deeper than :data:`~sim.limits.MAX_TOML_DEPTH` in one line.

    Raises
    ------
    sim.errors.InputError
        ``source: not valid TOML (...)`` or ``source: tables or arrays nested deeper than N levels``.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{source}: not valid TOML ({e})") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise _too_deep(source, what) from None
    check_depth(data, source, what)
    return data


def check_depth(data: Any, source: str, what: str = "TOML") -> None:
    """Refuse tables and arrays nested deeper than :data:`~sim.limits.MAX_TOML_DEPTH` (walked without recursion,
    so that an error message or a validator never recurses through them)."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = list(value.values())
        elif isinstance(value, (list, tuple)):
            children = list(value)
        else:
            continue
        if depth >= MAX_TOML_DEPTH:
            raise _too_deep(source, what)
        stack.extend((child, depth + 1) for child in children)


def _too_deep(source: str, what: str) -> InputError:
    return InputError(f"{source}: tables or arrays nested deeper than {MAX_TOML_DEPTH} levels "
                      f"(a {what} needs a few; see the guide, section 12)")


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file once symlinks are resolved (no device, FIFO or folder)."""
    try:
        return stat.S_ISREG(Path(path).stat().st_mode)
    except (OSError, ValueError):
        return False
