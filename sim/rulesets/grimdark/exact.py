"""``grimdark`` exact answers: the distribution of (wounds lost attacker, wounds lost defender), step by step.

When every model is engaged, everything in a fight is a function of the two
sides' wounds lost ``(La, Ld)`` (:mod:`.plan`): the attacks each strike pool
makes (``Pool.attacks[L]``, read through :func:`attack_counts`, the one place a
rule of engagement enters), the profile a side's wounds are rolled against (its
front group), and where unsaved wounds take it (``min(L + u, W)`` or the
instant-death :class:`.plan.WoundMap`). Within a strike step the two sides
receive independently given the state at the step's start, each side's wounds
from a fold of binomials applied in the kernel's order (:func:`.kernel._apply`:
summed when every pool striking it applies wounds alike, else pool by pool).

So the joint distribution is a dense ``(Wa + 1) x (Wd + 1)`` array propagated
step by step over the part of it that holds mass:

* a step where one side strikes moves each row (column) by the other side's
  transition for that row's attacks: one matrix product per distinct count of
  attacks;
* a step where both strike moves every state by the outer product of the two
  transitions: per state of the smaller side, one matrix product;
* a wiped-out side makes no attacks and cannot lose more, so those states stand
  still; after each round their mass leaves for the outcome rows, read by the
  kernel's :func:`.kernel.outcomes_of`.

Cuts (reported as ``truncated``): each binomial's two tails are cut where
together they hold at most :data:`sim.exact.TAIL_CUT` (an unbounded support in
floating point otherwise fills the whole array), and states below
:data:`DROP_BELOW` are dropped (they would only slow the products down as
subnormal numbers). A fight to the end still going after ``max_rounds`` is a
capped draw, as in the kernel.

Engagement limits (``engaged``) make a round's attacks depend on the wounds lost
at its start as well: no exact chain (Monte Carlo plays them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import MatchupError
from ...exact import ROUND_OVERHEAD, TAIL_CUT, ExactOutcome, from_rows, propagate
from ...kernels.portable import binomial_pmf, matmul
from ...ruleset import END, Rounds
from .kernel import outcomes_of
from .plan import GrimdarkPlan, Pool

__all__ = ["exact", "exact_work", "obstacle", "attack_counts", "MAX_STATES", "DROP_BELOW"]

#: Largest (Wa + 1) * (Wd + 1) propagated (a dense float64 array of 16 MiB).
MAX_STATES = 1 << 21
#: States whose probability falls below this are dropped (and counted as truncated).
DROP_BELOW = 1e-24
EXTRAS = ("models_lost_attacker", "models_lost_defender")
#: Work units of one strike step's Python and small NumPy calls (measured about 1 ms).
STEP_OVERHEAD = 80 * ROUND_OVERHEAD


def obstacle(plan: GrimdarkPlan) -> str | None:
    """Why this matchup has no exact chain, or None."""
    m = plan.matchup
    for k, side in enumerate(plan.sides):
        if not side.all_engaged:
            name = ("attacker", "defender")[k]
            return (f"grimdark {m.attacker.name} v {m.defender.name}: {name}.engaged={side.engaged} (of "
                    f"{side.models}): exact answers need every model engaged (a round's attacks would depend on "
                    "its start too)")
    states = (plan.sides[0].wounds + 1) * (plan.sides[1].wounds + 1)
    if states > MAX_STATES:
        return (f"grimdark {m.attacker.name} v {m.defender.name}: {states:,} (wounds lost) states, more than the "
                f"{MAX_STATES:,} an exact answer propagates")
    return None


def attack_counts(plan: GrimdarkPlan, pools: Sequence[Pool], L: NDArray[np.int64]) -> NDArray[np.int64]:
    """Attacks of each striking pool (columns) when its side has lost ``L`` wounds (rows), every model engaged.

    The one function that says how many attacks a state makes: a rule that
    engages only some models as a function of the wounds lost changes only this.
    """
    if not pools:
        return np.zeros((len(L), 0), np.int64)
    return np.stack([pool.attacks[L] for pool in pools], axis=1)


# ------------------------------------------------------------- received wounds
@lru_cache(maxsize=4096)
def _binomial(n: int, p: float) -> tuple[int, NDArray[np.float64]]:
    """Binomial(n, p) as (first value, probabilities), its tails cut where together they hold at most TAIL_CUT."""
    if n == 0 or p <= 0.0:
        return 0, np.ones(1)
    if p >= 1.0:
        return n, np.ones(1)
    # Pascal's recurrence in + and * only (sim.kernels.portable): the same bits on every machine, which
    # log-gamma and exp are not
    pmf = np.array(binomial_pmf(n, p))
    lo = int(np.searchsorted(np.cumsum(pmf), TAIL_CUT / 2, side="right"))
    hi = n + 1 - int(np.searchsorted(np.cumsum(pmf[::-1]), TAIL_CUT / 2, side="right"))
    out = pmf[lo:hi].copy()
    out.setflags(write=False)
    return lo, out


def _spread(keys: NDArray[np.int64], pools: Sequence[Pool]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Per row of ``keys`` (front group, then attacks of each pool): the first value and probabilities of the
    sum of the pools' unsaved wounds (their binomials convolved), as a padded matrix."""
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    dists = []
    for row in uniq:
        start, pmf = 0, np.ones(1)
        for pool, n in zip(pools, row[1:]):
            s, q = _binomial(int(n), float(pool.p[row[0]]))
            start, pmf = start + s, np.convolve(pmf, q)
        dists.append((start, pmf))
    width = max(len(q) for _, q in dists)
    U = np.zeros((len(dists), width))
    for i, (_, q) in enumerate(dists):
        U[i, : len(q)] = q
    starts = np.array([s for s, _ in dists], np.int64)
    inverse = inverse.ravel()
    return starts[inverse], U[inverse]


def _place(out_row: NDArray[np.int64], n_out: int, L: NDArray[np.int64], start: NDArray[np.int64],
           U: NDArray[np.float64], pool: Pool, W: int) -> tuple[int, NDArray[np.float64]]:
    """Rows ``out_row`` of a matrix over wounds lost (from column ``lo``): mass ``U[i, j]`` taken from ``L[i]``
    by ``start[i] + j`` more unsaved wounds, applied as ``pool`` applies them (:meth:`.plan.Pool.apply`)."""
    u = start[:, None] + np.arange(U.shape[1])[None, :]
    to = pool.apply(np.broadcast_to(L[:, None], u.shape), u, W)
    keep = U > 0
    rows, to, mass = np.broadcast_to(out_row[:, None], u.shape)[keep], to[keep], U[keep]
    lo = int(to.min()) if to.size else 0
    width = (int(to.max()) + 1 - lo) if to.size else 1
    M = np.bincount(rows * width + (to - lo), weights=mass, minlength=n_out * width)
    return lo, M.reshape(n_out, width)


def received(plan: GrimdarkPlan, k: int, pools: Sequence[Pool], L: NDArray[np.int64],
             counts: NDArray[np.int64]) -> tuple[int, NDArray[np.float64]]:
    """Transition rows of side ``k``'s wounds lost when ``pools`` strike it in one step.

    Row ``i`` starts at ``L[i]`` wounds lost, the pools making ``counts[i]``
    attacks; the chance of each attack is read for side ``k``'s front group at
    ``L[i]`` (the step's start). Returns ``(lo, M)``: ``M[i, j]`` = P(side ``k`` has
    lost ``lo + j``). Wounds are applied as the kernel applies them: summed when
    every pool applies them alike, else pool by pool in order.
    """
    side = plan.sides[k]
    W = side.wounds
    n = len(L)
    if not pools:  # nothing strikes this side: it stays where it is
        lo = int(L.min()) if n else 0
        M = np.zeros((n, (int(L.max()) + 1 - lo) if n else 1))
        M[np.arange(n), L - lo] = 1.0
        return lo, M
    front = side.front[L]
    rows = np.arange(n)
    if all(pool.wound_map is pools[0].wound_map for pool in pools):
        start, U = _spread(np.column_stack([front, counts]), pools)
        return _place(rows, n, L, start, U, pools[0], W)
    lo, M = 0, np.zeros((n, 1))
    M[:, 0] = 1.0
    at = L.copy()  # first pool: from L
    for j, pool in enumerate(pools):
        if j:  # later pools: from every (row, wounds lost) the previous ones can leave
            r_idx, c_idx = np.nonzero(M)
            rows, at, weight = r_idx, lo + c_idx, M[r_idx, c_idx]
        else:
            weight = np.ones(n)
        start, U = _spread(np.column_stack([front[rows], counts[rows, j]]), [pool])
        lo, M = _place(rows, n, at, start, U * weight[:, None], pool, W)
    return lo, M


# ------------------------------------------------------------------ one step
#: Entries of the transition rows built at once (a chunk of them), so memory stays bounded.
CHUNK_ENTRIES = 1 << 21


class _Memo:
    """:func:`received` results of one fight, kept while they fit :data:`MEMO_BYTES`: from round 2 on every
    round repeats the same steps, and once the states holding mass stop growing, the same transitions."""

    def __init__(self, plan: GrimdarkPlan) -> None:
        self.plan, self.kept, self.bytes = plan, {}, 0

    def received(self, k: int, pools: Sequence[Pool], L: NDArray[np.int64],
                 counts: NDArray[np.int64]) -> tuple[int, NDArray[np.float64]]:
        key = (k, tuple(id(p) for p in pools), L.tobytes(), counts.shape, counts.tobytes())
        if key in self.kept:
            return self.kept[key]
        out = received(self.plan, k, pools, L, counts)
        if self.bytes + out[1].nbytes <= MEMO_BYTES:
            self.kept[key] = out
            self.bytes += out[1].nbytes
        return out


#: Bytes of transitions one fight keeps for the rounds after (see :class:`_Memo`).
MEMO_BYTES = 64 << 20


def _moves(memo: _Memo, k: int, pools: Sequence[Pool], L: NDArray[np.int64],
           counts: NDArray[np.int64]) -> tuple[int, NDArray[np.float64]]:
    """:func:`received` for every pair (row of ``counts``, state in ``L``): ``M[c, i, j]`` = P(side ``k`` at
    ``L[i]`` has lost ``lo + j`` when its strikers make ``counts[c]`` attacks)."""
    n_c, n = len(counts), len(L)
    lo, M = memo.received(k, pools, np.tile(L, n_c), np.repeat(counts, n, axis=0))
    return lo, M.reshape(n_c, n, -1)


def _chunks(n: int, per_item: int) -> list[NDArray[np.int64]]:
    size = max(1, CHUNK_ENTRIES // max(per_item, 1))
    return [np.arange(i, min(n, i + size)) for i in range(0, n, size)]


def _step(memo: _Memo, P: NDArray[np.float64], step: Sequence[Pool]) -> NDArray[np.float64]:
    """The distribution after one strike step (``P[La, Ld]``; wiped-out rows and columns stand still)."""
    plan = memo.plan
    W = (plan.sides[0].wounds, plan.sides[1].wounds)
    live = P[:W[0], :W[1]]
    support = (np.flatnonzero(live.any(1)), np.flatnonzero(live.any(0)))
    if support[0].size == 0:
        return P
    against = ([p for p in step if p.side == 1], [p for p in step if p.side == 0])  # pools striking side k
    counts = (attack_counts(plan, against[1], support[0]), attack_counts(plan, against[0], support[1]))
    hits = (bool(counts[1].any()), bool(counts[0].any()))  # side k receives anything at all
    if not hits[0] and not hits[1]:
        return P
    X = live[np.ix_(support[0], support[1])]
    new = P.copy()
    new[:W[0], :W[1]] = 0.0

    def add(k: int, lo_k: int, lo_other: int, block: NDArray[np.float64]) -> None:
        """Add ``block`` (side k's wounds lost from lo_k x the other side's from lo_other) to the new array."""
        if k == 0:
            new[lo_k:lo_k + block.shape[0], lo_other:lo_other + block.shape[1]] += block
        else:
            new[lo_other:lo_other + block.shape[1], lo_k:lo_k + block.shape[0]] += block.T

    if hits[0] != hits[1]:
        # one side receives: each state of the striker moves the receiver's states by the transition for
        # its attacks, one matrix product per distinct count of attacks
        k = 0 if hits[0] else 1
        Y = X.T if k == 0 else X  # rows: striker states, columns: receiver states
        keys, groups = np.unique(counts[1 - k], axis=0, return_inverse=True)
        groups = groups.ravel()
        for part in _chunks(len(keys), support[k].size * (W[k] + 1)):
            lo, M = _moves(memo, k, against[k], support[k], keys[part])
            for c, g in enumerate(part):
                block = matmul(Y[groups == g], M[c])   # striker states x receiver targets
                rows = support[1 - k][groups == g]
                if k == 1:
                    new[rows, lo:lo + M.shape[2]] += block
                else:
                    new[lo:lo + M.shape[2], rows] += block.T
        return new
    # both strike: an outer side (the one with fewer states) moves by a transition that varies with the inner
    # side's attacks; the inner side by one per count of the outer side's attacks. Mass moving alike on the
    # inner side is summed first, so each count of outer attacks costs one matrix product.
    o = 0 if support[0].size <= support[1].size else 1
    q = 1 - o
    Y = X if o == 0 else X.T  # rows: outer states, columns: inner states
    keys, groups = np.unique(counts[o], axis=0, return_inverse=True)
    groups = groups.ravel()
    inner = {}
    for part in _chunks(len(keys), support[q].size * (W[q] + 1)):
        lo, M = _moves(memo, q, against[q], support[q], keys[part])
        inner.update({int(g): (lo, M[c]) for c, g in enumerate(part)})
    for part in _chunks(support[o].size, support[q].size * (W[o] + 1)):
        L = support[o][part]
        lo_o, Mo = memo.received(o, against[o], np.repeat(L, support[q].size),
                            np.tile(counts[q], (L.size, 1)))
        Mo = Mo.reshape(L.size, support[q].size, -1) * Y[part][:, :, None]
        for g in np.unique(groups[part]):
            Z = Mo[groups[part] == g].sum(0)          # inner states x outer targets
            lo_q, Mq = inner[int(g)]
            add(o, lo_o, lo_q, matmul(Z.T, Mq))
    return new


# ---------------------------------------------------------------- the fight
def exact(plan: GrimdarkPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
    """The exact outcome distribution of a fight with every model engaged (see :func:`obstacle`)."""
    why = obstacle(plan)
    if why is not None:
        raise MatchupError(why)
    Wa, Wd = plan.sides[0].wounds, plan.sides[1].wounds
    limit = max_rounds if rounds == END else int(rounds)
    if _small(plan):
        return _exact_small(plan, rounds, limit)
    P = np.zeros((Wa + 1, Wd + 1))
    P[0, 0] = 1.0
    ended_a, ended_d, ended_r, ended_p = [], [], [], []
    memo = _Memo(plan)
    truncated = 0.0
    for r in range(1, limit + 1):
        for step in plan.steps_first if r == 1 else plan.steps_later:
            before = float(P.sum())
            P = _step(memo, P, step)
            tiny = (P > 0) & (P < DROP_BELOW)
            if tiny.any():
                P[tiny] = 0.0
            truncated += before - float(P.sum())  # the binomial tails cut, and the tiny states dropped
        over = np.zeros_like(P, bool)
        over[Wa, :] = True
        over[:, Wd] = True
        ended = np.nonzero((over | (r == limit)) & (P > 0))
        ended_a.append(ended[0])
        ended_d.append(ended[1])
        ended_r.append(np.full(ended[0].size, r))
        ended_p.append(P[ended])
        P[ended] = 0.0
        if not P.any():
            break
    cat = np.concatenate
    prob = cat(ended_p)
    out = outcomes_of(plan, cat(ended_a).astype(np.int64), cat(ended_d).astype(np.int64), cat(ended_r), rounds)
    return from_rows(out, prob, n_categories=2, extra_names=EXTRAS, truncated=max(truncated, 0.0))


# ------------------------------------------------------- small fights, many rounds
#: Fights with at most this many (La, Ld) states, whose step matrices hold at most SMALL_ENTRIES entries, are
#: propagated through sparse step matrices built once: later rounds then cost a few sparse products each.
SMALL_STATES = 4096
SMALL_ENTRIES = 1_000_000


def _small(plan: GrimdarkPlan) -> bool:
    states = (plan.sides[0].wounds + 1) * (plan.sides[1].wounds + 1)
    spread = _spreads(plan)
    return states <= SMALL_STATES and states * spread[0] * spread[1] <= SMALL_ENTRIES


def _step_matrix(plan: GrimdarkPlan, step: Sequence[Pool]) -> Any:
    """The step as a sparse matrix ``M`` over states ``La * (Wd + 1) + Ld`` (``p_after = M @ p``): from each
    state both sides' :func:`received` rows, their outer product; wiped-out states stand still."""
    from scipy import sparse  # here, not at the top: loading the rulesets stays fast

    Wa, Wd = plan.sides[0].wounds, plan.sides[1].wounds
    S = (Wa + 1) * (Wd + 1)
    la, ld = np.divmod(np.arange(S), Wd + 1)
    live = np.flatnonzero((la < Wa) & (ld < Wd))
    against = ([p for p in step if p.side == 1], [p for p in step if p.side == 0])
    lo_a, Ma = received(plan, 0, against[0], la[live], attack_counts(plan, against[0], ld[live]))
    lo_d, Md = received(plan, 1, against[1], ld[live], attack_counts(plan, against[1], la[live]))
    ia, ja = np.nonzero(Ma)
    id_, jd = np.nonzero(Md)
    na, nd = np.bincount(ia, minlength=live.size), np.bincount(id_, minlength=live.size)
    per = na * nd
    row = np.repeat(np.arange(live.size), per)
    j = np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)
    at_a = np.repeat(np.cumsum(na) - na, per) + j // np.repeat(nd, per)
    at_d = np.repeat(np.cumsum(nd) - nd, per) + j % np.repeat(nd, per)
    to = (lo_a + ja[at_a]) * (Wd + 1) + lo_d + jd[at_d]
    values = Ma[ia[at_a], ja[at_a]] * Md[id_[at_d], jd[at_d]]
    still = np.setdiff1d(np.arange(S), live)
    return sparse.csr_matrix((np.concatenate([values, np.ones(still.size)]),
                              (np.concatenate([to, still]), np.concatenate([live[row], still]))), shape=(S, S))


def _exact_small(plan: GrimdarkPlan, rounds: Rounds, limit: int) -> ExactOutcome:
    """:func:`exact` for a small fight: step matrices built once, the distribution propagated through them."""
    Wa, Wd = plan.sides[0].wounds, plan.sides[1].wounds
    first = [_step_matrix(plan, step) for step in plan.steps_first]
    later = [_step_matrix(plan, step) for step in plan.steps_later] if limit > 1 else []

    def one_round(p: NDArray[np.float64], r: int) -> NDArray[np.float64]:
        for M in first if r == 1 else later:
            p = M @ p
        return p

    la, ld = np.divmod(np.arange((Wa + 1) * (Wd + 1)), Wd + 1)
    start = np.zeros(la.size)
    start[0] = 1.0
    run = propagate(one_round, start, (la == Wa) | (ld == Wd), limit)
    out = outcomes_of(plan, la[run.state], ld[run.state], run.rounds, rounds)
    return from_rows(out, run.prob, n_categories=2, extra_names=EXTRAS,
                     truncated=max(1.0 - float(run.prob.sum()), 0.0))


def _spreads(plan: GrimdarkPlan) -> list[float]:
    """Per side, about how many values a step's unsaved wounds on it spread over (17 sigma, the cut tails)."""
    W = [s.wounds for s in plan.sides]
    spread = [1.0, 1.0]
    for steps in (plan.steps_first, plan.steps_later):
        for step in steps:
            for k in (0, 1):
                var = sum(int(p.attacks[0]) * float(p.p.max()) * (1 - float(p.p.max())) for p in step
                          if p.side == 1 - k)
                spread[k] = max(spread[k], min(W[k] + 1.0, 17 * math.sqrt(var) + 2))
    return spread


def exact_work(plan: GrimdarkPlan, rounds: Rounds, max_rounds: int) -> int | None:
    """An estimate of :func:`exact`'s work, from how wide each side's received wounds spread in a round.

    Per side, a round's unsaved wounds at full strength spread over about
    ``17 sigma`` values (the cut tails), at most its wounds; the states holding
    mass grow by that much a round. A step where one side strikes costs a matrix
    product over the states (and the receiver's spread); one where both strike,
    that times the other spread. Wiped-out fights and fights to the end are
    counted for every round (their states hold mass, however little).
    """
    if obstacle(plan) is not None:
        return None
    W = [s.wounds for s in plan.sides]
    limit = max_rounds if rounds == END else int(rounds)
    spread = _spreads(plan)
    if _small(plan):  # build the step matrices (Python-light), then sparse products
        states = (W[0] + 1) * (W[1] + 1)
        n_steps = len(plan.steps_first) + (len(plan.steps_later) if limit > 1 else 0)
        entries = states * spread[0] * spread[1]
        return int(60 * ROUND_OVERHEAD + n_steps * (30 * ROUND_OVERHEAD + 60 * entries)
                   + limit * (ROUND_OVERHEAD + len(plan.steps_later) * 3 * entries))
    strikes = [[tuple(any(p.side == 1 - k for p in step) for k in (0, 1)) for step in steps]  # side k receives
               for steps in (plan.steps_first, plan.steps_later)]
    work = 40 * ROUND_OVERHEAD
    for r in range(1, limit + 1):
        states = [min(W[k] + 1.0, 1 + (r - 1) * spread[k]) for k in (0, 1)]
        for receives in strikes[r > 1]:
            rows = states[0] * states[1]
            if receives[0] and receives[1]:
                small = min(states)
                work += small * (max(states) * (spread[0] + spread[1]) * 30 + spread[0] * spread[1] * max(states))
            elif receives[0] or receives[1]:
                k = 0 if receives[0] else 1
                work += rows * spread[k] * 2 + states[1 - k] * 30 * states[k] * spread[k] / max(states[1 - k], 1)
            work += STEP_OVERHEAD + rows * 10
    return int(work)
