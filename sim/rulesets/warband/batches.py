"""``warband`` group kernel: the exact outcome of a batch of several attacks on one target.

A striker's whole batch against one target (to hit, the target's parry, to
wound, the batch's one critical, saves, Step Aside, injuries, helmet, Jump Up)
depends only on the target's state code and whether it may still parry. So,
like the one-attack batch of :func:`.single.batch_distribution`, it is a small
categorical distribution, and the group kernel can draw it with one uniform
instead of rolling every die (:func:`.strikes._dice`, which stays the path of
batches above :data:`MAX_TABLE_ATTACKS`).

The distribution is computed exactly, in the order the dice path rolls:

1. the **hit dice**, every combination of the ``A`` dice (``6 ** A``): which
   attacks hit, whether any scored (that spends the target's parry), and the
   parry of the highest parryable hit below 6 (the first such attack, as the
   dice path picks it), one or two dice;
2. the **landed attacks in index order**, a dynamic programme over (wounds
   dealt so far, capped at the ones that matter; the worst injury rolled so far;
   whether the batch's critical is spent): each attack's wound die (the first
   natural 6 that may be critical is the critical: 2 wounds, a modifier and a
   save rule of its own), its save and Step Aside, and an injury roll for every
   wound from the target's last one on, the worst result kept;
3. the **result**: wounds left, or the worst injury after the helmet (a saved
   stun is a knock-down that Jump Up does not undo) and Jump Up. A knocked-down
   target is hit automatically, cannot parry and goes out of action on any
   unsaved wound.

Rows and outcomes are those of :func:`.single.batch_distribution`.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

from .single import _injury
from .tables import EXPOSED_SPOT, KNOCKED_DOWN, MASTER_STRIKE, OUT_OF_ACTION, STANDING, STUNNED, critical_result

__all__ = ["MAX_TABLE_ATTACKS", "several_batch_distribution"]

#: Most attacks in a batch that is tabulated (6 ** A hit-dice combinations); larger batches roll dice.
MAX_TABLE_ATTACKS = 5

Dist = dict


def _add(d: Dist, key, p: float) -> None:
    if p > 0:
        d[key] = d.get(key, 0.0) + p


def _hit_sets(b, may_parry: bool, parry_reroll: bool) -> Dist:
    """{(attacks that land after the parry, a to-hit die succeeded): p} on a standing target."""
    out: Dist = {}
    p_each = 1.0 / 6 ** b.n          # an exact integer, one division (6.0 ** -n calls pow, which differs by machine)
    for dice in itertools.product(range(1, 7), repeat=b.n):
        hits = tuple(d >= b.need_hit for d in dice)
        scored = any(hits)
        parryable = [d if h and bool(b.parryable[j]) else 0 for j, (d, h) in enumerate(zip(dice, hits))]
        best = max(parryable)
        if may_parry and 0 < best < 6:
            fails = (best / 6) * (best / 6) if parry_reroll else best / 6   # every parry die at most the hit's
            j = parryable.index(best)                             # the first attack with the best hit
            _add(out, (hits[:j] + (False,) + hits[j + 1:], scored), p_each * (1 - fails))
            _add(out, (hits, scored), p_each * fails)
        else:
            _add(out, (hits, scored), p_each)
    return out


#: {worst result: p} of ``rolls`` injury rolls d6 + ``mod`` (the one-attack table's, kept per process)
_injury_max = lru_cache(maxsize=256)(_injury)


def _wound_outcomes(b, j: int, crit_spent: bool, p_step: float) -> list[tuple[float, int, int, bool]]:
    """(p, unsaved wounds, injury modifier, spends the critical) of landed attack ``j``'s wound die and save.

    Outcomes with no unsaved wound are left out, except that a critical which is saved still spends
    the batch's critical (its entry has 0 wounds).
    """
    need_w, save = int(b.need_wound[j]), int(b.save[j])
    p_save = min(6, max(0, 7 - save)) / 6
    out = []
    for d in range(need_w, 7):
        if d == 6 and bool(b.crit_ok[j]) and not crit_spent:
            for c in range(1, 7):
                kind = critical_result(c + b.crit_mod)
                ps = 0.0 if kind in (EXPOSED_SPOT, MASTER_STRIKE) else p_save
                unsaved = (1 - ps) * (1 - p_step)
                mod = b.injury_mod + (2 if kind == MASTER_STRIKE else 0)
                out.append((unsaved / 36, 2, mod, True))
                out.append(((1 - unsaved) / 36, 0, 0, True))
        else:
            out.append(((1 - p_save) * (1 - p_step) / 6, 1, b.injury_mod, False))
    return out


def _landed(b, landed: tuple[bool, ...], need: int, p_step: float) -> Dist:
    """{(wounds dealt capped at ``need``, worst injury or -1): p} of the landed attacks, in index order."""
    states: Dist = {(0, -1, False): 1.0}
    for j, lands in enumerate(landed):
        if not lands:
            continue
        nxt: Dist = {}
        conc = bool(b.concussion[j])
        for (dealt, worst, spent), q in states.items():
            rest = 1.0
            for p, wounds, mod, crit in _wound_outcomes(b, j, spent, p_step):
                rest -= p
                spent2 = spent or crit
                if wounds == 0:
                    _add(nxt, (dealt, worst, spent2), q * p)
                    continue
                rolls = dealt + wounds - max(dealt, need - 1)    # wounds numbered need and up roll
                dealt2 = min(dealt + wounds, need)
                if rolls <= 0:
                    _add(nxt, (dealt2, worst, spent2), q * p)
                    continue
                for res, pr in _injury_max(rolls, mod, conc).items():
                    _add(nxt, (dealt2, max(worst, res), spent2), q * p * pr)
            _add(nxt, (dealt, worst, spent), q * rest)           # no unsaved wound, critical not spent
        states = nxt
    out: Dist = {}
    for (dealt, worst, _), q in states.items():
        _add(out, (dealt, worst), q)
    return out


def several_batch_distribution(b, t_w: int, parry_reroll: bool, step_aside: bool, helmet: bool,
                               jump_up: bool) -> list[dict[tuple[int, int, bool], float]]:
    """Exact outcome distribution of a batch ``b`` of several attacks (a ``Blows`` with 2 or more), by input row.

    Rows ``w0`` (no parry left), ``w0 + W + 1`` (may parry) for a standing target with ``w0``
    wounds left, and ``2 (W + 1)`` for a knocked-down one; each maps (new wounds, new status,
    a to-hit die succeeded) to its probability, as :func:`.single.batch_distribution`.
    """
    p_step = 2 / 6 if step_aside else 0.0
    rows: list[dict[tuple[int, int, bool], float]] = []
    for may_parry in (False, True):
        sets = _hit_sets(b, may_parry, parry_reroll)
        for w0 in range(t_w + 1):
            need = max(w0, 1)
            out: dict[tuple[int, int, bool], float] = {}
            landed_dist: dict[tuple[bool, ...], Dist] = {}     # the same attacks landing, scored or not
            for (landed, scored), p in sets.items():
                if landed not in landed_dist:
                    landed_dist[landed] = _landed(b, landed, need, p_step)
                for (dealt, worst), q in landed_dist[landed].items():
                    pq = p * q
                    if dealt < need:
                        _add(out, (w0 - dealt, STANDING, scored), pq)
                    elif worst == OUT_OF_ACTION:
                        _add(out, (0, OUT_OF_ACTION, scored), pq)
                    elif worst == STUNNED:
                        kept = pq / 2 if helmet else pq          # the helmet turns half the stuns into knock-downs
                        _add(out, (0, STUNNED, scored), kept)
                        _add(out, (0, KNOCKED_DOWN, scored), pq - kept)
                    else:
                        _add(out, (0, STANDING if jump_up else KNOCKED_DOWN, scored), pq)
            rows.append(out)
    # knocked down: every attack lands, no parry, no hit scored; any unsaved wound puts it out of action
    unhurt = sum(q for (dealt, _), q in _landed(b, (True,) * b.n, 1, p_step).items() if dealt == 0)
    rows.append({k: v for k, v in {(0, OUT_OF_ACTION, False): 1 - unhurt, (0, KNOCKED_DOWN, False): unhurt}.items()
                 if v > 0})
    return rows
