"""``grimdark``: squad close combat with initiative steps (1998 science-fantasy wargame, 3rd edition).

Rules: ``docs/rules/grimdark.md``; written from the original text ``001_ae2f5c5f2d6c01fb.txt``
(Russian; not distributed).

A unit is a squad of model groups (see :mod:`.units`). Each round the
models in base contact make A (+1 two weapons, +1 charging in round 1) attacks,
the others exactly one plain attack; strikes go in steps (cover step in round 1
with frag grenades, Initiative 10..1 with equal Initiative simultaneous, power
fists last), casualties after each step. No morale rules (the text has none).

Kernel: a side's state is its wounds lost ``L`` per trial (see
:mod:`.plan`). Within a step, the attacks of one pool are identical
and rolled against one target profile, so the unsaved wounds are
``Binomial(attacks, p_hit * p_wound * p_fail_save)`` (three binomial thinnings
compose into one), drawn with one uniform through alias tables of that binomial
per (attacks, target profile), capped at the enemy's wounds; applying them is
``min(L + u, W)``, or two look-ups when instant death can skip the rest of a
model's wounds. Groups of one profile strike as one pool (a big equal-points
squad costs what its profiles cost, not its groups), and fights that are over
leave the working set (:mod:`.kernel`). When every model is engaged
(the default) and the state space is small, a whole round is one draw from its
exact transition distribution instead (:mod:`.chain`).

Limits: at most 500 models and 50 groups a side (a 2,000-point budget of any
shipped squad fits). Memory per 65,536-trial block stays under ~150 MB at those
sizes (a few arrays of the block's length; lookup tables O(wounds), count tables
at most ``MAX_COUNT_ENTRIES`` slots per pool).

Per-fight changes (``--set``): ``attacker.ws=5`` changes that field in every
group of the squad, ``attacker.2.ws=5`` in group 2 only (groups numbered from 1
in listed order), ``attacker.models=6`` the size of a homogeneous squad
(``attacker.2.count=2`` for a group). States: ``attacker.charging`` (default
true), ``defender.in_cover`` (default false), ``attacker.engaged`` /
``defender.engaged`` (default -1 = all); option ``instant_death`` (default true).

Interpretations where the spec is silent:

* ``engaged`` (state, per side): models in base contact at the start of each
  round, ``-1`` (default) = all. The engaged ones are the first alive models in
  listed order, so the casualty order "engaged first, then the rest, groups in
  listed order" is the listed order.
* A model that is not engaged makes one plain attack (ordinary weapon, its own
  S, at its Initiative, never in the fist step; a monster's attack still ignores
  armour, being the creature's, not a weapon's). Frag grenades and cover still
  move it to the cover step.
* A power-fist model in contact always uses the fist (the option of attacking
  normally is not modelled).
* Winner after N rounds: more wounds lost by the enemy (the damage unit: a model
  killed outright loses all its remaining wounds).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ...dice import DiceStream
from ...errors import MatchupError, Where
from ...outcomes import Outcomes, TrialOutcome
from ...ruleset import END, BalanceSettings, ExactOutcome, Extra, Matchup, Rounds, Ruleset
from ...schema import Field, StateField
from . import exact as exact_chain
from .chain import ChainTables, chain_tables, sample_rows
from .kernel import outcomes_of, simulate_pools
from .plan import MAX_GROUPS, MAX_MODELS, GrimdarkPlan, build_plan
from .reference import resolve_fight
from .units import (UNIT_FIELDS, Squad, parse_squad, squad_rows, squad_to_dict, squad_with_overrides,
                              squads_from_rows)

__all__ = ["Grimdark", "RULESET"]


#: Per-side limits of an equal-points fight (copies of a squad fielded together): the plan's own limits.
MAX_FIELDED_MODELS = MAX_MODELS
MAX_FIELDED_GROUPS = MAX_GROUPS

class Grimdark(Ruleset):
    """Squad against squad: strike steps by cover, Initiative and power fists; casualties after each step.

    Units are :class:`~sim.rulesets.grimdark.units.Squad` objects; states
    ``charging`` (attacker), ``in_cover`` (defender), ``engaged`` (both, -1 =
    all); option ``instant_death``; extras ``models_lost_attacker`` and
    ``models_lost_defender`` (distributions reported).
    """

    id = "grimdark"
    title = "Squad close combat with initiative steps (1998 science-fantasy wargame, 3rd ed.)"
    source = "001_ae2f5c5f2d6c01fb.txt: close-combat chapter (Russian translation)"
    spec = "docs/rules/grimdark.md"
    damage_unit = "wounds lost"
    default_rounds = 1
    outcome_categories = ("wiped_out", "survived")
    unit_type = Squad
    unit_fields = UNIT_FIELDS
    state_fields = (
        StateField(Field("charging", "bool", "charged this turn: +1 A in base contact in round 1", default=True),
                   sides=("attacker",)),
        StateField(Field("in_cover", "bool", "defending in cover: strikes first in round 1", default=False),
                   sides=("defender",)),
        StateField(Field("engaged", "int", "models in base contact at the start of each round (-1 = all); "
                                           "the rest make 1 plain attack", lo=-1, hi=500, default=-1)),
        StateField(Field("supporting", "int", "models within 2\" of an enemy, after those in base contact, each "
                                              "round (-1 = all the rest); they make 1 plain attack, the others none",
                         lo=-1, hi=500, default=-1)),
    )
    #: Balance fights go to a decision on a frontage: one round at 2,000 points is decided by the charge
    #: (+1 A for hundreds of models at once), and with every model in base contact the first strike snowballs.
    balance_settings = BalanceSettings(
        rounds=END, max_rounds=500,
        states={"attacker": {"engaged": 10, "supporting": 10}, "defender": {"engaged": 10, "supporting": 10}},
        why=("Fights go to the end (a cap of 500 rounds): one round is decided by who charges, since the charge "
             "gives every model in base contact +1 attack.",
             "A frontage of 10 models a side in base contact, the next 10 within 2\" making one plain attack "
             "(a second rank's supporting attacks, as in the Warhammer Fantasy rules, "
             "https://www.w9e.app/close-combat/supporting-attacks), the rest out of combat: without it a side of "
             "hundreds of models all strikes in the first step and whoever strikes first wins."),
    )
    option_fields = (
        Field("instant_death", "bool", "a wound with S >= 2T kills a multi-wound model outright", default=True),
    )
    extras = (
        Extra("models_lost_attacker", "mean", "models of the attacking squad removed"),
        Extra("models_lost_defender", "mean", "models of the defending squad removed"),
    )

    # ------------------------------------------------------------ units
    def parse_unit(self, mapping: Mapping[str, Any], where: Where, *, from_text: bool = False) -> Squad:
        return _check_size(parse_squad(mapping, where, from_text=from_text), where)

    def units_from_rows(self, rows: list[Mapping[str, str]], where: Where) -> list[Squad]:
        return [_check_size(s, where.at(s.name)) for s in squads_from_rows(rows, where)]

    def unit_to_dict(self, unit: Squad) -> dict[str, Any]:
        return squad_to_dict(unit)

    def unit_rows(self, unit: Squad) -> list[dict[str, Any]]:
        return squad_rows(unit)

    # ------------------------------------------------------------ copies
    fields_copies = True

    def copies(self, unit: Squad, k: int) -> Squad:
        """``k`` copies fight as one squad: the model groups repeated in listed order (casualty order
        g1, g2, ..., g1, g2, ...), ``points`` multiplied."""
        if k == 1:
            return unit
        models, groups = unit.models * k, len(unit.groups) * k
        if models > MAX_FIELDED_MODELS or groups > MAX_FIELDED_GROUPS:
            raise MatchupError(f"grimdark: {k} copies of {unit.name!r} make {models} models in {groups} groups, "
                               f"more than a side can field ({MAX_FIELDED_MODELS} models, {MAX_FIELDED_GROUPS} "
                               "groups); lower the budget")
        return replace(unit, groups=unit.groups * k, points=None if unit.points is None else unit.points * k)

    def with_overrides(self, unit: Squad, overrides: Mapping[str, Any], where: Where, *,
                       from_text: bool = False) -> Squad:
        """``ws=5`` changes every group; ``2.ws=5`` group 2 only; ``models=N`` a homogeneous squad's size."""
        if not overrides:  # a fielded squad (copies at a budget) may exceed a roster squad's limits
            return unit
        return _check_size(squad_with_overrides(unit, overrides, where, from_text=from_text), where)

    def working_set(self, plan: GrimdarkPlan, n: int) -> int:
        """Plan tables, the chain's tables when it applies (<= MAX_STATES^2), and per fight a few
        int64 arrays per strike pool."""
        from ...limits import table_bytes
        from .chain import MAX_STATES

        groups = sum(len(s.groups) for s in (plan.matchup.attacker, plan.matchup.defender))
        return table_bytes(plan) + 16 * MAX_STATES**2 * 2 + int(n) * 8 * (40 + 4 * groups)

    # ------------------------------------------------------------ behaviour
    def prepare(self, matchup: Matchup) -> GrimdarkPlan:
        for side in ("attacker", "defender"):
            if not isinstance(matchup.unit(side), Squad) or not matchup.unit(side).groups:
                raise MatchupError(f"grimdark: the {side} is not a squad with at least one model group")
        return build_plan(matchup)

    def simulate(self, plan: GrimdarkPlan, n: int, rng: np.random.Generator, rounds: Rounds,
                 max_rounds: int) -> Outcomes:
        limit = max_rounds if rounds == END else int(rounds)
        tables = _chain(plan) if plan.fast else None
        if tables is not None:
            return self._simulate_chain(plan, tables, n, rng, rounds, limit)
        La, Ld, n_rounds = simulate_pools(plan, n, rng, limit)
        return self._outcomes(plan, La, Ld, n_rounds, rounds)

    def _simulate_chain(self, plan: GrimdarkPlan, tables: ChainTables, n: int, rng: np.random.Generator,
                        rounds: Rounds, limit: int) -> Outcomes:
        """The fast path: each round one draw per trial from the round's exact transition row."""
        nd = tables.nd
        Wa, Wd = plan.sides[0].wounds, plan.sides[1].wounds
        states = np.arange(tables.n_states)
        going_at = (states // nd < Wa) & (states % nd < Wd)
        final = np.zeros(n, np.int64)
        n_rounds = np.zeros(n, np.int64)
        idx = np.arange(n)
        s = np.zeros(n, np.int64)
        # Rows of finished fights are self-loops, so finished trials may stay in the
        # working set for a while: it is compacted only when a quarter of it is over.
        # cnt counts the rounds each trial ended still going: it fought cnt + 1 rounds.
        cnt = np.zeros(n, np.int64)
        for r in range(1, limit + 1):
            s = sample_rows(tables, r == 1, s, rng)
            if r == limit:
                break
            going = going_at[s]
            n_going = int(np.count_nonzero(going))
            if n_going == 0:
                break
            cnt += going
            if 4 * (len(s) - n_going) > len(s):
                over = ~going
                ended = idx[over]
                final[ended], n_rounds[ended] = s[over], cnt[over]
                idx, s, cnt = idx[going], s[going], cnt[going]
        final[idx], n_rounds[idx] = s, cnt
        return self._outcomes(plan, final // nd, final % nd, n_rounds + 1, rounds)

    @staticmethod
    def _outcomes(plan: GrimdarkPlan, La: np.ndarray, Ld: np.ndarray, n_rounds: np.ndarray,
                  rounds: Rounds) -> Outcomes:
        return outcomes_of(plan, La, Ld, n_rounds, rounds)

    # ----------------------------------------------------------------- exact
    def exact_work(self, plan: GrimdarkPlan, rounds: Rounds, max_rounds: int) -> int | None:
        """Every model engaged: a chain over (wounds lost attacker, wounds lost defender) (:mod:`.exact`)."""
        return exact_chain.exact_work(plan, rounds, max_rounds)

    def exact(self, plan: GrimdarkPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
        return exact_chain.exact(plan, rounds, max_rounds)

    def resolve_one(self, plan: GrimdarkPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        return resolve_fight(plan.matchup, dice, rounds, max_rounds)

    def bench_matchup(self) -> tuple[str, str, dict[str, dict[str, Any]], Rounds]:
        return "Troopers", "Troopers", {}, END

    def bench_extra_matchups(self):
        """Issue 3's mixed squad against ten models; issue 14's equal-points fight at a 2,000-point budget."""
        return (("Assault squad", "Troopers", {}, END), budget_matchup(2000))


def budget_matchup(budget: int) -> tuple:
    """The shipped roster's cheapest squad against its dearest, each fielded ``budget // points`` times.

    A squad's k copies are its model groups repeated k times in listed order (the
    equal-points rule), built here for the benchmark.
    """
    from ...roster import default_roster  # the roster module imports the registry, which imports this one

    squads = [u for u in default_roster("grimdark").units.values() if u.points]
    cheap = min(squads, key=lambda u: (u.points, u.name))
    dear = max(squads, key=lambda u: (u.points, u.name))
    sides = []
    for u in (cheap, dear):
        k = max(1, int(budget // u.points))
        sides.append(dataclasses.replace(u, name=f"{u.name} x{k}", groups=u.groups * k, points=u.points * k))
    label = (f"budget {budget}: {sides[0].name} ({sides[0].models} models) vs {sides[1].name} "
             f"({sides[1].models} models), rounds=end")
    return sides[0], sides[1], {}, END, label


#: Chain tables by matchup content, so that the plan copies a worker unpickles for
#: each task of one matchup build them once per process (bounded, oldest dropped).
_CHAIN_CACHE: OrderedDict[tuple, ChainTables | None] = OrderedDict()
_CHAIN_CACHE_SIZE = 64


def _chain(plan: GrimdarkPlan) -> ChainTables | None:
    """The plan's chain tables, built once per process (None when the chain does not apply)."""
    if "chain" not in plan.cache:
        m = plan.matchup
        key = (m.attacker, m.defender,
               tuple(sorted((side, tuple(sorted(v.items()))) for side, v in m.states.items())),
               tuple(sorted(m.options.items())))
        if key in _CHAIN_CACHE:
            _CHAIN_CACHE.move_to_end(key)
        else:
            _CHAIN_CACHE[key] = chain_tables(plan)
            if len(_CHAIN_CACHE) > _CHAIN_CACHE_SIZE:
                _CHAIN_CACHE.popitem(last=False)
        plan.cache["chain"] = _CHAIN_CACHE[key]
    return plan.cache["chain"]


def _check_size(squad: Squad, where: Where) -> Squad:
    """Documented limits of a roster's squad (:mod:`sim.limits`); copies fielded at a budget have their own."""
    from ...limits import GRIMDARK_MAX_GROUPS, GRIMDARK_MAX_MODELS

    if len(squad.groups) > GRIMDARK_MAX_GROUPS:
        raise where.error("models", f"{len(squad.groups)} groups",
                          f"at most {GRIMDARK_MAX_GROUPS} model groups in a squad")
    if squad.models > GRIMDARK_MAX_MODELS:
        raise where.error("models", f"{squad.models} models", f"at most {GRIMDARK_MAX_MODELS} models in a squad")
    return squad
RULESET = Grimdark()
