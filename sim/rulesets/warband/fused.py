"""``warband`` group kernel: the tables it reads, built once per process for each pair of profiles.

``strike`` resolves one striker's batch on a target state code, ``joint`` serves
both sides' tabulated batches in one call, ``pair`` and ``star`` play a whole
isolated pair or two-leaf star in one draw (both sides' batches tabulated, which
is every batch of at most :data:`.batches.MAX_TABLE_ATTACKS` attacks). None of them
depends on the counts, so the cache is keyed by the profiles without their
names, counts, points and Leadership.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ...limits import BytesCache
from .stars import star_table
from .strikes import CodeTable, PairTable, StrikeTable, code_table, pair_table, strike_table, volley_table
from .units import WarbandUnit

__all__ = ["GroupTables", "group_tables", "cached_group_tables"]


@dataclass(frozen=True)
class GroupTables:
    """The group kernel's strike tables ``strike[striker side][0 later rounds, 1 round 1]`` and, when
    both sides' batches are tabulated, its pair tables ``pair[0 later rounds, 1 round 1]``."""

    strike: tuple[tuple[StrikeTable, StrikeTable], tuple[StrikeTable, StrikeTable]]
    pair: tuple[PairTable, PairTable] | None
    #: both sides' batch tables in one, by round kind [0 later rounds, 1 round 1]
    joint: tuple[CodeTable | None, CodeTable | None] = (None, None)
    #: star tables ``star[centre's side][round kind]`` (with the pair tables), else None
    star: tuple | None = None
    #: play the other stars centre first (see :func:`.phases.hub_phase`); False: striker by striker
    hubs: bool = True
    #: ``volley[target side][round kind]``: the leaves' batches on a centre of that side, in one draw
    #: (:class:`.strikes.VolleyTable`; None where the leaves roll dice)
    volley: tuple | None = None


#: Most leaves of a star: a side's largest number of warriors (more would play leaf by leaf).
MOST_LEAVES = 20

#: Group tables by matchup content: they do not depend on the counts, so the equal-points copies of
#: one pair of profiles (and repeated runs) build them once per process. Bounded by bytes, oldest
#: dropped: the budget holds every pair of profiles of the shipped roster (71 MiB), because the
#: fair-points search visits all of them in turn, round after round, and a smaller
#: least-recently-used cache would miss on nearly every visit.
_GROUP_CACHE = BytesCache(96 << 20)


def _profile(u: WarbandUnit) -> WarbandUnit:
    """The fields the tables depend on (not the name, count, points or Leadership)."""
    return replace(u, name="", count=1, points=None, ld=None)


def _same_blows(x, y) -> bool:
    """Whether two ``Blows`` strike alike (their fields equal; the derived one-attack table aside)."""
    return all(np.array_equal(getattr(x, f.name), getattr(y, f.name)) for f in fields(x) if f.name != "single")


def group_tables(sides, blows) -> GroupTables:
    """Strike and pair tables of the group kernel (re-engaging by a charge, both sides two or more).

    When both sides strike alike in round 1 and later (no heavy weapon's first-round Strength),
    the round-1 tables are the later rounds' (built once: the star tables are the costly part).
    """
    strike = tuple(tuple(strike_table(b, sides[1 - k]) for b in blows[k]) for k in (0, 1))
    kinds = (0,) if all(_same_blows(*blows[k]) for k in (0, 1)) else (0, 1)
    pair = None
    if all(t.table is not None for by_kind in strike for t in by_kind):
        pair = _by_kind([pair_table(strike[0][r], strike[1][r]) for r in kinds])
    joint = _by_kind([code_table((strike[0][r], strike[1][r])) for r in kinds])
    star = None
    if pair is not None:
        star = tuple(_by_kind([star_table(strike[k][r], strike[1 - k][r]) for r in kinds]) for k in (0, 1))
    volley = tuple(_by_kind([volley_table(strike[1 - k][r], MOST_LEAVES) for r in kinds]) for k in (0, 1))
    return GroupTables(strike, pair, joint, star, volley=volley)


def _by_kind(tables: list) -> tuple:
    """Tables by round kind (0 later rounds, 1 round 1) from those of ``kinds``: one shared, or two."""
    return (tables[0], tables[-1])


def cached_group_tables(att: WarbandUnit, dfn: WarbandUnit, charging: bool, fist_as_user: bool, sides, blows) -> GroupTables:
    """:func:`group_tables` through the per-process cache."""
    key = (_profile(att), _profile(dfn), charging, fist_as_user)
    return _GROUP_CACHE.get(key, lambda: group_tables(sides, blows))
