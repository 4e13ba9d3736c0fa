"""``warband`` plan: the per-side blow tables the kernels read, and the prepared matchup.

:func:`build_plan` precomputes each side's blows (to hit, to wound, saves,
parryability per attack column; one-attack batches as exact outcome tables) and
the tables of the kernel that will play the matchup: the compiled one
(:mod:`.compiled`) where it can, else the group kernel's (:mod:`.groups`) for
groups under the default re-engaging rule, else none (:mod:`.kernel`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from ...limits import BytesCache
from ...ruleset import Matchup
from .compiled import LoopTables, available, loop_tables
from .fused import GroupTables, _profile, cached_group_tables
from .pieces import strike_key
from .single import SingleTable, auto_hit_cdf, single_table
from .tables import (
    WEAPONS, attack_columns, canonical_weapons, save_needed, to_hit_needed, to_wound_needed, weapon_strength,
)
from .units import WarbandUnit

__all__ = ["Blows", "SideInfo", "KernelPlan", "WarbandPlan", "build_plan"]


@dataclass(frozen=True)
class Blows:
    """One side's blows against the other side, in round 1 or in later rounds (per attack column)."""

    n: int
    need_hit: int
    need_wound: NDArray[np.int8]   # 7: cannot wound
    crit_ok: NDArray[np.bool_]     # a natural 6 may be critical (needs less than 6)
    save: NDArray[np.int8]         # 7 or more: no save
    parryable: NDArray[np.bool_]   # the target may parry it (has sword/buckler, S < 2 x its S)
    concussion: NDArray[np.bool_]
    injury_mod: int                # strike to injure
    crit_mod: int                  # web of steel
    single: SingleTable | None = None   # one attack: the whole batch as precomputed outcomes


@dataclass(frozen=True)
class SideInfo:
    """What the kernel needs about one side as a target and in the strike order."""

    count: int
    w: int
    i: int
    can_parry: bool
    parry_reroll: bool
    step_aside: bool
    helmet: bool
    jump_up: bool
    class_round1: int
    class_later: int
    lightning_reflexes: bool = False


@dataclass(frozen=True)
class KernelPlan:
    sides: tuple[SideInfo, SideInfo]
    #: blows[striker side][0 later rounds, 1 round 1]
    blows: tuple[tuple[Blows, Blows], tuple[Blows, Blows]]
    all_alone: bool = False
    rout: bool = False
    #: Leadership of each side (0 if not given; only read when a switch is on).
    ld: tuple[int, int] = (0, 0)
    #: auto_hit[striker side][0 later rounds, 1 round 1]: CDF of the wounds of one automatic hit.
    auto_hit: tuple | None = None
    #: The ``reengage`` option (:mod:`.kernel` plays "every_round"; the group kernel the default).
    reengage: str = "own_turn_charge"
    #: Tables of the group kernel (:mod:`.groups`), when it plays this matchup (else None).
    groups: GroupTables | None = None
    #: Tables of the compiled kernel (:mod:`.compiled`), when it plays this matchup (else None).
    loop: LoopTables | None = None


def _blows(s: WarbandUnit, t: WarbandUnit, first_round: bool, fist_as_user: bool) -> Blows:
    cols = attack_columns(s)
    strengths = [weapon_strength(s, wp, first_round, fist_as_user) for wp in cols]
    resil = 1 if "resilient" in t.skills else 0
    need_w = np.array([to_wound_needed(st - resil, t.t) for st in strengths], np.int8)
    can_parry = "sword" in canonical_weapons(t.weapons) or t.buckler
    return Blows(
        n=len(cols),
        need_hit=to_hit_needed(s.ws, t.ws),
        need_wound=need_w,
        crit_ok=need_w < 6,
        save=np.array([min(save_needed(s, wp, st, t), 7) for wp, st in zip(cols, strengths)], np.int8),
        parryable=np.array([can_parry and st < 2 * t.s for st in strengths], bool),
        concussion=np.array([WEAPONS[wp].concussion for wp in cols], bool),
        injury_mod=1 if "strike_to_injure" in s.skills else 0,
        crit_mod=1 if "web_of_steel" in s.skills else 0,
    )


def _side(u: WarbandUnit, is_attacker: bool, charging: bool) -> SideInfo:
    weapons = canonical_weapons(u.weapons)
    last = any(WEAPONS[x].strike_last for x in weapons) and "strongman" not in u.skills
    first = (is_attacker and charging) or any(WEAPONS[x].strike_first_round1 for x in weapons) or (
        not is_attacker and charging and "lightning_reflexes" in u.skills)
    return SideInfo(u.count, u.w, u.i, "sword" in weapons or u.buckler, "sword" in weapons and u.buckler,
                    "step_aside" in u.skills, u.helmet, "jump_up" in u.skills,
                    2 if last else 0 if first else 1, 2 if last else 1, "lightning_reflexes" in u.skills)


#: One-attack tables by what they are computed from (:func:`.pieces.strike_key`: the blows and five fields
#: of the target), most of a pair of profiles' blows' time: a roster's batches have few distinct keys. Also
#: keyed by striker side and round kind, so that a plan's tables stay four objects, as its measured bytes
#: (:func:`sim.limits.table_bytes` counts a shared array once) assume.
_SINGLE = BytesCache(16 << 20, entries=8192)


def _single(b: Blows, ti: SideInfo, side: int, first: bool) -> SingleTable:
    return _SINGLE.get((strike_key(b, ti), side, first), lambda: single_table(
        b, ti.w, ti.parry_reroll, ti.step_aside, ti.helmet, ti.jump_up))


@lru_cache(maxsize=1024)
def _blows_of(att: WarbandUnit, dfn: WarbandUnit, charging: bool, fist_as_user: bool) -> tuple:
    """``blows[striker side][0 later rounds, 1 round 1]`` of two profiles (:func:`.fused._profile`: no
    counts, names or points), with their one-attack tables: equal-points copies of one pair of
    profiles, and the cells of a matrix, build them once (a few milliseconds each)."""
    sides = (_side(att, True, charging), _side(dfn, False, charging))
    blows = []
    for k, (s, t, ti) in enumerate(((att, dfn, sides[1]), (dfn, att, sides[0]))):
        pair = []
        for first in (False, True):
            b = _blows(s, t, first, fist_as_user)
            if b.n == 1:
                b = replace(b, single=_single(b, ti, k, first))
            pair.append(b)
        blows.append(tuple(pair))
    return tuple(blows)


def build_plan(att: WarbandUnit, dfn: WarbandUnit, charging: bool, fist_as_user: bool, *,
               all_alone: bool = False, rout: bool = False, reengage: str = "own_turn_charge",
               engine: str = "auto") -> KernelPlan:
    """Precompute the per-side tables the kernel reads.

    ``engine``: ``"auto"`` plays the fight on the compiled kernel (:mod:`.compiled`) when it can,
    else on the vectorised kernels; ``"numpy"`` always on the vectorised kernels.
    """
    sides = (_side(att, True, charging), _side(dfn, False, charging))
    blows = _blows_of(_profile(att), _profile(dfn), charging, fist_as_user)
    auto = None
    if all_alone:
        auto = tuple(tuple(auto_hit_cdf(b, ti.step_aside) for b in blows[k])
                     for k, ti in ((0, sides[1]), (1, sides[0])))
    kp = KernelPlan(sides, tuple(blows), all_alone, rout, (att.ld or 0, dfn.ld or 0), auto, reengage)
    if engine == "auto" and available():
        loop = loop_tables(kp)
        if loop is not None:
            return replace(kp, loop=loop)
    if reengage == "own_turn_charge" and min(att.count, dfn.count) >= 2:
        kp = replace(kp, groups=cached_group_tables(att, dfn, charging, fist_as_user, sides, blows))
    return kp


@dataclass(frozen=True)
class WarbandPlan:
    """A prepared matchup: the validated units (or army lists, :class:`sim.lists.MixedSide`) and the kernel's
    tables (a :class:`KernelPlan`, or a :class:`.mixed.MixedPlan` when a side is an army list)."""

    matchup: Matchup
    attacker: WarbandUnit
    defender: WarbandUnit
    charging: bool
    fist_as_user: bool
    kernel: KernelPlan
    all_alone: bool = False
    rout: bool = False
    reengage: str = "own_turn_charge"
    #: The ``pairing`` option: how an army list's warriors line up (:mod:`.mixed`).
    pairing: str = "listed"
