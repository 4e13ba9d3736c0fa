"""``pools``: simultaneous attack-pool unit combat (Bases, Courage, Shaken, Dash).

Rules: ``docs/rules/pools.md``; written from the original text ``003_7aff26f11569f388.txt`` (not distributed).

A unit is a block of bases. In one engagement both sides roll an attack pool
(``attack`` dice per base, +1 per base for a charging attacker, -1 per base when
Shaken, Flanked or a defending vehicle; reductions never take it below one die
per base) against a 4+ hit threshold moved by Dash, Cover and Flanking (clamped
to 2+..6+). Hits received (before saves) of at least ``courage`` make a unit
Shaken; saves cancel hits; fewer unsaved hits wins. Wounds fill one base at a
time; the loser retreats half its move (a stationary loser is destroyed); on a
tie the attacker is pushed back 1".

Interpretations where the spec is silent:

* ``rounds = N`` and ``"end"`` repeat engagements with the sides alternating as
  attacker (the original attacker in odd rounds), stopping early when a unit is
  destroyed. The states ``charge``, ``dash``, ``cover`` and ``flanked`` describe
  the **first** engagement only: later attackers charge (so hold no Dash token),
  every unit has moved by then (charged, retreated or been pushed back), so
  nobody is in cover, and flanking comes only from a retreat in the previous
  engagement. ``shaken`` is the units' status at the start and carries over.
* An attacker with both ``charge`` and ``dash`` is rejected (a Dash contact is
  never a Charge). The threshold shifts are options: ``dash_shift`` (+1),
  ``cover_shift`` (+1), ``flank_shift`` (-1) and ``target_dash_shift`` (0; the
  spec's optional -1 for hitting a side that holds a Dash token).
* ``rally`` clears Shaken at the start of the unit's own turn as attacker from
  round 2 on (the round-1 states are taken as already after any rally).
* The extras ``shaken_attacker`` / ``shaken_defender`` are the Shaken status
  **at the end of the fight** (whatever its cause, the starting state
  included; a destroyed unit counts with the status it had when removed).
  ``bases_lost_*`` counts bases removed, all of them for a destroyed unit.
* Damage is wounds received (unsaved hits capped at the wounds left); a
  stationary loser destroyed by the retreat rule takes no extra damage, its
  category says ``destroyed``.
* Dice order in :meth:`Pools.resolve_one`, per engagement: the round's
  attacker's attack pool, the round's defender's attack pool, then the round's
  attacker's saves (one die per hit it received), then the defender's saves.

The kernel (``kernel``) samples counts, never single dice: one
multinomial draw over the exact outcome table of an engagement for the
default single round, inverse-CDF tables of (Shaken, unsaved hits) per side
and round for longer fights.

Modules: ``units`` (the unit), ``plan`` (the plan and its building),
``kernel`` (the vectorised kernel and its tables) and ``reference`` (the scalar
reference the kernel is tested against).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ...dice import DiceStream
from ...errors import MatchupError
from ...outcomes import Outcomes, TrialOutcome
from ...ruleset import END, BalanceSettings, ExactOutcome, Extra, Matchup, Rounds, Ruleset
from ...schema import Field, StateField, points_field
from . import exact as exact_chain
from .kernel import run_multinomial, run_rounds
from .plan import PoolsPlan, build_plan
from .reference import resolve_fight
from .units import MAX_FIELDED_BASES, PoolsUnit

__all__ = ["PoolsUnit", "PoolsPlan", "Pools", "RULESET"]


class Pools(Ruleset):
    """The ``pools`` ruleset (see the module docstring)."""

    id = "pools"
    title = "Simultaneous attack-pool unit combat (Bases, Courage, Shaken, Dash)"
    source = "003_7aff26f11569f388.txt: a unit-based game's close-combat procedure"
    spec = "docs/rules/pools.md"
    damage_unit = "wounds (unsaved hits, capped at the wounds the unit had left)"
    default_rounds = 1
    outcome_categories = ("destroyed", "retreated", "held")
    unit_type = PoolsUnit
    unit_fields = (
        Field("name", "str", "unit name"),
        Field("bases", "int", "bases in the unit", lo=1, hi=50),
        Field("attack", "int", "Melee Attack stat: dice per base", lo=0, hi=10),
        Field("save", "int", "save X+: each die >= save cancels one hit (none = no save)", lo=2, hi=6,
              default=None, optional=True),
        Field("courage", "int", "hits received (before saves) >= courage makes the unit Shaken", lo=1, hi=100),
        Field("move", "number", "move in inches; 0 = stationary (destroyed if it loses)", lo=0, hi=24),
        Field("wounds", "int", "wounds per base", lo=1, hi=10, default=1),
        Field("vehicle", "bool", "a vehicle: loses one die per base as the defender", default=False),
        points_field("points cost"),
    )
    state_fields = (
        StateField(Field("charge", "bool", "contact by a Charge action: +1 die per base (first engagement)",
                         default=True), sides=("attacker",)),
        StateField(Field("dash", "bool", "holds a Dash token: its hits need +1 (first engagement)", default=False)),
        StateField(Field("cover", "bool", "in cover: hits against it need +1 (first engagement)", default=False)),
        StateField(Field("shaken", "bool", "Shaken at the start: -1 die per base (carries over)", default=False)),
        StateField(Field("flanked", "bool", "flanked: -1 die per base, hits against it need -1 (first engagement)",
                         default=False)),
    )
    #: The charge's +1 die per base decides an engagement whoever fights it, and in a fight to the end the first
    #: charge snowballs (the loser retreats, Shaken, and is flanked when charged), so balance cells are one
    #: engagement in the open where contact came from a Move action (the text's other way into contact).
    balance_settings = BalanceSettings(
        rounds=1, max_rounds=50, states={"attacker": {"charge": False}},
        why=("One engagement, contact made by a Move action (no charge): with the charge's +1 die per base the "
             "charging side wins most engagements whoever the units are, in one round and, through retreats, "
             "Shaken and flanking, in a fight to the end too.",))
    option_fields = (
        Field("rally", "bool", "a Shaken unit recovers at the start of its own turn as attacker", default=False),
        Field("dash_shift", "int", "hit threshold change for a side holding a Dash token", lo=-3, hi=3, default=1),
        Field("cover_shift", "int", "hit threshold change against a side in cover", lo=-3, hi=3, default=1),
        Field("flank_shift", "int", "hit threshold change against a flanked side", lo=-3, hi=3, default=-1),
        Field("target_dash_shift", "int", "hit threshold change against a side holding a Dash token",
              lo=-3, hi=3, default=0),
    )
    extras = (
        Extra("shaken_attacker", "proportion", "attacker Shaken at the end of the fight"),
        Extra("shaken_defender", "proportion", "defender Shaken at the end of the fight"),
        Extra("bases_lost_attacker", "mean", "attacker bases removed (all of them if destroyed)"),
        Extra("bases_lost_defender", "mean", "defender bases removed (all of them if destroyed)"),
    )

    # ------------------------------------------------------------ validation
    def unit_rows(self, unit: PoolsUnit) -> list[dict[str, Any]]:
        """One display row; the save shown as a designer writes it (``5+``; none: blank)."""
        row = self.unit_to_dict(unit)
        row["save"] = None if unit.save is None else f"{unit.save}+"
        return [row]

    # ------------------------------------------------------------ copies
    fields_copies = True

    def copies(self, unit: PoolsUnit, k: int) -> PoolsUnit:
        """``k`` copies form one block of ``k * bases`` bases with ``k * courage``.

        The rules fight one unit against one unit, so copies merge into a larger
        block: k times the dice and the bases to lose, and k times the hits it
        takes to shake the block, so each original unit keeps its own nerve
        (hits spread over k units shake none of them until each took ``courage``).
        """
        if k == 1:
            return unit
        if unit.bases * k > MAX_FIELDED_BASES:
            raise MatchupError(f"pools: {k} copies of {unit.name!r} ({unit.bases} bases each) make "
                               f"{unit.bases * k} bases, more than the {MAX_FIELDED_BASES} a side can field; "
                               "lower the budget")
        return replace(unit, bases=unit.bases * k, courage=unit.courage * k,
                       points=None if unit.points is None else unit.points * k)

    def prepare(self, matchup: Matchup) -> PoolsPlan:
        if matchup.state("attacker", "charge") and matchup.state("attacker", "dash"):
            raise MatchupError(
                f"pools: attacker {matchup.attacker.name!r} cannot both charge and hold a Dash token "
                "(a Dash contact is never a Charge): set attacker.charge=false"
            )
        return build_plan(matchup)

    # ---------------------------------------------------------------- kernel
    def simulate(self, plan: PoolsPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int,
                 method: str = "auto") -> Outcomes:
        """``n`` fights.

        ``method`` (for tests and measurements; all are exact in distribution):
        ``"multinomial"`` (one multinomial draw over the exact joint table of a
        single engagement), ``"table"`` (round 1 by that multinomial draw, then
        per round and side one uniform through an inverse-CDF table of (Shaken,
        unsaved hits)), ``"binomial"`` (per round and side, hits and unsaved hits
        as two binomial counts). ``"auto"`` picks the first that applies (the
        tables exist unless the pools are huge).
        """
        limit = max_rounds if rounds == END else int(rounds)
        fixed = rounds != END
        if method not in ("auto", "multinomial", "table", "binomial"):
            raise ValueError(f"unknown method {method!r}")
        if method in ("auto", "multinomial") and limit == 1 and plan.single is not None:
            return run_multinomial(plan.sides, plan.setup, plan.single, n, rng, fixed, limit)
        if method == "multinomial":
            raise ValueError("the multinomial method needs a single engagement with a small table")
        if method == "binomial":
            return run_rounds(plan.sides, plan.setup, n, rng, fixed, limit)
        return run_rounds(plan.sides, plan.setup, n, rng, fixed, limit, plan.tables, plan.single)

    # ----------------------------------------------------------------- exact
    def exact_work(self, plan: PoolsPlan, rounds: Rounds, max_rounds: int) -> int | None:
        """One engagement is always exact; longer fights while their states stay few (:mod:`.exact`)."""
        return exact_chain.exact_work(plan, rounds, max_rounds)

    def exact(self, plan: PoolsPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
        return exact_chain.exact(plan, rounds, max_rounds)

    # ------------------------------------------------------------- reference
    def working_set(self, plan: PoolsPlan, n: int) -> int:
        """Memory guard estimate: the engagement tables and under 250 bytes per fight (measured at 50 bases)."""
        from ...limits import table_bytes

        return table_bytes(plan) + (32 << 20) + 1024 * int(n)

    def resolve_one(self, plan: PoolsPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        return resolve_fight(plan, dice, rounds, max_rounds)

    def bench_matchup(self) -> tuple[str, str, dict[str, dict[str, Any]], Rounds]:
        """One engagement between two 10-base units of the default roster."""
        return "Line Infantry", "Spear Wall", {}, 1


RULESET = Pools()
