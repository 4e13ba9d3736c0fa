"""``duel`` compiled kernel of mixed sides (army lists): the reference's fight, model by model, in a Numba loop.

Importing this module imports Numba (see :mod:`.compiled`). :func:`play_mixed` plays fights
``start, start + 1, ...`` one after another, each from its first combat phase to its end, until
``n`` fights are done or the uniforms left in ``u`` might not cover one more fight
(``per_fight``: an upper bound on the uniforms a fight reads); it returns the fights done and
the uniforms read. The caller refills ``u`` from the block's stream
(:func:`sim.kernels.uniforms.play_buffered`), so a run depends only on its stream and ``n``.

Every step is the reference's (:func:`.reference.resolve_fight`), with one 32-bit uniform
where the reference reads dice:

* a random line-up (``pairing = "random"``): a Fisher-Yates shuffle of each shuffled side's
  living models, ``j = u * (x + 1) >> 32``;
* a duel roll: the highest of ``n`` d6 is ``1 +`` the number of ``k = 1..5`` with
  ``u >= floor((k / 6) ** n * 2 ** 32)`` (:data:`dice_thresholds`): exact to ``2 ** -32``;
* a Toughness check: failed when ``u < floor(p_fail * 2 ** 32)``.

Models are numbered in listed order, attackers ``0 .. na - 1`` then defenders; a model's
profile index is into the concatenated profiles (the attacker's, then the defender's).
"""

from __future__ import annotations

import numpy as np

from ...kernels.compile_cache import njit_cached

__all__ = ["play_mixed"]


@njit_cached()
def _roll(v, n, thresholds):
    """The highest of ``n`` d6 from the uniform ``v``."""
    r = 1
    for k in range(5):
        r += v >= thresholds[n, k]
    return r


@njit_cached(error_model="numpy")
def play_mixed(start, n, u, per_fight, na, nd, prof, shuffle, prone, space0, W, EXD, EXH, WS, DMG, HS, TOUGH,
               fail_thr, dice_thr, spread, limit, capped_is_draw, start_wounds,
               remaining, alive_out, misted_out, rounds_out):
    """Play fights ``start ..``; return the fights done and the uniforms read (see the module docstring).

    ``prof``: each model's profile (listed order); ``shuffle[k]``, ``prone[k]``, ``space0[k]`` (-1: unlimited):
    per side. Per profile: ``W`` wounds, ``EXD``/``EXH`` the "+1A" extra die / hit, ``WS``, ``DMG`` damage,
    ``HS`` hit Strength, ``TOUGH`` Toughness; ``fail_thr[p, q]``: the check of profile ``p``'s hit on profile
    ``q`` fails when the uniform is below it. ``spread``: the winner spreads its hits (else the weakest first).
    Writes each fight's wounds left per side, models left, models misted and phases fought.
    """
    nw = na + nd
    w = np.empty(nw, np.int64)
    sp = np.empty(nw, np.int64)
    misted = np.zeros(nw, np.bool_)
    took = np.zeros(nw, np.int64)
    recv = np.zeros(nw, np.int64)
    start_w = np.empty(nw, np.int64)
    live = np.empty((2, nw), np.int64)
    n_live = np.zeros(2, np.int64)
    memb = np.empty((2, nw), np.int64)
    n_memb = np.zeros(2, np.int64)
    pos = 0
    size = u.shape[0]
    f = start
    while f < n and pos + per_fight <= size:
        for g in range(nw):
            w[g] = W[prof[g]]
            k = 0 if g < na else 1
            sp[g] = space0[k]
            misted[g] = False
        r = 0
        while r < limit:
            # the living models of each side, in listed order (or this phase's random order)
            for k in range(2):
                lo, hi = (0, na) if k == 0 else (na, nw)
                c = 0
                for g in range(lo, hi):
                    if w[g] > 0:
                        live[k, c] = g
                        c += 1
                n_live[k] = c
            if n_live[0] == 0 or n_live[1] == 0:
                break
            r += 1
            for k in range(2):
                if shuffle[k]:
                    for x in range(n_live[k] - 1, 0, -1):
                        j = (np.int64(u[pos]) * (x + 1)) >> 32
                        pos += 1
                        live[k, x], live[k, j] = live[k, j], live[k, x]
            pairs = min(n_live[0], n_live[1])
            for g in range(nw):
                start_w[g] = w[g]          # wounds at the start of the roll: each model is in one combat
            for cb in range(pairs):
                for k in range(2):
                    memb[k, 0] = live[k, cb]
                    c = 1
                    if cb == 0:
                        for x in range(pairs, n_live[k]):
                            memb[k, c] = live[k, x]
                            c += 1
                    n_memb[k] = c
                # the duel roll: one d6 per wound (+1 per "+1A" extra die), keep the highest; prone: a 1
                res0, res1 = 1, 1
                ws0, ws1 = -1, -1
                for k in range(2):
                    dice = 0
                    best_ws = -1
                    for x in range(n_memb[k]):
                        g = memb[k, x]
                        dice += start_w[g] + EXD[prof[g]]
                        best_ws = max(best_ws, WS[prof[g]])
                    res = 1
                    if not prone[k]:
                        res = _roll(np.int64(u[pos]), dice, dice_thr)
                        pos += 1
                    if k == 0:
                        res0, ws0 = res, best_ws
                    else:
                        res1, ws1 = res, best_ws
                lose0 = res0 < res1 or (res0 == res1 and ws0 <= ws1)
                lose1 = res1 < res0 or (res0 == res1 and ws1 <= ws0)
                for k in range(2):
                    for x in range(n_memb[k]):
                        took[memb[k, x]] = 0
                # the hits: each winning model in turn, as many as its wounds at the start (+1 "+1A")
                for j in range(2):
                    if not (lose0 if j == 0 else lose1):
                        continue
                    h = 1 - j
                    for x in range(n_memb[j]):
                        recv[memb[j, x]] = 0
                    done = False
                    for y in range(n_memb[h]):
                        m = memb[h, y]
                        pm = prof[m]
                        for _ in range(start_w[m] + EXH[pm]):
                            t = -1
                            best = 1 << 40
                            for x in range(n_memb[j]):
                                g = memb[j, x]
                                if w[g] > 0:
                                    key = (recv[g] if spread else w[g]) * 1024 + (g if g < na else g - na)
                                    if key < best:
                                        best, t = key, g
                            if t < 0:
                                done = True
                                break
                            recv[t] += 1
                            pt = prof[t]
                            if HS[pm] >= TOUGH[pt]:
                                w[t] = 0                      # instant death: misted
                                misted[t] = True
                            else:
                                v = np.int64(u[pos])
                                pos += 1
                                if v < fail_thr[pm, pt]:
                                    loss = min(DMG[pm], w[t])
                                    w[t] -= loss
                                    took[t] += loss
                        if done:
                            break
                # backing away: a yard per wound lost; each blocked yard is a hit from the winners' first model
                for j in range(2):
                    if not (lose0 if j == 0 else lose1):
                        continue
                    lead = prof[memb[1 - j, 0]]
                    for x in range(n_memb[j]):
                        g = memb[j, x]
                        if w[g] == 0 or took[g] == 0:
                            continue
                        yards = took[g]
                        if prone[j]:
                            backed = 0
                        elif sp[g] < 0:
                            backed = yards
                        else:
                            backed = min(yards, sp[g])
                            sp[g] -= backed
                        for _ in range(yards - backed):
                            if w[g] == 0:
                                break
                            pt = prof[g]
                            if HS[lead] >= TOUGH[pt]:
                                w[g] = 0
                                misted[g] = True
                            else:
                                v = np.int64(u[pos])
                                pos += 1
                                if v < fail_thr[lead, pt]:
                                    w[g] -= min(DMG[lead], w[g])
        for k in range(2):
            lo, hi = (0, na) if k == 0 else (na, nw)
            left, alive, mist = 0, 0, 0
            for g in range(lo, hi):
                left += w[g]
                alive += w[g] > 0
                mist += misted[g]
            remaining[k, f] = left
            alive_out[k, f] = alive
            misted_out[k, f] = mist
        rounds_out[f] = r
        f += 1
    return f, pos
