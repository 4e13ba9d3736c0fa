"""``mecha`` plan: the matchup's chart and its transition table over the 9 fight states.

A fight's state is ``3 * sev_a + sev_d`` (each side's severity: unharmed,
immobilised, destroyed); one round moves it by one joint roll of two dice, so
:func:`_transition_table` gives the next state for every state and joint roll
``6 * (a - 1) + (d - 1)``, and :data:`_ABSORBING` marks the states that end a fight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...ruleset import Matchup
from .units import DESTROYED, IMMOBILISED, RESULTS, UNHARMED, Chart, MechaUnit

__all__ = ["MechaPlan"]


@dataclass(frozen=True)
class MechaPlan:
    matchup: Matchup
    chart: Chart
    #: transition[s, j]: state after one round from state s = 3*sev_a + sev_d on joint dice j = 6*(a-1) + (d-1)
    transition: NDArray[np.int8]
    start: int
    second_m_destroys: bool


#: States where a side is destroyed: the fight is over.
_ABSORBING = np.array([s // 3 == DESTROYED or s % 3 == DESTROYED for s in range(9)])


def _transition_table(matchup: Matchup, chart: Chart, second_m: bool) -> NDArray[np.int8]:
    """Next state for every (state, joint dice) pair, from per-side result tables."""
    att, dfn = matchup.attacker, matchup.defender
    wants_to_evade = bool(matchup.state("defender", "evading"))
    dice = np.arange(1, 7)

    def result_codes(unit: MechaUnit, immobilised: bool, evading: bool) -> NDArray[np.int64]:
        totals = dice + unit.defence + unit.physical - 2 * immobilised + 2 * evading
        return np.array([RESULTS[chart.lookup(unit.armour, int(t))] for t in totals])

    def after(sev: int, code: int) -> int:
        if sev == DESTROYED or code == 2:
            return DESTROYED
        if code == 1:
            return DESTROYED if (sev == IMMOBILISED and second_m) else IMMOBILISED
        return sev

    T = np.zeros((9, 36), np.int8)
    for s in range(9):
        sa, sd = divmod(s, 3)
        if _ABSORBING[s]:
            T[s] = s
            continue
        evading = wants_to_evade and sd == UNHARMED
        res_a = result_codes(att, sa == IMMOBILISED, False)
        res_d = result_codes(dfn, sd == IMMOBILISED, evading)
        for j in range(36):
            a, d = divmod(j, 6)
            na = sa if evading else after(sa, int(res_a[a]))
            nd = after(sd, int(res_d[d]))
            T[s, j] = 3 * na + nd
    return T
