"""Rulesets from other packages: the ``meleelab.rulesets`` entry-point group.

A package adds a ruleset by declaring, in its ``pyproject.toml``::

    [project.entry-points."meleelab.rulesets"]
    mygame = "mygame.rules:RULESET"

The entry point's name is the ruleset id; its value is a module-level
:class:`~sim.ruleset.Ruleset` instance. Once the package is installed,
``sim.rulesets()``, ``sim.get_ruleset("mygame")`` and every ``meleelab`` command
find it exactly like a built-in ruleset.

Each plugin is checked when the registry loads it (:func:`check_protocol`:
schema, outcome categories, ``prepare``/``simulate``/``resolve_one``). A plugin
that fails to import, claims an id already taken (by a built-in or by another
plugin), or does not satisfy the protocol is left out; the other rulesets are
unaffected. Its problem is one line (:class:`PluginProblem`):

* listing (``sim.rulesets()``, ``meleelab rulesets``) shows the working
  rulesets; ``meleelab rulesets`` prints one warning line per broken plugin on
  stderr and still exits 0;
* using the broken id (``sim.get_ruleset("mygame")``, ``meleelab fight mygame``)
  raises :class:`~sim.errors.InputError` with that line (exit status 2 in the CLI).

A built-in id always means the built-in ruleset: a plugin cannot replace one.
Two plugins claiming the same id are both left out (neither is preferred).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from .errors import InputError
from .ruleset import Extra, Ruleset, parse_rounds
from .schema import Field, StateField

__all__ = ["GROUP", "PluginProblem", "check_protocol", "discover", "problems", "origin", "refresh"]

#: The entry-point group plugins register their rulesets in.
GROUP = "meleelab.rulesets"

#: What a ruleset id may look like (it names report folders and CLI arguments).
ID_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")

_FIELD_KINDS = {"int", "number", "bool", "str", "choice", "str_list", "table"}
_EXTRA_KINDS = {"proportion", "mean"}

#: The behaviour every ruleset must provide, with a call its signature must accept.
_METHODS: dict[str, tuple[tuple[Any, ...], str]] = {
    "prepare": (("matchup",), "matchup"),
    "simulate": (("plan", 1, "rng", 1, 50), "plan, n, rng, rounds, max_rounds"),
    "resolve_one": (("plan", "dice", 1, 50), "plan, dice, rounds, max_rounds"),
}
#: Optional methods (exact answers): checked only where a ruleset overrides them.
_OPTIONAL_METHODS: dict[str, tuple[tuple[Any, ...], str]] = {
    "exact_work": (("plan", 1, 50), "plan, rounds, max_rounds"),
    "exact": (("plan", 1, 50), "plan, rounds, max_rounds"),
}


@dataclass(frozen=True)
class PluginProblem:
    """Why one entry point of the ``meleelab.rulesets`` group was left out.

    Attributes
    ----------
    ruleset_id : str
        The id the entry point claims (its name).
    target : str
        The entry point's value, e.g. ``"mygame.rules:RULESET"``.
    distribution : str
        The installed package that declares it (``"name version"``), if known.
    reason : str
        One line: what is wrong and, where it is obvious, what to do.
    """

    ruleset_id: str
    target: str
    distribution: str
    reason: str

    @property
    def line(self) -> str:
        """The problem as one line for a person."""
        by = f" from {self.distribution}" if self.distribution else ""
        return f"plugin ruleset {self.ruleset_id!r} ({self.target}{by}): {self.reason}"


# ------------------------------------------------------------------ protocol
def check_protocol(ruleset: Any) -> list[str]:
    """Everything that keeps ``ruleset`` from satisfying the ruleset protocol.

    Checks the metadata (id, title, damage unit, default rounds), the outcome
    categories, the unit schema, states, options and extras, and that
    ``prepare``, ``simulate`` and ``resolve_one`` are implemented with the
    protocol's signatures (and the optional ``exact_work`` and ``exact``, where
    overridden). Cheap: nothing is simulated (that is the
    conformance kit's job, :func:`sim.testing.check_ruleset`).

    Parameters
    ----------
    ruleset : object
        Normally a :class:`~sim.ruleset.Ruleset` instance.

    Returns
    -------
    list of str
        One short sentence per problem; empty when the ruleset conforms.
    """
    if isinstance(ruleset, type) and issubclass(ruleset, Ruleset):
        return [f"{ruleset.__name__} is a class: point the entry point at an instance (RULESET = {ruleset.__name__}())"]
    if not isinstance(ruleset, Ruleset):
        return [f"expected an instance of sim.ruleset.Ruleset, got {type(ruleset).__name__}"]
    out: list[str] = []
    rid = getattr(ruleset, "id", None)
    if not isinstance(rid, str) or not ID_PATTERN.match(rid):
        out.append(f"id must be lower-case letters, digits, '_' or '-' (starting with a letter), got {rid!r}")
    for name in ("title", "damage_unit"):
        value = getattr(ruleset, name, None)
        if not isinstance(value, str) or not value.strip():
            out.append(f"{name} must be a non-empty string, got {value!r}")
    for name in ("source", "spec"):
        if not isinstance(getattr(ruleset, name, None), str):
            out.append(f"{name} must be a string (where the rules come from; may be empty)")
    try:
        parse_rounds(getattr(ruleset, "default_rounds", None))
    except InputError:
        rounds = getattr(ruleset, "default_rounds", None)
        out.append(f'default_rounds must be a positive integer or "end", got {rounds!r}')
    out += _check_categories(getattr(ruleset, "outcome_categories", None))
    out += _check_schema(ruleset)
    out += _check_methods(ruleset)
    return out


def _check_categories(cats: Any) -> list[str]:
    if not isinstance(cats, (tuple, list)) or len(cats) < 2:
        return [f"outcome_categories must be a tuple of at least two names, got {cats!r}"]
    if not all(isinstance(c, str) and c.strip() for c in cats):
        return [f"outcome_categories must be non-empty strings, got {cats!r}"]
    if len(set(cats)) != len(cats):
        return [f"outcome_categories must be distinct, got {cats!r}"]
    return []


def _check_field(f: Any, what: str) -> list[str]:
    if not isinstance(f, Field):
        return [f"{what} must be a sim.ruleset.Field, got {type(f).__name__}"]
    if f.kind not in _FIELD_KINDS:
        return [f"{what} {f.name!r} has unknown kind {f.kind!r} (one of {', '.join(sorted(_FIELD_KINDS))})"]
    if not f.name or "." in f.name or "=" in f.name or f.name != f.name.strip():
        return [f"{what} name {f.name!r} must be a plain word (no '.', '=' or spaces at the ends)"]
    if f.kind == "choice" and not f.choices:
        return [f"{what} {f.name!r} is a choice without choices"]
    return []


def _default_ok(f: Field, default: Any, what: str) -> list[str]:
    if f.required or default is None and f.optional:
        return []
    try:
        f.parse(default)
    except InputError:
        return [f"{what} {f.name!r} has default {default!r}, which is not {f.expected}"]
    return []


def _check_schema(rs: Ruleset) -> list[str]:
    out: list[str] = []
    if not isinstance(getattr(rs, "unit_type", None), type):
        out.append("unit_type must be the class of the ruleset's unit profiles")
    elif not dataclasses.is_dataclass(rs.unit_type) and type(rs).unit_to_dict is Ruleset.unit_to_dict:
        out.append("unit_type must be a dataclass (or the ruleset must override unit_to_dict)")
    groups: dict[str, tuple[Any, ...]] = {}
    for attr in ("unit_fields", "state_fields", "option_fields", "extras", "roster_tables"):
        value = getattr(rs, attr, None)
        if not isinstance(value, (tuple, list)):
            out.append(f"{attr} must be a tuple, got {type(value).__name__}")
            value = ()
        groups[attr] = tuple(value)
    units = groups["unit_fields"]
    for f in units:
        out += _check_field(f, "unit field") or _default_ok(f, f.default, "unit field")
    unit_names = [f.name for f in units if isinstance(f, Field)]
    if not any(isinstance(f, Field) and f.name == "name" and f.kind == "str" for f in units):
        out.append('unit_fields must include Field("name", "str") (units are looked up by name)')
    states = groups["state_fields"]
    for s in states:
        if not isinstance(s, StateField):
            out.append(f"state_fields must hold sim.ruleset.StateField, got {type(s).__name__}")
            continue
        problems = _check_field(s.field, "state")
        if not problems:
            if not s.sides or any(side not in ("attacker", "defender") for side in s.sides):
                problems.append(f"state {s.name!r} sides must be 'attacker' and/or 'defender', got {s.sides!r}")
            for side in s.sides:
                problems += _default_ok(s.field, s.default_for(side), f"state ({side})")
            if s.name in unit_names:
                problems.append(f"state {s.name!r} has the name of a unit field (--set {s.name} would be ambiguous)")
        out += problems
    options = groups["option_fields"]
    for f in options:
        out += _check_field(f, "option") or _default_ok(f, f.default, "option")
    state_names = [s.name for s in states if isinstance(s, StateField)]
    option_names = [f.name for f in options if isinstance(f, Field)]
    for attr, names in (("unit_fields", unit_names), ("state_fields", state_names), ("option_fields", option_names)):
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            out.append(f"{attr} names must be distinct, repeated: {', '.join(dup)}")
    extras = groups["extras"]
    for e in extras:
        if not isinstance(e, Extra):
            out.append(f"extras must hold sim.ruleset.Extra, got {type(e).__name__}")
        elif e.kind not in _EXTRA_KINDS or not e.name:
            out.append(f"extra {e.name!r} must have a name and kind 'proportion' or 'mean', got {e.kind!r}")
    names = [e.name for e in extras if isinstance(e, Extra)]
    if len(set(names)) != len(names):
        out.append("extras names must be distinct")
    if not all(isinstance(t, str) for t in groups["roster_tables"]):
        out.append("roster_tables must be a tuple of table names")
    return out


def _check_methods(rs: Ruleset) -> list[str]:
    out = []
    for name, (args, params) in (_METHODS | _OPTIONAL_METHODS).items():
        impl = getattr(type(rs), name, None)
        if impl is None or impl is getattr(Ruleset, name):
            if name in _METHODS:
                out.append(f"{name}() is not implemented")
            continue
        try:
            inspect.signature(getattr(rs, name)).bind(*args)
        except TypeError:
            out.append(f"{name}() must accept ({params})")
        except ValueError:  # no signature (a builtin): cannot check, trust it
            pass
    return out


# ----------------------------------------------------------------- discovery
def _distribution(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ""
    try:
        return f"{dist.metadata['Name']} {dist.version}"
    except Exception:  # noqa: BLE001 - broken metadata must not hide the real problem
        return ""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def discover(
    builtin: Mapping[str, Ruleset], entry_points: Callable[[], Any] | None = None
) -> tuple[dict[str, Ruleset], dict[str, str], list[PluginProblem]]:
    """Load every plugin ruleset and sort out the ones that cannot be used.

    Parameters
    ----------
    builtin : mapping of str to Ruleset
        The built-in rulesets (their ids cannot be taken by a plugin).
    entry_points : callable, optional
        Returns the group's entry points (for tests); default
        ``importlib.metadata.entry_points(group=GROUP)``.

    Returns
    -------
    rulesets : dict of str to Ruleset
        The plugins that loaded and conform, by id.
    origins : dict of str to str
        ``"plugin <distribution> (<target>)"`` per loaded plugin id.
    problems : list of PluginProblem
        One per entry point left out.
    """
    eps = list((entry_points or (lambda: metadata.entry_points(group=GROUP)))())
    by_name: dict[str, list[metadata.EntryPoint]] = {}
    for ep in eps:
        by_name.setdefault(ep.name, []).append(ep)
    loaded: dict[str, Ruleset] = {}
    origins: dict[str, str] = {}
    problems: list[PluginProblem] = []
    for name, group in sorted(by_name.items()):
        if len(group) > 1:
            who = "; ".join(f"{_distribution(ep) or '?'}: {ep.value}" for ep in group)
            for ep in group:
                problems.append(PluginProblem(name, ep.value, _distribution(ep),
                                              f"id claimed by {len(group)} plugins ({who}); uninstall all but one"))
            continue
        ep = group[0]
        problem = _problem_of(ep, builtin)
        if isinstance(problem, str):
            problems.append(PluginProblem(name, ep.value, _distribution(ep), problem))
        else:
            loaded[name] = problem
            dist = _distribution(ep)
            origins[name] = f"plugin {dist} ({ep.value})" if dist else f"plugin ({ep.value})"
    return loaded, origins, problems


def _problem_of(ep: metadata.EntryPoint, builtin: Mapping[str, Ruleset]) -> Ruleset | str:
    """The plugin's ruleset, or one line saying why it cannot be used."""
    if ep.name in builtin:
        return f"{ep.name!r} is a built-in ruleset; a plugin cannot replace it (rename the entry point and the id)"
    try:
        obj = ep.load()
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure of a plugin must not break the others
        return f"import failed: {type(e).__name__}: {_one_line(e) or '(no message)'}"
    problems = check_protocol(obj)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return "does not satisfy the ruleset protocol: " + "; ".join(problems[:3]) + more
    if obj.id != ep.name:
        return f"the entry point is named {ep.name!r} but the ruleset's id is {obj.id!r} (they must be equal)"
    return obj


# ------------------------------------------------------------ registry views
def problems() -> list[PluginProblem]:
    """The plugins left out of the registry, with why (empty when all loaded)."""
    from .rulesets import _registry

    return list(_registry().problems)


def origin(ruleset_id: str) -> str:
    """``"built-in"`` or ``"plugin <distribution> (<target>)"`` for a registered id."""
    from .rulesets import _registry

    return _registry().origins.get(ruleset_id, "?")


def refresh() -> None:
    """Forget the loaded rulesets so the next lookup discovers plugins again.

    Needed only in a running process that installed or removed a plugin
    (a notebook after ``pip install``); new processes always look afresh.
    """
    from .rulesets import _registry

    _registry.cache_clear()
