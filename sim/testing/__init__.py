"""The conformance kit: one call proves a ruleset keeps the protocol's promises.

A ruleset's own pytest calls::

    from sim.testing import check_ruleset
    from mygame.rules import RULESET

    def test_conformance():
        check_ruleset(RULESET)            # or check_ruleset(RULESET, "my_roster.toml")

and gets the checks our own rulesets pass: the kernel against the scalar
reference in distribution on every pair of the roster (chi-square on the
winner, outcome categories, damage, rounds and extras; tolerance from the
sample sizes), the kernel against the ruleset's exact answers where it has
them, identical results for any worker count, block order and blocks per
task, a reference that reads dice only through ``dice.d6()`` /
``dice.d(sides)``, every declared state and option accepted and round-tripped
through ``--set`` text, and bad values refused with one line. See
:func:`check_ruleset` for the details and ``docs/extending.md`` for a walk-through.

The kit depends on NumPy and SciPy only (never pandas, matplotlib or ``analysis``).

Public names
------------
check_ruleset      run the kit; raise ConformanceError listing every failure
ConformanceReport  every check with its evidence, the pairs, the dice used
ConformanceError   an AssertionError whose message is the report's summary
Check              one check: name, subject, passed, detail
choose_pairs       the pairs the kit would check for a roster
GuardedDice        random dice that refuse anything but d6()/d(sides), optionally recorded
ReplayDice         the recorded dice of one fight, replayed in order
DiceAccessError    a reference touched the dice other than through d6()/d(sides)
ScriptedDice       dice read from a list, for worked examples (``ScriptedDice([6, 2]).d6() == 6``)
RandomDice         dice from a numpy Generator (to run the reference by hand)
"""

from __future__ import annotations

from ..dice import RandomDice, ScriptedDice
from ._dice import DiceAccessError, GuardedDice, ReplayDice
from ._kit import check_ruleset, choose_pairs
from ._report import Check, ConformanceError, ConformanceReport

__all__ = [
    "check_ruleset",
    "ConformanceReport",
    "ConformanceError",
    "Check",
    "choose_pairs",
    "GuardedDice",
    "ReplayDice",
    "DiceAccessError",
    "ScriptedDice",
    "RandomDice",
]
