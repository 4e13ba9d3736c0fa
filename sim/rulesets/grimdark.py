"""``grimdark``: squad close combat with initiative steps (1998 science-fantasy wargame, 3rd edition).

Spec: ``shared/rules/grimdark.md``; original text ``source/001_ae2f5c5f2d6c01fb.txt`` (Russian).

A unit is a squad of model groups (see :mod:`._grimdark_units`). Each round the
models in base contact make A (+1 two weapons, +1 charging in round 1) attacks,
the others exactly one plain attack; strikes go in steps (cover step in round 1
with frag grenades, Initiative 10..1 with equal Initiative simultaneous, power
fists last), casualties after each step. No morale rules (the text has none).

Kernel: a side's state is its wounds lost ``L`` per trial (see
:mod:`._grimdark_plan`). Within a step, the attacks of one pool are identical
and rolled against one target profile, so the unsaved wounds are
``Binomial(attacks, p_hit * p_wound * p_fail_save)`` (three binomial thinnings
compose into one), drawn with one uniform through alias tables of that binomial
per (striking models, target group), capped at the enemy's wounds; applying
them is ``min(L + u, W)``, or a table lookup when instant death can skip the
rest of a model's wounds. When every model is engaged (the default) and the
state space is small, a whole round is one draw from its exact transition
distribution instead (:mod:`._grimdark_chain`).

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

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..dice import DiceStream
from ..errors import MatchupError, Where
from ..outcomes import ATTACKER, DEFENDER, DRAW, Outcomes, TrialOutcome
from ..ruleset import END, Extra, Matchup, Rounds, Ruleset
from ..schema import Field, StateField
from ._grimdark_chain import ChainTables, alias_sample, chain_tables, sample_rows
from ._grimdark_plan import GrimdarkPlan, build_plan
from ._grimdark_reference import SURVIVED, WIPED_OUT, resolve_fight
from ._grimdark_units import (UNIT_FIELDS, Squad, parse_squad, squad_rows, squad_to_dict, squad_with_overrides,
                              squads_from_rows)

__all__ = ["Grimdark", "RULESET"]


class Grimdark(Ruleset):
    """Squad against squad: strike steps by cover, Initiative and power fists; casualties after each step.

    Units are :class:`~sim.rulesets._grimdark_units.Squad` objects; states
    ``charging`` (attacker), ``in_cover`` (defender), ``engaged`` (both, -1 =
    all); option ``instant_death``; extras ``models_lost_attacker`` and
    ``models_lost_defender`` (distributions reported).
    """

    id = "grimdark"
    title = "Squad close combat with initiative steps (1998 science-fantasy wargame, 3rd ed.)"
    source = "001_ae2f5c5f2d6c01fb.txt: close-combat chapter (Russian translation)"
    spec = "grimdark.md"
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
                                           "the rest make 1 plain attack", lo=-1, hi=100, default=-1)),
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

    def with_overrides(self, unit: Squad, overrides: Mapping[str, Any], where: Where, *,
                       from_text: bool = False) -> Squad:
        """``ws=5`` changes every group; ``2.ws=5`` group 2 only; ``models=N`` a homogeneous squad's size."""
        return _check_size(squad_with_overrides(unit, overrides, where, from_text=from_text), where)

    def working_set(self, plan: GrimdarkPlan, n: int) -> int:
        """Plan tables, the chain's tables when it applies (<= MAX_STATES^2), and per fight a few
        int64 arrays per strike pool."""
        from ..limits import table_bytes
        from ._grimdark_chain import MAX_STATES

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
        return self._simulate_pools(plan, n, rng, rounds, limit)

    def _simulate_pools(self, plan: GrimdarkPlan, n: int, rng: np.random.Generator, rounds: Rounds,
                        limit: int) -> Outcomes:
        """The general path: strike step by strike step, one count per pool and trial."""
        sa, sd = plan.sides
        Wa, Wd = sa.wounds, sd.wounds
        La = np.zeros(n, np.int64)
        Ld = np.zeros(n, np.int64)
        n_rounds = np.full(n, limit, np.int64)
        idx = np.arange(n)
        la, ld = La.copy(), Ld.copy()
        W = (Wa, Wd)
        for r in range(1, limit + 1):
            steps = plan.steps_first if r == 1 else plan.steps_later
            start = (la, ld)
            state = [la, ld]
            for step in steps:
                now = (state[0], state[1])
                received: list[list[tuple[np.ndarray, Any]]] = [[], []]
                for pool in step:
                    k = pool.side
                    side = plan.sides[k]
                    # unsaved wounds ~ Binomial(models x attacks, p[target group]), capped at
                    # the enemy's wounds, drawn through the pool's alias tables
                    row = _strikers(side, pool, now[k], start[k])
                    if len(pool.p) > 1:
                        row = row * len(pool.p) + plan.sides[1 - k].front[now[1 - k]]
                    u = alias_sample(pool.count_prob, pool.count_alias, W[1 - k] + 1, row, rng)
                    received[1 - k].append((u, pool.apply))
                for k in (0, 1):
                    if not received[k]:
                        continue
                    L = state[k]
                    if all(t is None for _, t in received[k]):
                        total = received[k][0][0]
                        for u, _ in received[k][1:]:
                            total = total + u
                        L = np.minimum(L + total, W[k])
                    else:
                        for u, table in received[k]:
                            L = np.minimum(L + u, W[k]) if table is None else table[L, u]
                    state[k] = L
            la, ld = state
            going = (la < Wa) & (ld < Wd)
            if going.all():
                continue
            over = ~going
            ended = idx[over]
            La[ended], Ld[ended], n_rounds[ended] = la[over], ld[over], r
            idx, la, ld = idx[going], la[going], ld[going]
            if not idx.size:
                break
        La[idx], Ld[idx] = la, ld
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
        sa, sd = plan.sides
        a_alive, d_alive = La < sa.wounds, Ld < sd.wounds
        both = a_alive & d_alive
        capped = both if rounds == END else np.zeros(len(La), bool)
        by_wounds = np.where(Ld > La, ATTACKER, np.where(La > Ld, DEFENDER, DRAW))
        winner = np.where(a_alive & ~d_alive, ATTACKER, np.where(d_alive & ~a_alive, DEFENDER, DRAW))
        winner = np.where(both & ~capped, by_wounds, winner).astype(np.int8)
        cat_a = np.where(a_alive, SURVIVED, WIPED_OUT).astype(np.int8)
        cat_d = np.where(d_alive, SURVIVED, WIPED_OUT).astype(np.int8)
        extras = {"models_lost_attacker": sa.dead[La], "models_lost_defender": sd.dead[Ld]}
        return Outcomes(winner, La, Ld, cat_a, cat_d, n_rounds, capped, extras)

    def resolve_one(self, plan: GrimdarkPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        return resolve_fight(plan.matchup, dice, rounds, max_rounds)

    def bench_matchup(self) -> tuple[str, str, dict[str, dict[str, Any]], Rounds]:
        return "Troopers", "Troopers", {}, END

    def bench_extra_matchups(self):
        # issue 3's second goal: a mixed 5-model squad with a power-fist sergeant against 10 models
        return (("Assault squad", "Troopers", {}, END),)


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
    """Documented limits (:mod:`sim.limits`): they bound the kernel's tables to about 200 MB."""
    from ..limits import GRIMDARK_MAX_GROUPS, GRIMDARK_MAX_MODELS

    if len(squad.groups) > GRIMDARK_MAX_GROUPS:
        raise where.error("models", f"{len(squad.groups)} groups",
                          f"at most {GRIMDARK_MAX_GROUPS} model groups in a squad")
    if squad.models > GRIMDARK_MAX_MODELS:
        raise where.error("models", f"{squad.models} models", f"at most {GRIMDARK_MAX_MODELS} models in a squad")
    return squad


def _strikers(side, pool, L: np.ndarray, L0: np.ndarray) -> np.ndarray:
    """Models of ``pool`` alive at ``L`` (wounds lost now), given the engagement fixed at ``L0`` (round start)."""
    g = pool.group
    if side.all_engaged:
        return side.alive[g][L]
    b0, b1 = int(side.bounds[g]), int(side.bounds[g + 1])
    d = side.dead[L]
    cut = side.dead[L0] + side.engaged
    if pool.engaged:
        return np.maximum(np.minimum(cut, b1) - np.maximum(d, b0), 0)
    return np.maximum(b1 - np.maximum(np.maximum(d, b0), cut), 0)


RULESET = Grimdark()
