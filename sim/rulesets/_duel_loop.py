"""``duel`` compiled group kernel: the fight loop itself, compiled by Numba (see :mod:`._duel_compiled`).

Importing this module imports Numba; :mod:`._duel_compiled` imports it only when
a fight is played. One call plays fights ``start, start + 1, ...`` one after
another, each from its first phase to its end, until ``n`` are done or the
uniforms left in ``u`` might not cover one more fight (``per_fight``: an upper
bound on the uniforms one fight reads); it returns the fights done and the
uniforms read, and the caller refills ``u`` from the block's stream.

The rules are those of :mod:`._duel_fast` (whose docstrings state them), played
model by model with its exact tables (:mod:`._duel_tables`), one 32-bit uniform
a draw: a model's key is ``dead << 6 | misted << 5 | wounds``; each side's
standing models come first, in listed order (the pairing order).

Helpers take scalars only: a Numba function that takes arrays pays for
reference counting at every call.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["play"]

_WOUNDS = 31
_MISTED = 32
_DEAD = 64
#: 2**-32: a 32-bit uniform as a fraction (the alias tables' own precision)
_SCALE = 1.0 / 4294967296.0


@nb.njit(cache=True)
def _draw(rec, bits):
    """The value of an :class:`.._alias.AliasPacked` slot record for the uniform ``u`` whose slot it is:
    ``rec`` is the record (threshold, value, delta) as a uint64, ``bits`` (as ``u``, an int64)."""
    alt = np.uint64(bits) >= (rec & np.uint64(0xFFFFFFFF))   # (unsigned both: int64 against uint64 is float)
    out = ((rec >> np.uint64(32)) + np.uint64(alt) * (rec >> np.uint64(48))) & np.uint64(0xFFFF)
    return np.int64(out)


@nb.njit(cache=True, error_model="numpy")
def play(start, n, u, per_fight, nA, nB, WA, WB, limit, pair, pair_bits, identity,
         hit_one_a, hit_one_a_bits, hit_one_b, hit_one_b_bits, fails_a, fails_a_bits, fails_b, fails_b_bits,
         partial_a, partial_a_bits, partial_b, partial_b_bits, roll_a, roll_ab, roll_width,
         extra_die, extra_hit, prone, instant, damage, can_mist,
         remaining, alive, misted, n_rounds):
    """Play fights ``start ..`` (see the module docstring); return the fights done and the uniforms read.

    Tables are ``AliasPacked.records`` with their ``bits`` (``hit_one_a``: hits of side A on a
    single model of side B, ``fails_a``: failed checks of A's hits, ``partial_a``: a model of A
    that survives some fails; likewise for B); ``identity``: the pair table's first unchanged
    row (not read here: combat 0 of a ganged phase is simply not drawn from it).
    ``roll_a`` / ``roll_ab``: the ganged duel roll, P(A wins) and P(A or B wins), by
    ``dice A * roll_width + dice B``. Per side (index 0 A, 1 B): ``extra_die``, ``extra_hit``,
    ``prone``, ``instant`` (its hits kill outright), ``damage`` (wounds a failed check takes),
    ``can_mist`` (its models can be misted). Results are written at ``[f]`` and ``[s, f]``.
    """
    N = nA + nB
    key = np.empty(N, np.int64)
    tmp = np.empty(N, np.int64)
    pair_shift = 32 - pair_bits
    pos = 0
    size = u.shape[0]
    f = start
    while f < n and pos + per_fight <= size:
        for j in range(nA):
            key[j] = WA
        for j in range(nA, N):
            key[j] = WB
        cA, cB = nA, nB
        fought = 0
        while True:
            pairs = min(cA, cB)
            gang = cA != cB
            # (wounds are read from the keys: no combat changes a model another combat of the phase
            # reads, so each still holds its wounds at the start of the phase when read)
            # the one-against-one combats (combat 0 too unless a side gangs up), in place
            for k in range(1 if gang else 0, pairs):
                v = np.int64(u[pos])
                pos += 1
                slot = (((key[k] & _WOUNDS) * (WB + 1) + (key[nA + k] & _WOUNDS)) << pair_bits) | (v >> pair_shift)
                ch = _draw(pair[slot], v)
                key[k] += ((ch & 255) ^ 128) - 128            # two int8 changes: A's, then B's
                key[nA + k] += (((ch >> 8) & 255) ^ 128) - 128
            if gang:
                # combat 0: side y's first model and its models past the pairs against x's first
                y = 1 if cB > cA else 0
                x = 1 - y
                lo_y = 0 if y == 0 else nA
                c_y = cB if y == 1 else cA
                size_y = 1 + c_y - pairs
                x_row = 0 if x == 0 else nA
                sum_y = key[lo_y] & _WOUNDS
                for j in range(lo_y + pairs, lo_y + c_y):
                    sum_y += key[j] & _WOUNDS
                w_x = key[x_row] & _WOUNDS
                sum_x = w_x
                sum_a = sum_x if x == 0 else sum_y
                sum_b = sum_y if x == 0 else sum_x
                size_a = 1 if x == 0 else size_y
                size_b = size_y if x == 0 else 1
                dice_a = 0 if prone[0] else sum_a + extra_die[0] * size_a
                dice_b = 0 if prone[1] else sum_b + extra_die[1] * size_b
                q = np.float64(u[pos]) * _SCALE
                pos += 1
                cell = dice_a * roll_width + dice_b
                a_wins = q < roll_a[cell]
                b_wins = (not a_wins) and q < roll_ab[cell]
                hits_a = sum_a + extra_hit[0] * size_a                    # counted at the start
                hits_b = sum_b + extra_hit[1] * size_b
                lost_x = not (a_wins if x == 0 else b_wins)
                lost_y = not (a_wins if y == 0 else b_wins)
                if lost_x:
                    # the ganged side's hits land on the single model
                    h = hits_b if x == 0 else hits_a
                    v = np.int64(u[pos])
                    pos += 1
                    if y == 1:
                        slot = ((h * (WA + 1) + w_x) << hit_one_b_bits) | (v >> (32 - hit_one_b_bits))
                        key[x_row] = _draw(hit_one_b[slot], v)
                    else:
                        slot = ((h * (WB + 1) + w_x) << hit_one_a_bits) | (v >> (32 - hit_one_a_bits))
                        key[x_row] = _draw(hit_one_a[slot], v)
                if lost_y:
                    # the single model's hits: failed checks, each to the member with the fewest
                    # wounds (ties: listed order) while they slay it; the rest on the next one
                    h = hits_a if x == 0 else hits_b
                    if instant[x]:
                        budget = h
                    else:
                        v = np.int64(u[pos])
                        pos += 1
                        if x == 0:
                            slot = (h << fails_a_bits) | (v >> (32 - fails_a_bits))
                            budget = _draw(fails_a[slot], v)
                        else:
                            slot = (h << fails_b_bits) | (v >> (32 - fails_b_bits))
                            budget = _draw(fails_b[slot], v)
                    dmg = damage[x]
                    slain = _DEAD | _MISTED if instant[x] else _DEAD
                    while True:
                        # the weakest standing member: row lo_y, then rows past the pairs
                        best, best_w = -1, 1 << 30
                        if key[lo_y] < _DEAD:
                            best, best_w = lo_y, key[lo_y] & _WOUNDS
                        for j in range(lo_y + pairs, lo_y + c_y):
                            kw = key[j]
                            if kw < _DEAD and (kw & _WOUNDS) < best_w:
                                best, best_w = j, kw & _WOUNDS
                        if best < 0 or budget == 0:
                            break
                        need = 1 if instant[x] else (best_w + dmg - 1) // dmg
                        if need > budget:
                            # it survives the fails left: backing away (blocked-yard hits)
                            v = np.int64(u[pos])
                            pos += 1
                            if y == 0:
                                slot = ((best_w * (WA + 1) + budget) << partial_a_bits) | (v >> (32 - partial_a_bits))
                                key[best] = _draw(partial_a[slot], v)
                            else:
                                slot = ((best_w * (WB + 1) + budget) << partial_b_bits) | (v >> (32 - partial_b_bits))
                                key[best] = _draw(partial_b[slot], v)
                            break
                        key[best] = slain
                        budget -= need
            # the fallen leave: each side's standing models to the front, in listed order (a stable
            # partition without branches, which would mispredict on every death; only the rows that
            # stood at the start can have fallen)
            m = 0
            t = 0
            for j in range(cA):
                kj = key[j]
                up = kj < _DEAD
                key[m] = kj
                tmp[t] = kj
                m += up
                t += 1 - up
            for j in range(t):
                key[m + j] = tmp[j]
            cA = m
            m = nA
            t = 0
            for j in range(nA, nA + cB):
                kj = key[j]
                up = kj < _DEAD
                key[m] = kj
                tmp[t] = kj
                m += up
                t += 1 - up
            for j in range(t):
                key[m + j] = tmp[j]
            cB = m - nA
            fought += 1
            if cA == 0 or cB == 0 or fought == limit:
                break
        ra, rb, ma, mb = 0, 0, 0, 0
        for j in range(nA):
            ra += key[j] & _WOUNDS
            ma += (key[j] & _MISTED) != 0
        for j in range(nA, N):
            rb += key[j] & _WOUNDS
            mb += (key[j] & _MISTED) != 0
        remaining[0, f], remaining[1, f] = ra, rb
        alive[0, f], alive[1, f] = cA, cB
        misted[0, f] = ma if can_mist[0] else 0
        misted[1, f] = mb if can_mist[1] else 0
        n_rounds[f] = fought
        f += 1
    return f, pos
