"""meleelab's simulator: rulesets, rosters and a block-streamed Monte Carlo engine.

``sim`` depends on NumPy and SciPy only (never pandas, matplotlib or ``analysis``).

Public names
------------
fight            simulate N fights of one matchup -> FightResult
unit             build one unit profile from fields (validated like a roster entry)
rulesets         the registered rulesets
get_ruleset      one ruleset by id
load_roster      units from a TOML or CSV file
default_roster   the example roster shipped for a ruleset
roster_from_dict a roster from a mapping (the shape a TOML roster parses to)
build_matchup    validate a matchup and prepare its plan
parse_settings   split ``--set`` strings into states, overrides and options
FightResult      probabilities with intervals, damage with errors, provenance
Roster           validated units of one ruleset (and its army lists)
ArmyList         a side of several unit types: roster units and their counts (sim.lists)
MeleelabError    bad input (one line for a person)

Exact answers: ``sim.fight(..., method="auto")`` answers exactly where the fight is a small Markov
chain and that is cheaper than the fights asked for; ``sim.exact`` holds the distributions
(``ExactOutcome``), ``exact_outcome`` and ``choose_method``.

Modules for ruleset authors: ``sim.ruleset`` (the protocol a ruleset implements),
``sim.testing`` (the conformance kit) and ``sim.plugins`` (rulesets from other
packages via the ``meleelab.rulesets`` entry-point group); see ``docs/extending.md``.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import InputError, MatchupError, MeleelabError

# Imported now, before ``rulesets`` is bound below: importing a subpackage for the first time sets the parent's
# attribute of that name, which would replace the function ``sim.rulesets`` by the subpackage ``sim.rulesets``.
from . import rulesets as _registry_package  # noqa: E402 - light: the registry loads rulesets on first use

del rulesets  # noqa: F821 - the name is the function sim.rulesets(), loaded on first use like the others

#: Public name -> the module that defines it. Loaded on first use (PEP 562): ``import sim`` stays free of NumPy
#: and SciPy, so ``meleelab --help`` and a command-line error are instant.
_LAZY = {
    "fight": ".api", "unit": ".api", "rulesets": ".api", "build_matchup": ".api", "parse_settings": ".api",
    "FightResult": ".results",
    "Roster": ".roster", "default_roster": ".roster", "load_roster": ".roster", "roster_from_dict": ".roster",
    "get_ruleset": ".rulesets",
    "ArmyList": ".lists",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("meleelab")
        except PackageNotFoundError:  # running from a source tree
            value = "0.1.0"
    else:
        raise AttributeError(f"module 'sim' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})


__all__ = [
    "fight",
    "unit",
    "rulesets",
    "get_ruleset",
    "load_roster",
    "default_roster",
    "roster_from_dict",
    "build_matchup",
    "parse_settings",
    "FightResult",
    "Roster",
    "ArmyList",
    "MeleelabError",
    "InputError",
    "MatchupError",
]
