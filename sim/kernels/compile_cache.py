"""Numba's compiled kernels, cached in a per-user folder, never inside the installed package.

With ``@numba.njit(cache=True)`` Numba writes its ``*.nbi`` / ``*.nbc`` files
into ``__pycache__`` next to the source, that is into ``site-packages/sim/``
of an installed meleelab. pip does not know these files: uninstalling or
reinstalling meleelab (``pip install -e .`` over ``pip install .``) leaves a
``site-packages/sim/`` folder without ``__init__.py``, which Python then
imports as an empty namespace package ahead of the real one, and every
command fails. :func:`njit_cached` compiles the same way but keeps the cache
in :func:`cache_dir`:

* ``NUMBA_CACHE_DIR`` when it is set (Numba's own variable);
* otherwise the user's cache folder: ``$XDG_CACHE_HOME/meleelab/numba``
  (``~/.cache/meleelab/numba``) on Linux, ``~/Library/Caches/meleelab/numba``
  on macOS, ``%LOCALAPPDATA%\\meleelab\\numba`` on Windows.

When that folder cannot be created or written, the kernels are compiled in
memory for each process (some seconds more at the first fight), never cached
next to the source. Numba's cache keys on the source file's path and
contents, so several installations share the folder without mixing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["njit_cached", "cache_dir", "usable_cache_dir"]


def cache_dir() -> Path:
    """Where the compiled kernels are cached (see the module docstring); the folder may not exist yet."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if chosen:
        return Path(chosen)
    home = Path.home()
    if sys.platform == "win32":  # pragma: no cover - not run in CI
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":  # pragma: no cover - not run in CI
        base = home / "Library" / "Caches"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".cache"  # XDG: relative paths are ignored
    return base / "meleelab" / "numba"


def usable_cache_dir() -> Path | None:
    """:func:`cache_dir`, created if need be, or None when it cannot be created or written."""
    try:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except (OSError, RuntimeError):  # RuntimeError: Path.home() without a home folder
        return None
    return folder


@contextlib.contextmanager
def _numba_caches_in(folder: Path) -> Iterator[None]:
    """Numba's cache settings for the functions decorated in the block: ``folder`` only.

    Numba picks a function's cache folder when it is decorated, from
    ``numba.config.CACHE_DIR``; the locator list is narrowed to that folder, so
    that a failure there raises instead of falling back to the source's
    ``__pycache__``. Both settings are restored afterwards: other packages'
    Numba functions keep their own.
    """
    from numba.core import caching, config

    saved = {name: getattr(config, name, None) for name in ("CACHE_DIR", "CACHE_LOCATOR_CLASSES")}
    locator = getattr(caching, "UserProvidedCacheLocator", None) or getattr(caching, "_UserProvidedCacheLocator")
    config.CACHE_DIR = str(folder)
    config.CACHE_LOCATOR_CLASSES = f"{locator.__module__}.{locator.__name__}"  # (older Numba: no such setting)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(config, name, value)


def njit_cached(**options: Any) -> Callable[[Callable], Any]:
    """``numba.njit(cache=True, **options)`` with the cache in :func:`cache_dir` (or no file cache).

    Parameters
    ----------
    **options
        Numba's ``njit`` options (``error_model="numpy"``...); never ``fastmath``,
        whose results may differ between CPUs.
    """
    import numba as nb

    if "fastmath" in options or "cache" in options:
        raise ValueError("njit_cached: fastmath would make results differ between machines; cache is implied")

    def decorate(py_func: Callable) -> Any:
        folder = usable_cache_dir()
        if folder is None:
            return nb.njit(**options)(py_func)
        try:
            with _numba_caches_in(folder):
                return nb.njit(cache=True, **options)(py_func)
        except RuntimeError:  # "no locator available": the folder failed Numba's own check after ours
            return nb.njit(**options)(py_func)

    return decorate
