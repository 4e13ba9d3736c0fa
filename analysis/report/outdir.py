"""Output folders replaced whole or not at all, with a results store that outlives each run.

A run writes its files into a staging folder beside the target
(``.NAME.tmp-PID-XXXX``) and swaps it in at the end, so the target is always
either the previous complete output or the new complete output, never a mix.
On Linux the swap is one atomic ``renameat2(RENAME_EXCHANGE)``; elsewhere the
old folder is renamed aside first and a kill between the two renames is
repaired by the next run (the previous output is put back).

The results store (:mod:`analysis.runs.store`) lives in the target, in
``.meleelab-store/``, while cells run (a killed run keeps what it finished);
just before the swap it is moved into the staging folder, so it is inside the
new output too. Leftovers of a killed run (staging folders, a store caught in
one) are cleaned up, or adopted, by the next run on the same folder.

Refuses to replace a folder holding files meleelab does not write (``--out ~``
or ``--out .`` in a source tree would otherwise be swept away).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from sim.errors import InputError

from ..runs.store import ResultsStore

__all__ = ["OutputFolder", "replace_folder", "STORE_DIR", "STORE_FILE"]

#: The results store's folder inside an output folder, and its database file.
STORE_DIR = ".meleelab-store"
STORE_FILE = "results.sqlite"

#: File types meleelab writes; a folder holding only these (and folders of them) may be replaced.
OUTPUT_SUFFIXES = {".csv", ".json", ".png", ".html", ".md", ".txt"}


def _is_ours(path: Path) -> Path | None:
    """The first entry under ``path`` that meleelab would not have written, or None."""
    for entry in path.iterdir():
        if entry.name == STORE_DIR or (entry.name.startswith(".") and entry.name.endswith(".tmp")):
            continue  # the store, and temporary files of an atomic write that was interrupted
        if entry.is_symlink():
            return entry
        if entry.is_dir():
            bad = _is_ours(entry)
            if bad is not None:
                return bad
        elif entry.suffix.lower() not in OUTPUT_SUFFIXES:
            return entry
    return None


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2``); False when not supported here."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    import errno

    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputFolder:
    """A target folder that a run replaces as a whole.

    Parameters
    ----------
    path : str or Path
        The output folder (need not exist). A symlink is followed: its target is replaced.

    Raises
    ------
    InputError
        ``path`` is a file, or a folder holding files meleelab does not write.
    """

    def __init__(self, path: str | Path) -> None:
        self.given = Path(path)
        self.path = Path(os.path.realpath(self.given))
        if self.path.exists() and not self.path.is_dir():
            raise InputError(f"--out {self.given}: a file, expected a folder")
        if self.path == Path(self.path.anchor):
            raise InputError(f"--out {self.given}: cannot replace the root folder")
        self._pattern = re.compile(r"^\." + re.escape(self.path.name) + r"\.(tmp|old)-(\d+)-\w+$")
        self.recover()
        if self.path.is_dir():
            bad = _is_ours(self.path)
            if bad is not None:
                raise InputError(f"--out {self.given}: holds {bad.relative_to(self.path)}, which meleelab did not "
                                 "write; the folder is replaced as a whole, so give a new or empty folder")
        self.store: ResultsStore | None = None

    @property
    def store_path(self) -> Path:
        return self.path / STORE_DIR / STORE_FILE

    def _siblings(self) -> Iterable[tuple[Path, str, int]]:
        parent = self.path.parent
        if not parent.is_dir():
            return []
        out = []
        for entry in parent.iterdir():
            m = self._pattern.match(entry.name)
            if m:
                out.append((entry, m.group(1), int(m.group(2))))
        return out

    def recover(self) -> None:
        """Undo what a killed run left beside the folder (see the module docstring)."""
        # a previous output set aside by an interrupted swap goes back before any store is adopted
        for entry, kind, pid in sorted(self._siblings(), key=lambda e: e[1] != "old"):
            if _alive(pid):
                continue  # another run on this folder is still going
            if kind == "old" and not self.path.exists():
                os.rename(entry, self.path)  # killed between the two renames of a swap: put the previous output back
                continue
            store = entry / STORE_DIR
            if store.is_dir() and not (self.path / STORE_DIR).exists():
                self.path.mkdir(parents=True, exist_ok=True)
                os.rename(store, self.path / STORE_DIR)  # killed just before the swap: keep its finished cells
            shutil.rmtree(entry, ignore_errors=True)

    def open_store(self, *, fresh: bool = False) -> ResultsStore:
        """The folder's results store (created with the folder if needed)."""
        if self.store is None:
            self.store = ResultsStore(self.store_path, fresh=fresh)
        return self.store

    def replace(self, write: Callable[[Path], list[Path]]) -> list[Path]:
        """Call ``write(staging_folder)``, then swap the staging folder in as the target.

        Returns the written paths as they are after the swap (inside the target).
        The store, if open, is closed and moved into the new folder.
        """
        parent = self.path.parent
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.tmp-{os.getpid()}-", dir=parent))
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes 0700 folders; outputs are shared like any folder
            written = write(staging)
            if self.store is not None:
                self.store.close()
                self.store = None
            if (self.path / STORE_DIR).is_dir():
                os.rename(self.path / STORE_DIR, staging / STORE_DIR)
            for root, _, files in os.walk(staging):
                _fsync_dir(Path(root))
            self._swap(staging)
        except BaseException:
            if (staging / STORE_DIR).is_dir() and not (self.path / STORE_DIR).exists() and self.path.is_dir():
                os.rename(staging / STORE_DIR, self.path / STORE_DIR)
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return [self.path / Path(p).relative_to(staging) for p in written]

    def _swap(self, staging: Path) -> None:
        if not self.path.exists():
            os.rename(staging, self.path)
        elif _exchange(staging, self.path):
            shutil.rmtree(staging)  # now the previous output
        else:
            old = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.old-{os.getpid()}-", dir=self.path.parent))
            os.rmdir(old)
            os.rename(self.path, old)
            os.rename(staging, self.path)
            shutil.rmtree(old)
        _fsync_dir(self.path.parent)

    def close(self) -> None:
        """Close the store without replacing anything (a failed run)."""
        if self.store is not None:
            self.store.close()
            self.store = None


def replace_folder(path: str | Path, write: Callable[[Path], list[Path]]) -> list[Path]:
    """Write a folder with ``write(staging)`` and swap it in whole (see :class:`OutputFolder`)."""
    return OutputFolder(path).replace(write)
