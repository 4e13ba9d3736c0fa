"""The public entry points: :func:`fight`, :func:`rulesets`, :func:`build_matchup`."""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .engine import ProgressCallback, run_tally
from .errors import InputError, Where
from .results import FightResult
from .rng import BLOCK_TRIALS, SeedLike, root_sequence
from .roster import Roster, default_roster, load_roster
from .ruleset import SIDES, Matchup, Rounds, Ruleset, parse_rounds
from .rulesets import all_rulesets, get_ruleset

__all__ = ["fight", "unit", "rulesets", "build_matchup", "parse_settings", "provenance", "Settings"]

Settings = tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, Any]]


def unit(ruleset: str | Ruleset, **fields: Any) -> Any:
    """Build one unit profile from keyword fields, validated like a roster entry.

    Parameters
    ----------
    ruleset : str or Ruleset
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
    >>> sim.fight("mecha", afs, "Nutrocker", trials=1000, seed=1).trials
    1000
    """
    rs = get_ruleset(ruleset)
    return rs.parse_unit(fields, Where("unit()", str(fields.get("name", "?"))))


def rulesets() -> list[Ruleset]:
    """Every registered ruleset (id, title, source, default rounds...)."""
    return all_rulesets()


def _version() -> str:
    from . import __version__

    return __version__


def provenance(root: np.random.SeedSequence, **extra: Any) -> dict[str, Any]:
    """What makes a run reproducible: seed entropy, versions and block size."""
    import scipy

    out = {
        "seed_entropy": root.entropy,
        "spawn_key": list(root.spawn_key),
        "bit_generator": "PCG64",
        "block_trials": BLOCK_TRIALS,
        "meleelab": _version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
    }
    out.update(extra)
    return out


def _roster_of(rs: Ruleset, roster: Roster | str | Path | None) -> Roster:
    if roster is None:
        return default_roster(rs.id)
    if isinstance(roster, Roster):
        if roster.ruleset != rs.id:
            raise InputError(f"{roster.source}: a {roster.ruleset} roster, expected a {rs.id} roster")
        return roster
    return load_roster(roster, rs.id)


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
    states: dict[str, dict[str, Any]] = {}
    overrides: dict[str, dict[str, Any]] = {}
    options: dict[str, Any] = {}
    unit_fields = {f.name for f in rs.unit_fields}
    for item in items:
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
) -> tuple[Matchup, Any]:
    """Validate a matchup and prepare the ruleset's plan.

    Parameters
    ----------
    ruleset : str or Ruleset
    attacker, defender : str or unit profile
        A unit name (looked up in ``roster``, or the default roster) or a profile.
    states : mapping, optional
        ``{"attacker": {...}, "defender": {...}}`` situational states.
    overrides : mapping, optional
        ``{"attacker": {"defence": 3}}``: per-fight changes of unit fields.
    options : mapping, optional
        Ruleset switches, on top of the roster's.
    roster : Roster, path or None
    from_text : bool
        Values are text (from ``--set``).

    Returns
    -------
    (Matchup, plan)
    """
    rs = get_ruleset(ruleset)
    need_roster = isinstance(attacker, str) or isinstance(defender, str) or roster is not None
    ros = _roster_of(rs, roster) if need_roster else None
    units = []
    for side, ref in (("attacker", attacker), ("defender", defender)):
        unit = ros.unit(ref) if isinstance(ref, str) else ref
        if not isinstance(unit, rs.unit_type):
            raise InputError(f"{side}: expected a {rs.id} unit or a unit name, got {type(unit).__name__}")
        ov = (overrides or {}).get(side, {})
        unit = rs.with_overrides(unit, ov, Where(f"--set {side}", unit.name), from_text=from_text)
        units.append(unit)
    for side in overrides or {}:
        if side not in SIDES:
            raise InputError(f"overrides: side must be attacker or defender, got {side!r}")
    opts = rs.resolve_options(ros.options if ros else None, options, from_text=from_text)
    if ros is not None:
        rs.check_roster(units, opts, Where(ros.source))
    st = rs.resolve_states(states, from_text=from_text)
    matchup = Matchup(units[0], units[1], st, opts)
    return matchup, rs.prepare(matchup)


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
    executor: Any = None,
) -> FightResult:
    """Simulate ``trials`` fights between two units.

    Parameters
    ----------
    ruleset : str or Ruleset
        Ruleset id, e.g. ``"mecha"``.
    attacker, defender : str or unit profile
        Unit names (in ``roster`` or the ruleset's default roster) or profiles.
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
    executor : object, optional
        Run the blocks on a ``dask.distributed.Client`` (or anything with its
        ``submit`` shape) instead of local processes; results are identical.

    Returns
    -------
    FightResult

    Examples
    --------
    >>> import sim
    >>> r = sim.fight("mecha", "AFS", "Nutrocker", trials=100_000, seed=1)
    >>> round(r.win["defender"], 2)
    0.31
    """
    rs = get_ruleset(ruleset)
    rounds = rs.default_rounds if rounds is None else parse_rounds(rounds)
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, (int, np.integer)) or max_rounds < 1:
        raise InputError(f"--max-rounds: got {max_rounds!r}, expected a positive integer")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise InputError(f"--trials: got {trials!r}, expected a positive integer")
    matchup, plan = build_matchup(
        rs, attacker, defender, states=states, overrides=overrides, options=options, roster=roster, from_text=from_text
    )
    root = root_sequence(seed)
    tally = run_tally(rs, plan, int(trials), root, rounds=rounds, max_rounds=int(max_rounds),
                      stream=tuple(stream), workers=workers, progress=progress, executor=executor)
    settings = {
        "rounds": rounds,
        "max_rounds": int(max_rounds),
        "states": matchup.states,
        "options": matchup.options,
        "overrides": {k: dict(v) for k, v in (overrides or {}).items()},
        "attacker_profile": rs.unit_rows(matchup.attacker),
        "defender_profile": rs.unit_rows(matchup.defender),
    }
    seed_out = int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None
    return FightResult(rs, matchup.attacker.name, matchup.defender.name, tally, settings,
                       provenance(root, stream=list(stream), ruleset=rs.id, spec=rs.spec), seed_out)
