"""``warband`` group kernel: quiet rounds skipped, drawn as a count from their exact distribution.

Long group fights (gromril-armoured dwarfs against warriors who can barely hurt them)
spend most of their rounds with nothing happening: every blow misses, is parried or
saved. A fight is *settled* at a later round (round 2 on) when every warrior not out of
action is standing, none is free (each touches an enemy) and its contacts are isolated
pairs and two-leaf stars whose phases are tabulated (:class:`.strikes.PairTable`,
:class:`.stars.StarTable`), with nobody charging or standing up this turn. Then:

* every round plays the same way whichever side's turn it is (Recovery and
  re-engaging have nothing to do, and every warrior keeps its later-rounds strike
  class), so the rounds are independent and identically distributed while nothing
  changes;
* the components do not interact within a phase, so each component ``i`` stays as it
  is in a round with its table's probability ``q_i`` independently of the others.

So the number of rounds until component ``i`` first changes is geometric, ``T_i`` quiet
rounds and a change (``P(T_i >= t) = q_i ** t``), independently per component. The
fight is unchanged for ``K = min T_i`` rounds; at round ``r + K`` exactly the
components with ``T_i = K`` change, each drawn from its row *given that it changes*
(the row without its unchanged outcome, renormalised), and the rest stay as they are.
That is the fight's exact law over those rounds, at the cost of one draw a component
instead of one a round (:func:`quiet_rows`: ``q`` and the conditional tables, from the
alias tables' own masses, so they describe exactly what the tables draw).

Only fights with ``q = prod q_i`` of at least :data:`Q_MIN` skip: where a change is likely
every round, the ordinary phase costs less than the draws and the bookkeeping.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from .._alias import AliasBits

__all__ = ["Q_MIN", "quiet_pairs", "quiet_stars", "quiet_rounds"]

#: Least probability that a settled fight is quiet in a round for it to skip (see the module docstring).
Q_MIN = 0.5

#: Quiet tables by the table they were built from (dropped with it): (q by row, conditional table).
_CACHE: dict[int, tuple] = {}


def _conditional(bits: AliasBits, unchanged: NDArray[np.bool_]) -> tuple[NDArray[np.float64], AliasBits]:
    """Per row of ``bits``: the probability of its unchanged outcome, and the table of the other outcomes
    renormalised. ``unchanged`` (rows, slots, 2): whether each slot's value and its alias's value is the
    row's unchanged outcome. A row that never changes keeps one outcome of mass 1 (never drawn)."""
    K = 1 << bits.bits
    shift = 32 - bits.bits
    base = (np.arange(K, dtype=np.int64) << shift)
    keep = (bits.threshold.reshape(-1, K).astype(np.int64) - base) / float(1 << shift)
    mass = np.stack([keep, 1.0 - keep], axis=-1) / K                   # (rows, slots, 2)
    q = np.where(unchanged, mass, 0.0).sum(axis=(1, 2))
    P = np.where(unchanged, 0.0, mass).reshape(len(q), 2 * K)
    total = P.sum(axis=1, keepdims=True)
    never = total[:, 0] <= 0
    P[never, 0] = 1.0
    P /= np.where(never[:, None], 1.0, total)
    q[never] = 1.0
    values = bits.pick.reshape(len(q), 2 * K)
    return q, AliasBits.build(P, values, dtype=bits.pick.dtype)


def _cached(table, build):
    key = id(table)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = build()
        weakref.finalize(table, _CACHE.pop, key, None)
    return hit


def quiet_pairs(pt):
    """(q by row, the pair table drawing only changes) of a :class:`.strikes.PairTable`."""
    def build():
        bits = pt.table.bits
        K = 1 << bits.bits
        rows = np.arange(len(bits.threshold) >> bits.bits)
        state = rows // 3
        ca, cd = state // pt.n_codes_d, state % pt.n_codes_d
        flat = bits.pick.reshape(-1, K, 2)
        unchanged = (pt.new_a[flat] == ca[:, None, None]) & (pt.new_d[flat] == cd[:, None, None])
        q, cond = _conditional(bits, unchanged)
        return q, replace(pt, table=replace(pt.table, bits=cond))
    return _cached(pt, build)


def quiet_stars(tb):
    """(q by row, the star table drawing only changes) of a :class:`.stars.StarTable`."""
    from .stars import N_PATTERNS

    def build():
        bits = tb.table
        K = 1 << bits.bits
        state = np.arange(len(bits.threshold) >> bits.bits) // N_PATTERNS
        cc, rest = state // (tb.n_l * tb.n_l), state % (tb.n_l * tb.n_l)
        same = (cc * 16 + rest // tb.n_l) * 16 + rest % tb.n_l          # the packed codes of no change
        unchanged = bits.pick.reshape(-1, K, 2) == same[:, None, None]
        q, cond = _conditional(bits, unchanged)
        return q, replace(tb, table=cond)
    return _cached(tb, build)


def quiet_rounds(q: NDArray[np.float64], u: NDArray[np.float64], most: int) -> NDArray[np.int64]:
    """Quiet rounds before a component first changes, ``P(T >= t) = q ** t``, from uniforms ``u`` in
    (0, 1]; at most ``most`` (a component that cannot change waits for ever)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.floor(np.log(u) / np.log(q))
    return np.where(q >= 1.0, most, np.minimum(np.nan_to_num(t, nan=0.0, posinf=most), most)).astype(np.int64)


def skip_quiet(kp, st, settled, pair_e, centres, pair_flat, star_flat, r: int, limit: int,
               rng: np.random.Generator):
    """Settled fights (``settled``, by column) whose rounds are quiet with probability at least
    :data:`Q_MIN` jump to their next change: its components that change at round ``r + K`` are drawn
    now (if that is within ``limit``), and ``st.skipped`` is set to (their columns, ``K``).

    ``pair_e`` and ``centres`` are the round's pair and star entries (flat indices); returns them
    without those of the fights that skipped (the ordinary phase leaves those alone).
    """
    from .phases import _chunks, pair_rows_of, pairs, star_rows_of, stars

    m = st.m
    comps = []                                          # (side of the star's centre or None, entries, q)
    pe = pair_e[settled[pair_e % m]]
    if pe.size:
        q_row, _ = quiet_pairs(kp.groups.pair[0])
        comps.append((None, pe, np.take(q_row, pair_rows_of(st, pe, pair_flat[1], pair_flat[3], 0)[1])))
    for k, e in enumerate(centres):
        se = e[settled[e % m]]                          # every centre of a settled fight has two leaves
        if se.size:
            q_row, _ = quiet_stars(kp.groups.star[k][0])
            comps.append((k, se, np.take(q_row, star_rows_of(kp, st, k, se, star_flat, 0)[2])))
    if not comps:
        return pair_e, centres
    log_q = np.zeros(m)
    with np.errstate(divide="ignore"):
        for _, e, q in comps:
            np.add.at(log_q, e % m, np.log(q))
        skip = settled & (log_q >= np.log(Q_MIN))
    if not skip.any():
        return pair_e, centres
    most = limit - r + 1                                # unchanged to the last round and beyond
    K = np.full(m, most, np.int64)
    drawn = []
    for k, e, q in comps:
        go = skip[e % m]
        e, q = e[go], q[go]
        T = quiet_rounds(q, 1.0 - rng.random(e.size), most)
        np.minimum.at(K, e % m, T)
        drawn.append((k, e, T))
    for k, e, T in drawn:
        change = e[(T == K[e % m]) & (r + T <= limit)]
        for c in _chunks(change):
            if k is None:
                pairs(kp, st, c, pair_flat, 0, rng, pt=quiet_pairs(kp.groups.pair[0])[1])
            else:
                stars(kp, st, k, c, star_flat, 0, rng, tb=quiet_stars(kp.groups.star[k][0])[1])
    cols = np.flatnonzero(skip)
    st.skipped = (cols, K[cols])
    return pair_e[~skip[pair_e % m]], [e[~skip[e % m]] for e in centres]
