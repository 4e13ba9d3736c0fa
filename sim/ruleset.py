"""The one protocol every ruleset implements, and the matchup it is given.

A ruleset is a :class:`Ruleset` subclass in ``sim/rulesets/<id>/__init__.py`` exposing a
module-level ``RULESET`` instance. It declares its metadata and schema, and
provides three pieces of behaviour:

``prepare(matchup)``
    Check that the two units can fight as asked and precompute whatever the
    kernel needs (tables, probabilities). Returns a picklable *plan*.
``simulate(plan, n, rng, rounds, max_rounds)``
    The vectorised kernel: ``n`` fights, all randomness from ``rng``, returns
    :class:`~sim.outcomes.Outcomes`. No Python loop per trial.
``resolve_one(plan, dice, rounds, max_rounds)``
    The scalar reference: one fight, read like the spec, every die from
    ``dice.d6()`` (or ``dice.d(sides)`` for other dice). Returns a
    :class:`~sim.outcomes.TrialOutcome`.

Optionally, army lists (see :mod:`sim.lists`): ``fields_lists = True`` and, in
``prepare``/``simulate``/``resolve_one``, a side that is a :class:`sim.lists.MixedSide`
(built by :meth:`Ruleset.mixed_side`, which keeps a list of one profile as plain copies).

Optionally, exact answers (see :mod:`sim.exact`): ``exact_work(plan, rounds,
max_rounds)`` estimates the work of the matchup's exact chain (``None``: none),
and ``exact(plan, rounds, max_rounds)`` returns its :class:`ExactOutcome`. A
ruleset without them is answered by Monte Carlo.

This module is the public, stable API for writing a ruleset, in meleelab or in
a package of its own (a plugin, see :mod:`sim.plugins` and ``docs/extending.md``):
everything a ruleset needs is importable from here, and a plugin imports
nothing else from ``sim`` except :mod:`sim.testing` in its tests.

Public names
------------
Ruleset        the base class: metadata, schema, validation, the three methods
BalanceSettings the rounds, round cap and states equal-points balance questions are asked under
Matchup        the validated fight ``prepare`` receives (units, states, options)
Field          one typed unit field or option (``kind``, range, choices, default)
StateField     a situational state of one side (a Field plus sides and defaults)
REQUIRED       default marker of a field that must be given
Extra          a ruleset-specific per-trial count reported with every result
Outcomes       what the kernel returns for a block of fights (arrays)
TrialOutcome   what the reference returns for one fight
DRAW, ATTACKER, DEFENDER   winner codes
DiceStream     what ``resolve_one`` reads dice from: ``d6()`` and ``d(sides)``
ExactOutcome   what the optional ``exact`` returns: the outcome distribution (``sim.exact``)
Rounds, END    a round count or ``"end"`` (fight until one side is out)
SIDES          ``("attacker", "defender")``
parse_rounds   validate a rounds value
InputError, MatchupError, Where   one-line errors for bad input / impossible fights
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from .dice import DiceStream
from .errors import InputError, MatchupError, Where
from .exact import ExactOutcome
from .outcomes import ATTACKER, DEFENDER, DRAW, Outcomes, TrialOutcome
from .schema import REQUIRED, Field, StateField, parse_fields

__all__ = [
    "Ruleset", "BalanceSettings", "Matchup", "Field", "StateField", "REQUIRED", "Extra", "Outcomes", "TrialOutcome",
    "DRAW", "ATTACKER", "DEFENDER", "DiceStream", "ExactOutcome", "Rounds", "END", "SIDES", "parse_rounds",
    "InputError", "MatchupError", "Where",
]

END: Literal["end"] = "end"
Rounds = int | Literal["end"]
SIDES = ("attacker", "defender")


@dataclass(frozen=True)
class Extra:
    """A ruleset-specific per-trial count reported with every result.

    Parameters
    ----------
    name : str
        Key in ``Outcomes.extras`` and in the result's ``extras``.
    kind : {"proportion", "mean"}
        ``proportion`` for 0/1 indicators (reported with a Wilson interval),
        ``mean`` for counts (mean, standard error and distribution).
    doc : str
    """

    name: str
    kind: str = "mean"
    doc: str = ""


@dataclass(frozen=True)
class Matchup:
    """Everything that defines one fight, validated and with defaults filled in.

    Attributes
    ----------
    attacker, defender : object
        The ruleset's unit profiles (frozen dataclasses), overrides applied, as
        fielded (``copies`` of the listed unit combined by :meth:`Ruleset.copies`).
    states : mapping
        ``{"attacker": {state: value}, "defender": {...}}``, every state present.
    options : mapping
        Every ruleset option (switches, charts), defaults filled in.
    """

    attacker: Any
    defender: Any
    states: Mapping[str, Mapping[str, Any]]
    options: Mapping[str, Any]
    #: Copies of each side's unit on the table (``attacker``/``defender`` are already the fielded sides).
    copies: Mapping[str, int] = dataclasses.field(default_factory=lambda: {"attacker": 1, "defender": 1})
    #: The equal-points budget that set ``copies`` (None: one unit a side, or copies given directly).
    budget: float | None = None

    def unit(self, side: str) -> Any:
        return self.attacker if side == "attacker" else self.defender

    def state(self, side: str, name: str) -> Any:
        return self.states[side][name]


@dataclass(frozen=True)
class BalanceSettings:
    """The settings a ruleset's balance questions are asked under: what measures the units, not the setup.

    ``meleelab matrix``, ``balance``, ``report``, ``rebalance``, ``sweep`` and
    ``compare`` fight under these unless told otherwise (``--rounds``,
    ``--max-rounds``, ``--set``, or ``--rules-defaults`` for the rules' own
    defaults); ``meleelab fight`` always keeps the rules' own defaults. A ruleset
    that declares none is balanced under its rules' defaults.

    Attributes
    ----------
    rounds : int or "end"
    max_rounds : int
        Round cap of ``rounds = "end"`` (a fight still going is a draw).
    states : mapping
        ``{"attacker": {state: value}, "defender": {...}}`` (the states a designer would otherwise
        have to set by hand, e.g. a frontage); the rest keep their defaults.
    why : tuple of str
        One sentence per choice, in plain words, for the report and the rules page.
    """

    rounds: Rounds = "end"
    max_rounds: int = 50
    states: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    why: tuple[str, ...] = ()


def parse_rounds(value: Any, where: Where = Where("--rounds")) -> Rounds:
    """``"end"`` or an integer in 1..MAX_ROUNDS (``"3"`` is accepted)."""
    from .limits import MAX_ROUNDS

    expected = f'an integer in 1..{MAX_ROUNDS:,} or "end"'
    if isinstance(value, str):
        if value.strip().lower() == END:
            return END
        text = value.strip()
        if not (text.isascii() and text.isdigit()):
            raise where.error("rounds", value, expected)
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_ROUNDS:
        raise where.error("rounds", value, expected)
    return int(value)


class Ruleset:
    """Base class of all rulesets: metadata, schema and the generic parts of validation."""

    id: ClassVar[str]
    title: ClassVar[str]
    #: The original rules text this ruleset was written from (file name; not distributed) and a one-line note.
    source: ClassVar[str]
    #: The page that documents the rules as simulated, relative to the repository (``docs/rules/<id>.md``).
    spec: ClassVar[str]
    damage_unit: ClassVar[str]
    default_rounds: ClassVar[Rounds] = 1
    outcome_categories: ClassVar[tuple[str, ...]]
    unit_type: ClassVar[type]
    unit_fields: ClassVar[tuple[Field, ...]]
    state_fields: ClassVar[tuple[StateField, ...]] = ()
    option_fields: ClassVar[tuple[Field, ...]] = ()
    #: The settings equal-points balance questions are asked under (None: the rules' own defaults).
    balance_settings: ClassVar[BalanceSettings | None] = None
    #: Top-level tables a roster file may carry besides ``ruleset``, ``unit`` and ``options``.
    roster_tables: ClassVar[tuple[str, ...]] = ()
    extras: ClassVar[tuple[Extra, ...]] = ()

    # ----------------------------------------------------------------- units
    def parse_unit(self, mapping: Mapping[str, Any], where: Where, *, from_text: bool = False) -> Any:
        """Validate one unit's mapping and build its profile.

        Parameters
        ----------
        mapping : mapping
            Field name to value, as in a ``[[unit]]`` table or a CSV row.
        where : Where
            File and unit name for error messages.
        from_text : bool
            Values are text (CSV).
        """
        values = parse_fields(self.unit_fields, mapping, where, from_text=from_text)
        return self.unit_type(**values)

    def units_from_rows(self, rows: list[Mapping[str, str]], where: Where) -> list[Any]:
        """Units from CSV rows (one row per unit by default)."""
        units = []
        for row in rows:
            name = (row.get("name") or "").strip() or None
            units.append(self.parse_unit(row, where.at(name), from_text=True))
        return units

    def unit_to_dict(self, unit: Any) -> dict[str, Any]:
        """The unit's fields as plain values (the inverse of :meth:`parse_unit`)."""
        return {f.name: getattr(unit, f.name) for f in dataclasses.fields(unit)}

    def unit_rows(self, unit: Any) -> list[dict[str, Any]]:
        """Rows that describe the unit in a table (one by default; squads give one per group)."""
        return [self.unit_to_dict(unit)]

    def with_overrides(self, unit: Any, overrides: Mapping[str, Any], where: Where, *, from_text: bool = False) -> Any:
        """A copy of ``unit`` with some fields changed, validated like roster fields."""
        if not overrides:
            return unit
        values = self.unit_to_dict(unit)
        by_name = {f.name: f for f in self.unit_fields}
        for key, raw in overrides.items():
            if key not in by_name or key == "name":
                known = ", ".join(sorted(k for k in by_name if k != "name"))
                raise where.error(key, raw, f"a unit field or state of {self.id} ({known})")
            values[key] = by_name[key].parse_text(raw, where) if from_text and isinstance(raw, str) else raw
        return self.parse_unit(values, where)

    def check_roster(self, units: list[Any], options: Mapping[str, Any], where: Where) -> None:
        """Roster-wide checks (e.g. every armour letter is in the chart). Raise InputError."""

    def parse_roster_table(self, name: str, value: Any, where: Where) -> dict[str, Any]:
        """Turn a ruleset-specific top-level roster table into options."""
        raise where.error(name, value, "no such table")

    # ---------------------------------------------------------------- states
    def state_field(self, name: str) -> StateField | None:
        for s in self.state_fields:
            if s.name == name:
                return s
        return None

    def option_field(self, name: str) -> Field | None:
        for f in self.option_fields:
            if f.name == name:
                return f
        return None

    def resolve_states(self, given: Mapping[str, Mapping[str, Any]] | None, *, from_text: bool = False) -> dict[str, dict[str, Any]]:
        """Every state for both sides: defaults, then ``given`` (validated)."""
        from .limits import check_side_mappings

        given = check_side_mappings(given, "states")
        out: dict[str, dict[str, Any]] = {side: {} for side in SIDES}
        for s in self.state_fields:
            for side in s.sides:
                out[side][s.name] = s.default_for(side)
        for side, values in (given or {}).items():
            if side not in SIDES:
                raise InputError(f"states: side must be attacker or defender, got {side!r}")
            where = Where("states", None)
            for key, raw in values.items():
                s = self.state_field(key)
                if s is None:
                    known = ", ".join(st.name for st in self.state_fields) or "none"
                    raise where.error(f"{side}.{key}", raw, f"a state of {self.id} ({known}) or a unit field")
                if side not in s.sides:
                    raise where.error(f"{side}.{key}", raw, f"a state of the {' or '.join(s.sides)} only")
                out[side][key] = s.field.parse_text(raw, where) if from_text and isinstance(raw, str) else s.field.parse(raw, where)
        return out

    def resolve_options(self, *layers: Mapping[str, Any] | None, from_text: bool = False) -> dict[str, Any]:
        """Every option: defaults, then each layer in turn (roster, then call)."""
        from .limits import check_mapping

        out = {f.name: f.default for f in self.option_fields}
        where = Where("options", None)
        for layer in layers:
            for key, raw in check_mapping(layer, "options").items():
                f = self.option_field(key)
                if f is None:
                    known = ", ".join(f.name for f in self.option_fields) or "none"
                    raise where.error(key, raw, f"an option of {self.id} ({known})")
                out[key] = f.parse_text(raw, where) if from_text and isinstance(raw, str) else f.parse(raw, where)
        return out

    # ------------------------------------------------------------- copies
    #: Whether k copies of a unit can fight together as one side (equal-points matchups).
    fields_copies: ClassVar[bool] = False
    #: Why not, in a few words, when ``fields_copies`` is False.
    copies_refusal: ClassVar[str] = "a side is always one unit"

    def copies(self, unit: Any, k: int) -> Any:
        """``k`` copies of ``unit`` fighting together as one side (points multiplied by ``k``).

        ``copies(unit, 1)`` is ``unit``. Rulesets that can field copies override
        this and set ``fields_copies``; the base refuses with a one-line error.

        Raises
        ------
        MatchupError
            The ruleset cannot field copies, or ``k`` copies exceed its per-side limits.
        """
        if k == 1:
            return unit
        raise MatchupError(f"{self.id}: {self.copies_refusal}, so equal-points copies (--budget) are not available")

    # ------------------------------------------------------------- lists
    #: Whether a side may be an army list of several unit types (:mod:`sim.lists`), fought under the
    #: ruleset's own group rules. Needs ``fields_copies`` and a ``count`` field.
    fields_lists: ClassVar[bool] = False
    #: Why not, in a few words, when ``fields_lists`` is False.
    lists_refusal: ClassVar[str] = "fights one unit against one unit in its melee rules"

    def fighting_profile(self, unit: Any) -> Any:
        """What makes two units fight alike: the unit without its name, points and count."""
        changes = {k: v for k, v in (("name", ""), ("points", None), ("count", 1))
                   if k in {f.name for f in dataclasses.fields(unit)}}
        return dataclasses.replace(unit, **changes)

    def mixed_side(self, name: str, groups: list[Any], points: float | None) -> Any:
        """The side an army list fields: ``groups`` are its units' copies in listed order.

        Groups that all fight alike (:meth:`fighting_profile`) are one group of their total
        count under the list's name: exactly the copies of that unit, so a list of k copies of
        one unit fights, seed for seed, as today's k copies. Otherwise a
        :class:`~sim.lists.MixedSide`, which only a ruleset with ``fields_lists`` accepts.

        Raises
        ------
        MatchupError
            The ruleset has no mixed sides (a list of one profile is refused too: the rules
            take no lists), or the side holds more models than the ruleset fields.
        """
        from .lists import MixedSide, side_limit

        if not self.fields_lists:
            raise MatchupError(f"{self.id}: {self.lists_refusal}, so army lists are not available")
        limit = side_limit(self)
        total = sum(int(g.count) for g in groups)
        if limit is not None and total > limit:
            raise MatchupError(f"{self.id}: list {name!r} fields {total} models, more than the {limit} a side can "
                               "field")
        first = self.fighting_profile(groups[0])
        if all(self.fighting_profile(g) == first for g in groups[1:]):
            return dataclasses.replace(groups[0], name=name, count=total, points=points)
        return MixedSide(name, tuple(groups), points)

    def side_rows(self, side: Any) -> list[dict[str, Any]]:
        """Rows that describe a fielded side: :meth:`unit_rows`, or one per group of a list."""
        from .lists import MixedSide

        if isinstance(side, MixedSide):
            return [row for g in side.groups for row in self.unit_rows(g)]
        return self.unit_rows(side)

    # ----------------------------------------------------------- behaviour
    def prepare(self, matchup: Matchup) -> Any:
        """Validate the matchup and return the kernel's plan (picklable). Raise MatchupError."""
        raise NotImplementedError

    def simulate(self, plan: Any, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
        """Vectorised kernel: ``n`` fights."""
        raise NotImplementedError

    def resolve_one(self, plan: Any, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        """Scalar reference: one fight, as the spec reads."""
        raise NotImplementedError

    # ------------------------------------------------------- exact answers
    def exact_work(self, plan: Any, rounds: Rounds, max_rounds: int) -> int | None:
        """Estimated work of the exact chain of this matchup, or ``None`` if it has none.

        Work units are about a nanosecond of one core (see :mod:`sim.exact`), so
        :func:`sim.exact.choose_method` can weigh them against a Monte Carlo run.
        Must be cheap (no propagation) and deterministic. The base has no exact
        chain: ``None``, and every fight is Monte Carlo.
        """
        return None

    def exact(self, plan: Any, rounds: Rounds, max_rounds: int) -> ExactOutcome:
        """The exact outcome distribution of this matchup (:class:`ExactOutcome`).

        Called where :meth:`exact_work` is not None. Where it is None, raise a
        one-line :class:`MatchupError` naming the matchup and saying why (e.g.
        ``"warband 3 v 3: groups have no exact chain"``); this base says the
        ruleset has none.
        """
        raise MatchupError(f"{self.id}: the ruleset has no exact chain (it does not implement exact); "
                           "use Monte Carlo (method=\"mc\")")

    def bench_matchup(self) -> tuple[str, str, dict[str, dict[str, Any]], Rounds]:
        """The standard benchmark matchup: names in the default roster, states, rounds."""
        raise NotImplementedError

    def bench_extra_matchups(self) -> tuple[tuple[str, str, dict[str, dict[str, Any]], Rounds], ...]:
        """Further benchmark matchups an issue sets a goal for (same shape as :meth:`bench_matchup`)."""
        return ()

    def default_roster_file(self) -> Any:
        """The example roster shipped with the ruleset, or ``None``.

        By default ``<top-level package>/rosters/<id>.toml`` as package data:
        ``sim/rosters/mecha.toml`` for ``sim.rulesets.mecha``,
        ``mygame/rosters/mygame.toml`` for a plugin whose ruleset lives in
        ``mygame.rules``. Returns an :mod:`importlib.resources` traversable.
        """
        from importlib import resources

        try:
            res = resources.files(type(self).__module__.split(".")[0]) / "rosters" / f"{self.id}.toml"
            return res if res.is_file() else None
        except (ModuleNotFoundError, TypeError, OSError):  # a plain module or a namespace without files
            return None
    def working_set(self, plan: Any, n: int) -> int:
        """Estimated peak bytes of ``simulate(plan, n, ...)``: the plan's tables plus ``n`` fights' arrays.

        The engine refuses a matchup whose block would not fit :data:`sim.limits.MEMORY_BUDGET`
        (see :func:`sim.limits.check_working_set`). Rulesets override this with an
        estimate from their unit sizes; this default allows 4 KiB per fight.
        """
        from .limits import table_bytes

        return table_bytes(plan) + 4096 * int(n)

    def balance_defaults(self) -> BalanceSettings:
        """:attr:`balance_settings`, or the rules' own defaults (``default_rounds``, a cap of 50, no states)."""
        if self.balance_settings is not None:
            return self.balance_settings
        return BalanceSettings(self.default_rounds, 50, {}, ("the rules' own defaults",))

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "spec": self.spec,
            "default_rounds": self.default_rounds,
            "damage_unit": self.damage_unit,
            "outcome_categories": list(self.outcome_categories),
        }
