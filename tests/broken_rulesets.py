"""Deliberately broken rulesets: each breaks one promise the conformance kit must catch.

They are ``mecha`` with one defect each, under ids of their own, at module level
so the kit's worker processes can unpickle them. :func:`roster` gives mecha's
shipped roster relabelled for one of them.
"""

from __future__ import annotations

import dataclasses
import random
import tomllib
from importlib import resources
from typing import Any

import numpy as np

from sim.errors import InputError
from sim.ruleset import Ruleset
from sim.rulesets.mecha import Mecha
from sim.rulesets.mecha.plan import _transition_table


def roster(rs: Ruleset) -> dict[str, Any]:
    """mecha's shipped roster, as the mapping a TOML file parses to, for ``rs``."""
    data = tomllib.loads((resources.files("sim") / "rosters" / "mecha.toml").read_text(encoding="utf-8"))
    return data | {"ruleset": rs.id}


class OffByOnePip(Mecha):
    """The kernel adds one pip to the attacker's roll; the reference does not."""

    id = "mecha-off-by-one"

    def simulate(self, plan, n, rng, rounds, max_rounds):
        m = plan.matchup
        bumped = dataclasses.replace(m, attacker=dataclasses.replace(m.attacker, defence=m.attacker.defence + 1))
        plan = dataclasses.replace(plan, transition=_transition_table(bumped, plan.chart, plan.second_m_destroys))
        return super().simulate(plan, n, rng, rounds, max_rounds)


class PeekingReference(Mecha):
    """The reference reaches for the generator behind the dice stream."""

    id = "mecha-peeks"

    def resolve_one(self, plan, dice, rounds, max_rounds):
        dice._rng.random()
        return super().resolve_one(plan, dice, rounds, max_rounds)


class _CoinDice:
    """Turns each die over (7 - x) on a coin flip: same distribution, randomness of its own."""

    def __init__(self, dice):
        self.dice = dice

    def d6(self):
        x = self.dice.d6()
        return 7 - x if random.random() < 0.5 else x  # noqa: S311 - the defect under test


class HiddenCoinReference(Mecha):
    """The reference flips a coin of its own (stdlib ``random``): right distribution, not a function of the dice."""

    id = "mecha-coin"

    def resolve_one(self, plan, dice, rounds, max_rounds):
        return super().resolve_one(plan, _CoinDice(dice), rounds, max_rounds)


class FreshEntropyKernel(Mecha):
    """The kernel ignores ``rng`` and draws fresh entropy: right distribution, not reproducible."""

    id = "mecha-fresh-entropy"

    def simulate(self, plan, n, rng, rounds, max_rounds):
        return super().simulate(plan, n, np.random.default_rng(), rounds, max_rounds)


class LostOption(Mecha):
    """Drops the ``second_m_destroys`` option on the floor (always the default)."""

    id = "mecha-lost-option"

    def resolve_options(self, *layers, from_text=False):
        out = super().resolve_options(*layers, from_text=from_text)
        out["second_m_destroys"] = False
        return out


class LenientStates(Mecha):
    """Swallows invalid states and uses the defaults instead of refusing them."""

    id = "mecha-lenient"

    def resolve_states(self, given, *, from_text=False):
        try:
            return super().resolve_states(given, from_text=from_text)
        except InputError:
            return super().resolve_states(None)


class TracebackOverrides(Mecha):
    """Converts unit overrides with ``int()`` itself: a bad value escapes as a ValueError."""

    id = "mecha-traceback"

    def with_overrides(self, unit, overrides, where, *, from_text=False):
        fixed = {k: int(v) if k in ("defence", "physical") else v for k, v in overrides.items()}
        return super().with_overrides(unit, fixed, where, from_text=False)


class BadCodesKernel(Mecha):
    """The kernel writes draws as winner code 3 (the contract says 0)."""

    id = "mecha-bad-codes"

    def simulate(self, plan, n, rng, rounds, max_rounds):
        out = super().simulate(plan, n, rng, rounds, max_rounds)
        out.winner = np.where(out.winner == 0, 3, out.winner).astype(np.int8)
        return out


class WrongExact(Mecha):
    """The exact answer reads the chain with one pip more for the attacker; kernel and reference do not."""

    id = "mecha-wrong-exact"

    def exact(self, plan, rounds, max_rounds):
        m = plan.matchup
        bumped = dataclasses.replace(m, attacker=dataclasses.replace(m.attacker, defence=m.attacker.defence + 1))
        plan = dataclasses.replace(plan, transition=_transition_table(bumped, plan.chart, plan.second_m_destroys))
        return super().exact(plan, rounds, max_rounds)


class LeakyExact(Mecha):
    """The exact answer loses a percent of the probability (it does not sum to 1)."""

    id = "mecha-leaky-exact"

    def exact(self, plan, rounds, max_rounds):
        out = super().exact(plan, rounds, max_rounds)
        return dataclasses.replace(out, win=out.win * 0.99)


class NoReference(Mecha):
    """Forgot the scalar reference."""

    id = "mecha-no-reference"
    resolve_one = Ruleset.resolve_one


OFF_BY_ONE_PIP = OffByOnePip()
PEEKING_REFERENCE = PeekingReference()
HIDDEN_COIN = HiddenCoinReference()
FRESH_ENTROPY = FreshEntropyKernel()
LOST_OPTION = LostOption()
LENIENT_STATES = LenientStates()
TRACEBACK_OVERRIDES = TracebackOverrides()
BAD_CODES = BadCodesKernel()
NO_REFERENCE = NoReference()
WRONG_EXACT = WrongExact()
LEAKY_EXACT = LeakyExact()
