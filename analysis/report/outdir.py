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

Replaces only what meleelab wrote (:mod:`analysis.report.owned`): every output
folder carries a ``.meleelab`` manifest with the SHA-256 of each file it wrote,
and a folder holding anything the manifests do not prove (a file of the user's,
whatever its name, a file edited since, a symbolic link) is refused in one line
before anything is touched, and checked again just before the swap. The previous
output is then removed file by file, each only if it still matches its hash. So
``--out ~``, ``--out .`` in a source tree or a folder of the user's own CSV or
HTML files are never swept away.

One run at a time per folder: :class:`OutputFolder` holds an exclusive
``fcntl.flock`` on ``.NAME.lock`` beside the target from the moment it is made
until the output is swapped in (or the run fails), so a second run on the same
``--out`` is refused in one line instead of silently overwriting the first.
The kernel drops the lock when its process dies, so a killed run never blocks
the next one. The lock file is never a symbolic link or a user's file: it is
opened with ``O_NOFOLLOW`` and used only when it holds nothing but a process id.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sim.errors import InputError

from ..runs.store import ResultsStore
from .owned import (MARKER, STORE_DIR, STORE_FILE, claim_staging, foreign_entry, is_staging, read_manifest,
                    remove_owned, write_markers)

__all__ = ["OutputFolder", "replace_folder", "replacing_writer", "FolderLock", "STORE_DIR", "STORE_FILE", "MARKER"]


class FolderLock:
    """An exclusive, non-blocking ``flock`` on ``.NAME.lock`` beside a folder (see the module docstring).

    The lock file is opened without following a symbolic link (``O_NOFOLLOW``) and
    used only if it is a regular file with one link holding nothing but a process
    id (what a killed run leaves): a link, a hard link or a file of the user's that
    happens to have that name is refused, never written to.

    Parameters
    ----------
    target : Path
        The folder (resolved); its parent is created if needed.
    given : str
        How the user named it (for the message).

    Raises
    ------
    InputError
        Another process holds the lock, or ``.NAME.lock`` is not meleelab's lock file.
    """

    def __init__(self, target: Path, given: str) -> None:
        self.path = target.parent / f".{target.name}.lock"
        self._fd: int | None = None
        self._id: tuple[int, int] | None = None
        self.previous_staging = ""
        self._made = [p for p in target.parents if not p.exists()]  # removed again if the run leaves nothing
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock here (Windows): one run at a time is up to the user
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | \
            getattr(os, "O_CLOEXEC", 0)
        while True:
            try:
                fd = os.open(self.path, flags, 0o644)
            except OSError as e:
                self._forget_made()
                why = "a symbolic link" if e.errno == errno.ELOOP else (e.strerror or type(e).__name__)
                raise InputError(f"--out {given}: cannot use the lock file {self.path} ({why}); meleelab's lock "
                                 "file is a plain file it makes itself: move that away, or give another --out "
                                 "folder") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _read_pid(fd)
                os.close(fd)
                self._forget_made()
                raise InputError(f"--out {given}: another meleelab run{holder} is writing this folder; wait for it "
                                 "to finish, or give another --out folder") from None
            info = os.fstat(fd)
            problem = _not_a_lock_file(fd, info)
            if problem:
                os.close(fd)
                self._forget_made()
                raise InputError(f"--out {given}: {self.path} is {problem}, not meleelab's lock file; it is left "
                                 "as it is: move it away, or give another --out folder")
            now = _lstat(self.path)
            if now is not None and (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
                break
            os.close(fd)  # the previous holder removed the file between our open and our lock: lock the new one
        #: the staging folder a killed holder was making (FolderLock.note): meleelab's, whatever it holds
        self.previous_staging = _staging_named(os.pread(fd, _MAX_LOCK_BYTES + 1, 0))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd, self._id = fd, (info.st_dev, info.st_ino)

    def note(self, staging_name: str) -> None:
        """Record in the lock file, before making it, the name of the staging folder this run makes: if the
        run is killed before it marks that folder as its own, the next run still knows whose it is."""
        if self._fd is not None:
            data = f"{os.getpid()}\n{json.dumps(staging_name)}\n".encode("ascii")  # JSON: any name, one line
            os.pwrite(self._fd, data, 0)
            os.ftruncate(self._fd, len(data))

    def release(self) -> None:
        """Remove the lock file and drop the lock (in that order: a waiting run then locks a new file)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        now = _lstat(self.path)
        if now is not None and (now.st_dev, now.st_ino) == self._id:  # ours still: never another file of that name
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


def _staging_named(text: bytes) -> str:
    """The staging folder's name recorded in a lock file's text (empty when none)."""
    lines = text.decode("ascii", "replace").splitlines()
    try:
        name = json.loads(lines[1]) if len(lines) > 1 else ""
    except ValueError:
        return ""
    return name if isinstance(name, str) and name.startswith(".") and "/" not in name else ""


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _not_a_lock_file(fd: int, info: os.stat_result) -> str:
    """Why the open file is not a lock file meleelab made (empty: it is one, or new)."""
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_nlink != 1:
        return f"a file with {info.st_nlink} hard links"
    if info.st_size > _MAX_LOCK_BYTES:
        return f"a file of {info.st_size:,} bytes"
    text = os.pread(fd, _MAX_LOCK_BYTES + 1, 0)
    if text and not _LOCK_TEXT.fullmatch(text):
        return "a file that holds something else than a process id"
    return ""


#: What a lock file holds: the process id, then the name of the staging folder it makes (see FolderLock.note).
_LOCK_TEXT = re.compile(rb'[0-9]+\n?("[ -~]{1,1000}"\n)?')
_MAX_LOCK_BYTES = 1100


def _read_pid(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").split("\n")[0].strip()
    except OSError:
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
        The command writing it, recorded in the folder's manifest.

    Raises
    ------
    InputError
        ``path`` is a file, holds something meleelab cannot prove it wrote
        (:func:`analysis.report.owned.foreign_entry`), or another run is writing
        it now (it is locked until :meth:`replace` or :meth:`close`).
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
            self.check_owned()
        except BaseException:
            self.lock.release()
            raise

    def check_owned(self) -> None:
        """Refuse (one line, nothing touched) when the folder holds anything meleelab cannot prove it wrote."""
        try:
            bad = foreign_entry(self.path) if self.path.is_dir() else None
        except OSError as e:
            raise InputError(f"--out {self.given}: cannot read the folder ({e.strerror or type(e).__name__}), so "
                             "what is in it cannot be checked: give another --out folder") from None
        if bad is not None:
            where = bad.path.relative_to(self.path) if bad.path != self.path else "."
            raise InputError(f"--out {self.given}: holds {where}, which meleelab did not write ({bad.why}); only what "
                             "meleelab wrote is ever replaced, so nothing was touched: give a new or empty folder, "
                             "or one meleelab wrote")

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
            st = _lstat(entry)
            if m and st is not None and stat.S_ISDIR(st.st_mode):  # a link or a file of that name is not ours
                out.append((entry, m.group(1), int(m.group(2))))
        return out

    def recover(self) -> None:
        """Undo what a killed run left beside the folder (see the module docstring).

        Only what is meleelab's is removed: a staging folder it claimed when it made it, and the files of a
        previous output that still match their manifest; anything else is left where it is.
        """
        # a previous output set aside by an interrupted swap goes back before any store is adopted
        for entry, kind, pid in sorted(self._siblings(), key=lambda e: e[1] != "old"):
            if _alive(pid):
                continue  # another run on this folder is still going
            # made by the killed holder of the lock (named in the lock file) or claimed by a staging manifest
            staging = is_staging(entry) or (entry.name == self.lock.previous_staging and kind == "tmp" and
                                            isinstance(read_manifest(entry), str))
            if kind == "old" and not staging and not os.path.lexists(self.path) and \
                    not isinstance(read_manifest(entry), str):
                os.rename(entry, self.path)  # killed between the two renames of a swap: put the previous output back
                continue
            store = entry / STORE_DIR
            st = _lstat(store)
            if st is not None and stat.S_ISDIR(st.st_mode) and not os.path.lexists(self.path / STORE_DIR):
                self.path.mkdir(parents=True, exist_ok=True)
                os.rename(store, self.path / STORE_DIR)  # killed just before the swap: keep its finished cells
            if staging:
                shutil.rmtree(entry, ignore_errors=True)  # made and claimed by the killed run: all of it is ours
            else:
                remove_owned(entry)  # a previous output: only the files that match their hashes

    def open_store(self, *, fresh: bool = False) -> ResultsStore:
        """The folder's results store (created with the folder if needed)."""
        if self.store is None:  # --fresh replaces a damaged store only in a folder meleelab proves it wrote
            self.store = ResultsStore(self.store_path, fresh=fresh,
                                      replace_damaged=not isinstance(read_manifest(self.path), str))
        return self.store

    def replace(self, write: Callable[[Path], list[Path]]) -> list[Path]:
        """Call ``write(staging_folder)``, record it, then swap it in as the target; release the lock.

        Returns the written paths as they are after the swap (inside the target).
        The store, if open, is closed and moved into the new folder. Every folder
        written gets a manifest (:func:`analysis.report.owned.write_markers`). The
        target is checked again just before the swap: a file added to it while the
        run went on is the user's, and the run is refused rather than delete it.
        """
        try:
            return self._replace(write)
        finally:
            self.close()

    def _replace(self, write: Callable[[Path], list[Path]]) -> list[Path]:
        import sim

        parent = self.path.parent
        parent.mkdir(parents=True, exist_ok=True)
        staging = self._make_staging(parent)
        try:
            claim_staging(staging, self.command, sim.__version__)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(staging, 0o777 & ~umask)  # made 0700 (private while written); outputs are shared like any folder
            written = write(staging)
            write_markers(staging, self.command, sim.__version__)
            if self.store is not None:
                self.store.close()
                self.store = None
            self.check_owned()  # again: the user may have added a file while the cells ran
            if (self.path / STORE_DIR).is_dir():
                os.rename(self.path / STORE_DIR, staging / STORE_DIR)
            for root, _, files in os.walk(staging):
                _fsync_dir(Path(root))
            self._swap(staging)
            self._replaced = True
        except BaseException:
            if (staging / STORE_DIR).is_dir() and not (self.path / STORE_DIR).exists() and self.path.is_dir():
                os.rename(staging / STORE_DIR, self.path / STORE_DIR)
            if is_staging(staging):
                shutil.rmtree(staging, ignore_errors=True)
            else:
                remove_owned(staging)  # a failure after the swap: the previous output, proven file by file
            raise
        return [self.path / Path(p).relative_to(staging) for p in written]

    def _make_staging(self, parent: Path) -> Path:
        """A new staging folder beside the target, its name recorded in the lock file before it is made."""
        while True:
            staging = parent / f".{self.path.name}.tmp-{os.getpid()}-{secrets.token_hex(6)}"
            self.lock.note(staging.name)
            try:
                os.mkdir(staging, 0o700)
                return staging
            except FileExistsError:
                continue

    def _swap(self, staging: Path) -> None:
        if not os.path.lexists(self.path):
            os.rename(staging, self.path)
        elif _exchange(staging, self.path):
            remove_owned(staging)  # now the previous output: only what its manifests prove is removed
        else:
            old = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.old-{os.getpid()}-", dir=self.path.parent))
            os.rmdir(old)
            os.rename(self.path, old)
            os.rename(staging, self.path)
            remove_owned(old)
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


def replacing_writer(command: str) -> Callable[[Any, str | Path], list[Path]]:
    """A ``write(self, out_dir)`` method for a result class: ``self.write_files(staging)``, then ``out_dir`` is
    replaced whole as ``--out`` is (only a folder meleelab wrote, or an empty or new one)."""
    def write(self: Any, out_dir: str | Path) -> list[Path]:
        """Write the files into ``out_dir``, replaced as a whole like ``--out`` (see :class:`OutputFolder`):
        a folder holding anything meleelab did not write is refused in one line, nothing touched."""
        return replace_folder(out_dir, self.write_files, command)
    return write
