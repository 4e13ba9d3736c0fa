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
import enum
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from sim.errors import OutputError
from sim.rng import BLOCK_TRIALS
from sim.ruleset import Rounds, Ruleset
from sim.tally import Moments, Tally

from .store_check import RowSigner, check_exact_row, check_row, exact_to_json

__all__ = ["ResultsStore", "canonical", "digest", "tally_to_dict", "tally_from_dict", "STORE_FORMAT", "store_listener"]

#: Bumped when the stored layout or the key recipe changes (old rows are then never matched).
#: 2: rows are signed (``mac``), adaptive cells run in sub-blocks. 3: keyed by the matchup and the method
#: asked for, without the plan (looked up before the plan is built).
STORE_FORMAT = 3

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

#: CellJob fields that name a job for its caller or time it and never change its numbers, and its plan (a
#: function of its ``identity``, the matchup, and of the code, both in the key). The method chosen is not in it
#: either: the method asked for (``asked``) is, and it decides the method from the plan, always alike.
_NOT_IN_KEY = {"key", "method", "plan", "built_in"}


# ------------------------------------------------------------------ keys
def canonical(x: Any) -> Any:
    """A JSON-able value equal for equal inputs in any process (see the module docstring)."""
    kind = type(x)  # the common exact types first: a large matrix keys a hundred thousand cells
    if kind is str or kind is bool or x is None:
        return x
    if kind is int:
        return x
    if kind is float:
        return {"float": x.hex()}
    if kind is dict:
        return {"map": sorted([(_key_text(k), canonical(v)) for k, v in x.items()])}
    if kind is tuple or kind is list:
        return [canonical(v) for v in x]
    if isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return {"float": float(x).hex()}
    if isinstance(x, enum.Enum):
        return {"enum": f"{type(x).__module__}.{type(x).__qualname__}", "value": canonical(x.value)}
    if isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x)
        return {"array": a.dtype.str, "shape": list(a.shape), "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _canonical_dataclass(x)
    if isinstance(x, dict):
        items = [(_key_text(k), canonical(v)) for k, v in x.items()]
        return {"map": sorted(items)}
    if isinstance(x, (list, tuple)):
        return [canonical(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return {"set": sorted(json.dumps(canonical(v), sort_keys=True) for v in x)}
    if isinstance(x, type) or callable(x):
        return {"callable": f"{getattr(x, '__module__', '?')}.{getattr(x, '__qualname__', repr(x))}"}
    if hasattr(x, "__dict__"):
        return {"type": f"{type(x).__module__}.{type(x).__qualname__}", "fields": canonical(vars(x))}
    # last resort: an object without a stable repr makes a key that never matches (recomputed, never wrong)
    return {"repr": repr(x)}


_encode_string = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]  # = json.dumps of a str


def _key_text(k: Any) -> str:
    """``json.dumps(canonical(k), sort_keys=True)``; a string key (nearly all of them) straight from the encoder."""
    if type(k) is str:
        return _encode_string(k)
    return json.dumps(canonical(k), sort_keys=True)


#: Canonical forms of frozen dataclasses (the units of a matchup), by value: a large matrix keys tens of
#: thousands of cells made of the same few hundred units, and walking each unit again cost most of the key.
_FROZEN: dict[Any, Any] = {}
_FROZEN_MOST = 4096


def _canonical_dataclass(x: Any) -> Any:
    frozen = type(x).__dataclass_params__.frozen  # type: ignore[attr-defined]
    if frozen:
        try:
            hit = _FROZEN.get(x)  # equal frozen dataclasses (same type, equal fields) have one canonical form
        except TypeError:  # an unhashable field
            frozen, hit = False, None
        if hit is not None:
            return hit
    out = {"type": f"{type(x).__module__}.{type(x).__qualname__}",
           "fields": {f.name: canonical(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    if frozen:
        if len(_FROZEN) >= _FROZEN_MOST:
            _FROZEN.clear()
        _FROZEN[x] = out
    return out


def _json_text(c: Any) -> str:
    return json.dumps(c, sort_keys=True, separators=(",", ":"), allow_nan=True)


def digest(x: Any) -> str:
    """SHA-256 of the canonical JSON of ``x``."""
    return hashlib.sha256(_json_text(canonical(x)).encode("utf-8")).hexdigest()


@lru_cache(maxsize=1)
def code_digest() -> str:
    """Digest of the simulator's source: ``sim/**/*.py``, the stopping rule and its steps, and their folding."""
    import sim

    from . import jobs, runner

    root = Path(sim.__file__).parent
    files = [(str(p.relative_to(root.parent)), p) for p in sorted(root.rglob("*.py"))]
    files.append(("analysis/runs/jobs.py", Path(jobs.__file__)))
    files.append(("analysis/runs/runner.py", Path(runner.__file__)))
    h = hashlib.sha256()
    for name, p in files:
        h.update(name.encode("utf-8") + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=None)
def ruleset_code_digest(cls: type) -> str:
    """Digest of a plugin ruleset's own source (its top-level package's ``*.py``); "" for a shipped ruleset
    (its source is in :func:`code_digest`) or one whose source cannot be found."""
    import sys

    import sim

    module = sys.modules.get(cls.__module__)
    path = Path(getattr(module, "__file__", "") or "")
    if not path.is_file():
        return ""
    sim_root = Path(sim.__file__).resolve().parent
    path = path.resolve()
    if sim_root in path.parents:
        return ""
    top = sys.modules.get(cls.__module__.split(".")[0])
    top_file = Path(getattr(top, "__file__", "") or "")
    files = sorted(top_file.resolve().parent.rglob("*.py")) if top_file.name == "__init__.py" else [path]
    h = hashlib.sha256()
    for p in files:
        try:
            h.update(str(p.name).encode("utf-8") + b"\0" + p.read_bytes() + b"\0")
        except OSError:
            continue
    return h.hexdigest()


def cell_key(ruleset: Ruleset, root: np.random.SeedSequence, rounds: Rounds, max_rounds: int, job: Any) -> str | None:
    """The store key of ``job`` (``None`` when the job has no ``identity``): its plan need not be built yet."""
    if getattr(job, "identity", None) is None:
        return None
    import sim

    fields = {f.name: getattr(job, f.name) for f in dataclasses.fields(job) if f.name not in _NOT_IN_KEY}
    # the text digest() would hash, with every part but the job's written once per run's settings: a large
    # matrix keys a hundred thousand cells of the same settings
    seed = (root.entropy, tuple(root.spawn_key), root.pool_size)
    around = (ruleset.id, ruleset.spec, type(ruleset), seed, json.dumps(canonical(rounds)), int(max_rounds))
    parts = _KEY_PARTS.get(around)
    if parts is None:
        rest = {
            "format": STORE_FORMAT, "ruleset": ruleset.id, "spec": ruleset.spec,
            "seed": {"entropy": root.entropy, "spawn_key": list(root.spawn_key), "pool_size": root.pool_size},
            "rounds": rounds, "max_rounds": int(max_rounds), "block_trials": BLOCK_TRIALS, "job": _JOB_HERE,
            "versions": {"meleelab": sim.__version__, "numpy": np.__version__, "code": code_digest(),
                         "ruleset_code": ruleset_code_digest(type(ruleset))}}
        text = _json_text(canonical(rest))
        here = _encode_string(_JOB_HERE)
        at = text.index(here)
        parts = _KEY_PARTS[around] = (text[:at], text[at + len(here):])
        if len(_KEY_PARTS) > 64:
            _KEY_PARTS.pop(next(iter(_KEY_PARTS)))
    text = parts[0] + _json_text(canonical(fields)) + parts[1]
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: Where the job's text goes in the key text (a string no job's canonical form is).
_JOB_HERE = "\0meleelab: the job's canonical form goes here\0"
#: Settings of a run -> the key text before and after its job (see :func:`cell_key`).
_KEY_PARTS: dict[tuple, tuple[str, str]] = {}


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
