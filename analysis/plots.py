"""Plots of matrices, results, sweeps and rankings (matplotlib).

Every function draws on ``ax`` (a new figure is made only when ``ax`` is None),
returns the Axes, and never shows or saves anything: the caller decides
(:mod:`analysis.report` embeds them as PNG, a notebook shows them). Labels are
plain text (``$`` in a unit name is a dollar sign, never mathtext; see
:mod:`analysis.render`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.ticker import MaxNLocator

from .render import plain_text_plots

__all__ = [
    "matrix_heatmap",
    "wdl_bars",
    "damage_distributions",
    "rounds_curve",
    "sweep_curves",
    "ranking_chart",
    "points_chart",
    "interpretation_bars",
    "WIN",
    "DRAW",
    "LOSS",
]

#: Colours for win, draw and loss (colour-blind friendly: blue, grey, orange-red).
WIN, DRAW, LOSS = "#2166ac", "#9e9e9e", "#d6604d"
_CMAP = "RdBu"  # diverging: red below 50%, white at 50%, blue above


def _axes(ax: Axes | None, size: tuple[float, float] = (6.4, 4.8)) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=size)
    return ax


@plain_text_plots
def matrix_heatmap(wide: pd.DataFrame, ax: Axes | None = None, *, title: str | None = None,
                   value_label: str = "P(attacker wins)", row_label: str | None = None,
                   col_label: str | None = None, colorbar: bool = True) -> Axes:
    """Heatmap of a probability table with the numbers in the cells.

    The palette diverges around 50% (``TwoSlopeNorm(vcenter=0.5)``): blue where the
    row unit does better, red where it does worse. NaN cells (not fought) are grey.

    Parameters
    ----------
    wide : DataFrame
        Rows x columns of probabilities (e.g. ``MatchupMatrix.wide()``).
    ax : Axes, optional
    title, value_label : str
        Title (default ``value_label``) and colour-bar label.
    row_label, col_label : str, optional
        Axis labels (default: the index and column names, else attacker/defender).
    colorbar : bool
    """
    ax = _axes(ax, (2.0 + 0.7 * wide.shape[1], 1.5 + 0.6 * wide.shape[0]))
    values = wide.to_numpy(dtype=float)
    masked = np.ma.masked_invalid(values)
    norm = TwoSlopeNorm(vmin=0.0, vcenter=0.5, vmax=1.0)
    import matplotlib

    cmap = matplotlib.colormaps[_CMAP].with_extremes(bad="#d9d9d9")  # grey: not fought
    image = ax.imshow(masked, cmap=cmap, norm=norm, aspect="auto")
    small = max(wide.shape) > 10
    for (i, j), v in np.ndenumerate(values):
        text = "–" if np.isnan(v) else f"{100 * v:.0f}" if small else f"{100 * v:.1f}"
        dark = not np.isnan(v) and abs(v - 0.5) > 0.3
        ax.text(j, i, text, ha="center", va="center", fontsize=7 if small else 8,
                color="white" if dark else "black")
    ax.set_xticks(range(wide.shape[1]), [str(c) for c in wide.columns], rotation=45, ha="right")
    ax.set_yticks(range(wide.shape[0]), [str(r) for r in wide.index])
    ax.set_xlabel(col_label or (wide.columns.name or "defender"))
    ax.set_ylabel(row_label or (wide.index.name or "attacker"))
    ax.set_title(title or f"{value_label} (%)")
    if colorbar:
        cbar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        cbar.set_label(f"{value_label} (0-1, white = 0.5)")
    return ax


def _legend_above_data(ax: Axes, top: float, *, probability: bool = True, **kwargs: Any) -> None:
    """A legend in the top of ``ax``, with the y range raised so that no data (up to ``top``) runs under it.

    The legend's height is measured (in pixels, against the axes' height) and the
    y limit set so that the data stay below it, with a margin for a later
    ``tight_layout`` shrinking the axes. On a probability axis the ticks stop at 1.
    """
    legend = ax.legend(loc="upper right", **kwargs)
    share = legend.get_window_extent().height / max(ax.get_window_extent().height, 1.0)
    share = 1.25 * share + 0.04
    if share < 0.75 and top > 0:
        ax.set_ylim(0, top / (1.0 - share))
    else:  # no room inside: put the legend under the axes instead
        legend.remove()
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), **kwargs)
    if probability:
        ticks = [t for t in MaxNLocator(nbins=6).tick_values(0, 1) if t <= 1 + 1e-9]
        ax.set_yticks(ticks)


def _is_result(x: Any) -> bool:
    return hasattr(x, "tally") and hasattr(x, "ci95")


@plain_text_plots
def wdl_bars(data: Any, ax: Axes | None = None, *, title: str | None = None) -> Axes:
    """Win / draw / loss probabilities as grouped bars with 95% error bars.

    Parameters
    ----------
    data : FightResult, rankings frame, or matrix long frame
        * a :class:`sim.FightResult`: attacker win, draw, defender win (Wilson intervals);
        * a frame with ``unit, win_rate, draw_rate, loss_rate`` (``mean_win_rate`` or
          rankings): each unit's mean rates against the roster (``win_rate_lo/hi`` bars);
        * a frame with ``attacker, defender, p_attacker, p_defender, p_draw`` (pick a few
          rows): one group per matchup (``*_lo``/``*_hi`` bars when present).
    """
    ax = _axes(ax)
    if _is_result(data):
        labels = [f"{data.attacker} wins", "draw", f"{data.defender} wins"]
        keys = ["attacker", "draw", "defender"]
        p = np.array([data.win[k] for k in keys], dtype=float)
        ci = data.ci95
        err = np.array([[p[i] - ci[k][0] for i, k in enumerate(keys)], [ci[k][1] - p[i] for i, k in enumerate(keys)]])
        ax.bar(range(3), p, yerr=err, capsize=4, color=[WIN, DRAW, LOSS])
        ax.set_xticks(range(3), labels)
        ax.set_xlabel("result")
        ax.set_title(title or f"{data.attacker} (attacker) vs {data.defender} (defender), {data.trials:,} fights")
        ax.set_ylabel("probability")
        ax.set_ylim(0, 1)
        return ax
    frame = pd.DataFrame(data)
    if "win_rate" in frame:
        names = list(frame["unit"])
        series = [("win", frame["win_rate"], WIN, "win_rate"), ("draw", frame["draw_rate"], DRAW, None),
                  ("loss", frame["loss_rate"], LOSS, None)]
        default_title = "Mean win / draw / loss against the roster (side-averaged, 95% intervals)"
        xlabel = "unit"
    else:
        names = [f"{a} vs {d}" for a, d in zip(frame["attacker"], frame["defender"])]
        series = [("attacker wins", frame["p_attacker"], WIN, "p_attacker"),
                  ("draw", frame["p_draw"], DRAW, "p_draw"), ("defender wins", frame["p_defender"], LOSS, "p_defender")]
        default_title = "Win / draw / loss per matchup (95% intervals)"
        xlabel = "matchup (attacker vs defender)"
    x = np.arange(len(names))
    width = 0.27
    for k, (label, values, colour, col) in enumerate(series):
        values = np.asarray(values, dtype=float)
        err = None
        if col and f"{col}_lo" in frame and f"{col}_hi" in frame:
            err = np.vstack([values - frame[f"{col}_lo"].to_numpy(float), frame[f"{col}_hi"].to_numpy(float) - values])
            err = np.clip(err, 0, None)
        ax.bar(x + (k - 1) * width, values, width, yerr=err, capsize=2 if err is not None else 0, color=colour,
               label=label)
    ax.set_xticks(x, names, rotation=45 if len(names) > 4 else 0, ha="right" if len(names) > 4 else "center")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("probability")
    ax.set_ylim(0, 1)
    ax.set_title(title or default_title)
    ax.legend(loc="upper right", fontsize=8)
    return ax


@plain_text_plots
def damage_distributions(result: Any, ax: Axes | None = None, *, title: str | None = None) -> Axes:
    """P(damage = k) taken by each side of one fight, side by side.

    Parameters
    ----------
    result : sim.FightResult
    """
    ax = _axes(ax)
    unit = result.ruleset.damage_unit
    to_def = result.damage_distribution("defender")
    to_att = result.damage_distribution("attacker")
    k = max(len(to_def), len(to_att), 1)
    x = np.arange(k)
    width = 0.4
    for offset, dist, colour, side, name in ((-0.2, to_def, WIN, "defender", result.defender),
                                            (0.2, to_att, LOSS, "attacker", result.attacker)):
        mean, se = result.damage(side)
        ax.bar(x[: len(dist)] + offset, dist, width, color=colour,
               label=f"to {name} ({side}): mean {mean:.2f} ± {1.96 * se:.2f}")
    ax.set_xlabel(f"damage taken ({unit})")
    ax.set_ylabel("probability")
    if k <= 20:
        ax.set_xticks(x)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title or f"Damage distributions: {result.attacker} vs {result.defender}")
    top = max([float(np.max(d)) for d in (to_def, to_att) if len(d)], default=0.0)
    _legend_above_data(ax, top, fontsize=8)
    return ax


@plain_text_plots
def rounds_curve(results: Any, ax: Axes | None = None, *, title: str | None = None,
                 labels: Sequence[str] | None = None) -> Axes:
    """Time to resolution: P(fight over by round k), cumulative, one curve per result.

    Parameters
    ----------
    results : FightResult or sequence of FightResult
    labels : sequence of str, optional
        Legend entries (default ``"attacker vs defender"``).

    Notes
    -----
    A fight is over when it ends (a side broken, destroyed...) or its rounds run out; with
    ``rounds="end"`` fights still going at ``max_rounds`` are counted at the cap (draws).
    """
    ax = _axes(ax)
    seq = [results] if _is_result(results) else list(results)
    for i, r in enumerate(seq):
        dist = r.rounds_distribution()
        cdf = np.cumsum(dist)
        k = np.arange(len(dist))
        label = labels[i] if labels is not None else f"{r.attacker} vs {r.defender}"
        mr, _ = r.mean_rounds
        ax.step(k, cdf, where="post", label=f"{label} (mean {mr:.2f})")
    ax.set_xlabel("rounds fought")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds are whole numbers
    ax.set_ylabel("P(fight over by this round)")
    ax.set_ylim(0, 1.02)
    ax.set_title(title or "Rounds to resolution (cumulative)")
    if seq:
        ax.legend(fontsize=7, loc="lower right")
    return ax


@plain_text_plots
def sweep_curves(sweep: pd.DataFrame, ax: Axes | None = None, *, title: str | None = None,
                 field: str | None = None, y: str = "p_win") -> Axes:
    """Win probability against a swept field value, one line per opponent with its 95% band.

    Parameters
    ----------
    sweep : DataFrame
        ``value, opponent, p_win, p_win_lo, p_win_hi`` (as from ``analysis.sweep.sweep``).
    field : str, optional
        Name of the swept field for the x label (default ``sweep.attrs["field"]``).
    y : str
        Column to plot (``p_win``; ``{y}_lo``/``{y}_hi`` give the band when present).
    """
    ax = _axes(ax)
    frame = pd.DataFrame(sweep)
    groups = frame.groupby("opponent", sort=False) if "opponent" in frame else [("", frame)]
    for name, g in groups:
        g = g.sort_values("value")
        x = pd.to_numeric(g["value"], errors="coerce").to_numpy(float)
        line = ax.plot(x, g[y].to_numpy(float), marker="o", ms=3, label=str(name) or y)[0]
        if f"{y}_lo" in g and f"{y}_hi" in g:
            ax.fill_between(x, g[f"{y}_lo"].to_numpy(float), g[f"{y}_hi"].to_numpy(float),
                            color=line.get_color(), alpha=0.2, linewidth=0)
    ax.axhline(0.5, color="black", lw=0.6, ls=":")
    values = pd.to_numeric(frame["value"], errors="coerce").dropna() if "value" in frame else pd.Series(dtype=float)
    if len(values) and bool((values == values.round()).all()):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # integer stats: no 2.5 ticks
    field = field or frame.attrs.get("field", "value")
    ax.set_xlabel(f"{field} (stat value)")
    ax.set_ylabel("P(win)" if y == "p_win" else y)
    ax.set_title(title or f"Sweep of {field}: P(win) with 95% bands")
    ax.legend(title="opponent", fontsize=7)
    return ax


@plain_text_plots
def ranking_chart(rankings: pd.DataFrame, ax: Axes | None = None, *, title: str | None = None,
                  value: str | None = None) -> Axes:
    """Units ranked by strength with 95% intervals (horizontal error bars).

    Parameters
    ----------
    rankings : DataFrame
        ``unit`` and ``strength, strength_lo, strength_hi`` (Bradley-Terry, rankings frame),
        or ``strength, lo, hi``, or ``win_rate, win_rate_lo, win_rate_hi``.
    value : str, optional
        Column to rank by (default ``strength`` when present, else ``win_rate``).
    """
    frame = pd.DataFrame(rankings)
    value = value or ("strength" if "strength" in frame else "win_rate")
    lo_col = next(c for c in (f"{value}_lo", "lo") if c in frame)
    hi_col = next(c for c in (f"{value}_hi", "hi") if c in frame)
    frame = frame.sort_values(value, kind="mergesort")
    ax = _axes(ax, (6.4, 1.2 + 0.35 * len(frame)))
    v = frame[value].to_numpy(float)
    err = np.clip(np.vstack([v - frame[lo_col].to_numpy(float), frame[hi_col].to_numpy(float) - v]), 0, None)
    y = np.arange(len(frame))
    ax.errorbar(v, y, xerr=err, fmt="o", color=WIN, ecolor="black", capsize=3, label=f"{value} with 95% interval")
    ax.set_yticks(y, list(frame["unit"]))
    if value == "strength":
        ax.axvline(0, color="black", lw=0.6, ls=":")
        ax.set_xlabel("Bradley-Terry strength (logit; 0 = roster average)")
    else:
        ax.axvline(0.5, color="black", lw=0.6, ls=":")
        ax.set_xlabel(f"{value} (probability)")
    ax.set_ylabel("unit")
    ax.set_title(title or "Ranking with 95% intervals")
    ax.legend(fontsize=8, loc="lower right")
    return ax


@plain_text_plots
def points_chart(fair: pd.DataFrame, ax: Axes | None = None, *, title: str | None = None) -> Axes:
    """Actual points against suggested fair points, with 95% intervals; flagged units in red.

    Parameters
    ----------
    fair : DataFrame
        ``unit, points, fair_points, fair_lo, fair_hi, flagged`` (``balance.fair_points``).
    """
    ax = _axes(ax)
    frame = pd.DataFrame(fair)
    if len(frame):  # drawable on log axes: positive and not absurdly far apart
        pts, fair_pts = frame["points"].astype(float), frame["fair_points"].astype(float)
        frame = frame[(pts > 0) & (pts < 1e12) & (fair_pts > 0) & (fair_pts < 1e12)]
    if not len(frame):
        ax.text(0.5, 0.5, "no fair-points suggestion\n(units without distinct points)", ha="center",
                va="center", transform=ax.transAxes)
    else:
        x = frame["points"].to_numpy(float)
        y = frame["fair_points"].to_numpy(float)
        lo = frame["fair_lo"].to_numpy(float)
        hi = frame["fair_hi"].to_numpy(float)
        flagged = frame["flagged"].to_numpy(bool)
        # bars within six decades of the point (NaN and infinite ends stay as they are: no bar)
        lo = np.where(np.isfinite(lo), np.clip(lo, y / 1e6, y), lo)
        hi = np.where(np.isfinite(hi), np.clip(hi, y, y * 1e6), hi)
        err = np.nan_to_num(np.clip(np.vstack([y - lo, hi - y]), 0, None), posinf=0.0)
        err[0] = np.minimum(err[0], 0.999 * y)  # keep log-scale bars above zero
        for mask, colour, label in ((~flagged, WIN, "within uncertainty"), (flagged, LOSS, "flagged: re-cost")):
            if mask.any():
                ax.errorbar(x[mask], y[mask], yerr=err[:, mask], fmt="o", color=colour, ecolor=colour, capsize=3,
                            label=label)
        for xi, yi, name in zip(x, y, frame["unit"]):
            ax.annotate(str(name), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
        # log-log: fair costs are multiplicative; very long interval tails (a weak points-strength
        # line) may leave the frame
        finite = np.concatenate([x, y])
        finite = finite[np.isfinite(finite) & (finite > 0)]
        lo_lim = float(finite.min()) / 1.5
        hi_lim = float(finite.max()) * 1.5
        ax.plot([lo_lim, hi_lim], [lo_lim, hi_lim], color="black", lw=0.8, ls="--", label="fair = actual")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo_lim, hi_lim)
        ax.set_ylim(lo_lim, hi_lim)
        ax.legend(fontsize=8, loc="upper left")
    ax.set_xlabel("actual points (log scale)")
    ax.set_ylabel("suggested fair points, 95% interval (log scale)")
    ax.set_title(title or "Points: actual vs fair")
    return ax


def interpretation_bars(frame: pd.DataFrame, ax: Axes | None = None, *, value: str = "attacker wins",
                        lo: str | None = "lo", hi: str | None = "hi", group: str = "matchup",
                        series: str = "setting", order: Sequence[str] | None = None,
                        title: str | None = None) -> Axes:
    """Grouped bars: one group per matchup, one bar per setting (e.g. an interpretation switch), 95% bars.

    Group labels are wrapped so that they never run into each other, and the legend
    sits in space kept free above the bars.

    Parameters
    ----------
    frame : DataFrame
        Long form: one row per (``group``, ``series``) with ``value`` and, when given,
        the ``lo`` / ``hi`` interval columns.
    order : sequence of str, optional
        Settings in legend order (default: as they first appear).
    """
    import textwrap

    frame = pd.DataFrame(frame)
    settings = list(order) if order is not None else list(dict.fromkeys(frame[series]))
    groups = list(dict.fromkeys(frame[group]))
    ax = _axes(ax, (max(6.4, 1.6 + 1.5 * len(groups)), 4.2))
    width = 0.8 / max(len(settings), 1)
    x = np.arange(len(groups))
    top = 0.0
    for k, setting in enumerate(settings):
        rows = frame[frame[series] == setting].set_index(group).reindex(groups)
        v = rows[value].to_numpy(float)
        err = None
        if lo and hi and lo in rows and hi in rows:
            err = np.clip(np.vstack([v - rows[lo].to_numpy(float), rows[hi].to_numpy(float) - v]), 0, None)
            top = max(top, float(np.nanmax(v + err[1])) if len(v) else 0.0)
        top = max(top, float(np.nanmax(v)) if len(v) else 0.0)
        ax.bar(x + (k - (len(settings) - 1) / 2) * width, v, width, yerr=err, capsize=3 if err is not None else 0,
               label=str(setting))
    per_group = ax.get_window_extent().width / ax.figure.dpi / max(len(groups), 1)  # inches
    chars = max(6, int(per_group / 0.09))  # about 0.09 in per character at the default size
    ax.set_xticks(x, [textwrap.fill(str(g), chars) for g in groups])
    ax.set_xlabel(group)
    ax.set_ylabel(value)
    ax.set_title(title or f"{value} under each setting")
    _legend_above_data(ax, top, probability=top <= 1, fontsize=8, title=series, ncol=min(len(settings), 3))
    return ax
