"""The ruleset registry: every module in this package with a ``RULESET`` instance,
then the plugins of the ``meleelab.rulesets`` entry-point group (:mod:`sim.plugins`).

Each built-in ruleset is a package of its own, the same shape for each:
``<id>/__init__.py`` (the ``Ruleset`` subclass and ``RULESET``), ``units.py``,
``plan.py``, ``kernel.py``, ``reference.py`` and ``exact.py``, and helpers named for what they
are. Rulesets share code only through :mod:`sim.kernels` and the protocol
(:mod:`sim.ruleset`), never another ruleset's package.

Adding a built-in ruleset means adding a package; nothing else is edited. Adding
one from another package means declaring an entry point; nothing here is edited.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:  # imported in the functions: ``import sim`` (and so ``meleelab --help``) stays free of NumPy
    from ..ruleset import Ruleset

__all__ = ["all_rulesets", "get_ruleset"]

#: Display order for the rulesets we ship; any other module is listed after them, then the plugins.
_ORDER = ("mecha", "grimdark", "duel", "pools", "warband")


@dataclass(frozen=True)
class _Registry:
    rulesets: dict[str, Ruleset]
    origins: dict[str, str]
    problems: tuple = field(default=())  # of sim.plugins.PluginProblem


def _builtin() -> dict[str, Ruleset]:
    from ..ruleset import Ruleset

    found: dict[str, Ruleset] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        rs = getattr(module, "RULESET", None)
        if isinstance(rs, Ruleset):
            found[rs.id] = rs
    order = {k: i for i, k in enumerate(_ORDER)}
    return dict(sorted(found.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


@lru_cache(maxsize=1)
def _registry() -> _Registry:
    from ..plugins import discover

    builtin = _builtin()
    plugins, plugin_origins, problems = discover(builtin)
    origins = {rid: "built-in" for rid in builtin} | plugin_origins
    return _Registry(builtin | plugins, origins, tuple(problems))


def all_rulesets() -> list[Ruleset]:
    """Every registered ruleset, in display order (built-ins first, then plugins by id)."""
    return list(_registry().rulesets.values())


def get_ruleset(ruleset: str | Ruleset) -> Ruleset:
    """The ruleset with this id (or the ruleset itself).

    Raises
    ------
    sim.errors.InputError
        Unknown id, or a plugin with this id that could not be loaded (the line says why).
    """
    from ..ruleset import Ruleset

    if isinstance(ruleset, Ruleset):
        return ruleset
    reg = _registry()
    if not isinstance(ruleset, str):
        raise InputError(f"ruleset: got {type(ruleset).__name__}, expected a ruleset id ({', '.join(reg.rulesets)})")
    if ruleset in reg.rulesets:
        return reg.rulesets[ruleset]
    for problem in reg.problems:
        if problem.ruleset_id == ruleset:
            raise InputError(problem.line)
    raise InputError(f"unknown ruleset {ruleset!r}: expected one of {', '.join(reg.rulesets)}")
