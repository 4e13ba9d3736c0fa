"""Results-store keys: a cell's key is the SHA-256 of the canonical JSON of everything its numbers depend on.

The canonical form (:func:`canonical`) is a JSON-able value equal for equal inputs
in any process: floats as their hex, mappings as sorted items, dataclasses by
type and fields (frozen ones memoised by value), arrays by dtype, shape and
digest. :func:`cell_key` keys a job of the runner by the ruleset, the root seed,
the run's length, the job's fields (its matchup, stream and precision, not its
plan) and the versions of the code (:func:`code_digest`). Kept apart from
:mod:`analysis.runs.store`, which keeps the rows.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from sim.rng import BLOCK_TRIALS
from sim.ruleset import Rounds, Ruleset

__all__ = ["STORE_FORMAT", "canonical", "digest", "cell_key", "code_digest", "ruleset_code_digest"]

#: Bumped when the stored layout or the key recipe changes (old rows are then never matched).
#: 2: rows are signed (``mac``), adaptive cells run in sub-blocks. 3: keyed by the matchup and the method
#: asked for, without the plan (looked up before the plan is built).
STORE_FORMAT = 3

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
