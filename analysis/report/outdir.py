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

Refuses to replace a folder that meleelab did not write (:mod:`analysis.report.owned`:
every output folder carries a ``.meleelab`` marker naming its entries; folders of
older versions are recognised by their file names), so ``--out ~``, ``--out .``
in a source tree or a folder of the user's own CSV files are never swept away.

One run at a time per folder: :class:`OutputFolder` holds an exclusive
``fcntl.flock`` on ``.NAME.lock`` beside the target from the moment it is made
until the output is swapped in (or the run fails), so a second run on the same
``--out`` is refused in one line instead of silently overwriting the first.
The kernel drops the lock when its process dies, so a killed run never blocks
the next one.
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
from .owned import MARKER, STORE_DIR, STORE_FILE, foreign_entry, write_markers

__all__ = ["OutputFolder", "replace_folder", "FolderLock", "STORE_DIR", "STORE_FILE", "MARKER"]


class FolderLock:
    """An exclusive, non-blocking ``flock`` on ``.NAME.lock`` beside a folder (see the module docstring).

    Parameters
    ----------
    target : Path
        The folder (resolved); its parent is created if needed.
    given : str
        How the user named it (for the message).

    Raises
    ------
    InputError
        Another process holds the lock.
    """

    def __init__(self, target: Path, given: str) -> None:
        self.path = target.parent / f".{target.name}.lock"
        self._fd: int | None = None
        self._made = [p for p in target.parents if not p.exists()]  # removed again if the run leaves nothing
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock here (Windows): one run at a time is up to the user
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _read_pid(fd)
                os.close(fd)
                self._forget_made()
                raise InputError(f"--out {given}: another meleelab run{holder} is writing this folder; wait for it "
                                 "to finish, or give another --out folder") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the previous holder removed the file between our open and our lock: lock the new one
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._fd = fd

    def release(self) -> None:
        """Remove the lock file and drop the lock (in that order: a waiting run then locks a new file)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(fd)
        self._forget_made()

    def _forget_made(self) -> None:
        for p in self._made:  # deepest first: folders made for the lock file, if they stayed empty
            try:
                p.rmdir()
            except OSError:
                break

    def __del__(self) -> None:
        self.release()


def _read_pid(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeError):
        return ""
    return f" (process {text})" if text.isdigit() else ""


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
    command : str
        The command writing it, recorded in the folder's marker.

    Raises
    ------
    InputError
        ``path`` is a file, a folder that meleelab did not write, or a folder
        another run is writing now (it is locked until :meth:`replace` or :meth:`close`).
    """

    def __init__(self, path: str | Path, command: str = "meleelab") -> None:
        self.given = Path(path)
        self.path = Path(os.path.realpath(self.given))
        self.command = command
        self.store: ResultsStore | None = None
        self._made = not os.path.lexists(self.path)  # a failed run leaves no folder it made and stored nothing in
        self._replaced = False
        if self.path.exists() and not self.path.is_dir():
            raise InputError(f"--out {self.given}: a file, expected a folder")
        if self.path == Path(self.path.anchor):
            raise InputError(f"--out {self.given}: cannot replace the root folder")
        self._pattern = re.compile(r"^\." + re.escape(self.path.name) + r"\.(tmp|old)-(\d+)-\w+$")
        self.lock = FolderLock(self.path, str(self.given))  # before recovering: another run may be mid-swap
        try:
            self.recover()
            bad = foreign_entry(self.path) if self.path.is_dir() else None
        except BaseException:
            self.lock.release()
            raise
        if bad is not None:
            self.lock.release()
            where = bad.relative_to(self.path) if bad != self.path else "."
            raise InputError(f"--out {self.given}: holds {where}, which meleelab did not write; the folder is "
                             "replaced as a whole, so give a new or empty folder (or one meleelab wrote)")

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
        """Call ``write(staging_folder)``, mark it, then swap it in as the target; release the lock.

        Returns the written paths as they are after the swap (inside the target).
        The store, if open, is closed and moved into the new folder. Every folder
        written gets a marker (:func:`analysis.report.owned.write_markers`).
        """
        try:
            return self._replace(write)
        finally:
            self.close()

    def _replace(self, write: Callable[[Path], list[Path]]) -> list[Path]:
        import sim

        parent = self.path.parent
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.tmp-{os.getpid()}-", dir=parent))
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes 0700 folders; outputs are shared like any folder
            written = write(staging)
            write_markers(staging, self.command, sim.__version__)
            if self.store is not None:
                self.store.close()
                self.store = None
            if (self.path / STORE_DIR).is_dir():
                os.rename(self.path / STORE_DIR, staging / STORE_DIR)
            for root, _, files in os.walk(staging):
                _fsync_dir(Path(root))
            self._swap(staging)
            self._replaced = True
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
        """Close the store and release the folder's lock (after :meth:`replace`, or without it: a failed run)."""
        try:
            stored = None  # rows in the store, when this process opened it
            if self.store is not None:
                store, self.store = self.store, None
                try:
                    stored = len(store)
                except Exception:  # noqa: BLE001 - an unreadable store is kept as it is, never a second error
                    stored = None
                finally:
                    store.close()
            if not self._replaced and self._made and stored == 0 and self.path.is_dir() and \
                    {e.name for e in self.path.iterdir()} <= {STORE_DIR}:
                shutil.rmtree(self.path, ignore_errors=True)  # bad input or an early failure: nothing to resume
        finally:
            self.lock.release()


def replace_folder(path: str | Path, write: Callable[[Path], list[Path]], command: str = "meleelab") -> list[Path]:
    """Write a folder with ``write(staging)`` and swap it in whole (see :class:`OutputFolder`)."""
    return OutputFolder(path, command).replace(write)
