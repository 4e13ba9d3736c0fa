"""The public entry points: :func:`fight`, :func:`rulesets`, :func:`build_matchup`."""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .budget import Budget, check_copies, copies_for, resolve_budget, unit_points
from .engine import ProgressCallback, run_tally
from .errors import InputError, MatchupError, Where
from .exact import METHODS, choose_method, exact_outcome
from .executor import check_executor
from .lists import ArmyList, check_list, field_list, list_from_mapping
from .limits import (check_mapping, check_max_rounds, check_side_mappings, check_trials, check_workers,
                     check_working_set)
from .results import FightResult
from .rng import BLOCK_TRIALS, SeedLike, root_sequence
from .roster import Roster, default_roster, load_roster
from .ruleset import SIDES, Matchup, Rounds, Ruleset, parse_rounds
from .rulesets import all_rulesets, get_ruleset

__all__ = ["fight", "unit", "rulesets", "build_matchup", "make_matchup", "prepare_plan", "parse_settings", "provenance",
           "machine", "Settings", "check_stream"]

Settings = tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, Any]]


def unit(ruleset: str | Ruleset, *, options: Mapping[str, Any] | None = None, **fields: Any) -> Any:
    """Build one unit profile from keyword fields, validated like a roster entry.

    Everything a roster load checks is checked here (ranges, combinations, and
    roster-wide rules such as a mecha armour letter being in the chart).

    Parameters
    ----------
    ruleset : str or Ruleset
    options : mapping, optional
        The ruleset options the unit will fight under (default: the ruleset's defaults),
        for the roster-wide checks.
    **fields
        The ruleset's unit fields (``name`` is required), as in a ``[[unit]]`` table.

    Returns
    -------
    object
        The ruleset's frozen unit profile.

    Examples
    --------
    >>> import sim
    >>> afs = sim.unit("mecha", name="AFS", defence=2, physical=0, armour="B")
    >>> sim.fight("mecha", afs, "Nutrocker", trials=1000, seed=1, method="mc").trials
    1000
    """
    rs = get_ruleset(ruleset)
    name = fields.get("name")
    where = Where("unit()", name if isinstance(name, str) else None)
    profile = rs.parse_unit(fields, where)
    rs.check_roster([profile], rs.resolve_options(options), where)
    return profile


def rulesets() -> list[Ruleset]:
    """Every registered ruleset (id, title, source, default rounds...)."""
    return all_rulesets()


def _version() -> str:
    from . import __version__

    return __version__


def provenance(root: np.random.SeedSequence, **extra: Any) -> dict[str, Any]:
    """What makes a run reproducible: seed entropy, versions and block size, and the machine it ran on.

    The counts do not depend on the machine (the tables are built by
    :mod:`sim.kernels.portable`); ``machine`` is recorded so that a difference
    can be traced if one ever shows.
    """
    import scipy

    out = {
        "seed_entropy": root.entropy,
        "spawn_key": list(root.spawn_key),
        "bit_generator": "PCG64",
        "block_trials": BLOCK_TRIALS,
        "meleelab": _version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "numba": _package_version("numba"),
        "python": platform.python_version(),
        "machine": machine(),
    }
    out.update(extra)
    return out


def _package_version(name: str) -> str | None:
    """An installed package's version, read from its metadata (importing Numba would take half a second)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """The CPU and platform of this process: ``{"cpu", "arch", "system", "numpy_simd"}``.

    ``cpu`` is the model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`);
    ``numpy_simd`` the SIMD targets NumPy dispatches to here (what ``np.show_runtime()`` lists
    as found). Read once per process; each call returns a fresh copy.
    """
    info = _machine()
    return {**info, "numpy_simd": list(info["numpy_simd"])}


@lru_cache(maxsize=1)
def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info
                        if line.lower().startswith(("model name", "hardware", "cpu model"))), "")
    except OSError:
        pass
    try:
        from numpy._core import _multiarray_umath as umath  # NumPy's own registry of CPU features

        simd = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    except (ImportError, AttributeError):  # another NumPy layout: the versions still say which NumPy
        simd = []
    return {"cpu": cpu or platform.processor() or "unknown", "arch": platform.machine(), "system": platform.system(),
            "numpy_simd": simd}


def _roster_of(rs: Ruleset, roster: Roster | str | Path | None) -> Roster:
    if roster is None:
        return default_roster(rs)
    if isinstance(roster, Roster):
        if roster.ruleset != rs.id:
            raise InputError(f"{roster.source}: a {roster.ruleset} roster, expected a {rs.id} roster")
        return roster
    if not isinstance(roster, (str, Path)):
        raise InputError(f"roster: got {type(roster).__name__}, expected a Roster, a file path or None")
    return load_roster(roster, rs)


def _side_ref(rs: Ruleset, ros: Roster | None, side: str, ref: Any) -> Any:
    """A side as given: a unit profile, or an :class:`~sim.lists.ArmyList` (a list's name, a list, or a
    mapping ``{unit name: count}``, checked against the roster)."""
    if isinstance(ref, str):
        found = ros.side(ref)
    elif isinstance(ref, Mapping):
        found = list_from_mapping(rs, ref, ros.units, where=Where(side, None))
    elif isinstance(ref, ArmyList):
        found = check_list(rs, ref, ros.units, Where(side, ref.name))
    else:
        found = ref
        if not isinstance(found, rs.unit_type):
            raise InputError(f"{side}: expected a {rs.id} unit, a unit or list name, or a mapping "
                             f"{{unit name: count}}, got {type(found).__name__}")
    if isinstance(found, ArmyList) and not rs.fields_lists:
        raise MatchupError(f"{rs.id}: {rs.lists_refusal}, so army lists are not available ({side}: "
                           f"{found.name!r})")
    return found


def parse_settings(ruleset: str | Ruleset, items: Iterable[str]) -> Settings:
    """Split ``SIDE.KEY=VALUE`` / ``KEY=VALUE`` strings into states, unit overrides and options.

    ``attacker.evading=true`` is a state, ``attacker.defence=3`` a unit override,
    ``second_m_destroys=true`` (no side) an option. Values stay text; they are
    validated against the field when the matchup is built.

    Returns
    -------
    (states, overrides, options)
    """
    rs = get_ruleset(ruleset)
    # a table (a DataFrame: ndim 2) iterates its column names, not its cells: refused with the rest
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable) or getattr(items, "ndim", 1) != 1:
        raise InputError(f"items: got {type(items).__name__} {_short(items)}, expected a list of "
                         "'SIDE.KEY=VALUE' or 'OPTION=VALUE' strings")
    states: dict[str, dict[str, Any]] = {}
    overrides: dict[str, dict[str, Any]] = {}
    options: dict[str, Any] = {}
    unit_fields = {f.name for f in rs.unit_fields}
    for item in items:
        if not isinstance(item, str):
            raise InputError(f"items: got {type(item).__name__} {_short(item)} in the list, expected "
                             "'SIDE.KEY=VALUE' or 'OPTION=VALUE' strings")
        if "=" not in item:
            raise InputError(f"--set {item!r}: expected SIDE.KEY=VALUE or OPTION=VALUE")
        key, value = item.split("=", 1)
        key = key.strip()
        if "." in key:
            side, name = key.split(".", 1)
            if side not in SIDES:
                raise InputError(f"--set {item!r}: side must be attacker or defender, got {side!r}")
            if rs.state_field(name) is not None:
                states.setdefault(side, {})[name] = value
            elif name in unit_fields or name not in {s.name for s in rs.state_fields}:
                # unknown names are reported by the unit override check, which lists the fields
                overrides.setdefault(side, {})[name] = value
        else:
            options[key] = value
    return states, overrides, options


def build_matchup(
    ruleset: str | Ruleset,
    attacker: Any,
    defender: Any,
    *,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    roster: Roster | str | Path | None = None,
    from_text: bool = False,
    budget: Budget = None,
    copies: Mapping[str, int] | None = None,
) -> tuple[Matchup, Any]:
    """Validate a matchup and prepare the ruleset's plan.

    Parameters
    ----------
    ruleset : str or Ruleset
    attacker, defender : str, unit profile, ArmyList or mapping
        A unit or army-list name (looked up in ``roster``, or the default roster), a profile,
        an :class:`~sim.lists.ArmyList`, or a mapping ``{unit name: count}`` (a list of the
        roster's units; rulesets with mixed sides only, :mod:`sim.lists`). A list is fielded as
        it is: a budget does not multiply it, and a list over the budget is refused.
    states : mapping, optional
        ``{"attacker": {...}, "defender": {...}}`` situational states.
    overrides : mapping, optional
        ``{"attacker": {"defence": 3}}``: per-fight changes of unit fields.
    options : mapping, optional
        Ruleset switches, on top of the roster's.
    roster : Roster, path or None
    from_text : bool
        Values are text (from ``--set``).
    budget : number, "none" or None
        Equal-points fight: each side fields ``floor(budget / points)`` copies of
        its unit (at least one; see :mod:`sim.budget`). ``None`` uses the
        roster's ``budget`` when it has one; ``"none"`` fights one unit a side.
    copies : mapping, optional
        ``{"attacker": k, "defender": k}``: field exactly these copies instead
        (overrides ``budget``; used for fights at neighbouring copy counts).

    Returns
    -------
    (Matchup, plan)
        ``matchup.attacker``/``defender`` are the fielded sides;
        ``matchup.copies`` says how many copies each is.
    """
    return _matchup_and_plan(ruleset, attacker, defender, states=states, overrides=overrides, options=options,
                             roster=roster, from_text=from_text, budget=budget, copies=copies)


def _matchup_and_plan(ruleset: str | Ruleset, attacker: Any, defender: Any, *, prepare: bool = True,
                      states: Mapping[str, Mapping[str, Any]] | None = None,
                      overrides: Mapping[str, Mapping[str, Any]] | None = None,
                      options: Mapping[str, Any] | None = None, roster: Roster | str | Path | None = None,
                      from_text: bool = False, budget: Budget = None,
                      copies: Mapping[str, int] | None = None) -> tuple[Matchup, Any]:
    rs = get_ruleset(ruleset)
    states = check_side_mappings(states, "states")
    overrides = check_side_mappings(overrides, "overrides")
    options = check_mapping(options, "options")
    if not isinstance(from_text, bool):
        raise InputError(f"from_text: got {type(from_text).__name__}, expected True or False")
    need_roster = any(isinstance(ref, (str, Mapping, ArmyList)) for ref in (attacker, defender)) or roster is not None
    ros = _roster_of(rs, roster) if need_roster else None
    in_force = resolve_budget(budget, ros.budget if ros is not None else None, "--budget" if from_text else "budget")
    units: list[Any] = []
    lists: dict[str, ArmyList] = {}
    for side, ref in (("attacker", attacker), ("defender", defender)):
        found = _side_ref(rs, ros, side, ref)
        if isinstance(found, ArmyList):
            if (overrides or {}).get(side):
                raise InputError(f"{'--set' if from_text else 'overrides'} {side}: the {side} is the list "
                                 f"{found.name!r}; a unit field can be changed on a unit, not on a list")
            lists[side] = found
            units.append(found)
            continue
        unit = found
        ov = (overrides or {}).get(side, {})
        label = f"--set {side}" if from_text else f"overrides[{side!r}]"  # the CLI flag, or the API argument
        unit = rs.with_overrides(unit, ov, Where(label, unit.name), from_text=from_text)
        units.append(unit)
    for side in overrides or {}:
        if side not in SIDES:
            raise InputError(f"overrides: side must be attacker or defender, got {side!r}")
    opts = rs.resolve_options(ros.options if ros else None, options, from_text=from_text)
    if ros is not None:
        listed = [ros.unit(n) for lst in lists.values() for n, _ in lst.units]
        rs.check_roster([u for u in units if not isinstance(u, ArmyList)] + listed, opts, Where(ros.source))
    st = rs.resolve_states(states, from_text=from_text)
    counts = {"attacker": 1, "defender": 1}
    if copies is not None:
        copies = check_copies(check_mapping(copies, "copies"))
        for side in lists:
            if copies[side] != 1:
                raise InputError(f"copies: the {side} is the list {lists[side].name!r}, which is fielded as it "
                                 f"is (copies 1), got {copies[side]}")
    if copies is not None and all(int(k) == 1 for k in copies.values()) and not rs.fields_copies:
        copies = None  # one unit a side, said explicitly: fine for any ruleset
    if copies is not None or in_force is not None:
        if not rs.fields_copies:
            raise MatchupError(f"{rs.id}: {rs.copies_refusal}, so equal-points fights (--budget) are not available")
        if copies is not None:
            counts = check_copies(copies)
        else:
            counts = {side: 1 if side in lists else copies_for(u, in_force) for side, u in zip(SIDES, units)}
        units = [u if side in lists else rs.copies(u, counts[side]) for side, u in zip(SIDES, units)]
    for i, side in enumerate(SIDES):
        if side in lists:
            units[i] = field_list(rs, lists[side], ros.units, in_force if copies is None else None)
    matchup = Matchup(units[0], units[1], st, opts, counts, in_force if copies is None else None)
    return matchup, (prepare_plan(rs, matchup) if prepare else None)


def make_matchup(ruleset: str | Ruleset, attacker: Any, defender: Any, **kwargs: Any) -> Matchup:
    """The validated :class:`~sim.ruleset.Matchup` of :func:`build_matchup` (same arguments), without its plan.

    Everything but the plan is cheap; the plan (:func:`prepare_plan`) can take a
    tenth of a second (a duel between groups builds its exact chain), so a caller
    that may not need it (a cell whose result is already stored) asks for it apart.
    """
    return _matchup_and_plan(ruleset, attacker, defender, prepare=False, **kwargs)[0]


def prepare_plan(ruleset: str | Ruleset, matchup: Matchup) -> Any:
    """``ruleset.prepare(matchup)``, refused (one line) when a block of its fights would not fit in memory."""
    rs = get_ruleset(ruleset)
    plan = rs.prepare(matchup)
    check_working_set(rs, plan, BLOCK_TRIALS)  # refuse, before any fight, a block that would not fit
    return plan


def fight(
    ruleset: str | Ruleset,
    attacker: Any,
    defender: Any,
    *,
    trials: int = 1_000_000,
    seed: SeedLike = None,
    rounds: Rounds | str | None = None,
    max_rounds: int = 50,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    roster: Roster | str | Path | None = None,
    progress: ProgressCallback | None = None,
    stream: tuple[int, ...] = (),
    from_text: bool = False,
    budget: Budget = None,
    copies: Mapping[str, int] | None = None,
    executor: Any = None,
    method: str = "auto",
) -> FightResult:
    """Simulate ``trials`` fights between two units, or answer exactly where the fight is a small chain.

    Parameters
    ----------
    ruleset : str or Ruleset
        Ruleset id, e.g. ``"mecha"``.
    attacker, defender : str, unit profile, ArmyList or mapping
        Unit or army-list names (in ``roster`` or the ruleset's default roster), profiles, or
        lists (``{unit name: count}``; ``warband`` and ``duel`` only, see :func:`build_matchup`).
    trials : int
        Number of fights.
    seed : int, numpy.random.SeedSequence or None
        Root of all randomness; ``None`` draws fresh entropy (recorded in
        ``result.provenance["seed_entropy"]``; pass it back as ``seed`` to repeat).
    rounds : int or "end", optional
        Fixed number of rounds, or fight to the end; default the ruleset's.
    max_rounds : int
        Cap for ``rounds="end"``: a fight still going is a draw.
    states, overrides, options : mapping, optional
        See :func:`build_matchup`.
    workers : int
        Local processes (results are identical for any value).
    roster : Roster, path or None
    progress : callable, optional
        ``progress(done, total)`` after each block.
    stream : tuple of int
        Random-stream address prefix; equal streams give common random numbers.
    from_text : bool
        State/override/option values are text (``--set``).
    budget : number, "none" or None
        Equal-points fight (see :func:`build_matchup`); default the roster's budget.
    copies : mapping, optional
        Explicit copies per side (see :func:`build_matchup`).
    executor : object, optional
        Run the blocks on a ``dask.distributed.Client`` (or anything with its
        ``submit`` shape) instead of local processes; results are identical.
    method : {"auto", "exact", "mc"}
        ``"mc"``: Monte Carlo, ``trials`` fights. ``"exact"``: the exact outcome
        distribution from the matchup's Markov chain (no sampling, zero-width
        intervals); where the ruleset has none, a one-line MatchupError naming the
        matchup and why. ``"auto"`` (default): exact where the ruleset has a chain
        for the matchup and its estimated work is at most that of the ``trials``
        Monte Carlo fights it replaces, else Monte Carlo
        (:func:`sim.exact.choose_method`: ``exact_work <= MC_WORK_PER_RUN +
        MC_WORK_PER_FIGHT * trials``, in units of about a nanosecond). Every mecha
        fight, grimdark with every model engaged, one pools round and duel or
        warband one against one are usually exact.

    Returns
    -------
    FightResult
        ``result.method`` says which answered. ``settings["copies"]``,
        ``settings["budget"]`` and ``settings["fielded"]`` (points on the table
        per side) describe an equal-points fight.

    Examples
    --------
    >>> import sim
    >>> r = sim.fight("mecha", "AFS", "Nutrocker", trials=100_000, seed=1, method="mc")
    >>> round(r.win["defender"], 2)
    0.3
    >>> e = sim.fight("mecha", "AFS", "Nutrocker")        # a 9-state chain: exact
    >>> e.method, round(e.win["defender"] * 36, 9), e.ci95["defender"][1] - e.ci95["defender"][0]
    ('exact', 11.0, 0.0)
    """
    rs = get_ruleset(ruleset)
    rounds = rs.default_rounds if rounds is None else parse_rounds(rounds, Where())
    max_rounds = check_max_rounds(max_rounds)
    trials = check_trials(trials)
    workers = check_workers(workers)
    if not isinstance(method, str) or method not in METHODS:
        raise InputError(f"method: got {_short(method)}, expected one of {', '.join(METHODS)}")
    check_executor(executor)  # wrong objects fail alike whichever method answers
    stream = check_stream(stream)
    if progress is not None and not callable(progress):
        raise InputError(f"progress: got {type(progress).__name__}, expected a callable progress(done, total) or None")
    root = root_sequence(seed)
    matchup, plan = build_matchup(
        rs, attacker, defender, states=states, overrides=overrides, options=options, roster=roster, from_text=from_text,
        budget=budget, copies=copies,
    )
    chosen = choose_method(rs, plan, rounds, int(max_rounds), trials=int(trials), method=method)
    tally, exact = None, None
    if chosen == "exact":
        exact = exact_outcome(rs, plan, rounds, int(max_rounds))
        if progress is not None:
            progress(int(trials), int(trials))
    else:
        tally = run_tally(rs, plan, int(trials), root, rounds=rounds, max_rounds=int(max_rounds),
                          stream=tuple(stream), workers=workers, progress=progress, executor=executor)
    settings = {
        "rounds": rounds,
        "max_rounds": int(max_rounds),
        "states": matchup.states,
        "options": matchup.options,
        "overrides": {k: dict(v) for k, v in (overrides or {}).items()},
        "attacker_profile": rs.side_rows(matchup.attacker),
        "defender_profile": rs.side_rows(matchup.defender),
        "budget": matchup.budget,
        "copies": dict(matchup.copies),
        "fielded": {side: unit_points(matchup.unit(side)) for side in SIDES},
    }
    seed_out = int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None
    return FightResult(rs, matchup.attacker.name, matchup.defender.name, tally, settings,
                       provenance(root, stream=list(stream), ruleset=rs.id, spec=rs.spec, method=chosen), seed_out,
                       exact)


def check_stream(stream: Any) -> tuple[int, ...]:
    """A random-stream address: a tuple of non-negative integers below 2**128 (a name's key is a 128-bit digest)."""
    if isinstance(stream, (str, bytes)) or not isinstance(stream, Iterable):
        raise InputError(f"stream: got {_short(stream)}, expected a tuple of non-negative integers")
    out = tuple(stream)
    for k in out:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < 2**128:
            raise InputError(f"stream: got {_short(stream)}, expected a tuple of integers in 0..2**128-1")
    return tuple(int(k) for k in out)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
