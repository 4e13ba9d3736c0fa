"""``duel`` group kernel: every combat of a phase drawn whole from its exact outcome table.

State: one ``int8`` key per model, ``dead << 6 | misted << 5 | wounds``, in a
*column-major* (attacker models + defender models, trials) array: row ``j`` of
a side's block is its ``j``-th standing model, in listed order (the pairing
order), its fallen models after them (in any order). Every step of a phase is then an
operation on whole contiguous rows of trials (NumPy's fast path); a trial-major
layout spends most of its time in per-trial loop overhead on 10-20 short columns.
A phase is:

- combats 1 .. pairs - 1 (and combat 0 when nobody gangs up): one model against
  one. Their outcome depends only on the two models' wounds, so one 32-bit
  uniform per combat draws it from the ``pair`` alias table (the whole grid at
  once; a row past a trial's pairs holds a fallen model and its table row leaves
  it unchanged). The table holds both models' key changes, added in place;
- combat 0 of trials where one side has left-over models (ganging up): the duel
  roll by dice counts (one uniform), the single model's fate by hits received
  (one uniform), the ganged side's failed checks (one uniform), assigned to the
  weakest member first (one minimum over the members per model slain), and the
  surviving damaged member's blocked-yard hits (one uniform);
- the compaction: each side's standing models moved to the front in order (a
  stable partition by one scatter), which also counts them. The same scatter
  puts the fights in descending order of their next phase's pairs (a stable
  radix sort of small integers), so the fights that fight combat ``k`` are a
  prefix of the columns: each block of pair rows draws for contiguous columns
  only (no gather, and about a third fewer draws than a cut over all fights).

At most ``CHUNK`` fights (and ``CHUNK_KEYS`` model keys) are in flight: finished
fights leave the working set every phase and fresh ones join it in batches (in
front: they have the most pairs), so the arrays stay in cache and a block's long
tail costs no phases of its own. Memory per block is therefore
bounded whatever its size: the results (a few ``int64`` per trial) plus about
10 MB of working arrays for 20 against 20; the tables are O(wounds^2 x models)
(under 15 MB at 20 models of 20 wounds a side).

Used for the default ``fewest_wounds`` assignment; ``spread`` in a ganged combat
(hit by hit, deaths redirecting hits) runs in :mod:`.kernel`. Where Numba
imports, :mod:`.compiled` plays these fights instead, by these rules and
from the same tables (``Duel.with_engine(plan, "numpy")`` keeps this kernel; the
tests hold the two to the same distribution).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...outcomes import Outcomes
from ...ruleset import END, Rounds
from .plan import DuelPlan, make_outcomes
from .tables import DEAD, MISTED, WOUNDS, DuelTables

__all__ = ["simulate_fast"]

_NONE = np.uint16(0xFFFF)   # sort key of a model that takes no hit (above every member's)

#: Fights in flight: small enough for the working arrays to stay near the cache, large enough to
#: amortise NumPy's per-call cost over the 20-80 calls on model rows a phase. Since the pair rows are
#: drawn in blocks (more calls a phase), 32,768 took 5-15% less time a fight than 16,384 at 10 v 10;
#: at 20 v 20 no less at best and more when another process shares the cache, hence also
#: ``CHUNK_KEYS``: at most that many model keys in flight (16,384 fights at 20 v 20, about 10 MB).
CHUNK = 32768
CHUNK_KEYS = 20 * 32768
#: Fresh fights join the working set when fewer than this share of ``CHUNK`` are still going,
#: so the long tail of a batch rides along with the next one instead of costing phases alone.
REFILL = 0.25


def simulate_fast(plan: DuelPlan, tables: DuelTables, n: int, rng: np.random.Generator, rounds: Rounds,
                  max_rounds: int) -> Outcomes:
    """``n`` fights of a group matchup (any counts) with ``fewest_wounds`` assignment.

    At most ``CHUNK`` fights are in flight; finished ones leave the working set every
    phase and fresh ones join it in batches (a phase does not depend on its number:
    each fight counts its own). The fights are independent and alike, so the results are
    listed in the order the fights finish (contiguous writes; no fight numbers to carry
    through the reordering). The result depends only on ``n`` and the stream.
    """
    limit = max_rounds if rounds == END else int(rounds)
    nA, nB = plan.sides[0].count, plan.sides[1].count
    chunk = max(1024, min(CHUNK, CHUNK_KEYS // (nA + nB)))  # fights in flight: by the plan alone
    WB = plan.sides[1].wounds
    identity = (plan.sides[0].wounds + 1) * (WB + 1)  # offset of the pair table's "unchanged" rows
    start = np.array([plan.sides[0].wounds] * nA + [WB] * nB, np.int8)[:, None]
    remaining = np.zeros((2, n), np.int64)
    alive = np.zeros((2, n), np.int64)
    misted = np.zeros((2, n), np.int64)
    n_rounds = np.zeros(n, np.int64)
    # misted models only on a side that instant death can reach (its hitter's ``instant``)
    can_mist = (plan.instant[1], plan.instant[0])
    key = np.empty((nA + nB, 0), np.int8)
    fought = np.empty(0, np.int32)
    cA = cB = np.empty(0, np.int32)
    started = finished = 0
    while started < n or fought.size:
        if started < n and fought.size < REFILL * chunk:
            # fresh fights first: they have the most pairs, so the descending order of pairs holds
            fresh = min(chunk - fought.size, n - started)
            key = np.concatenate([np.repeat(start, fresh, axis=1), key], axis=1)
            fought = np.concatenate([np.zeros(fresh, np.int32), fought])
            cA = np.concatenate([np.full(fresh, nA, np.int32), cA])
            cB = np.concatenate([np.full(fresh, nB, np.int32), cB])
            started += fresh
        pairs = np.minimum(cA, cB)
        gang = cA != cB
        w = key & WOUNDS
        # trials with more than k pairs: the first n_more[k] (descending order of pairs)
        n_more = (pairs.size - np.cumsum(np.bincount(pairs))).tolist()
        _pair_combats(tables, key, w, pairs, n_more, gang, nA, WB, identity, rng)
        if gang.any():
            _ganged(plan, tables, key, w, cA, cB, pairs, n_more, gang, rng)
        target, cA, cB = _new_rows(key, nA)
        fought += 1
        over = (cA == 0) | (cB == 0) | (fought == limit)
        keep = None
        if over.any():
            # the results are sums over each side's models: read before the compaction moves them
            o = np.flatnonzero(over)
            done = slice(finished, finished + o.size)
            finished += o.size
            k_over = np.take(key, o, axis=1)
            for s, (lo, hi) in enumerate(((0, nA), (nA, nA + nB))):
                remaining[s, done] = np.add.reduce(k_over[lo:hi] & WOUNDS, axis=0, dtype=np.int16)
                if can_mist[s]:
                    misted[s, done] = np.add.reduce(k_over[lo:hi] & MISTED, axis=0, dtype=np.int16) // MISTED
            alive[0, done], alive[1, done] = cA[o], cB[o]
            n_rounds[done] = fought[o]
            keep = ~over
        order = _by_pairs(cA, cB, keep)
        cA, cB, fought = cA[order], cB[order], fought[order]
        key = _compact(key, target, order)
    return make_outcomes(plan, (remaining[0], remaining[1]), (alive[0], alive[1]), (misted[0], misted[1]),
                         n_rounds, rounds, limit)


def _new_rows(key: NDArray[np.int8], nA: int) -> tuple[NDArray[np.int8], NDArray, NDArray]:
    """Each model's row once its side's standing models come first, in listed order, and its fallen
    ones after; and the standing counts of both sides.

    A standing model's new row is the side's first row plus the standing models above it
    (a running count down the rows, in ``int8`` like the keys: no casting); a fallen one's is counted from the
    side's last row up (the fallen end up in reverse order: they take no further part).
    """
    N, m = key.shape
    standing = (key < DEAD).view(np.int8)
    above = np.empty((N + 2, m), np.int8)    # per side: its first row, then the running count
    for s, (lo, hi) in enumerate(((0, nA), (nA, N))):
        above[lo + s] = lo
        for j in range(lo, hi):
            np.add(above[j + s], standing[j], out=above[j + s + 1])
    target = np.concatenate([above[:nA], above[nA + 1:N + 1]])
    base = _from_bottom(nA, N)
    target += base
    target -= standing * base                # standing: the running count alone
    return target, above[nA].astype(np.int32), (above[N + 1] - nA).astype(np.int32)


def _by_pairs(cA: NDArray, cB: NDArray, keep: NDArray[np.bool_] | None) -> NDArray[np.intp]:
    """The trials ``keep`` (None: all), in descending order of their pairs ``min(cA, cB)`` (stable: a
    radix sort of ``int16``, about as fast as one pass), as indices into all the trials."""
    pairs = np.minimum(cA, cB)
    kept = None if keep is None else np.flatnonzero(keep)
    if kept is not None:
        pairs = pairs[kept]
    if pairs.size == 0:
        return np.empty(0, np.intp)
    order = np.argsort((int(pairs.max()) - pairs).astype(np.int16), kind="stable")
    return order if kept is None else kept[order]


def _compact(key: NDArray[np.int8], target: NDArray[np.int8], order: NDArray[np.intp]) -> NDArray[np.int8]:
    """The keys moved to their ``target`` rows, and the trials ``order`` moved to columns 0, 1, ...
    (the others dropped): one scatter that moves the kept trials' columns first (then one contiguous
    copy of them unless every trial stays)."""
    N, m = key.shape
    m_new = order.size
    col = np.empty(m, np.int32)
    if m_new < m:                                # the dropped trials after the kept ones, in any order
        col.fill(-1)
        col[order] = np.arange(m_new, dtype=np.int32)
        gone = col < 0
        col[gone] = np.arange(m_new, m, dtype=np.int32)
    else:
        col[order] = np.arange(m, dtype=np.int32)
    # the flat index in int32 (N * m is far below 2**31), widened once for the scatter: a third less
    # memory traffic than building it in intp
    flat = target.astype(np.int32)
    flat *= m
    flat += col
    out = np.empty((N, m), key.dtype)
    out.ravel()[flat.ravel().astype(np.intp)] = key.ravel()
    return out if m_new == m else np.ascontiguousarray(out[:, :m_new])


def _from_bottom(nA: int, N: int) -> NDArray[np.int8]:
    """Per row ``j`` of a side ``[lo, hi)``: ``hi - 1 - j``, as an (N, 1) column."""
    j = np.arange(N)
    return (np.where(j < nA, nA, N) - 1 - j).astype(np.int8)[:, None]


#: A block of pair rows draws for the fights of its first row; a further row joins it while the draws wasted
#: on it (fights with fewer pairs) are fewer than this or an eighth of the block's (a block costs about 15
#: NumPy calls: a few thousand draws' worth).
_SLACK = 2048


def _pair_combats(tables: DuelTables, key: NDArray[np.int8], w: NDArray[np.int8], pairs: NDArray, n_more: list[int],
                  gang: NDArray[np.bool_], nA: int, WB: int, identity: int, rng: np.random.Generator) -> None:
    """Every one-against-one combat (row k of each side, k < pairs), one 32-bit uniform each, in place.

    The trials are in descending order of ``pairs`` (see :func:`_by_pairs`), so those with more
    than ``k`` pairs are the first ``n_more[k]``: rows are drawn in blocks, each over the column
    prefix of its first row (a row past a trial's pairs holds a fallen model on one side, and its
    table row leaves both models unchanged). Combat 0 of ganged trials is left unchanged (the
    table's identity rows); when those are most of the trials, combat 0 of the others is drawn
    on its own instead (a gather and scatter of the few, not draws wasted on the many). One
    look-up gives both models' key changes (two ``int8`` in one ``int16``), added to the two
    sides' rows through ``int8`` views of the result.
    """
    K = int(pairs[0]) if pairs.size else 0       # the most pairs: the first trial's
    if K == 0:
        return
    table = tables.pair
    lo = 0
    solo = np.flatnonzero(~gang)
    if 2 * solo.size < gang.size:                # combat 0 one against one in under half the trials
        lo = 1
        if solo.size:
            code = np.multiply(w[0, solo], WB + 1, dtype=np.int16)
            code += w[nA, solo]
            change = table.sample(code, rng).view(np.int8)
            key[0, solo] += change[0::2]
            key[nA, solo] += change[1::2]
    while lo < K:
        n = n_more[lo]
        hi = lo + 1
        while hi < K and n - n_more[hi] <= max(_SLACK, n >> 3):
            hi += 1
        code = np.multiply(w[lo:hi, :n], WB + 1, dtype=np.int16)
        code += w[nA + lo:nA + hi, :n]
        if lo == 0:
            code[0] += gang[:n] * np.int16(identity)
        change = table.sample(code, rng).view(np.int8)  # (rows, 2 * trials): A, B, A, B, ...
        key[lo:hi, :n] += change[:, 0::2]
        key[nA + lo:nA + hi, :n] += change[:, 1::2]
        lo = hi


def _ganged(plan: DuelPlan, tables: DuelTables, key: NDArray[np.int8], w: NDArray[np.int8], cA: NDArray,
            cB: NDArray, pairs: NDArray, n_more: list[int], gang: NDArray[np.bool_], rng: np.random.Generator) -> None:
    """Combat 0 of the trials ``gang`` where one side (y) has left-over models: they all join it against
    the other side's (x) first model. ``key`` is updated in place; ``w``: wounds at the start of the
    phase."""
    s0, s1 = plan.sides
    nA, nB = s0.count, s1.count
    g = np.flatnonzero(gang)
    # the members' wounds: each side's first model, and the standing models past the pairs (only the
    # larger side has any; a fallen model has no wounds, so no mask for it). Both sides stand, so
    # pairs >= 1: row 0 is not past. Row j is past the pairs of the trials from n_more[j] on (descending
    # order of pairs): a sum of row suffixes over every trial (contiguous), then the ganged ones.
    wsum = []
    for lo, hi in ((0, nA), (nA, nA + nB)):
        acc = w[lo].astype(np.int16)
        for j in range(1, min(hi - lo, len(n_more))):
            np.add(acc[n_more[j]:], w[lo + j, n_more[j]:], out=acc[n_more[j]:])
        if hi - lo > len(n_more):            # rows past every trial's pairs
            acc += np.add.reduce(w[lo + len(n_more):hi], axis=0, dtype=np.int16)
        wsum.append(acc[g].astype(np.int32))
    pg = pairs[g]
    extra = np.abs(cA[g] - cB[g])                                 # left-over models of the larger side
    y_is_b = cB[g] > cA[g]
    size = (1 + extra * ~y_is_b, 1 + extra * y_is_b)               # members per side
    # the duel roll: one d6 per wound (+1 per model with an extra die), keep the highest
    dA = np.zeros(g.size, np.int32) if s0.prone else wsum[0] + s0.extra_die * size[0]
    dB = np.zeros(g.size, np.int32) if s1.prone else wsum[1] + s1.extra_die * size[1]
    u = rng.random(g.size)
    cell = dA * tables.roll.shape[2] + dB
    a_wins = u < np.take(tables.roll[0], cell)
    b_wins = ~a_wins & (u < np.take(tables.roll[1], cell))
    hits = (wsum[0] + s0.extra_hit * size[0], wsum[1] + s1.extra_hit * size[1])  # counted at the start
    lost = (~a_wins, ~b_wins)
    groups = []
    for x in (0, 1):
        y = 1 - x
        x_row = 0 if x == 0 else nA
        x_side = ~y_is_b if x == 1 else y_is_b
        # the single model lost: the ganged side's hits land on it
        r = np.flatnonzero(x_side & lost[x])
        if r.size:
            t = g[r]
            key[x_row, t] = tables.hit_one[y].sample(hits[y][r] * (plan.sides[x].wounds + 1) + w[x_row, t], rng)
        # the ganged side lost: the single model's hits, weakest member first (both sides' at once below)
        r = np.flatnonzero(x_side & lost[y])
        if r.size:
            fails = hits[x][r] if plan.instant[x] else tables.fails[x].sample(hits[x][r], rng)
            groups.append((x, g[r], pg[r], fails))
    if groups:
        _assign(plan, tables, key, groups, rng)


def _assign(plan: DuelPlan, tables: DuelTables, key: NDArray[np.int8], groups: list, rng: np.random.Generator) -> None:
    """Failed checks (or instant-death hits) from one model on the ganged side's members in combat 0:
    its first model and those past the pairs. ``groups``: per hitting side ``x``, the trials, their
    pairs and the fails; ``key`` is updated in place.

    Each fail goes to the member with the fewest wounds left (ties: listed order), so
    only the number of fails is random: the weakest member dies while the fails last.
    A member's sort key is ``need << 11 | wounds << 6 | row`` (``need``: the fails that
    slay it, which only grow with the wounds, so the order is by wounds then row): one
    minimum per model slain (at most the hitter's hits, so a few minima rather than a
    sort), both sides' groups in one block. A trial that stops no longer changes, so
    the last minimum is every trial's first survivor, and the fails left are its own:
    at most one member survives damaged; it backs away (the ``partial`` table).
    """
    nA = plan.sides[0].count
    c = max(plan.sides[0].count, plan.sides[1].count)
    sort_keys, parts, budget = [], [], []
    for x, t, pairs, fails in groups:
        y = 1 - x
        lo, hi = (nA, nA + plan.sides[1].count) if y == 1 else (0, nA)
        if hi - lo == c:
            blk = np.take(key[lo:hi], t, axis=1)
        else:  # the smaller side's block padded with fallen models
            blk = np.full((c, t.size), DEAD, key.dtype)
            blk[:hi - lo] = np.take(key[lo:hi], t, axis=1)
        wy = blk & WOUNDS
        row = np.arange(c, dtype=np.uint16)[:, None]
        sk = _sort_keys(plan, x, wy.astype(np.uint16))
        sk |= row
        # rows 1 .. pairs - 1 fight their own combats: ``t`` ascends and the pairs descend along the
        # trials, so row j is paired in the first (pairs > j) of them
        paired = np.searchsorted(-pairs, -np.arange(1, c), side="left").tolist()
        for j, n in enumerate(paired, 1):
            if n == 0:
                break
            sk[j, :n] = _NONE
        sort_keys.append(sk)
        parts.append(np.full(t.size, DEAD | MISTED if plan.instant[x] else DEAD, np.int8))  # a slain member's key
        budget.append(fails.astype(np.uint16))
    sk, part, budget = (np.concatenate(a, axis=-1) for a in (sort_keys, parts, budget))
    was_none = sk == _NONE
    top = max(plan.sides[x].wounds + plan.sides[x].extra_hit for x, *_ in groups)  # most hits: most slain
    for _ in range(min(top, c) + 1):  # each slain member takes a fail; the last round finds none
        weakest = sk.min(axis=0)
        need = weakest >> 11                  # 31 for _NONE: more than any hits
        dies = need <= budget
        if not dies.any():
            break
        budget -= need * dies
        # the weakest member of each trial that slays one leaves the order (a trial that slays
        # nobody looks for _NONE: only members already out of it match)
        sk |= (sk == (weakest | ~dies * _NONE)) * _NONE
    else:  # not reached (the last round slays nobody); kept so ``weakest`` is always the survivor
        weakest = sk.min(axis=0)
    slain = sk == _NONE                       # the slain: out of the order now, not at the start
    slain &= ~was_none
    # only what changed goes back, by flat index into ``key`` (a few models a trial, not the block):
    # the slain members' keys, then the damaged survivors'
    M = key.shape[1]
    trials = np.concatenate([t for _, t, _, _ in groups])
    first_row = np.concatenate([np.full(t.size, nA if x == 0 else 0, np.intp) for x, t, _, _ in groups])
    row, col = np.divmod(np.flatnonzero(slain), slain.shape[1])
    np.put(key, (first_row[col] + row) * M + trials[col], part[col])
    at = 0
    for x, t, pairs, fails in groups:
        y = 1 - x
        start, at = at, at + t.size
        if not plan.instant[x]:
            first, left = weakest[start:at], budget[start:at]
            r = np.flatnonzero((first != _NONE) & (left > 0))
            if r.size:
                after = tables.partial[y].sample(((first[r] >> 6) & WOUNDS).astype(np.intp)
                                                 * (plan.sides[y].wounds + 1) + left[r], rng)
                np.put(key, (first_row[start + r] + (first[r] & 63)) * M + t[r], after)


def _sort_keys(plan: DuelPlan, hitter: int, w: NDArray[np.uint16]) -> NDArray[np.uint16]:
    """Sort keys less the row of models of side ``1 - hitter`` with ``w`` wounds: ``need << 11 | w << 6``
    (``need``: the fails that slay one, ``ceil(w / damage)``; one hit each under instant death);
    ``_NONE`` for no wounds (fallen, or a padding row)."""
    if plan.instant[hitter]:
        sk = w << 6
        sk += np.uint16(1 << 11)
    elif plan.sides[hitter].hit_damage == 1:
        sk = w * np.uint16((1 << 11) + (1 << 6))
    else:
        dmg = np.uint16(plan.sides[hitter].hit_damage)
        sk = ((w + (dmg - 1)) // dmg) << 11
        sk |= w << 6
    sk |= (w == 0) * _NONE
    return sk
