"""The ruleset registry: every module in this package with a ``RULESET`` instance.

Adding a ruleset means adding a module; nothing else is edited.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from ..errors import InputError
from ..ruleset import Ruleset

__all__ = ["all_rulesets", "get_ruleset"]

#: Display order for the rulesets we ship; any other module is listed after them.
_ORDER = ("mecha", "grimdark", "duel", "pools", "warband")


@lru_cache(maxsize=1)
def _registry() -> dict[str, Ruleset]:
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


def all_rulesets() -> list[Ruleset]:
    """Every registered ruleset, in display order."""
    return list(_registry().values())


def get_ruleset(ruleset: str | Ruleset) -> Ruleset:
    """The ruleset with this id (or the ruleset itself)."""
    if isinstance(ruleset, Ruleset):
        return ruleset
    reg = _registry()
    if not isinstance(ruleset, str):
        raise InputError(f"ruleset: got {type(ruleset).__name__}, expected a ruleset id ({', '.join(reg)})")
    if ruleset not in reg:
        raise InputError(f"unknown ruleset {ruleset!r}: expected one of {', '.join(reg)}")
    return reg[ruleset]
