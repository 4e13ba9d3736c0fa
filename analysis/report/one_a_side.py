"""The report's "One unit a side" section: the roster fought one unit a side, and when a report leaves it out.

With a budget, a report also fights the roster one unit a side (what a unit does in
a single engagement, whatever it costs). That is a second matrix of the roster's
square, fought for its own sake: on a large roster it costs as much again as the
equal-points matrix the balance is read from, and its heatmap of thousands of cells
is not read cell by cell. So a roster of more than :data:`ONE_A_SIDE_UNITS` units
leaves it out unless asked (``one_a_side=True``, ``--one-a-side``); the report says
so in that section, in ``summary.md`` and in ``metadata.json``
(``one_for_one_note``). ``meleelab matrix RULESET --budget none`` fights it alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..runs.allocation import CELL_PRECISION_UNITS
from ..stats.checks import check_flag

__all__ = ["ONE_A_SIDE_UNITS", "one_a_side"]

#: Most units whose report fights the one-unit-a-side matrix unless told not to: the roster size up to which
#: cells are read one by one (:data:`analysis.runs.allocation.CELL_PRECISION_UNITS`).
ONE_A_SIDE_UNITS = CELL_PRECISION_UNITS


def one_a_side(rs: Any, roster: Any, units: Sequence[str] | None, matrix: Any, run: Mapping[str, Any],
               asked: bool | None = None) -> tuple[Any, str]:
    """The one-unit-a-side matrix of a report, or None with the sentence that says why it is not there.

    Parameters
    ----------
    rs, roster, units
        As given to :func:`analysis.report.build.build_report`.
    matrix : MatchupMatrix
        The report's headline matrix (without a budget it is already one unit a side: nothing more to fight).
    run : mapping
        The matrix settings of the report (:func:`analysis.runs.matrix.matchup_matrix` keywords).
    asked : bool or None
        True: fight it whatever the roster's size; False: leave it out; None: fight it for rosters of at most
        :data:`ONE_A_SIDE_UNITS` units.

    Returns
    -------
    (MatchupMatrix or None, str)
        The matrix, and "" or the note the report shows in its place.
    """
    from ..runs.matrix import matchup_matrix

    if matrix.budget is None:
        return None, ""
    n = len(matrix.units)
    if asked is None:
        asked = n <= ONE_A_SIDE_UNITS
    elif not check_flag(asked, "one_a_side"):
        return None, (f"Not fought (--no-one-a-side): \"meleelab matrix {rs.id} --budget none\" fights the roster "
                      "one unit a side.")
    if not asked:
        return None, (f"Not fought: over {ONE_A_SIDE_UNITS} units ({n} here) this second matrix of {n * n:,} cells "
                      f"would cost about as much again as the equal-points one. --one-a-side adds it to the report; "
                      f"\"meleelab matrix {rs.id} --budget none\" fights it alone.")
    return matchup_matrix(rs, roster, units, budget="none", **run), ""
