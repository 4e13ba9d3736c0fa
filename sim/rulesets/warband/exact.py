"""``warband`` exact answers for one warrior against one: a chain over both warriors' (wounds, status).

A warrior's state is a code: standing with ``w`` wounds left (``0..W``), knocked
down (``W + 1``), stunned (``W + 2``) or out of action (``W + 3``). A round is the
active side's Recovery (knocked down stands up and strikes last, stunned goes
down), the strike order (class, then Initiative, then a fair roll-off), and the
pair's two batches: exactly the phase distributions of an isolated pair that
the compiled kernel samples (:func:`.strikes.pair_rows`, composed from the exact
batch tables of :func:`.single.batch_distribution` and
:func:`.batches.several_batch_distribution`). Round 1 (the charge, heavy weapons'
first-round Strength) and the later rounds of each side's turn are three
matrices over the joint codes; the distribution is propagated to the end (capped
at ``max_rounds``: a capped draw, as in the kernel) or for ``rounds`` rounds, and
final states are read by the kernel's own :func:`.kernel.final_outcomes`.

Groups have no exact chain (who fights whom changes as warriors fall), nor do
batches of more than :data:`.batches.MAX_TABLE_ATTACKS` attacks (their table
would enumerate ``6 ** A`` hit dice); the ``all_alone`` and ``rout`` switches never
apply to a lone warrior.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from numpy.typing import NDArray

from ...errors import MatchupError
from ...exact import ROUND_OVERHEAD, ExactOutcome, from_rows, propagate
from ...kernels.portable import matmul
from ...ruleset import END, Rounds
from .batches import MAX_TABLE_ATTACKS
from .fused import _profile
from .kernel import final_outcomes
from .plan import WarbandPlan
from .strikes import A_FIRST, D_FIRST, TIE, pair_rows, strike_table
from .tables import STANDING

__all__ = ["exact", "exact_work", "obstacle", "round_matrices"]


def obstacle(plan: WarbandPlan) -> str | None:
    """Why this matchup has no exact chain, or None."""
    a, d = plan.attacker, plan.defender
    if a.count != 1 or d.count != 1:
        return f"warband {a.count} v {d.count}: groups have no exact chain (one warrior against one only)"
    for k, u in ((0, a), (1, d)):
        n = max(b.n for b in plan.kernel.blows[k])
        if n > MAX_TABLE_ATTACKS:
            return (f"warband: {u.name} strikes {n} attacks a batch; an exact batch table holds at most "
                    f"{MAX_TABLE_ATTACKS}")
    return None


def exact_work(plan: WarbandPlan, rounds: Rounds, max_rounds: int) -> int | None:
    """The batch tables (``6 ** A`` hit-dice combinations per target row), then a small matrix product a round."""
    if obstacle(plan) is not None:
        return None
    kp = plan.kernel
    tables = sum(3_000 * 6 ** b.n * (kp.sides[1 - k].w + 2) for k in (0, 1) for b in kp.blows[k])
    states = (kp.sides[0].w + 4) * (kp.sides[1].w + 4)
    limit = max_rounds if rounds == END else int(rounds)
    return 40 * ROUND_OVERHEAD + tables + 3_000 * 3 * states * 3 + limit * (states * states + ROUND_OVERHEAD)


#: Round matrices by the two profiles and the settings that shape them (a matrix of cells, a benchmark and
#: repeated runs build them once per process; the batch tables are most of an exact answer's time).
_MATRICES: OrderedDict[tuple, tuple] = OrderedDict()
_MATRICES_KEPT = 64


def round_matrices(plan: WarbandPlan) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Transition matrices over joint codes ``code_a * (Wd + 4) + code_d``: round 1, the attacker's later
    turns (odd rounds), the defender's (even rounds). Rows of finished fights are left empty."""
    key = (_profile(plan.attacker), _profile(plan.defender), plan.charging, plan.fist_as_user)
    if key in _MATRICES:
        _MATRICES.move_to_end(key)
        return _MATRICES[key]
    out = _build_matrices(plan)
    for M in out:
        M.setflags(write=False)
    _MATRICES[key] = out
    if len(_MATRICES) > _MATRICES_KEPT:
        _MATRICES.popitem(last=False)
    return out


def _build_matrices(plan: WarbandPlan) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    kp = plan.kernel
    sides = kp.sides
    W = (sides[0].w, sides[1].w)
    nd = W[1] + 4
    pairs = {first: pair_rows(strike_table(kp.blows[0][first], sides[1], tables=False),
                              strike_table(kp.blows[1][first], sides[0], tables=False)) for first in (0, 1)}
    out = []
    for first, active in ((1, 0), (0, 0), (0, 1)):
        M = np.zeros(((W[0] + 4) * nd, (W[0] + 4) * nd))
        cls = [s.class_round1 if first else s.class_later for s in sides]
        for ca in range(W[0] + 3):
            for cd in range(W[1] + 3):
                codes = [ca, cd]
                stood = codes[active] == W[active] + 1
                if stood:  # Recovery: knocked down stands up with no wounds left, and strikes last
                    codes[active] = 0
                elif codes[active] == W[active] + 2:  # stunned goes down
                    codes[active] = W[active] + 1
                key_active = (2 if stood else cls[active]) * 64 - sides[active].i
                key_other = cls[1 - active] * 64 - sides[1 - active].i
                if key_active == key_other:
                    mode = TIE
                else:
                    mode = A_FIRST if (key_active < key_other) == (active == 0) else D_FIRST
                row = pairs[first][(codes[0] * (W[1] + 3) + codes[1]) * 3 + mode]
                for (a2, d2), p in row.items():
                    M[ca * nd + cd, a2 * nd + d2] += p
        out.append(M)
    return out[0], out[1], out[2]


def exact(plan: WarbandPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
    """The exact outcome distribution of a one-against-one fight (see :func:`obstacle`)."""
    why = obstacle(plan)
    if why is not None:
        raise MatchupError(why)
    kp = plan.kernel
    W = (kp.sides[0].w, kp.sides[1].w)
    nd = W[1] + 4
    first, odd, even = round_matrices(plan)
    codes = np.arange((W[0] + 4) * nd)
    ca, cd = codes // nd, codes % nd
    terminal = (ca == W[0] + 3) | (cd == W[1] + 3)
    start = np.zeros(codes.size)
    start[W[0] * nd + W[1]] = 1.0
    limit = max_rounds if rounds == END else int(rounds)
    run = propagate(lambda p, r: matmul(p[None, :], first if r == 1 else odd if r % 2 else even)[0], start, terminal,
                    limit)
    status, wounds = [], []
    for c, w in ((ca[run.state], W[0]), (cd[run.state], W[1])):
        status.append(np.where(c <= w, STANDING, c - w).astype(np.int8))  # codes above W are W + status
        wounds.append(np.where(c <= w, c, 0).astype(np.int64))
    out = final_outcomes(kp, np.stack(status, 1), np.stack(wounds, 1), run.rounds, run.absorbed, rounds,
                         weights=run.prob)
    return from_rows(out, run.prob, n_categories=3, extra_names=("out_of_action_attacker", "out_of_action_defender"))
