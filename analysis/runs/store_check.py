"""Why a results-store row may be trusted: it checks out, and this user's key signed it.

A results store travels with its output folder, so a folder someone hands you
may hold a store that was edited, or written elsewhere. Two checks keep such
rows out of published numbers:

* **Consistency** (:func:`check_row`): every row is parsed field by field, with
  exact types and ranges: integer counts, ``0 < trials <= MAX_TRIALS``, wins that
  sum to the trials, each side's outcome categories summing to the trials, every
  histogram holding the trials with its ``total`` and ``total_sq`` equal to the
  sums it implies, per-step tallies that add up to the total.
* **Provenance** (:class:`RowSigner`): each row carries an HMAC-SHA256 of its key
  and its values under a per-user secret kept *outside* the folder
  (``$MELEELAB_STORE_KEY``, else ``$XDG_CONFIG_HOME/meleelab/store.key``, else
  ``~/.config/meleelab/store.key``; 32 random bytes made on first use, mode 0600;
  read like a roster: a regular file of at most 4 KiB, never a device or a FIFO).
  A row signed with another key (a store from another user or machine) or not
  signed, or whose key or values changed after signing, is not used: its cell is
  computed again. The signature covers the key *string* and the row's values, so
  it does not depend on what the key digests; it starts with the key's public id,
  so the note can say which it was (:data:`REASONS`).

A row that fails either check is ignored, never trusted and never fatal; a key
file that is not a key is refused in one line.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np

from sim.errors import InputError
from sim.files import read_input_bytes
from sim.limits import MAX_TRIALS
from sim.tally import Moments, Tally

__all__ = ["RowSigner", "check_row", "key_path", "key_id", "KEY_ENV", "REASONS", "MAX_KEY_BYTES", "exact_to_json",
           "check_exact_row"]

#: Environment variable naming the key file (tests, several keys, shared machines).
KEY_ENV = "MELEELAB_STORE_KEY"

#: Largest key file read (a key is 64 hex digits and a line break; a longer one is still accepted up to this).
MAX_KEY_BYTES = 4096

#: Longest histogram kept in a row (damage, rounds and extras stay far below: rounds are capped at 1,000).
MAX_HIST = 1_000_000
#: Most outcome categories and extras a ruleset may tally.
MAX_FIELDS = 256

_TALLY_FIELDS = {"n_categories", "extra_names", "trials", "wins", "capped", "damage_to_attacker",
                 "damage_to_defender", "rounds", "categories", "extras"}


def key_path() -> Path:
    """Where this user's store key lives (see the module docstring)."""
    given = os.environ.get(KEY_ENV, "").strip()
    if given:
        return Path(given).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(config) if config else Path.home() / ".config"
    return base / "meleelab" / "store.key"


def _read_or_create(path: Path) -> bytes:
    """The key in ``path``, created (0600, its folder 0700) when missing.

    Read like a roster (:func:`sim.files.read_input_bytes`): a regular file only,
    opened without blocking, at most :data:`MAX_KEY_BYTES` bytes, so ``/dev/zero``
    or a FIFO named as the key is refused at once instead of filling the memory
    or hanging. InputError (one line) when the file exists but is no key;
    OSError when it is missing and cannot be made.
    """
    if not os.path.lexists(path):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = secrets.token_hex(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:  # another run made it first: use theirs
            return _read_or_create(path)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())
    data = read_input_bytes(path, "store key file", MAX_KEY_BYTES)
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except (UnicodeError, ValueError):
        key = b""
    if len(key) < 16:
        raise InputError(f"{path}: not a store key (expected at least 16 bytes written as hex digits); move it "
                         "away and meleelab makes a new one")
    return key


def key_id(key: bytes) -> str:
    """A short public name of a key (16 hex digits of an HMAC: it tells keys apart and reveals nothing of them)."""
    return hmac.new(key, b"meleelab results store key id", hashlib.sha256).hexdigest()[:16]


#: Why a row was not used, by the reason :meth:`RowSigner.why_not` and :class:`~analysis.runs.store.ResultsStore` give.
REASONS = {
    "another key": "signed with another user's or machine's key",
    "edited": "edited after they were signed",
    "unsigned": "not signed",
    "unknown": "signed with another key or edited (rows of an older store do not say which key)",
    "impossible": "impossible (counts that do not add up, or not what their settings give)",
}


class RowSigner:
    """Signs and verifies store rows with this user's key.

    A signature is ``KEYID:MAC``: the key's public id (:func:`key_id`) and the
    HMAC-SHA256 of the row, so a row that fails can be told apart: signed with
    another user's or machine's key, or signed with this key and edited since
    (:meth:`why_not`).

    Parameters
    ----------
    path : Path, optional
        The key file (default :func:`key_path`).

    Attributes
    ----------
    problem : str
        Why the key could not be made (then a key that lives only in this
        process is used: this run's rows are still checked, and a later run
        recomputes them); empty when all is well.

    Raises
    ------
    sim.errors.InputError
        The key file exists but is not a key: not a regular file (a device, a
        FIFO), over :data:`MAX_KEY_BYTES`, or not hex digits (one line).
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or key_path()
        self.problem = ""
        try:
            self._key = _read_or_create(self.path)
        except InputError as e:
            given = os.environ.get(KEY_ENV, "").strip()
            shown = str(self.path)
            text = str(e)
            if given and path is None and text.startswith(shown):  # say where the path came from
                text = f"{shown} (named by {KEY_ENV}){text[len(shown):]}"
            raise InputError(text) from None
        except (OSError, ValueError, UnicodeError) as e:
            why = getattr(e, "strerror", None) or " ".join(str(e).split()) or type(e).__name__
            self.problem = f"cannot make the store key {self.path} ({why})"
            self._key = secrets.token_bytes(32)
        self.id = key_id(self._key)

    def _mac(self, key: str, fmt: int, tally: str, blocks: str | None) -> str:
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        for part in ("meleelab results store row", key, str(int(fmt)), tally, "" if blocks is None else blocks,
                     "blocks" if blocks is not None else "no blocks"):
            data = part.encode("utf-8")
            mac.update(len(data).to_bytes(8, "big") + data)  # length-prefixed: no two rows share a message
        return mac.hexdigest()

    def sign(self, key: str, fmt: int, tally: str, blocks: str | None) -> str:
        """``KEYID:MAC``: this key's id and the HMAC-SHA256 of a row's key and values (hex)."""
        return f"{self.id}:{self._mac(key, fmt, tally, blocks)}"

    def why_not(self, key: str, fmt: int, tally: str, blocks: str | None, mac: Any) -> str:
        """Empty when ``mac`` is this user's signature of the row, else the reason (a key of :data:`REASONS`)."""
        if not isinstance(mac, str) or not mac or not mac.isascii():
            return "unsigned"
        signer, sep, value = mac.rpartition(":")
        expected = self._mac(key, fmt, tally, blocks)
        if not sep:  # a row of an older store: the bare MAC, no key id
            return "" if hmac.compare_digest(mac, expected) else "unknown"
        if not hmac.compare_digest(signer, self.id):
            return "another key"
        return "" if hmac.compare_digest(value, expected) else "edited"

    def verify(self, key: str, fmt: int, tally: str, blocks: str | None, mac: Any) -> bool:
        """Whether ``mac`` is this user's signature of the row."""
        return not self.why_not(key, fmt, tally, blocks, mac)


# ------------------------------------------------------------------ consistency
def _int(x: Any, what: str, lo: int, hi: int) -> int:
    if type(x) is not int or not lo <= x <= hi:  # JSON integers only: no bool, float or text
        raise ValueError(f"{what}: {str(x)[:40]!r} is not an integer in {lo}..{hi}")
    return x


def _int_list(x: Any, what: str, n: int | None, hi: int) -> list[int]:
    if not isinstance(x, list) or (n is not None and len(x) != n) or len(x) > MAX_HIST:
        raise ValueError(f"{what}: expected a list of {n if n is not None else 'at most ' + str(MAX_HIST)} integers")
    return [_int(v, what, 0, hi) for v in x]


def _moments(d: Any, what: str, trials: int) -> Moments:
    if not isinstance(d, dict) or set(d) != {"total", "total_sq", "hist"}:
        raise ValueError(f"{what}: expected total, total_sq and hist")
    hist = _int_list(d["hist"], f"{what}.hist", None, trials)
    if sum(hist) != trials:
        raise ValueError(f"{what}: its histogram holds {sum(hist)} fights, not {trials}")
    total = sum(i * h for i, h in enumerate(hist))
    total_sq = sum(i * i * h for i, h in enumerate(hist))
    if d["total"] != total or d["total_sq"] != total_sq or type(d["total"]) is not int \
            or type(d["total_sq"]) is not int:
        raise ValueError(f"{what}: total and total_sq disagree with its histogram")
    return Moments(total, total_sq, np.asarray(hist, dtype=np.int64))


def check_tally(d: Any) -> Tally:
    """A :class:`~sim.tally.Tally` from a stored dict, checked field by field (ValueError naming the first fault)."""
    if not isinstance(d, dict) or set(d) != _TALLY_FIELDS:
        raise ValueError("not a tally: its fields are not those of a tally")
    n_cat = _int(d["n_categories"], "n_categories", 1, MAX_FIELDS)
    names = d["extra_names"]
    if not isinstance(names, dict) or set(names) != {"tuple"} or not isinstance(names["tuple"], list) \
            or len(names["tuple"]) > MAX_FIELDS or not all(isinstance(n, str) for n in names["tuple"]) \
            or len(set(names["tuple"])) != len(names["tuple"]):
        raise ValueError("extra_names: expected a list of distinct names")
    trials = _int(d["trials"], "trials", 1, MAX_TRIALS)
    t = Tally(n_cat, tuple(names["tuple"]))
    t.trials = trials
    wins = d["wins"]
    if not isinstance(wins, dict) or set(wins) != {"int64", "shape"} or wins["shape"] != [3]:
        raise ValueError("wins: expected three counts")
    w = _int_list(wins["int64"], "wins", 3, trials)
    if sum(w) != trials:
        raise ValueError(f"wins: they sum to {sum(w)}, not to the {trials} trials")
    t.wins = np.asarray(w, dtype=np.int64)
    t.capped = _int(d["capped"], "capped", 0, trials)
    cats = d["categories"]
    if not isinstance(cats, dict) or set(cats) != {"int64", "shape"} or cats["shape"] != [2, n_cat] \
            or not isinstance(cats["int64"], list) or len(cats["int64"]) != 2:
        raise ValueError("categories: expected two sides of n_categories counts")
    rows = [_int_list(row, "categories", n_cat, trials) for row in cats["int64"]]
    if any(sum(row) != trials for row in rows):
        raise ValueError("categories: a side's outcome categories do not sum to the trials")
    t.categories = np.asarray(rows, dtype=np.int64)
    for name in ("damage_to_attacker", "damage_to_defender", "rounds"):
        v = d[name]
        if not isinstance(v, dict) or set(v) != {"moments"}:
            raise ValueError(f"{name}: expected moments")
        setattr(t, name, _moments(v["moments"], name, trials))
    extras = d["extras"]
    if not isinstance(extras, dict) or set(extras) != {"extras"} or not isinstance(extras["extras"], dict) \
            or set(extras["extras"]) != set(t.extra_names):
        raise ValueError("extras: expected one entry per extra name")
    t.extras = {k: _moments(extras["extras"][k], f"extras.{k}", trials) for k in t.extra_names}
    return t


def check_row(tally: Any, blocks: Any) -> tuple[Tally, list[Tally] | None]:
    """The parsed ``(tally, blocks)`` of a row (JSON already decoded), or ValueError naming the first fault.

    Per-step tallies must have the total's shape and add up to it exactly.
    """
    total = check_tally(tally)
    if blocks is None:
        return total, None
    if not isinstance(blocks, list) or not blocks or len(blocks) > total.trials:
        raise ValueError("blocks: expected a list of per-step tallies")
    steps = [check_tally(b) for b in blocks]
    merged = Tally(total.n_categories, total.extra_names)
    for s in steps:
        if s.n_categories != total.n_categories or s.extra_names != total.extra_names:
            raise ValueError("blocks: a step's fields differ from the total's")
        merged = merged.merge(s)
    if not merged.same_as(total):
        raise ValueError("blocks: the per-step tallies do not add up to the total")
    return total, steps


# ------------------------------------------------------------------ exact outcomes
#: The arrays of an exact outcome (:class:`sim.exact.ExactOutcome`), stored as ``float.hex`` text: exact.
_EXACT_ARRAYS = ("win", "categories", "damage_to_attacker", "damage_to_defender", "rounds")


def exact_to_json(outcome: Any) -> dict[str, Any]:
    """An exact outcome as JSON values that read back bit for bit (every float as ``float.hex``)."""
    def hexed(a: Any) -> Any:
        return [hexed(x) for x in a] if isinstance(a, (list, np.ndarray)) else float(a).hex()

    return {"exact": {**{name: hexed(getattr(outcome, name)) for name in _EXACT_ARRAYS},
                      "capped": hexed(outcome.capped), "truncated": hexed(outcome.truncated),
                      "extras": [[k, hexed(v)] for k, v in outcome.extras.items()]}}


def check_exact_row(data: Any, categories: int, extras: tuple[str, ...]) -> Any:
    """The :class:`sim.exact.ExactOutcome` of a row, or ValueError: its shapes are the ruleset's (``categories``
    outcome categories a side, the ``extras`` named) and it is a probability distribution
    (:meth:`~sim.exact.ExactOutcome.check`)."""
    from sim.exact import ExactOutcome

    if not isinstance(data, dict) or set(data) != {"exact"} or not isinstance(data["exact"], dict):
        raise ValueError("not an exact outcome")
    d = data["exact"]

    def floats(a: Any, depth: int) -> Any:
        if depth == 0:
            if not isinstance(a, str):
                raise ValueError("a probability is not float.hex text")
            return float.fromhex(a)
        if not isinstance(a, list):
            raise ValueError("an array is not a list")
        return [floats(x, depth - 1) for x in a]

    arrays = {name: np.asarray(floats(d.get(name), 2 if name == "categories" else 1), np.float64)
              for name in _EXACT_ARRAYS}
    raw = d.get("extras")
    if not isinstance(raw, list) or not all(isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
                                            for e in raw):
        raise ValueError("extras: expected [name, probabilities] pairs")
    if tuple(e[0] for e in raw) != tuple(extras) or arrays["win"].shape != (3,) or \
            arrays["categories"].shape != (2, categories):
        raise ValueError("shapes: not this ruleset's outcome")
    outcome = ExactOutcome(arrays["win"], floats(d.get("capped"), 0), arrays["categories"],
                           arrays["damage_to_attacker"], arrays["damage_to_defender"], arrays["rounds"],
                           {k: np.asarray(floats(v, 1), np.float64) for k, v in raw}, floats(d.get("truncated"), 0))
    return outcome.check()
