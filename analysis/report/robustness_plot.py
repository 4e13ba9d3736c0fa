"""One picture of whether a points table holds beyond one budget: every unit's score at 0.5x, 1x and 2x it.

:func:`robustness_chart` draws, for each unit (a row), its score in the
proposed table at each budget multiple (one colour each) and each seed (one
dot each), the listed table's faintly behind, and the tolerance band around
50%: a designer sees at a glance which units drift out of the band when the
game is played bigger or smaller.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from .render import plain_text_plots

__all__ = ["robustness_chart"]

#: One colour per budget multiple (colour-blind friendly).
COLOURS = ("#1b9e77", "#7570b3", "#d95f02", "#e7298a", "#66a61e")


@plain_text_plots
def robustness_chart(frame: pd.DataFrame, ax: Axes | None = None, *, tolerance: float = 0.02,
                     title: str | None = None) -> Axes:
    """Each unit's score (x) per budget multiple and seed, proposed table solid, listed table faint.

    Parameters
    ----------
    frame : DataFrame
        ``robustness.csv``: ``table, unit, budget_ratio, seed, score``.
    ax : Axes, optional
    tolerance : float
        The band drawn around 50%.
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(8.0, 1.5 + 0.42 * frame["unit"].nunique()))
    units = list(dict.fromkeys(frame["unit"]))
    ratios = sorted(frame["budget_ratio"].unique())
    y = {u: i for i, u in enumerate(units)}
    ax.axvspan(50 - 100 * tolerance, 50 + 100 * tolerance, color="#dddddd", zorder=0,
               label=f"50% ± {100 * tolerance:g} pp")
    ax.axvline(50, color="#888888", lw=0.8, zorder=1)
    for k, ratio in enumerate(ratios):
        offset = (k - (len(ratios) - 1) / 2) * 0.22
        colour = COLOURS[k % len(COLOURS)]
        for table, alpha in (("listed", 0.28), ("proposed", 1.0)):
            part = frame[(frame["table"] == table) & (frame["budget_ratio"] == ratio)].dropna(subset=["score"])
            if not len(part):
                continue
            ys = np.array([y[u] for u in part["unit"]], float) + offset
            ax.scatter(100 * part["score"].to_numpy(float), ys, s=18, color=colour, alpha=alpha, edgecolors="none",
                       label=f"{ratio:g}x the budget" if table == "proposed" else None, zorder=3)
    ax.set_yticks(range(len(units)), units)
    ax.invert_yaxis()
    ax.set_xlabel("score against the roster (%): proposed table solid, listed table faint; one dot per seed")
    ax.set_title(title or "Does the table hold at other budgets?")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=len(ratios) + 1, fontsize="small",
              frameon=False)
    return ax


def chart_png(frame: pd.DataFrame, tolerance: float) -> bytes:
    """The chart as PNG bytes (for the rebalance page and robustness.png)."""
    from .figures import render

    n = max(1, frame["unit"].nunique())
    return render(lambda ax: robustness_chart(frame, ax=ax, tolerance=tolerance), (8.0, 2.0 + 0.42 * n))
