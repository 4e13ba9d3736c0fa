"""The kit's exact check: a ruleset's exact answer sums to 1 and its kernel's fights fit it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exact import ExactOutcome
from ..ruleset import Ruleset
from ._report import ConformanceReport
from ._stats import goodness_of_fit, histogram, mean_against

__all__ = ["check_exact"]

_MEANS = ("damage_to_attacker", "damage_to_defender", "rounds")


#: Fights away from the most likely value a mean's z-test needs (below, the normal approximation fails).
MEAN_TEST_MIN = 20


def check_exact(rs: Ruleset, plan: Any, subject: str, variant: tuple[Any, int], out: Any, family: Any,
                report: ConformanceReport, work_limit: int) -> None:
    """Where ``rs`` has an exact chain for ``plan`` of at most ``work_limit`` work: check it (check
    ``"exact"``) and add the kernel's ``out`` against it to ``family`` (goodness of fit per quantity,
    z-tests on the means where enough fights fall away from the most likely value)."""
    rounds, max_rounds = variant
    try:
        work = rs.exact_work(plan, rounds, max_rounds)
        if work is None or work > work_limit:
            return
        ex = rs.exact(plan, rounds, max_rounds)
    except Exception as e:  # noqa: BLE001 - a crash in exact is a finding
        report.add("exact", subject, False, f"{type(e).__name__}: {' '.join(str(e).split())}")
        return
    if not isinstance(ex, ExactOutcome):
        report.add("exact", subject, False, f"exact returned {type(ex).__name__}, expected sim.exact.ExactOutcome")
        return
    problems = ex.problems()
    if not report.add("exact", subject, not problems, "; ".join(problems) if problems else
                      f"probabilities sum to 1 within 1e-12 (truncated {ex.truncated:.1g}, capped {ex.capped:.3g})"):
        return
    names = [e.name for e in rs.extras]
    quantities = [("winner", out.winner, ex.win), ("category_attacker", out.category_attacker, ex.categories[0]),
                  ("category_defender", out.category_defender, ex.categories[1]),
                  ("damage_to_attacker", out.damage_to_attacker, ex.damage_to_attacker),
                  ("damage_to_defender", out.damage_to_defender, ex.damage_to_defender),
                  ("rounds", out.rounds, ex.rounds)]
    quantities += [(f"extra {k}", out.extras[k], ex.extras[k]) for k in names if k in ex.extras]
    for q, values, probs in quantities:
        counts = histogram(values, out.weights)
        chi2, dof, impossible = goodness_of_fit(counts, probs)
        if impossible:
            family.tests.append((subject, q, 0.0, f"{impossible} fights where the exact answer says none can be"))
            continue
        family.add_chi2(subject, q, chi2, dof, " against the exact distribution")
        if q in _MEANS and counts.sum() * (1 - float(np.max(probs)) / float(np.sum(probs))) >= MEAN_TEST_MIN:
            p = mean_against(counts, probs)
            family.tests.append((subject, f"mean {q}", p, f"kernel {_mean(counts):.4g}, exact "
                                 f"{ExactOutcome.mean(probs):.4g}"))


def _mean(h: Any) -> float:
    h = np.asarray(h, float)
    return float(np.arange(len(h)) @ h / max(h.sum(), 1))


