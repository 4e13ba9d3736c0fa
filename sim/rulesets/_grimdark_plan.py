"""``grimdark`` kernel plan: per-side lookup tables and the strike steps as pools of identical attacks.

The kernel's state of a side is one integer per trial, ``L``: wounds lost so
far. Because wounds go onto one model until it dies and models are removed in a
fixed order (engaged first, then the rest, groups in listed order, which is
list order: the engaged models are the first ones alive), everything else is a
function of ``L``: models dead, the group next in casualty order, models alive
per group. A model killed outright by instant death loses all its remaining
wounds, so ``L`` jumps to the end of that model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..ruleset import Matchup
from ._grimdark_chain import count_tables
from ._grimdark_charts import p_success, to_hit, to_wound
from ._grimdark_reference import COVER_STEP, FIST_STEP, step_of
from ._grimdark_units import ModelGroup, Squad

__all__ = ["SidePlan", "Pool", "GrimdarkPlan", "build_plan", "p_unsaved"]


@dataclass(frozen=True)
class SidePlan:
    """Lookup tables of one squad, indexed by wounds lost ``L`` in ``0..wounds``."""

    wounds: int
    models: int
    #: models dead at L
    dead: NDArray[np.int64]
    #: group of the next model in casualty order at L (the last group once all are dead)
    front: NDArray[np.int64]
    #: alive[g, L]: models of group g alive at L
    alive: NDArray[np.int64]
    #: first model index of each group, and the total (length G + 1)
    bounds: NDArray[np.int64]
    #: models in base contact at the start of each round (``models`` when all are)
    engaged: int

    @property
    def all_engaged(self) -> bool:
        return self.engaged >= self.models


@dataclass(frozen=True)
class Pool:
    """The attacks of one group's engaged (or not engaged) models in one strike step."""

    side: int
    group: int
    engaged: bool
    per_model: int
    strength: int
    #: probability that one attack becomes an unsaved wound, per target group
    p: NDArray[np.float64]
    #: ``apply[L, u]``: wounds lost after u more unsaved wounds (instant death), or None (L + u)
    apply: NDArray[np.int64] | None
    #: alias tables of the unsaved wounds (capped at the enemy's wounds), row ``models * len(p) + target``
    count_prob: NDArray[np.float64]
    count_alias: NDArray[np.int64]


@dataclass(frozen=True)
class GrimdarkPlan:
    matchup: Matchup
    sides: tuple[SidePlan, SidePlan]
    #: strike steps of round 1 and of later rounds, each a tuple of pools in application order
    steps_first: tuple[tuple[Pool, ...], ...]
    steps_later: tuple[tuple[Pool, ...], ...]
    #: use the whole-round Markov chain when it applies (tests switch it off to check the binomial path)
    fast: bool = True
    #: per-process lazy tables (the chain's alias tables); dropped when pickled
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["cache"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _side_plan(squad: Squad, engaged: int) -> SidePlan:
    ends = np.cumsum([g.w for g in squad.groups for _ in range(g.count)])  # wounds lost when model k dies
    W = int(ends[-1])
    L = np.arange(W + 1)
    dead = np.searchsorted(ends, L, side="right")
    group_of = np.array([k for k, g in enumerate(squad.groups) for _ in range(g.count)])
    front = group_of[np.minimum(dead, len(group_of) - 1)]
    bounds = np.concatenate([[0], np.cumsum([g.count for g in squad.groups])])
    alive = np.array([bounds[k + 1] - np.clip(dead, bounds[k], bounds[k + 1]) for k in range(len(squad.groups))])
    n = squad.models
    return SidePlan(W, n, dead.astype(np.int64), front.astype(np.int64), alive.astype(np.int64),
                    bounds.astype(np.int64), n if engaged < 0 else min(engaged, n))


def p_unsaved(grp: ModelGroup, weapon: str, target: ModelGroup) -> float:
    """Probability that one attack of ``grp`` with ``weapon`` is an unsaved wound on ``target``."""
    strength = min(2 * grp.s, 10) if weapon == "power_fist" else grp.s
    p = p_success(to_hit(grp.ws, target.ws)) * p_success(to_wound(strength, target.t))
    ignores_armour = weapon in ("power_weapon", "power_fist") or grp.monster
    saves = [x for x in (None if ignores_armour else target.save, target.invuln) if x is not None]
    return p * ((min(saves) - 1) / 6 if saves else 1.0)


def _apply_table(strength: int, enemy: Squad, side: SidePlan) -> NDArray[np.int64] | None:
    """``apply[L, u]`` for wounds of ``strength`` when instant death can happen, else None."""
    groups = enemy.groups
    if not any(g.w > 1 and strength >= 2 * g.t for g in groups):
        return None
    W = side.wounds
    ends = np.cumsum([g.w for g in groups for _ in range(g.count)])
    group_of = [k for k, g in enumerate(groups) for _ in range(g.count)]
    one = np.empty(W + 1, np.int64)  # after one wound
    for L in range(W + 1):
        if L == W:
            one[L] = W
            continue
        k = int(side.dead[L])
        g = groups[group_of[k]]
        one[L] = ends[k] if (g.w > 1 and strength >= 2 * g.t) else L + 1
    tab = np.empty((W + 1, W + 1), np.int64)
    tab[:, 0] = np.arange(W + 1)
    for u in range(W):
        tab[:, u + 1] = one[tab[:, u]]
    return tab


def build_plan(m: Matchup) -> GrimdarkPlan:
    """Tables and strike steps for the kernel."""
    names = ("attacker", "defender")
    squads = (m.attacker, m.defender)
    sides = tuple(_side_plan(squads[k], int(m.state(names[k], "engaged"))) for k in range(2))
    in_cover = bool(m.state("defender", "in_cover"))
    all_inf = all(g.infantry for g in m.defender.groups)
    instant_death = bool(m.options["instant_death"])
    apply_cache: dict[tuple[int, int], NDArray[np.int64] | None] = {}
    count_cache: dict[tuple, tuple[NDArray[np.float64], NDArray[np.int64]]] = {}

    def steps(first: bool) -> tuple[tuple[Pool, ...], ...]:
        by_key: dict[int, list[Pool]] = {}
        for k in range(2):
            enemy = squads[1 - k]
            charge = 1 if (k == 0 and first and m.state("attacker", "charging")) else 0
            for g, grp in enumerate(squads[k].groups):
                portions = [(True, grp.weapon, grp.a + int(grp.two_weapons) + charge)]
                if not sides[k].all_engaged:
                    portions.append((False, "ccw", 1))
                for engaged, weapon, per_model in portions:
                    strength = min(2 * grp.s, 10) if weapon == "power_fist" else grp.s
                    p = np.array([p_unsaved(grp, weapon, t) for t in enemy.groups])
                    if not p.any():
                        continue  # can never wound: its dice change nothing
                    if instant_death:
                        key = (1 - k, strength)
                        if key not in apply_cache:
                            apply_cache[key] = _apply_table(strength, enemy, sides[1 - k])
                        table = apply_cache[key]
                    else:
                        table = None
                    step = step_of(grp, names[k], engaged, first, in_cover, all_inf)
                    ckey = (grp.count, per_model, tuple(p), sides[1 - k].wounds)
                    if ckey not in count_cache:  # shared by both rounds' pools when equal
                        count_cache[ckey] = count_tables(*ckey[:2], p, ckey[3])
                    cp, ca = count_cache[ckey]
                    by_key.setdefault(step, []).append(Pool(k, g, engaged, per_model, strength, p, table, cp, ca))
        return tuple(tuple(by_key[key]) for key in sorted(by_key, reverse=True))

    return GrimdarkPlan(m, sides, steps(True), steps(False))


# the step keys are re-exported for tests that inspect a plan
COVER, FIST = COVER_STEP, FIST_STEP
