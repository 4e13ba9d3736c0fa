"""``grimdark`` kernel plan: per-side lookup tables and the strike steps as pools of identical attacks.

The kernel's state of a side is one integer per trial, ``L``: wounds lost so
far. Because wounds go onto one model until it dies and models are removed in a
fixed order (engaged first, then the rest, groups in listed order, which is
list order: the engaged models are the first ones alive), everything else is a
function of ``L``: models dead, the group next in casualty order, models alive
per group. A model killed outright by instant death loses all its remaining
wounds, so ``L`` jumps to the end of that model (:class:`WoundMap`).

A *pool* is every attack of one step and side that is rolled against the same
target profile with the same chance: the unsaved wounds of ``n`` such attacks are
``Binomial(n, p)``, and the sum of binomials with one ``p`` is one binomial. So the
groups of a big squad (a squad's groups repeated k times for an equal-points
fight) strike as one pool per profile, not one per group, with one draw each.
Pools are merged only where the spec's order of applying wounds cannot matter
(see :func:`_merge`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import MatchupError
from ...kernels.alias import AliasRows
from ...kernels.portable import iter_binomial_rows
from ...ruleset import Matchup
from .charts import p_success, to_hit, to_wound
from .reference import COVER_STEP, FIST_STEP, step_of
from .units import ModelGroup, Squad

__all__ = ["SidePlan", "Pool", "WoundMap", "GrimdarkPlan", "build_plan", "p_unsaved", "MAX_MODELS", "MAX_GROUPS",
           "MAX_COUNT_ENTRIES"]

#: Per-side limits of a fight (a 2,000-point budget of any shipped squad fits).
MAX_MODELS = 500
MAX_GROUPS = 50
#: Largest alias table of unsaved wounds per pool (rows x slots); bigger pools draw
#: ``rng.binomial`` instead (exact too, slower), so a plan's tables stay within a few MB.
MAX_COUNT_ENTRIES = 1 << 20


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
    alive: NDArray[np.int32]
    #: first model index of each group, and the total (length G + 1)
    bounds: NDArray[np.int64]
    #: models in base contact at the start of each round (``models`` when all are)
    engaged: int
    #: models within 2" after those in base contact (1 plain attack each; the rest are out of combat)
    supporting: int = 0

    @property
    def all_engaged(self) -> bool:
        return self.engaged >= self.models


@dataclass(frozen=True)
class WoundMap:
    """Where ``u`` more unsaved wounds of one Strength take a side at ``L`` wounds lost, with instant death.

    A model open to instant death from this Strength needs one wound to die (all
    its wounds are lost), any other model one per wound left. Counting wounds in
    that currency, ``pos[L]`` is how many the side has taken on the way to ``L``
    and ``landing[P]`` the wounds lost once it has taken ``P``; ``u`` more land at
    ``landing[min(pos[L] + u, end)]`` (``u = 0`` leaves ``L`` unchanged: a model
    partly wounded before keeps its wounds). Applying ``u1`` then ``u2`` is
    applying ``u1 + u2``, so wounds of one map in a step may be summed first.
    """

    pos: NDArray[np.int64]
    landing: NDArray[np.int64]
    end: int

    def apply(self, L: NDArray[np.int64], u: NDArray[np.int64]) -> NDArray[np.int64]:
        to = self.landing[np.minimum(self.pos[L] + u, self.end)]
        return np.where(u == 0, L, to)


@dataclass(frozen=True)
class Pool:
    """The attacks of one or more groups' engaged (or not engaged) models in one strike step.

    Attributes
    ----------
    side : int
        Striking side (0 attacker, 1 defender).
    groups, per_model : tuple of int
        The striking groups (in listed order) and each one's attacks per model.
    engaged : bool
        The base-contact attacks (else the one plain attack of models not engaged).
    strength : int
    p : ndarray
        Probability that one attack becomes an unsaved wound, per enemy group.
    wound_map : WoundMap or None
        How its wounds are applied (None: one wound lost each, ``min(L + u, W)``).
    attacks : ndarray
        Attacks at the striking side's ``L`` when every model is engaged.
    cum_attacks : ndarray
        ``cum_attacks[i]``: attacks of the pool's models listed before model ``i``
        (for partial engagement: the attacks of any range of models is a difference).
    classes : ndarray
        Per enemy group, the index of its chance in ``p_class`` (groups of one profile share one).
    p_class : ndarray
    counts : AliasRows or None
        Unsaved wounds (capped at the enemy's wounds) for row ``attacks * len(p_class) + class``;
        None when too large (the kernel draws binomials).
    """

    side: int
    groups: tuple[int, ...]
    engaged: bool
    per_model: tuple[int, ...]
    strength: int
    p: NDArray[np.float64]
    wound_map: WoundMap | None
    attacks: NDArray[np.int64]
    cum_attacks: NDArray[np.int64]
    classes: NDArray[np.int64]
    p_class: NDArray[np.float64]
    counts: AliasRows | None

    def apply(self, L: NDArray[np.int64], u: NDArray[np.int64], wounds: int) -> NDArray[np.int64]:
        """Wounds lost after ``u`` more unsaved wounds of this pool on a side at ``L``."""
        return np.minimum(L + u, wounds) if self.wound_map is None else self.wound_map.apply(L, u)


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

    @property
    def table_bytes(self) -> int:
        """Bytes held by the plan's lookup tables (the chain's, built lazily, not included)."""
        seen: set[int] = set()
        total = 0
        for side in self.sides:
            total += side.dead.nbytes + side.front.nbytes + side.alive.nbytes
        for steps in (self.steps_first, self.steps_later):
            for step in steps:
                for pool in step:
                    for obj in (pool.counts, pool.wound_map, pool.attacks):
                        if obj is None or id(obj) in seen:
                            continue
                        seen.add(id(obj))
                        if isinstance(obj, AliasRows):
                            total += obj.nbytes
                        elif isinstance(obj, WoundMap):
                            total += obj.pos.nbytes + obj.landing.nbytes
                        else:
                            total += obj.nbytes
        return total


def _side_plan(squad: Squad, engaged: int, supporting: int = -1) -> SidePlan:
    ends = np.cumsum([g.w for g in squad.groups for _ in range(g.count)])  # wounds lost when model k dies
    W = int(ends[-1])
    L = np.arange(W + 1)
    dead = np.searchsorted(ends, L, side="right")
    group_of = np.repeat(np.arange(len(squad.groups)), [g.count for g in squad.groups])
    front = group_of[np.minimum(dead, len(group_of) - 1)]
    bounds = np.concatenate([[0], np.cumsum([g.count for g in squad.groups])])
    alive = np.array([bounds[k + 1] - np.clip(dead, bounds[k], bounds[k + 1]) for k in range(len(squad.groups))])
    n = squad.models
    return SidePlan(W, n, dead.astype(np.int64), front.astype(np.int64), alive.astype(np.int32),
                    bounds.astype(np.int64), n if engaged < 0 else min(engaged, n),
                    n if supporting < 0 else min(supporting, n))


def p_unsaved(grp: ModelGroup, weapon: str, target: ModelGroup) -> float:
    """Probability that one attack of ``grp`` with ``weapon`` is an unsaved wound on ``target``."""
    strength = min(2 * grp.s, 10) if weapon == "power_fist" else grp.s
    p = p_success(to_hit(grp.ws, target.ws)) * p_success(to_wound(strength, target.t))
    ignores_armour = weapon in ("power_weapon", "power_fist") or grp.monster
    saves = [x for x in (None if ignores_armour else target.save, target.invuln) if x is not None]
    return p * ((min(saves) - 1) / 6 if saves else 1.0)


def _instant_key(strength: int, enemy: Squad, instant_death: bool) -> tuple[bool, ...] | None:
    """Which enemy groups a wound of ``strength`` kills outright (None: none, wounds apply one by one)."""
    if not instant_death:
        return None
    key = tuple(g.w > 1 and strength >= 2 * g.t for g in enemy.groups)
    return key if any(key) else None


def wound_map(instant: tuple[bool, ...], enemy: Squad) -> WoundMap:
    """The :class:`WoundMap` of wounds that kill the models of the flagged groups outright."""
    w = np.repeat([g.w for g in enemy.groups], [g.count for g in enemy.groups])
    flag = np.repeat(instant, [g.count for g in enemy.groups])
    need = np.where(flag, 1, w)                      # wounds (in this currency) to kill model k
    start = np.concatenate([[0], np.cumsum(w)])      # wounds lost when model k is reached
    E = np.concatenate([[0], np.cumsum(need)])       # wounds taken when model k is reached
    W, end = int(start[-1]), int(E[-1])
    L = np.arange(W + 1)
    k = np.minimum(np.searchsorted(start, L, side="right") - 1, len(w) - 1)
    pos = np.where(L == W, end, E[k] + np.where(flag[k], 0, L - start[k]))
    P = np.arange(end + 1)
    kp = np.minimum(np.searchsorted(E, P, side="right") - 1, len(w) - 1)
    landing = np.where(P == end, W, start[kp] + (P - E[kp]))
    return WoundMap(pos.astype(np.int64), landing.astype(np.int64), end)


def count_alias(max_attacks: int, p_class: NDArray[np.float64], wounds: int) -> AliasRows | None:
    """Alias rows of ``min(Binomial(n, p_class[c]), wounds)`` for row ``n * len(p_class) + c``.

    The mass above ``wounds`` is lumped onto ``wounds`` (more is never applied:
    the squad is gone). None when the table would exceed ``MAX_COUNT_ENTRIES``.
    """
    cap = min(max_attacks, wounds)
    T = len(p_class)
    if (max_attacks + 1) * T * (cap + 1) > MAX_COUNT_ENTRIES:
        return None
    # Pascal's recurrence, the tail summed in a fixed order (sim.kernels.portable): the same bits on every
    # machine (scipy.stats calls the C library's exp and log, whose results differ between CPUs)
    P = np.zeros((max_attacks + 1, T, cap + 1))
    for c, pc in enumerate(np.asarray(p_class, np.float64).tolist()):
        for n, row in enumerate(iter_binomial_rows(max_attacks, pc)):
            below = row[:cap]
            P[n, c, :below.size] = below
            tail = row[cap:][::-1]                       # P(at least cap), smallest terms first
            P[n, c, cap] = np.cumsum(tail)[-1] if tail.size else 0.0
    return AliasRows.build(P.reshape((max_attacks + 1) * T, cap + 1), dtype=np.int64)


@dataclass
class _Portion:
    """One group's attacks of one kind in one step, before pools are merged."""

    side: int
    group: int
    engaged: bool
    per_model: int
    strength: int
    p: tuple[float, ...]
    instant: tuple[bool, ...] | None


def _merge(portions: list[_Portion]) -> list[list[_Portion]]:
    """Portions of one side and step that strike as one pool, in application order.

    Portions with equal chances and the same wound map merge. When every portion
    of the step applies its wounds the same way, the order of application does not
    matter (sums of wounds of one map apply at once), so equal portions merge
    wherever they are listed; otherwise only neighbours merge, keeping the spec's
    order of application (the listed order of the striking groups).
    """
    same = lambda a, b: a.engaged == b.engaged and a.p == b.p and a.instant == b.instant  # noqa: E731
    out: list[list[_Portion]] = []
    anywhere = len({p.instant for p in portions}) <= 1
    for por in portions:
        target = next((grp for grp in out if same(grp[0], por)), None) if anywhere else \
            (out[-1] if out and same(out[-1][0], por) else None)
        if target is None:
            out.append([por])
        else:
            target.append(por)
    return out


def build_plan(m: Matchup) -> GrimdarkPlan:
    """Tables and strike steps for the kernel."""
    names = ("attacker", "defender")
    squads = (m.attacker, m.defender)
    for k in range(2):
        if squads[k].models > MAX_MODELS or len(squads[k].groups) > MAX_GROUPS:
            raise MatchupError(f"grimdark: the {names[k]} ({squads[k].name}) fields {squads[k].models} models in "
                               f"{len(squads[k].groups)} groups: at most {MAX_MODELS} models and {MAX_GROUPS} "
                               "groups a side")
    sides = tuple(_side_plan(squads[k], int(m.state(names[k], "engaged")), int(m.state(names[k], "supporting")))
                  for k in range(2))
    in_cover = bool(m.state("defender", "in_cover"))
    all_inf = all(g.infantry for g in m.defender.groups)
    instant_death = bool(m.options["instant_death"])
    map_cache: dict[tuple, WoundMap] = {}
    count_cache: dict[tuple, AliasRows | None] = {}

    def pool_of(parts: list[_Portion]) -> Pool:
        k = parts[0].side
        enemy, own = squads[1 - k], sides[k]
        instant = parts[0].instant
        wm = None
        if instant is not None:
            if (1 - k, instant) not in map_cache:
                map_cache[(1 - k, instant)] = wound_map(instant, enemy)
            wm = map_cache[(1 - k, instant)]
        groups = tuple(p.group for p in parts)
        per_model = tuple(p.per_model for p in parts)
        per = np.zeros(own.models, np.int64)  # attacks of each model of the side, if in this pool
        for g, a in zip(groups, per_model):
            per[own.bounds[g]:own.bounds[g + 1]] = a
        cum = np.concatenate([[0], np.cumsum(per)])
        attacks = cum[-1] - cum[own.dead]
        max_attacks = sum(squads[k].groups[g].count * a for g, a in zip(groups, per_model))
        p_class, classes = np.unique(np.array(parts[0].p), return_inverse=True)
        key = (max_attacks, tuple(p_class), sides[1 - k].wounds)
        if key not in count_cache:  # shared by both rounds' pools when equal
            count_cache[key] = count_alias(max_attacks, p_class, sides[1 - k].wounds)
        return Pool(k, groups, parts[0].engaged, per_model, parts[0].strength, np.array(parts[0].p), wm,
                    attacks, cum, classes.astype(np.int64).ravel(), p_class, count_cache[key])

    def steps(first: bool) -> tuple[tuple[Pool, ...], ...]:
        by_key: dict[int, list[_Portion]] = {}
        for k in range(2):
            enemy = squads[1 - k]
            charge = 1 if (k == 0 and first and m.state("attacker", "charging")) else 0
            for g, grp in enumerate(squads[k].groups):
                portions = [(True, grp.weapon, grp.a + int(grp.two_weapons) + charge)]
                if not sides[k].all_engaged and sides[k].supporting > 0:
                    portions.append((False, "ccw", 1))
                for engaged, weapon, per_model in portions:
                    strength = min(2 * grp.s, 10) if weapon == "power_fist" else grp.s
                    p = tuple(p_unsaved(grp, weapon, t) for t in enemy.groups)
                    if not any(p):
                        continue  # can never wound: its dice change nothing
                    step = step_of(grp, names[k], engaged, first, in_cover, all_inf)
                    by_key.setdefault(step, []).append(
                        _Portion(k, g, engaged, per_model, strength, p, _instant_key(strength, enemy, instant_death)))
        out = []
        for key in sorted(by_key, reverse=True):
            pools = []
            for k in range(2):
                pools += [pool_of(parts) for parts in _merge([p for p in by_key[key] if p.side == k])]
            out.append(tuple(pools))
        return tuple(out)

    return GrimdarkPlan(m, sides, steps(True), steps(False))


# the step keys are re-exported for tests that inspect a plan
COVER, FIST = COVER_STEP, FIST_STEP
