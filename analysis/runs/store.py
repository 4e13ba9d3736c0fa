"""The results store: finished cells kept in SQLite so a rerun computes only what is missing.

Each cell's tallies are saved under a key that digests *everything* its numbers
depend on, built generically (no list of today's settings to keep up to date):

* the ruleset id and spec, the seed (root entropy and spawn key), ``rounds`` and
  ``max_rounds``;
* every field of the :class:`~analysis.runs.jobs.CellJob` except its caller-side
  name and its plan (stream, trial cap, stopping rule, batch size, the method
  asked for, and any field added later); its ``identity`` is the
  :class:`~sim.ruleset.Matchup` (both units' full definitions after overrides,
  states, options), from which the ruleset prepares the plan the kernel runs, so
  a setting that reaches the simulation is in the key whichever way it gets there;
* the versions of meleelab, NumPy and the digest of the simulator's source
  (``sim`` and the stopping rule in ``analysis/runs/jobs.py``), and of a plugin
  ruleset's own source: results of other code are never reused.

The plan is left out because it is a function of the matchup and the code, and
building it can cost more than fighting a cell (a duel between groups builds its
exact chain: a tenth of a second): a rerun looks each cell up before building its
plan (:meth:`analysis.runs.fielding.RunContext.stored`), so the cells a killed run
finished cost nothing the second time.

Values are canonicalised before hashing (dataclasses field by field, mappings
sorted, sets sorted, arrays by dtype, shape and bytes), so the key is the same
in every process and on every machine. Tallies are stored as JSON (exact
integers), never pickled: a store copied from elsewhere cannot run code.

A row is used only if it checks out and this user's key signed it
(:mod:`analysis.runs.store_check`): a store that was edited, or that comes from
another user or machine, has its rows ignored (their cells are computed again
and re-signed) and counted in :attr:`ResultsStore.ignored`, each with why in
:attr:`ResultsStore.ignored_why` (another key, edited, unsigned, impossible). A file that is not a
results store at all (another SQLite database, or not a database) is refused.

Rows are committed one cell at a time, so a killed run loses only the cells in
flight. One writer at a time (the process running the cells; the output folder
is locked, :mod:`analysis.report.outdir`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sim.errors import OutputError
from sim.tally import Moments, Tally

from .store_check import RowSigner, check_exact_row, check_row, exact_to_json
from .store_keys import STORE_FORMAT, canonical, cell_key, code_digest, digest, ruleset_code_digest  # noqa: F401

__all__ = ["ResultsStore", "canonical", "digest", "tally_to_dict", "tally_from_dict", "STORE_FORMAT", "store_listener"]


#: SQLite ``application_id`` of a results store ("mlab"): tells it from other databases.
APPLICATION_ID = 0x6D6C6162
#: The columns of the ``cells`` table (a store of format 1 lacks ``mac``, and one of format 2 ``seconds``: they
#: are added). ``seconds``: what the cell took to compute (its plan and its fights), for the note of what a rerun
#: saved; not signed (it changes no number).
_COLUMNS = ("key", "format", "label", "tally", "blocks", "mac", "seconds")
#: The column sets of the earlier formats (their rows are never used: their format is not this one).
_OLD_COLUMNS = (_COLUMNS[:5], _COLUMNS[:6])

#: What the error says of a database that is not a results store (another program's: never replaced).
_FOREIGN = "not a meleelab results store"

# ------------------------------------------------------------- tallies
def _moments_to(m: Moments) -> dict[str, Any]:
    return {"total": int(m.total), "total_sq": int(m.total_sq), "hist": [int(v) for v in m.hist]}


def _moments_from(d: dict[str, Any]) -> Moments:
    return Moments(int(d["total"]), int(d["total_sq"]), np.asarray(d["hist"], dtype=np.int64))


def tally_to_dict(t: Tally) -> dict[str, Any]:
    """Every field of a :class:`~sim.tally.Tally` as exact JSON values."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(t):
        v = getattr(t, f.name)
        if isinstance(v, Moments):
            out[f.name] = {"moments": _moments_to(v)}
        elif isinstance(v, np.ndarray):
            out[f.name] = {"int64": v.tolist(), "shape": list(v.shape)}
        elif isinstance(v, dict):
            out[f.name] = {"extras": {k: _moments_to(m) for k, m in v.items()}}
        elif isinstance(v, tuple):
            out[f.name] = {"tuple": list(v)}
        else:
            out[f.name] = int(v)
    return out


def tally_from_dict(d: dict[str, Any]) -> Tally:
    """Inverse of :func:`tally_to_dict`."""
    t = Tally(int(d["n_categories"]), tuple(d["extra_names"]["tuple"]))
    for name, v in d.items():
        if name in ("n_categories", "extra_names"):
            continue
        if isinstance(v, dict) and "moments" in v:
            setattr(t, name, _moments_from(v["moments"]))
        elif isinstance(v, dict) and "int64" in v:
            setattr(t, name, np.asarray(v["int64"], dtype=np.int64).reshape(v["shape"]))
        elif isinstance(v, dict) and "extras" in v:
            setattr(t, name, {k: _moments_from(m) for k, m in v["extras"].items()})
        else:
            setattr(t, name, int(v))
    return t


def _is_exact(tally_text: str) -> bool:
    """A row holding an exact outcome (``{"exact": ...}``) rather than a tally."""
    return tally_text.startswith('{"exact"')


# ---------------------------------------------------------------- store
_close_listeners: list[Any] = []


@contextlib.contextmanager
def store_listener(callback: Any) -> Iterator[None]:
    """Call ``callback(store)`` as each results store opened inside the ``with`` block is closed
    (the command line says how many cells came from it and how many it ignored)."""
    _close_listeners.append(callback)
    try:
        yield
    finally:
        _close_listeners.remove(callback)


class ResultsStore:
    """Finished cells in one SQLite file.

    Parameters
    ----------
    path : str or Path
        The database file (created with its folder).
    fresh : bool
        Ignore what was stored before (``--fresh``): no earlier row is read; new
        results are still saved (replacing old rows), and this store hands them
        out again (a report's cells to its own rebalance).
    signer : analysis.runs.store_check.RowSigner, optional
        Signs and verifies rows (default: this user's key).
    replace_damaged : bool
        With ``fresh``, a file that is not a database (damaged) is replaced by a
        new store; False keeps it and refuses (an output folder that meleelab
        cannot prove it wrote). Another program's database is never replaced.

    Attributes
    ----------
    reused : set of str
        Keys of the rows handed out that earlier runs stored (cells taken from the store).
    shared : set of str
        Keys of the rows handed out that this store saved itself (cells fought earlier in the same command).
    ignored : set of str
        Keys of rows found but not used: unsigned, signed with another key,
        edited, inconsistent, or not fitting their job (:meth:`reject`).
    ignored_why : dict of str to str
        Why each of them was not used: a key of
        :data:`analysis.runs.store_check.REASONS` ("another key", "edited",
        "unsigned", "unknown", "impossible").
    saved_seconds : float
        What the rows in :attr:`reused` took to compute when they were stored (their plans and
        fights, as recorded; rows without the record count nothing): roughly what reusing them saved.

    Raises
    ------
    sim.errors.OutputError
        The file is not a results store (one line; ``fresh`` starts a new one).
    """

    def __init__(self, path: str | Path, *, fresh: bool = False, signer: RowSigner | None = None,
                 replace_damaged: bool = True) -> None:
        self.path = Path(path)
        self.fresh = fresh
        self.signer = signer or RowSigner()
        self.reused: set[str] = set()
        self.shared: set[str] = set()
        self.ignored: set[str] = set()
        self.ignored_why: dict[str, str] = {}
        self.saved_seconds = 0.0
        self._mine: set[str] = set()  # keys this store saved: trusted under fresh, and not "from an earlier run"
        self._rows_at_open = True  # until the file is read (see holds_nothing)
        self._saved: dict[str, float] = {}  # reused key -> its recorded seconds
        self._db: sqlite3.Connection | None = None
        with self._errors("open"):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise sqlite3.OperationalError(e.strerror or type(e).__name__) from None
            try:
                self._open()
            except sqlite3.DatabaseError as e:
                # another program's database is never deleted, nor a damaged file outside meleelab's own output
                if not fresh or not replace_damaged or _FOREIGN in str(e):
                    raise
                self.close()  # --fresh ignores the store anyway: start a new one in place of a damaged file
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                self._open()

    @property
    def holds_nothing(self) -> bool:
        """No lookup can find a row: the file held no row when opened (or ``fresh`` ignores them) and this
        store has saved none since. A first run's cells then skip their lookups (each one makes the cell's
        matchup and key: a minute of a 100-unit report's first matrix)."""
        return not self._mine and (self.fresh or not self._rows_at_open)

    def _open(self) -> None:
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # WAL with synchronous=NORMAL survives a killed process (not a power cut) and commits fast
        app = int(self._db.execute("PRAGMA application_id").fetchone()[0])
        tables = [r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        columns = tuple(r[1] for r in self._db.execute("PRAGMA table_info(cells)"))
        ours = app == APPLICATION_ID or (app == 0 and tables in ([], ["cells"]))  # 0: new, or of format 1
        if not ours or (tables and columns not in (_COLUMNS, *_OLD_COLUMNS)):
            what = f"application id {app:#x}" if app not in (0, APPLICATION_ID) else \
                "tables " + ", ".join(sorted(tables)[:5])
            raise sqlite3.DatabaseError(f"{_FOREIGN}: a database with {what}")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS cells (key TEXT PRIMARY KEY, format INTEGER NOT NULL, "
                         "label TEXT, tally TEXT NOT NULL, blocks TEXT, mac TEXT, seconds REAL)")
        if columns == _COLUMNS[:5]:
            self._db.execute("ALTER TABLE cells ADD COLUMN mac TEXT")  # format 1: its rows are unsigned, never used
        if columns in _OLD_COLUMNS:
            self._db.execute("ALTER TABLE cells ADD COLUMN seconds REAL")
        if app != APPLICATION_ID:
            self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        self._rows_at_open = bool(self._db.execute("SELECT EXISTS (SELECT 1 FROM cells)").fetchone()[0])

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """SQLite errors (a full disk, a damaged or foreign file) as one-line :class:`~sim.errors.OutputError`."""
        try:
            yield
        except sqlite3.Error as e:
            why = " ".join(str(e).split()) or type(e).__name__
            hint = "" if doing != "open" else "; it is left as it is: move it away to start a new one" \
                if self.fresh else "; delete it, or run again with --fresh to start a new one"
            raise OutputError(f"{self.path}: cannot {doing} the results store ({why}){hint}") from None

    key = staticmethod(cell_key)

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError(f"{self.path}: results store is closed")
        return self._db

    def get(self, key: str) -> tuple[Tally, list[Tally] | None] | None:
        """The stored ``(tally, blocks)`` of ``key``, or None (absent, an exact outcome, or not to be trusted:
        see :attr:`ignored`)."""
        row = self._signed(key)
        if row is None or _is_exact(row[0]):
            return None
        tally_text, blocks_text, seconds = row
        try:
            tally, blocks = check_row(json.loads(tally_text), None if blocks_text is None else json.loads(blocks_text))
        except (ValueError, TypeError, RecursionError):
            self._ignore(key, "impossible")  # signed but inconsistent (a bug, or a key that leaked): never used
            return None
        self._handed_out(key, seconds)
        return tally, blocks

    def get_exact(self, key: str, categories: int, extras: tuple[str, ...]) -> Any:
        """The stored exact outcome (:class:`sim.exact.ExactOutcome`) of ``key``, of a ruleset with
        ``categories`` outcome categories and these ``extras``; or None (as :meth:`get`)."""
        row = self._signed(key)
        if row is None or not _is_exact(row[0]):
            return None
        try:
            outcome = check_exact_row(json.loads(row[0]), categories, extras)
        except (ValueError, TypeError, RecursionError):
            self._ignore(key, "impossible")
            return None
        self._handed_out(key, row[2])
        return outcome

    def put_exact(self, key: str, outcome: Any, label: str = "", seconds: float | None = None) -> None:
        """Save one cell's exact outcome, signed (its plan can cost more than its fights would)."""
        self._put(key, json.dumps(exact_to_json(outcome)), None, label, seconds)

    def _signed(self, key: str) -> tuple[str, str | None, Any] | None:
        """``(tally text, blocks text, seconds)`` of a row this user's key signed, else None."""
        if self.fresh and key not in self._mine:
            return None
        with self._errors("read"):
            row = self.db.execute("SELECT tally, blocks, mac, seconds FROM cells WHERE key = ? AND format = ?",
                                  (key, STORE_FORMAT)).fetchone()
        if row is None:
            return None
        tally_text, blocks_text, mac, seconds = row
        if not isinstance(tally_text, str) or not isinstance(blocks_text, (str, type(None))):
            self._ignore(key, "impossible")
            return None
        why = self.signer.why_not(key, STORE_FORMAT, tally_text, blocks_text, mac)
        if why:
            self._ignore(key, why)  # unsigned, another user's key, or edited after signing: computed again
            return None
        return tally_text, blocks_text, seconds

    def _handed_out(self, key: str, seconds: Any) -> None:
        if key in self._mine:
            self.shared.add(key)
        elif key not in self.reused:
            self.reused.add(key)
            took = float(seconds) if isinstance(seconds, (int, float)) else 0.0
            self._saved[key] = took if 0 <= took < 1e9 else 0.0  # a note, never a number of the results
            self.saved_seconds += self._saved[key]

    def reject(self, key: str) -> None:
        """Count a row handed out by :meth:`get` as not used after all (it does not fit its job)."""
        if key in self.reused:
            self.saved_seconds -= self._saved.pop(key, 0.0)
        self.reused.discard(key)
        self.shared.discard(key)
        self._ignore(key, "impossible")

    def _ignore(self, key: str, why: str) -> None:
        self.ignored.add(key)
        self.ignored_why[key] = why

    def ignored_counts(self) -> dict[str, int]:
        """How many rows were ignored for each reason (:attr:`ignored_why`), most first."""
        counts: dict[str, int] = {}
        for why in self.ignored_why.values():
            counts[why] = counts.get(why, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def put(self, key: str, tally: Tally, blocks: list[Tally] | None = None, label: str = "",
            seconds: float | None = None) -> None:
        """Save one finished cell, signed (committed at once); ``seconds``: what it took to compute."""
        blocks_text = None if blocks is None else json.dumps([tally_to_dict(b) for b in blocks])
        self._put(key, json.dumps(tally_to_dict(tally)), blocks_text, label, seconds)

    def _put(self, key: str, tally_text: str, blocks_text: str | None, label: str, seconds: float | None) -> None:
        row = (key, STORE_FORMAT, label, tally_text, blocks_text,
               self.signer.sign(key, STORE_FORMAT, tally_text, blocks_text),
               None if seconds is None else float(seconds))
        with self._errors("write"):
            self.db.execute("INSERT OR REPLACE INTO cells (key, format, label, tally, blocks, mac, seconds) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)", row)
        self._mine.add(key)

    def __len__(self) -> int:
        with self._errors("read"):
            return int(self.db.execute("SELECT COUNT(*) FROM cells").fetchone()[0])

    def close(self) -> None:
        """Close the file (the write-ahead log is folded into it) and tell the listeners (once)."""
        if self._db is not None:
            db, self._db = self._db, None
            try:
                db.close()
            except sqlite3.Error:  # pragma: no cover - the log could not be folded in (a full disk): rows stay in it
                pass
            for callback in list(_close_listeners):
                callback(self)

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
