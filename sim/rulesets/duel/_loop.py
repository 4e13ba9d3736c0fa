"""``duel`` compiled group kernel: the fight loop itself, compiled by Numba (see :mod:`.compiled`).

Importing this module imports Numba; :mod:`.compiled` imports it only when
a fight is played. One call plays fights ``start, start + 1, ...`` one after
another, each from its first phase to its end, until ``n`` are done or the
uniforms left in ``u`` might not cover one more fight (``per_fight``: an upper
bound on the uniforms one fight reads); it returns the fights done and the
uniforms read, and the caller refills ``u`` from the block's stream.

The rules are those of :mod:`.fast` (whose docstrings state them), played
model by model with its exact tables (:mod:`.tables`), one 32-bit uniform
a draw. A model's key is ``dead << 6 | misted << 5 | wounds``; each side's
standing models are its first rows, in listed order (the pairing order). Rows
past a side's standing count are stale and never read: a model that falls is
counted (and, if misted, counted as misted) as the standing ones are moved up.
A phase is:

- combat 0 when one side (``y``) has left-over models: the duel roll (one
  uniform), the single model's fate by the hits it takes (one uniform), the
  ganged side's failed checks (one uniform), each to the member with the fewest
  wounds while it slays one (ties: listed order), and the one damaged survivor's
  backing away (one uniform, only when there is one). The single model's fate
  and the failed checks are drawn whoever wins, and the roll picks which apply
  (a branch on the roll would mispredict about every other time; a draw from a
  table in L1 costs less);
- the one-against-one combats (combat 0 too when nobody gangs up): one uniform
  each from the ``pair`` table, read together with the compaction of the rows it
  changed: each side's standing models move up, in order, as they are passed;
- the rows past the pairs (the larger side's left-over models) moved up too.

Combat 0 goes first because the compaction of row 0 needs its outcome; no combat
reads a model another combat of the phase changes, so each model's wounds are
still those at the start of the phase when read ("hits counted at the start").

Helpers take scalars only: a Numba function that takes arrays pays for
reference counting at every call.
"""

from __future__ import annotations

import numpy as np

from ...kernels.compile_cache import njit_cached

__all__ = ["play"]

_WOUNDS = 31
_MISTED = 32
_DEAD = 64
#: 2**-32: a 32-bit uniform as a fraction (the alias tables' own precision)
_SCALE = 1.0 / 4294967296.0


@njit_cached()
def _draw(rec, bits):
    """The value of an :class:`sim.kernels.alias.AliasPacked` slot record for the uniform ``u`` whose slot it is:
    ``rec`` is the record (threshold, value, delta) as a uint64, ``bits`` is ``u`` (as an int64)."""
    alt = np.uint64(bits) >= (rec & np.uint64(0xFFFFFFFF))   # (unsigned both: int64 against uint64 is float)
    out = ((rec >> np.uint64(32)) + np.uint64(alt) * (rec >> np.uint64(48))) & np.uint64(0xFFFF)
    return np.int64(out)


@njit_cached(error_model="numpy")
def play(start, n, u, per_fight, counts, wounds, limit, pair, pair_bits,
         hit_one, hit_one_at, hit_one_bits, fails, fails_at, fails_bits, partial, partial_at, partial_bits,
         roll_a, roll_ab, roll_width, extra_die, extra_hit, prone, instant, need_of, can_mist,
         remaining, alive, misted, n_rounds):
    """Play fights ``start ..`` (see the module docstring); return the fights done and the uniforms read.

    Per side (index 0 the attacker A, 1 the defender B; ``int64`` arrays of two): ``counts``,
    ``wounds`` (each model's at the start), ``extra_die``, ``extra_hit``, ``prone`` (0 or 1),
    ``instant`` (its hits kill outright: 0 or 1), ``can_mist`` (its models can be misted).
    ``pair``: the ``AliasPacked.records`` of the pair table (``pair_bits`` bits a row).
    ``hit_one``, ``fails``, ``partial``: both sides' records of that table one after the other,
    side ``s``'s from ``*_at[s]`` on with ``*_bits[s]`` bits a row (``hit_one`` of side ``s``: its
    hits on a single model of the other; ``fails``: failed checks of its hits, a placeholder row 0
    where its hits kill outright; ``partial``: a model of side ``s`` that survives some fails).
    ``roll_a`` / ``roll_ab``: the ganged duel roll, P(A wins) and P(A or B wins), by
    ``dice A * roll_width + dice B``. ``need_of[32 s + w]``: the failed checks of side ``s``'s
    hits that slay a model of ``w`` wounds (1 under instant death). Results are written at
    ``[f]`` and ``[s, f]`` of ``remaining`` (wounds), ``alive``, ``misted``, ``n_rounds``.
    """
    nA, nB = counts[0], counts[1]
    WA, WB = wounds[0], wounds[1]
    N = nA + nB
    key = np.empty(N, np.int64)
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
        mist_a = 0
        mist_b = 0
        while True:
            pairs = min(cA, cB)
            first_pair = 0
            mA = 0                                   # next row of a standing model, per side
            mB = nA
            if cA != cB:
                # combat 0: side y's first model and its models past the pairs against x's first
                first_pair = 1
                y = np.int64(cB > cA)
                x = 1 - y
                lo_y = y * nA
                x_row = x * nA
                c_y = max(cA, cB)
                size_y = 1 + c_y - pairs
                # the members (all standing: each key is the wounds) in one pass: the wounds they roll
                # and hit with, and the two weakest as ``key << 8 | row`` (least first: fewest wounds,
                # ties to the first listed), which are the first two the failed checks may slay
                sum_y = key[lo_y]
                weakest = (sum_y << 8) | lo_y
                second = _DEAD << 8                      # none (a group of one): sorts after any member
                for j in range(lo_y + pairs, lo_y + c_y):
                    kj = key[j]
                    sum_y += kj
                    sort_key = (kj << 8) | j
                    second = min(second, max(weakest, sort_key))
                    weakest = min(weakest, sort_key)
                w_x = key[x_row] & _WOUNDS
                dice_x = (w_x + extra_die[x]) * (1 - prone[x])
                dice_y = (sum_y + extra_die[y] * size_y) * (1 - prone[y])
                hits_x = w_x + extra_hit[x]                             # counted at the start
                hits_y = sum_y + extra_hit[y] * size_y
                cell = dice_x * roll_width + dice_y if x == 0 else dice_y * roll_width + dice_x
                q = np.float64(u[pos]) * _SCALE
                a_wins = np.int64(q < roll_a[cell])
                b_wins = np.int64(q < roll_ab[cell]) - a_wins
                x_wins = a_wins + x * (b_wins - a_wins)
                y_wins = b_wins + x * (a_wins - b_wins)
                # x lost (drawn either way): the ganged side's hits land on the single model
                v = np.int64(u[pos + 1])
                bits = hit_one_bits[y]
                slot = hit_one_at[y] + (((hits_y * (wounds[x] + 1) + w_x) << bits) | (v >> (32 - bits)))
                hit = _draw(hit_one[slot], v)
                key[x_row] = key[x_row] if x_wins else hit
                # y lost: the single model's hits, as failed checks (row 0 of a placeholder under
                # instant death, where each hit slays), none if y won
                v = np.int64(u[pos + 2])
                pos += 3
                inst = instant[x]
                bits = fails_bits[x]
                slot = fails_at[x] + (((hits_x * (1 - inst)) << bits) | (v >> (32 - bits)))
                budget = (inst * hits_x + (1 - inst) * _draw(fails[slot], v)) * (1 - y_wins)
                slain = _DEAD | (_MISTED * inst)
                need_at = 32 * x
                slain_so_far = 0
                while budget > 0:
                    # the standing member with the fewest wounds, ties to the first listed: after two
                    # slain, the least key << 8 | row again (a fallen member's key, at least _DEAD,
                    # sorts after every standing one)
                    if slain_so_far == 0:
                        best = weakest
                    elif slain_so_far == 1:
                        best = second
                    else:
                        best = (key[lo_y] << 8) | lo_y
                        for j in range(lo_y + pairs, lo_y + c_y):
                            best = min(best, (key[j] << 8) | j)
                    best_w = best >> 8
                    if best_w >= _DEAD:                 # the whole group is slain
                        break
                    row = best & 255
                    need = need_of[need_at + best_w]
                    if need > budget:
                        # it survives the fails left: backing away (blocked-yard hits)
                        v = np.int64(u[pos])
                        pos += 1
                        bits = partial_bits[y]
                        slot = partial_at[y] + (((best_w * (wounds[y] + 1) + budget) << bits) | (v >> (32 - bits)))
                        key[row] = _draw(partial[slot], v)
                        break
                    key[row] = slain
                    budget -= need
                    slain_so_far += 1
                # row 0 of both sides stays where it is: counted here, before the pairs move up
                a = key[0]
                mA += a < _DEAD
                mist_a += (a >> 5) & 1
                b = key[nA]
                mB += b < _DEAD
                mist_b += (b >> 5) & 1
            # the one-against-one combats, each pair's two models moved up as they are passed (no
            # branch on a death: one would mispredict about every other phase)
            for k in range(first_pair, pairs):
                v = np.int64(u[pos])
                pos += 1
                a = key[k]                           # standing: the key is the wounds
                b = key[nA + k]
                slot = ((a * (WB + 1) + b) << pair_bits) | (v >> pair_shift)
                change = _draw(pair[slot], v)
                a += ((change & 255) ^ 128) - 128    # two int8 changes: A's, then B's
                b += (((change >> 8) & 255) ^ 128) - 128
                key[mA] = a
                mA += a < _DEAD
                mist_a += (a >> 5) & 1
                key[mB] = b
                mB += b < _DEAD
                mist_b += (b >> 5) & 1
            # the rows past the pairs (one side has any at most)
            for j in range(pairs, cA):
                a = key[j]
                key[mA] = a
                mA += a < _DEAD
                mist_a += (a >> 5) & 1
            for j in range(nA + pairs, nA + cB):
                b = key[j]
                key[mB] = b
                mB += b < _DEAD
                mist_b += (b >> 5) & 1
            cA = mA
            cB = mB - nA
            fought += 1
            if cA == 0 or cB == 0 or fought == limit:
                break
        left_a = 0
        left_b = 0
        for j in range(cA):
            left_a += key[j]
        for j in range(nA, nA + cB):
            left_b += key[j]
        remaining[0, f] = left_a
        remaining[1, f] = left_b
        alive[0, f] = cA
        alive[1, f] = cB
        misted[0, f] = mist_a if can_mist[0] else 0
        misted[1, f] = mist_b if can_mist[1] else 0
        n_rounds[f] = fought
        f += 1
    return f, pos
