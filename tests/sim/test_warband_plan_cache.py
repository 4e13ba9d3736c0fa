"""warband: the compiled kernel's phase tables built from cached pieces equal tables built afresh.

:mod:`sim.rulesets.warband.pieces` caches a batch's rows, a star's distribution and a
pair's rows by the values they read, and :mod:`.compiled` the whole phase tables by
their four batches' keys; :mod:`.plan` caches the one-attack tables the same way. A key
that missed a value the piece depends on would hand one pair of profiles another's
tables: these tests build many pairs (varied one field at a time, so that most pieces
are shared) with warm caches, in a scrambled order, and compare every array with a
build from the uncached functions.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from sim.limits import BytesCache, table_bytes
from sim.roster import default_roster
from sim.rulesets.warband import compiled, pieces
from sim.rulesets.warband import plan as wplan
from sim.rulesets.warband.compiled import _stack
from sim.rulesets.warband.fused import _same_blows
from sim.rulesets.warband.stars import star_distribution
from sim.rulesets.warband.strikes import pair_rows, strike_table

pytestmark = pytest.mark.skipif(not compiled.available(), reason="the phase tables are the compiled kernel's")


def _dense(rows, value):
    K = max(len(r) for r in rows)
    P, V = np.zeros((len(rows), K)), np.zeros((len(rows), K), np.int64)
    for i, r in enumerate(rows):
        items = [(k, p) for k, p in r.items() if p > 0]
        P[i, :len(items)] = [p for _, p in items]
        V[i, :len(items)] = [value(k) for k, _ in items]
    return P, V


def uncached_phase_tables(kp):
    """The phase tables as built before the caches: straight from the strike rows, stars and pairs."""
    strikes = [[strike_table(kp.blows[k][r], kp.sides[1 - k], tables=False) for k in (0, 1)] for r in (0, 1)]
    if any(t.rows is None for by_kind in strikes for t in by_kind):
        return None
    strike, so = _stack([_dense(list(t.rows), lambda o: 2 * o[0] + o[1]) for bk in strikes for t in bk], np.int64)
    pair, po = _stack([_dense(pair_rows(*bk), lambda o: 16 * o[0] + o[1]) for bk in strikes], np.int64)
    same = all(_same_blows(*kp.blows[k]) for k in (0, 1))
    star, sto = _stack([star_distribution(strikes[r][k], strikes[r][1 - k])
                        for r in ((0,) if same else (0, 1)) for k in (0, 1)], np.int32)
    return compiled.PhaseTables(strike, so, pair, po, star, np.tile(sto, 2) if same else sto)


def arrays(obj, path="plan"):
    """Every array reachable from ``obj`` (dataclasses and tuples), by path."""
    if isinstance(obj, np.ndarray):
        yield path, obj
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from arrays(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, tuple):
        for i, x in enumerate(obj):
            yield from arrays(x, f"{path}[{i}]")


def assert_same(x, y):
    ax, ay = dict(arrays(x)), dict(arrays(y))
    assert ax.keys() == ay.keys()
    for path in ax:
        assert ax[path].dtype == ay[path].dtype and np.array_equal(ax[path], ay[path]), path


def variants():
    """The shipped profiles, and some with one of WS, S, T, I or W moved by one (pieces shared, not all)."""
    units = list(default_roster("warband").units.values())
    rng = random.Random(3)
    out = units[:]
    for u in units:
        field = rng.choice(["ws", "s", "t", "i", "w"])
        out.append(dataclasses.replace(u, name=f"{u.name} {field}", **{field: max(1, min(4, getattr(u, field) + 1))}))
    return out


def clear_caches():
    pieces.clear()
    compiled._CACHE.clear()
    wplan._SINGLE.clear()
    wplan._blows_of.cache_clear()


def test_cached_phase_tables_equal_the_uncached_ones():
    units = variants()
    rng = random.Random(7)
    pairs = [(a, d) for a in units for d in units]
    rng.shuffle(pairs)
    clear_caches()
    checked = 0
    for a, d in pairs[:60] + pairs[:10]:           # the last 10 again: whole tables from the cache
        for charging in (True, False):
            kp = wplan.build_plan(dataclasses.replace(a, count=2), d, charging, False)
            if kp.loop is None:
                continue
            fresh = dataclasses.replace(kp, loop=dataclasses.replace(kp.loop, phases=uncached_phase_tables(kp)))
            assert_same(kp, fresh)
            checked += 1
    assert checked > 100


def test_plans_built_with_warm_caches_equal_plans_built_cold():
    units = variants()
    rng = random.Random(11)
    picks = [(rng.choice(units), rng.choice(units), rng.randint(1, 4), rng.randint(1, 4)) for _ in range(25)]
    clear_caches()
    warm = []
    for a, d in [(a, d) for a in units[::3] for d in units[::4]]:   # fill the caches with other pairs first
        wplan.build_plan(a, d, True, False)
    for a, d, ca, cd in picks:
        warm.append(wplan.build_plan(dataclasses.replace(a, count=ca), dataclasses.replace(d, count=cd), True, False))
    for (a, d, ca, cd), kp in zip(picks, warm):
        clear_caches()
        cold = wplan.build_plan(dataclasses.replace(a, count=ca), dataclasses.replace(d, count=cd), True, False)
        assert_same(kp, cold)
        assert table_bytes(kp) == table_bytes(cold)


def test_a_packed_star_unpacks_bit_for_bit():
    clear_caches()
    units = variants()
    kp = wplan.build_plan(units[0], units[5], True, False)
    st = [pieces.strike(kp.blows[k][0], kp.sides[1 - k]) for k in (0, 1)]
    P, C = star_distribution(st[0].table, st[1].table)
    P2, C2 = pieces.Packed(P, C).dense()
    assert P2.tobytes() == P.tobytes() and C2.dtype == C.dtype and np.array_equal(C2, C)
    assert pieces.star(st[0], st[1])[0].tobytes() == P.tobytes()


def test_bytes_cache_bounds_its_entries_and_bytes():
    cache = BytesCache(1000, entries=3)
    for k in range(5):
        cache.get(k, lambda: np.zeros(10))            # 80 bytes each
    assert len(cache) == 3 and cache.nbytes == 240
    assert cache.get(4, lambda: pytest.fail("a hit must not build")).size == 10
    big = BytesCache(100)
    big.get("a", lambda: np.zeros(10))
    big.get("b", lambda: np.zeros(20))               # 160 bytes: over the budget, but the newest is kept
    assert len(big) == 1 and big.nbytes == 160
