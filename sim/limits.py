"""Documented limits on what one run may ask for, and the checks that enforce them.

Every number a user types (trial counts, rounds, workers, seeds) is checked here
against a limit the kernels can hold, with a one-line :class:`~sim.errors.InputError`
that names the argument. The memory guard estimates a block's working set from
its plan (:meth:`sim.ruleset.Ruleset.working_set`) and refuses a matchup that
would not fit, before a single fight runs.

Limits (also in ``docs/guide.md``, "Limits"):

* trials per run or per matrix cell: 1 .. :data:`MAX_TRIALS` (10**15, below 2**53,
  so every count stays exact in int64 and float64);
* rounds (``--rounds N``) and the cap of ``--rounds end`` (``--max-rounds``):
  1 .. :data:`MAX_ROUNDS`;
* worker processes: at most the machine's cores (more are clamped to the cores);
* seeds: integers 0 .. 2**128 - 1 (what ``numpy.random.SeedSequence`` takes in);
* a matrix: at most :data:`MAX_MATRIX_UNITS` units; a sweep: at most
  :data:`MAX_SWEEP_VALUES` values; the plans a matrix, sweep or comparison
  holds at once: at most :data:`PLANS_BUDGET` of tables; the batch tallies a
  sweep or comparison keeps for paired errors: at most :data:`MAX_KEPT_BATCHES`;
* input files (read by :mod:`sim.files`): regular files only (no devices or
  FIFOs), a roster or chart file at most :data:`MAX_ROSTER_BYTES`, a saved
  matrix or a report folder's table at most :data:`MAX_MATRIX_BYTES`, TOML
  nested at most :data:`MAX_TOML_DEPTH` levels;
* memory: a block's estimated working set (the plan's tables plus
  :data:`~sim.rng.BLOCK_TRIALS` fights' arrays) at most :data:`MEMORY_BUDGET`
  per worker process. Units are capped so that every shipped ruleset fits:
  see each ruleset's field ranges (grimdark: at most :data:`GRIMDARK_MAX_GROUPS`
  model groups and :data:`GRIMDARK_MAX_MODELS` models per squad).

The guard never changes results: a block always runs whole, on its own stream
(cutting it into smaller batches would draw the random numbers in another
order, and so change the result), or not at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from .errors import InputError, TooLargeError

__all__ = [
    "MAX_TRIALS", "MAX_ROUNDS", "MAX_SEED", "MEMORY_BUDGET", "GRIMDARK_MAX_GROUPS", "GRIMDARK_MAX_MODELS",
    "POINTS_MIN", "POINTS_MAX", "PLANS_BUDGET", "STREAM_PLAN_BYTES",
    "MAX_MATRIX_UNITS", "MAX_SWEEP_VALUES", "MAX_KEPT_BATCHES",
    "MAX_ROSTER_BYTES", "MAX_MATRIX_BYTES", "MAX_TOML_DEPTH",
    "PlanBudget", "check_kept_batches", "cpu_count", "check_int", "check_trials", "check_max_rounds",
    "check_workers", "check_mapping", "check_names", "check_side_mappings", "iter_block_sizes", "table_bytes",
    "check_working_set",
    "human_bytes", "BytesCache",
]

#: Largest trial count of one run or one matrix cell (< 2**53: counts and sums stay exact).
MAX_TRIALS = 10**15
#: Largest fixed number of rounds and largest cap of ``rounds="end"``.
MAX_ROUNDS = 1_000
#: Largest seed (SeedSequence entropy is taken as a 128-bit integer here).
MAX_SEED = 2**128 - 1
#: Largest estimated working set of one block (plan tables + one block of fights), per process.
MEMORY_BUDGET = 1 << 30
#: Largest estimated tables of all the plans a sweep or comparison holds at once.
PLANS_BUDGET = 4 << 30
#: Tables of the plans a streamed batch of cells (a matrix) builds ahead of their fights: a chunk of cells is
#: built until its plans' tables reach this, fought, and its plans dropped (at least one cell a chunk).
STREAM_PLAN_BYTES = 192 << 20
#: Most units in one matchup matrix (their square is the number of cells).
MAX_MATRIX_UNITS = 100
#: Most per-batch tallies a sweep or comparison keeps (about 2.4 KB each) for its paired errors.
MAX_KEPT_BATCHES = 250_000
#: Most values of one swept field.
MAX_SWEEP_VALUES = 1_000
#: grimdark: most model groups and models in one squad (bounds the kernel's tables to ~200 MB).
GRIMDARK_MAX_GROUPS = 10
GRIMDARK_MAX_MODELS = 100
#: Largest roster or chart file (TOML or CSV): a roster of a thousand units is well under 1 MB, and parsing
#: takes about 15 times the file's size in memory.
MAX_ROSTER_BYTES = 4 << 20
#: Largest saved matrix (``balance --from-matrix``) or table of a report folder (``diff``, ``--baseline``):
#: a 100-unit matrix_long.csv is about 7 MB.
MAX_MATRIX_BYTES = 16 << 20
#: Deepest nesting of tables and arrays in a TOML roster or chart file (a roster needs four or five).
MAX_TOML_DEPTH = 16
#: Allowed points cost of a unit (when given): positive, finite and plottable.
POINTS_MIN = 0.01
POINTS_MAX = 1_000_000


def cpu_count() -> int:
    """Cores this process may use (the affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def _is_int(value: Any) -> bool:
    import numpy as np  # imported where used: the CLI reads the limits above for --help, which needs no NumPy

    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def check_int(value: Any, name: str, lo: int, hi: int) -> int:
    """``value`` as an int in ``lo..hi``, or an InputError naming ``name``."""
    if not _is_int(value) or not lo <= value <= hi:
        raise InputError(f"{name}: got {_short(value)}, expected an integer in {lo:,}..{hi:,}")
    return int(value)


def check_trials(value: Any, name: str = "trials") -> int:
    """A trial count in 1 .. MAX_TRIALS."""
    return check_int(value, name, 1, MAX_TRIALS)


def check_max_rounds(value: Any, name: str = "max_rounds") -> int:
    """A round cap in 1 .. MAX_ROUNDS."""
    return check_int(value, name, 1, MAX_ROUNDS)


def check_workers(value: Any, name: str = "workers") -> int:
    """The number of processes to use: ``<= 0`` means every core, more than the cores is clamped to them."""
    if not _is_int(value):
        raise InputError(f"{name}: got {_short(value)}, expected an integer (<= 0: every core)")
    cores = cpu_count()
    return cores if value <= 0 else min(int(value), cores)


def check_mapping(value: Any, name: str) -> Mapping[str, Any]:
    """``value`` (None allowed) as a mapping with string keys."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{name}: got {_short(value)}, expected a mapping (dict) or None")
    for key in value:
        if not isinstance(key, str):
            raise InputError(f"{name}: key {_short(key)} is not a string")
    return value


def check_side_mappings(value: Any, name: str) -> Mapping[str, Mapping[str, Any]]:
    """``{"attacker": {...}, "defender": {...}}`` (either side may be absent)."""
    outer = check_mapping(value, name)
    for side, inner in outer.items():
        if side not in ("attacker", "defender"):
            raise InputError(f"{name}: side must be attacker or defender, got {side!r}")
        check_mapping(inner, f"{name}[{side!r}]")
    return outer


def check_names(value: Any, name: str) -> list[str]:
    """A list of strings (unit names, roles) from a sequence that is not itself a string."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or \
            not all(isinstance(v, str) for v in value):
        raise InputError(f"{name}: got {_short(value)}, expected a list of strings")
    return list(value)


def iter_block_sizes(n_trials: int, block_trials: int) -> Iterator[tuple[int, int]]:
    """``(block index, size)`` of every block of ``n_trials``, generated lazily (flat memory in the trial count)."""
    full, rest = divmod(int(n_trials), int(block_trials))
    for index in range(full):
        yield index, block_trials
    if rest:
        yield full, rest


#: How :func:`table_bytes` walks each type (:data:`_LEAF`, :data:`_ARRAY`, :data:`_MAP`, :data:`_SEQ`, or the
#: names of its slots for any other object), decided once per type: a plan is walked once per cell, and the
#: checks against the ``Mapping`` ABC were most of a walk's time.
_WALK: dict[type, Any] = {}
_LEAF, _ARRAY, _MAP, _SEQ = 0, 1, 2, 3


def _walk_kind(klass: type) -> Any:
    import numpy as np

    if issubclass(klass, (str, bytes, int, float, bool)) or klass is type(None):
        kind: Any = _LEAF
    elif issubclass(klass, np.ndarray):
        kind = _ARRAY
    elif issubclass(klass, Mapping):
        kind = _MAP
    elif issubclass(klass, (list, tuple, set, frozenset)):
        kind = _SEQ
    else:
        kind = tuple(name for k in klass.__mro__ for name in getattr(k, "__slots__", ()))
    _WALK[klass] = kind
    return kind


def table_bytes(obj: Any, _seen: set[int] | None = None) -> int:
    """Bytes of every NumPy array reachable from ``obj`` (dataclasses, tuples, lists, dicts), each counted once."""
    seen = _seen if _seen is not None else set()
    kind = _WALK.get(type(obj))
    if kind is None:
        kind = _walk_kind(type(obj))
    if kind == _LEAF or id(obj) in seen:
        return 0
    seen.add(id(obj))
    if kind == _ARRAY:
        return int(obj.nbytes)
    if kind == _MAP:
        return sum(table_bytes(v, seen) for v in obj.values())
    if kind == _SEQ:
        return sum(table_bytes(v, seen) for v in obj)
    total = 0
    for k in (*getattr(obj, "__dict__", {}), *kind):
        try:
            total += table_bytes(getattr(obj, k), seen)
        except AttributeError:
            continue
    return total


def human_bytes(n: float) -> str:
    """``1.5 GiB`` style."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def check_working_set(ruleset: Any, plan: Any, n: int, *, budget: int | None = None) -> int:
    """Refuse a plan whose block of ``n`` fights would not fit the memory budget.

    Returns the estimate (bytes). Raises :class:`~sim.errors.TooLargeError` (a
    MatchupError: a matrix records such a pair as not fought, with the reason).
    """
    budget = MEMORY_BUDGET if budget is None else budget
    need = int(ruleset.working_set(plan, n))
    if need > budget:
        m = getattr(plan, "matchup", None)
        who = f" ({m.attacker.name!r} vs {m.defender.name!r})" if m is not None else ""
        raise TooLargeError(
            f"{ruleset.id}: this matchup{who} needs about {human_bytes(need)} per block of {n:,} fights, "
            f"over the {human_bytes(budget)} memory limit per worker: use smaller units")
    return need


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class PlanBudget:
    """Running total of the tables of the plans a run holds at once (a sweep or comparison keeps one per cell;
    a matrix streams its cells instead, :mod:`analysis.runs.streaming`).

    :meth:`add` raises an :class:`~sim.errors.InputError` (the whole run is refused,
    not one cell) once the total passes :data:`PLANS_BUDGET`; :meth:`check_estimate`
    refuses a run whose estimated total is over it before the plans are built (a
    sweep of many values builds all its plans, minutes of work and gigabytes, before the
    running total alone would notice).
    """

    def __init__(self, what: str, budget: int | None = None) -> None:
        self.what = what
        self.budget = PLANS_BUDGET if budget is None else budget
        self.total = 0
        self.count = 0

    def check_estimate(self, estimate: float, count: int, how: str) -> None:
        """Refuse now when ``count`` plans are estimated (``how``) to need more than the budget in all."""
        if estimate > self.budget:
            raise InputError(f"{self.what}: the tables of its {count:,} matchups would take about "
                             f"{human_bytes(estimate)} ({how}), over the {human_bytes(self.budget)} limit: "
                             "use fewer or smaller units")

    def add(self, ruleset: Any, plan: Any) -> None:
        self.total += table_bytes(plan)
        self.count += 1
        if self.total > self.budget:
            raise InputError(f"{self.what}: the tables of its first {self.count} matchups already take "
                             f"{human_bytes(self.total)}, over the {human_bytes(self.budget)} limit: "
                             "use fewer or smaller units")


def check_kept_batches(what: str, runs: int, trials: int, batch_trials: int) -> None:
    """Refuse a paired run that would keep more than :data:`MAX_KEPT_BATCHES` per-batch tallies."""
    batches = -(-int(trials) // int(batch_trials))
    if runs * batches > MAX_KEPT_BATCHES:
        raise InputError(f"{what}: {runs:,} runs of {batches:,} batches each keep {runs * batches:,} batch tallies "
                         f"for the paired errors, over the limit of {MAX_KEPT_BATCHES:,}: use fewer trials, "
                         "values or opponents")


class BytesCache:
    """A per-process cache of built tables, bounded by the bytes of their arrays (:func:`table_bytes`)
    and, optionally, by its number of entries (for values whose Python objects, not arrays, are the
    bulk): the least recently used entries are dropped first, but the newest is always kept."""

    def __init__(self, budget: int, entries: int | None = None) -> None:
        from collections import OrderedDict

        self.budget = budget
        self.entries = entries
        self._entries: OrderedDict = OrderedDict()      # key -> (value, bytes), most recent last
        self.nbytes = 0                                  # the entries' bytes (kept, not summed on each call)

    def get(self, key: Any, build: Any) -> Any:
        """The value cached under ``key``, or ``build()`` (then cached)."""
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit[0]
        value = build()
        size = table_bytes(value)
        self._entries[key] = (value, size)
        self.nbytes += size
        limit = self.entries if self.entries is not None else len(self._entries)
        while len(self._entries) > 1 and (self.nbytes > self.budget or len(self._entries) > limit):
            self.nbytes -= self._entries.popitem(last=False)[1][1]
        return value

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._entries)
