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
Roster           validated units of one ruleset
MeleelabError    bad input (one line for a person)

Modules for ruleset authors: ``sim.ruleset`` (the protocol a ruleset implements),
``sim.testing`` (the conformance kit) and ``sim.plugins`` (rulesets from other
packages via the ``meleelab.rulesets`` entry-point group); see ``docs/extending.md``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("meleelab")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"

from .api import build_matchup, fight, parse_settings, rulesets, unit
from .errors import InputError, MatchupError, MeleelabError
from .results import FightResult
from .roster import Roster, default_roster, load_roster, roster_from_dict
from .rulesets import get_ruleset

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
    "MeleelabError",
    "InputError",
    "MatchupError",
]
