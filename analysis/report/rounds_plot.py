"""Time to resolution: P(fight over by round k), one curve per fight (re-exported by :mod:`analysis.report.plots`).

A report draws one curve per opponent of its featured attacker; past
:data:`analysis.report.large_rosters.ROUNDS_CURVES` opponents it draws a few of
them as lines and every one of them as a grey band behind (``spread``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from .plot_checks import check_ax, check_labels, check_results, check_text
from .plot_layout import legend_outside, line_styles
from .render import plain_text_plots

__all__ = ["rounds_curve"]

_NEEDS = ("attacker", "defender", "rounds_distribution", "mean_rounds")


def _cdf(result: Any) -> np.ndarray:
    return np.cumsum(result.rounds_distribution())


def _last_round(cdf: np.ndarray) -> int:
    """The round after the last one with a fight still going (at least 1)."""
    going = np.flatnonzero(cdf < 1 - 1e-9)
    return max(int(going[-1]) + 1 if len(going) else 0, 1)


@plain_text_plots
def rounds_curve(results: Any, ax: Axes | None = None, *, title: str | None = None,
                 labels: Sequence[str] | None = None, spread: Any = None,
                 spread_label: str | None = None) -> Axes:
    """Time to resolution: P(fight over by round k), cumulative, one curve per result.

    Parameters
    ----------
    results : FightResult or sequence of FightResult
    labels : sequence of str, optional
        Legend entries (default ``"attacker vs defender"``; a mirror match ``"attacker vs defender (X)"``).
    spread : FightResult or sequence of FightResult, optional
        Results drawn only as a grey band behind the curves: at each round, the least
        and the greatest of their curves (e.g. every opponent, when ``results`` are a few
        of them).
    spread_label : str, optional
        The band's legend entry (default ``"range of all <n>"``).

    Notes
    -----
    A fight is over when it ends (a side broken, destroyed...) or its rounds run out; with
    ``rounds="end"`` fights still going at ``max_rounds`` are counted at the cap (draws).
    Past ten curves the colours come from a 20-colour map (then dashes), so no two
    curves look alike; the legend sits to the right of the axes.
    """
    check_ax(ax)
    check_text(title, "title")
    check_text(spread_label, "spread_label")
    seq = check_results(results, "results", _NEEDS)
    labels = check_labels(labels, len(seq))
    band = None if spread is None else check_results(spread, "spread", _NEEDS)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6.4, 4.8))
    styles = line_styles(len(seq))
    last = 0
    if band:
        cdfs = [_cdf(r) for r in band]
        width = max(len(c) for c in cdfs)
        # a curve that stops early is over from then on: 1 (its last value) to the longest one's end
        table = np.vstack([np.concatenate([c, np.full(width - len(c), c[-1] if len(c) else 1.0)]) for c in cdfs])
        ax.fill_between(np.arange(width), table.min(axis=0), table.max(axis=0), step="post", color="0.85", lw=0,
                        label=spread_label or f"range of all {len(band)}")
        last = max(_last_round(c) for c in cdfs)
    for i, r in enumerate(seq):
        dist = r.rounds_distribution()
        cdf = np.cumsum(dist)
        k = np.arange(len(dist))
        if labels is not None:
            label = labels[i]
        elif r.attacker == r.defender:
            label = f"attacker vs defender ({r.attacker})"
        else:
            label = f"{r.attacker} vs {r.defender}"
        mr, _ = r.mean_rounds
        ax.step(k, cdf, where="post", label=f"{label} (mean {mr:.2f})", **styles[i])
        done = np.flatnonzero(cdf < 1 - 1e-9)
        last = max(last, int(done[-1]) + 1 if len(done) else 0, 1)
    ax.set_xlabel("rounds fought")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds are whole numbers
    if seq or band:
        ax.set_xlim(-0.5, last + 1)  # up to the last round any fight lasted, not the whole cap
    ax.set_ylabel("P(fight over by this round)")
    ax.set_ylim(0, 1.02)
    ax.set_title(title or "Rounds to resolution (cumulative)")
    if seq or band:
        legend_outside(ax, fontsize=7)
    return ax
