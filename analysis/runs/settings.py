"""The rounds, round cap and states a balance run fights under: the ruleset's balance settings unless told otherwise.

Every analysis command (``matrix``, ``balance``, ``report``, ``rebalance``,
``sweep``, ``compare``) asks a balance question, so it fights under the
ruleset's :class:`~sim.ruleset.BalanceSettings` (fights to a decision, a
frontage where hundreds of models would otherwise all strike at once, no
charge where the charge alone would decide) instead of the rules' own
defaults, which ``meleelab fight`` keeps. What the caller gives wins: a
``rounds`` or ``max_rounds``, and each state set by role. ``rules_defaults=True``
(``--rules-defaults``) fights under the rules' own defaults instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.errors import InputError, Where
from sim.limits import check_max_rounds
from sim.ruleset import SIDES, Rounds, Ruleset, parse_rounds

__all__ = ["RunSettings", "run_settings", "check_method"]


def check_method(method: Any) -> str:
    """``method`` if it is one of ``"auto"``, ``"exact"``, ``"mc"`` (:data:`sim.exact.METHODS`); else one line."""
    from sim.exact import METHODS

    if not isinstance(method, str) or method not in METHODS:
        raise InputError(f"method: got {method!r:.40}, expected one of {', '.join(METHODS)}")
    return method


@dataclass(frozen=True)
class RunSettings:
    """What a run fights under, and why (one sentence per choice the ruleset made, none when the caller chose)."""

    rounds: Rounds
    max_rounds: int
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    why: tuple[str, ...] = ()
    balance: bool = True

    def describe(self) -> dict[str, Any]:
        """A JSON-able record for metadata."""
        return {"rounds": self.rounds, "max_rounds": self.max_rounds, "states": self.states,
                "source": "balance settings" if self.balance else "the rules' own defaults", "why": list(self.why)}


def run_settings(rs: Ruleset, rounds: Rounds | str | None = None, max_rounds: int | None = None,
                 states: Mapping[str, Mapping[str, Any]] | None = None, *,
                 rules_defaults: bool = False) -> RunSettings:
    """The settings of a balance run: the ones given, else the ruleset's balance settings (or the rules' defaults).

    Parameters
    ----------
    rs : Ruleset
    rounds : int, "end" or None
        None: the balance settings' rounds (the rules' ``default_rounds`` with ``rules_defaults``).
    max_rounds : int or None
        None: the balance settings' cap (50 with ``rules_defaults``).
    states : mapping, optional
        ``{"attacker": {...}, "defender": {...}}``; each state given replaces the balance
        settings' value of that state on that side (values may be text from ``--set``).
    rules_defaults : bool
        Fight under the rules' own defaults instead of the balance settings.

    Returns
    -------
    RunSettings
    """
    if not isinstance(rules_defaults, bool):
        raise InputError(f"rules_defaults: got {rules_defaults!r}, expected True or False")
    if rules_defaults:
        base_rounds, base_cap, base_states, why = rs.default_rounds, 50, {}, ()
    else:
        b = rs.balance_defaults()
        base_rounds, base_cap, base_states, why = b.rounds, b.max_rounds, b.states, tuple(b.why)
    given = states or {}
    if not isinstance(given, Mapping):
        raise InputError(f"states: got {given!r:.60}, expected a mapping of side to states")
    merged: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        values = {**dict(base_states.get(side, {})), **dict(given.get(side, {}) or {})}
        if values:
            merged[side] = values
    for side in given:
        if side not in SIDES:
            raise InputError(f"states: side must be attacker or defender, got {side!r}")
    cap = base_cap if max_rounds is None else check_max_rounds(max_rounds)
    chosen = base_rounds if rounds is None else parse_rounds(rounds, Where())
    return RunSettings(chosen, int(cap), merged, why, not rules_defaults)
