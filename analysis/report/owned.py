"""Which files meleelab wrote, proven by a manifest of their hashes: only those are ever replaced or removed.

Every folder a run writes gets a manifest, :data:`MARKER` (``.meleelab``): JSON
naming the program, its version, the command, every file of that folder with
the SHA-256 of its bytes, and its sub-folders (which carry their own manifest)::

    {"written_by": "meleelab", "manifest": 2, "version": "0.1.0", "command": "report",
     "files": {"report.html": "9f86d0...", ...}, "folders": ["rebalance"]}

A folder is meleelab's to replace only if every entry in it, at every depth, is
proven by its folder's manifest: a regular file (never a symbolic link, a FIFO or
a device) whose bytes still hash to the recorded SHA-256, or a listed sub-folder
that is meleelab's in turn. The results store (``.meleelab-store/``, its database
and journal files only) is kept by the run, never deleted. Anything else, whatever
its name (a ``compare.csv`` or ``index.html`` of the user's, a ``.x.tmp`` file, a
file meleelab wrote that was edited since), is the user's: :func:`foreign_entry`
names it, with why, and the run is refused before anything is touched.

There is no recognition by file names: a folder without a manifest is
meleelab's only when it is empty (or holds only a results store: the target of
a first run that was killed). Folders written by versions before hashes (a
manifest without ``files``) are refused too: delete them by hand once.

A run's staging folder is claimed the moment it is made (a manifest with
``"staging": true``), so that a staging folder left by a killed run is known
as meleelab's and removed by the next run; :func:`remove_owned` removes a
previous output file by file, each one only if it still matches its hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MARKER", "MANIFEST_FORMAT", "STORE_DIR", "STORE_FILE", "Foreign", "foreign_entry", "write_markers",
           "claim_staging", "is_staging", "read_manifest", "remove_owned", "file_sha256"]

#: The manifest file written into every output folder.
MARKER = ".meleelab"
#: Its layout: 2 records each file's SHA-256 (1, without hashes, proves nothing and is refused).
MANIFEST_FORMAT = 2
#: The results store's folder inside an output folder, and its database file.
STORE_DIR = ".meleelab-store"
STORE_FILE = "results.sqlite"
#: What the store folder may hold: the database, SQLite's journal files.
_STORE_NAMES = {STORE_FILE, f"{STORE_FILE}-wal", f"{STORE_FILE}-shm", f"{STORE_FILE}-journal"}
#: Largest manifest read (a report --all folder's is a few KB).
_MAX_MANIFEST_BYTES = 1 << 20


@dataclass(frozen=True)
class Foreign:
    """An entry meleelab cannot prove it wrote: where it is and why."""

    path: Path
    why: str


@dataclass(frozen=True)
class Manifest:
    """A folder's manifest: the files with their SHA-256, the sub-folders, and whether it is a staging claim."""

    files: dict[str, str]
    folders: frozenset[str]
    staging: bool = False


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a regular file's bytes, opened without following a symbolic link (None: not such a file)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_json(path: Path) -> object:
    st = _lstat(path)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_MANIFEST_BYTES:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        data = os.read(fd, _MAX_MANIFEST_BYTES + 1)
        return json.loads(data.decode("utf-8")) if len(data) <= _MAX_MANIFEST_BYTES else None
    except (OSError, ValueError, UnicodeError, RecursionError):
        return None
    finally:
        os.close(fd)


def read_manifest(folder: Path) -> Manifest | str:
    """``folder``'s manifest, or why there is none that proves anything (a sentence)."""
    path = folder / MARKER
    st = _lstat(path)
    if st is None:
        return "no .meleelab manifest in its folder"
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("written_by") != "meleelab":
        return "its folder's .meleelab is not a manifest of meleelab's"
    if data.get("manifest") != MANIFEST_FORMAT:
        return "its folder's .meleelab was written by an older meleelab, without file hashes"
    files, folders = data.get("files"), data.get("folders", [])
    if not isinstance(files, dict) or not isinstance(folders, list) or \
            not all(isinstance(k, str) and isinstance(v, str) and len(v) == 64 for k, v in files.items()) or \
            not all(isinstance(f, str) for f in folders):
        return "its folder's .meleelab is damaged"
    return Manifest(dict(files), frozenset(folders), data.get("staging") is True)


def _store_foreign(store: Path) -> Foreign | None:
    """The first entry of the store folder that is not the store's database or its journals (regular files)."""
    st = _lstat(store)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return Foreign(store, "a symbolic link or a file where the results store's folder goes")
    for entry in sorted(os.listdir(store)):
        est = _lstat(store / entry)
        if entry not in _STORE_NAMES or est is None or not stat.S_ISREG(est.st_mode):
            return Foreign(store / entry, "not a file of the results store")
    return None


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def foreign_entry(folder: Path) -> Foreign | None:
    """The first entry under ``folder`` that meleelab cannot prove it wrote, or None (see the module docstring).

    Nothing is followed: a symbolic link is never meleelab's, whatever it points to.
    """
    names = sorted(os.listdir(folder))
    manifest = read_manifest(folder)
    if isinstance(manifest, str) or manifest.staging:
        why = manifest if isinstance(manifest, str) else "its folder is another run's unfinished output"
        for name in names:
            if name == STORE_DIR:
                bad = _store_foreign(folder / name)
                if bad is not None:
                    return bad
                continue
            return Foreign(folder / name, why)
        return None  # empty, or a results store only: a first run that was killed
    for name in names:
        entry = folder / name
        st = _lstat(entry)
        if st is None:
            continue  # gone meanwhile
        if name == MARKER:
            continue
        if name == STORE_DIR:
            bad = _store_foreign(entry)
            if bad is not None:
                return bad
        elif stat.S_ISDIR(st.st_mode):
            if name not in manifest.folders:
                return Foreign(entry, "a folder its folder's .meleelab does not list")
            bad = foreign_entry(entry)
            if bad is not None:
                return bad
        elif not stat.S_ISREG(st.st_mode):
            return Foreign(entry, _kind(st.st_mode))
        elif name not in manifest.files:
            return Foreign(entry, "a file its folder's .meleelab does not list")
        elif file_sha256(entry) != manifest.files[name]:
            return Foreign(entry, "changed since meleelab wrote it (its SHA-256 differs from the manifest's)")
    return None


def remove_owned(folder: Path) -> list[Path]:
    """Remove what ``folder``'s manifests prove meleelab wrote, deepest first; return what was kept.

    Each file is removed only if it is a regular file whose bytes still match its
    recorded hash; a sub-folder only if it is listed and emptied that way; the
    manifest last, and the folder when nothing else is left in it. Anything else
    (a file added or changed since) is kept where it is, with the manifest.
    A folder without a manifest keeps everything (it is removed only when empty).
    """
    kept: list[Path] = []
    manifest = read_manifest(folder)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return [folder]
    for name in names:
        entry = folder / name
        st = _lstat(entry)
        if st is None or name == MARKER:
            continue
        if isinstance(manifest, str):
            kept.append(entry)
        elif name == STORE_DIR and _store_foreign(entry) is None:
            shutil.rmtree(entry, ignore_errors=True)  # an older output's store (the target has its own)
        elif stat.S_ISDIR(st.st_mode) and name in manifest.folders:
            kept += remove_owned(entry)
        elif stat.S_ISREG(st.st_mode) and manifest.files.get(name) == file_sha256(entry):
            try:
                os.unlink(entry)
            except OSError:
                kept.append(entry)
        else:
            kept.append(entry)
    if not kept:
        try:
            if not isinstance(manifest, str):
                os.unlink(folder / MARKER)
            os.rmdir(folder)
        except OSError:
            kept.append(folder)
    return kept


def claim_staging(staging: Path, command: str, version: str) -> Path:
    """Mark a staging folder just made as meleelab's (replaced by its real manifest when the output is written)."""
    return _write_manifest(staging / MARKER, {"written_by": "meleelab", "manifest": MANIFEST_FORMAT,
                                              "version": version, "command": command, "staging": True,
                                              "pid": os.getpid(), "files": {}, "folders": []})


def is_staging(folder: Path) -> bool:
    """Whether ``folder`` (a real folder, not a link) carries a staging claim (:func:`claim_staging`)."""
    st = _lstat(folder)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return False
    manifest = read_manifest(folder)
    return not isinstance(manifest, str) and manifest.staging


def write_markers(root: Path, command: str, version: str) -> list[Path]:
    """Write a manifest into ``root`` and every folder below it, each naming that folder's files (with their
    SHA-256) and sub-folders. The results store is not listed (it changes while cells run; it is never deleted)."""
    written = []
    for here, dirs, names in os.walk(root):
        folder = Path(here)
        dirs[:] = sorted(d for d in dirs if d != STORE_DIR)
        files = {}
        for n in sorted(names):
            if n == MARKER:
                continue
            digest = file_sha256(folder / n)
            if digest is None:
                raise OSError(f"{folder / n}: not a regular file in a staging folder")
            files[n] = digest
        written.append(_write_manifest(folder / MARKER, {
            "written_by": "meleelab", "manifest": MANIFEST_FORMAT, "version": version, "command": command,
            "files": files, "folders": list(dirs)}))
    return written


def _write_manifest(path: Path, data: dict[str, object]) -> Path:
    from .io import atomic_write_text

    return atomic_write_text(path, json.dumps(data, indent=2) + "\n")

