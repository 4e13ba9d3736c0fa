"""Plots of matrices, results, sweeps and rankings (matplotlib).

Every function draws on ``ax`` (a new figure is made only when ``ax`` is None),
returns the Axes, and never shows or saves anything: the caller decides
(:mod:`analysis.report` embeds them as PNG, a notebook shows them). Labels are
plain text (``$`` in a unit name is a dollar sign, never mathtext; see
:mod:`analysis.report.render`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.ticker import MaxNLocator

from sim.errors import InputError

from .cell_image import lean_cells
from .large_rosters import NAME_POINTS, heatmap_note, heatmap_size, name_step, numbered
from .plot_checks import (check_ax, check_bool, check_column, check_names, check_result, check_text, plot_frame,
                          probability_table, wdl_data)
from .plot_layout import legend_above_data, legend_outside, line_styles, plain_log_axis, wrap_label, x_tick_labels
from .render import plain_text_plots
from .rounds_plot import rounds_curve

__all__ = [
    "matrix_heatmap",
    "wdl_bars",
    "damage_distributions",
    "rounds_curve",
    "sweep_curves",
    "ranking_chart",
    "points_chart",
    "interpretation_bars",
    "line_styles",
    "plain_log_axis",
    "wrap_label",
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
                   col_label: str | None = None, colorbar: bool = True, numbers: bool | None = None) -> Axes:
    """Heatmap of a probability table in percent, with the numbers in the cells (up to 20 rows and columns).

    The cells, the colour bar (0-100) and the title ("(%)") are all in percent. The
    palette diverges around an even fight, 50% (``TwoSlopeNorm(vcenter=50)``): blue
    where the row unit does better, red where it does worse. NaN cells (not fought)
    are grey.

    Parameters
    ----------
    wide : DataFrame
        Rows x columns of probabilities in [0, 1] (e.g. ``MatchupMatrix.wide()``).
    ax : Axes, optional
    title, value_label : str
        Title (default ``"<value_label> (%)"``) and colour-bar label (``"<value_label> (%)"``).
    row_label, col_label : str, optional
        Axis labels (default: the index and column names, else attacker/defender).
    colorbar : bool
    numbers : bool, optional
        Print each cell's number in it. Default: when the table has at most
        :data:`~analysis.report.large_rosters.NUMBERED_UNITS` (20) rows and columns. Without
        them the heatmap shows colours only, each name on one line (one in k past 200 a side:
        :mod:`analysis.report.large_rosters`), and its title says what it leaves out.
    """
    check_ax(ax)
    for name, text in (("title", title), ("row_label", row_label), ("col_label", col_label)):
        check_text(text, name)
    check_text(value_label, "value_label", optional=False)
    check_bool(colorbar, "colorbar")
    chosen = numbers is not None
    wide = probability_table(wide, "wide")
    numbers = check_bool(numbers, "numbers") if chosen else numbered(wide.shape)
    longest = max((len(str(n)) for n in [*wide.index, *wide.columns]), default=1)
    ax = _axes(ax, (2.0 + 0.7 * wide.shape[1], 1.5 + 0.6 * wide.shape[0]) if numbers
               else heatmap_size(wide.shape[0], wide.shape[1], longest))
    values = 100 * wide.to_numpy(dtype=float)
    masked = np.ma.masked_invalid(values)
    norm = TwoSlopeNorm(vmin=0.0, vcenter=50.0, vmax=100.0)
    import matplotlib

    cmap = matplotlib.colormaps[_CMAP].with_extremes(bad="#d9d9d9")  # grey: not fought
    # cell by cell: the same pixels without matplotlib's float arrays the size of the figure (2 GB at 100 units)
    image = lean_cells(ax.imshow(masked, cmap=cmap, norm=norm, aspect="auto"))
    if numbers:
        _cell_numbers(ax, wide, values)
    else:
        _one_line_names(ax, wide)
    ax.set_xlabel(col_label or (wide.columns.name or "defender"))
    ax.set_ylabel(row_label or (wide.index.name or "attacker"))
    if numbers:
        ax.set_title(title or f"{value_label} (%)")
    else:  # the figure says what it leaves out; a long title wrapped to the axes' width
        chars = max(40, int(ax.get_position().width * ax.figure.get_figwidth() * 9))
        ax.set_title(wrap_label(title or f"{value_label} (%)", chars) + "\n"
                     + wrap_label(f"({heatmap_note(wide.shape, chosen=chosen)})", chars))
    if colorbar:
        cbar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, ticks=[0, 25, 50, 75, 100])
        cbar.set_label(f"{value_label} (%; white = 50, an even fight)")
    return ax


def _cell_numbers(ax: Axes, wide: pd.DataFrame, values: np.ndarray) -> None:
    """Each cell's number in it, and the names wrapped to fit their cells (a heatmap of up to 20 units)."""
    small = max(values.shape) > 10
    for (i, j), v in np.ndenumerate(values):
        text = "–" if np.isnan(v) else f"{v:.0f}" if small else f"{v:.1f}"
        dark = not np.isnan(v) and abs(v - 50) > 30
        ax.text(j, i, text, ha="center", va="center", fontsize=7 if small else 8,
                color="white" if dark else "black")
    tick_size = 8 if max(wide.shape) > 12 else 9
    x_tick_labels(ax, range(wide.shape[1]), list(wide.columns), fontsize=tick_size)
    ax.set_yticks(range(wide.shape[0]), [wrap_label(r, 24) for r in wide.index], fontsize=tick_size)


def _one_line_names(ax: Axes, wide: pd.DataFrame) -> None:
    """Names of a heatmap without numbers: one line each, upright under the columns, one in k past 200 a side."""
    step = name_step(max(wide.shape))
    cols, rows = range(0, wide.shape[1], step), range(0, wide.shape[0], step)
    ax.set_xticks(list(cols), [str(wide.columns[j]) for j in cols], rotation=90, ha="center", va="top",
                  fontsize=NAME_POINTS)
    ax.set_yticks(list(rows), [str(wide.index[i]) for i in rows], fontsize=NAME_POINTS)


def _is_result(x: Any) -> bool:
    return hasattr(x, "tally") and hasattr(x, "ci95")


def _side_names(result: Any) -> tuple[str, str]:
    """How the two sides are named in labels: the unit names, or "attacker" / "defender" in a mirror match."""
    if result.attacker == result.defender:
        return "attacker", "defender"
    return str(result.attacker), str(result.defender)


@plain_text_plots
def wdl_bars(data: Any, ax: Axes | None = None, *, title: str | None = None) -> Axes:
    """Win / draw / loss probabilities as grouped bars with 95% error bars.

    Parameters
    ----------
    data : FightResult, rankings frame, or matrix long frame
        * a :class:`sim.FightResult`: attacker win, draw, defender win (Wilson intervals);
          a mirror match (a unit against itself) names the sides "attacker" and "defender";
        * a frame with ``unit, win_rate, draw_rate, loss_rate`` (``mean_win_rate`` or
          rankings): each unit's mean rates against the roster (``win_rate_lo/hi`` bars);
        * a frame with ``attacker, defender, p_attacker, p_defender, p_draw`` (pick a few
          rows): one group per matchup (``*_lo``/``*_hi`` bars when present).

    The legend (for frames) sits to the right of the axes, never over a bar. Past 20 groups
    each name is on one line (:data:`~analysis.report.large_rosters.NUMBERED_UNITS`).
    """
    check_ax(ax)
    check_text(title, "title")
    data = wdl_data(data)
    ax = _axes(ax)
    if _is_result(data):
        att, dfn = _side_names(data)
        labels = [wrap_label(f"{att} wins", 22), "draw", wrap_label(f"{dfn} wins", 22)]
        keys = ["attacker", "draw", "defender"]
        p = np.array([data.win[k] for k in keys], dtype=float)
        ci = data.ci95
        err = np.array([[p[i] - ci[k][0] for i, k in enumerate(keys)], [ci[k][1] - p[i] for i, k in enumerate(keys)]])
        ax.bar(range(3), p, yerr=np.clip(err, 0, None), capsize=4, color=[WIN, DRAW, LOSS])
        ax.set_xticks(range(3), labels)
        ax.set_xlabel("result")
        who = (f"{data.attacker} against itself (mirror match)" if data.attacker == data.defender
               else f"{data.attacker} (attacker) vs {data.defender} (defender)")
        sampled = "exact" if getattr(data, "method", "mc") == "exact" else f"{data.trials:,} fights"
        ax.set_title(title or wrap_label(f"{who}, {sampled}", 70))
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
    if numbered((len(names), 1)):
        x_tick_labels(ax, x, names, width=18, fontsize=8 if len(names) > 10 else 9)
    else:  # many bars: one line a name (two-line names would run into each other), as under a large heatmap
        ax.set_xticks(x, names, rotation=90, ha="center", va="top", fontsize=NAME_POINTS)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("probability")
    ax.set_ylim(0, 1)
    ax.set_title(title or default_title)
    legend_outside(ax, fontsize=8)
    return ax


@plain_text_plots
def damage_distributions(result: Any, ax: Axes | None = None, *, title: str | None = None) -> Axes:
    """P(damage = k) taken by each side of one fight, side by side.

    Parameters
    ----------
    result : sim.FightResult
        A mirror match names the sides "attacker" and "defender" (not the unit twice).
    """
    check_ax(ax)
    check_text(title, "title")
    check_result(result, "result", ("attacker", "defender", "ruleset", "damage", "damage_distribution"))
    ax = _axes(ax)
    unit = result.ruleset.damage_unit
    to_def = result.damage_distribution("defender")
    to_att = result.damage_distribution("attacker")
    k = max(len(to_def), len(to_att), 1)
    x = np.arange(k)
    width = 0.4
    att, dfn = _side_names(result)
    mirror = result.attacker == result.defender
    for offset, dist, colour, side, name in ((-0.2, to_def, WIN, "defender", dfn), (0.2, to_att, LOSS, "attacker", att)):
        mean, se = result.damage(side)
        who = f"the {side}" if mirror else f"{name} ({side})"
        ax.bar(x[: len(dist)] + offset, dist, width, color=colour,
               label=f"to {who}: mean {mean:.2f} ± {1.96 * se:.2f}")
    ax.set_xlabel(f"damage taken ({unit})")
    ax.set_ylabel("probability")
    if k <= 20:
        ax.set_xticks(x)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # damage comes in whole units
    ax.set_title(title or wrap_label(f"Damage distributions: {result.attacker} "
                                     + ("against itself (mirror match)" if mirror else f"vs {result.defender}"), 60))
    top = max([float(np.max(d)) for d in (to_def, to_att) if len(d)], default=0.0)
    legend_above_data(ax, top, fontsize=8)
    return ax


@plain_text_plots
def sweep_curves(sweep: pd.DataFrame, ax: Axes | None = None, *, title: str | None = None,
                 field: str | None = None, y: str = "p_win") -> Axes:
    """Win probability against a swept field value, one line per opponent with its 95% band.

    Parameters
    ----------
    sweep : DataFrame
        ``value, opponent, p_win, p_win_lo, p_win_hi`` (as from ``analysis.runs.sweep.sweep``).
    field : str, optional
        Name of the swept field for the x label (default ``sweep.attrs["field"]``).
    y : str
        Column to plot (``p_win``; ``{y}_lo``/``{y}_hi`` give the band when present).

    Distinct colours past ten opponents (see :func:`line_styles`); the legend sits to
    the right of the axes.
    """
    check_ax(ax)
    check_text(title, "title")
    check_text(field, "field")
    check_text(y, "y", optional=False)
    frame = plot_frame(sweep, "sweep", "a sweep() result", ["value", y], [y, f"{y}_lo", f"{y}_hi"])
    ax = _axes(ax)
    groups = list(frame.groupby("opponent", sort=False)) if "opponent" in frame else [("", frame)]
    styles = line_styles(len(groups))
    for (name, g), style in zip(groups, styles):
        g = g.sort_values("value")
        x = pd.to_numeric(g["value"], errors="coerce").to_numpy(float)
        line = ax.plot(x, g[y].to_numpy(float), marker="o", ms=3, label=str(name) or y, **style)[0]
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
    legend_outside(ax, title="opponent", fontsize=7)
    return ax


@plain_text_plots
def ranking_chart(rankings: pd.DataFrame, ax: Axes | None = None, *, title: str | None = None,
                  value: str | None = None) -> Axes:
    """Units ranked by strength with 95% intervals (horizontal error bars; no legend to cover them).

    Parameters
    ----------
    rankings : DataFrame
        ``unit`` and ``strength, strength_lo, strength_hi`` (Bradley-Terry, rankings frame),
        or ``strength, lo, hi``, or ``win_rate, win_rate_lo, win_rate_hi``.
    value : str, optional
        Column to rank by (default ``strength`` when present, else ``win_rate``).
    """
    check_ax(ax)
    check_text(title, "title")
    check_text(value, "value")
    frame = plot_frame(rankings, "rankings", "a rankings frame", ["unit"])
    value = value or ("strength" if "strength" in frame else "win_rate")
    check_column(frame, value, "value", "rankings")
    lo_col = next((c for c in (f"{value}_lo", "lo") if c in frame), None)
    hi_col = next((c for c in (f"{value}_hi", "hi") if c in frame), None)
    if lo_col is None or hi_col is None:
        raise InputError(f"rankings: no interval for {value!r} (columns {value}_lo and {value}_hi, or lo and hi)")
    frame = plot_frame(frame, "rankings", "a rankings frame", [], [value, lo_col, hi_col])
    frame = frame.sort_values(value, kind="mergesort")
    ax = _axes(ax, (6.4, 1.2 + 0.35 * len(frame)))
    v = frame[value].to_numpy(float)
    err = np.clip(np.vstack([v - frame[lo_col].to_numpy(float), frame[hi_col].to_numpy(float) - v]), 0, None)
    y = np.arange(len(frame))
    ax.errorbar(v, y, xerr=err, fmt="o", color=WIN, ecolor="black", capsize=3)
    ax.set_yticks(y, [wrap_label(u, 28) for u in frame["unit"]])
    if value == "strength":
        ax.axvline(0, color="black", lw=0.6, ls=":")
        ax.set_xlabel("Bradley-Terry strength (logit; 0 = roster average)")
    else:
        ax.axvline(0.5, color="black", lw=0.6, ls=":")
        ax.set_xlabel("score: win + draw/2 against the roster (0.5 = even)" if value == "score"
                      else f"{value} (probability)")
    ax.set_ylabel("unit")
    ax.set_title(title or "Ranking: estimate (dot) with its 95% interval (bar)")
    return ax


@plain_text_plots
def points_chart(fair: pd.DataFrame, ax: Axes | None = None, *, title: str | None = None) -> Axes:
    """Each unit's points (black bar) against its fair price with 95% interval (dot and line); flagged in red.

    One row per unit, so no name can run into another. The points axis is
    logarithmic (fair costs are multiplicative) with plain-number ticks. A price or
    bound beyond the roster's range (``beyond``: an extrapolation) is drawn as an
    arrow at the edge of the axis.

    Parameters
    ----------
    fair : DataFrame
        ``unit, points, fair_points, fair_lo, fair_hi, flagged`` (``balance.fair_points``).
    """
    check_ax(ax)
    check_text(title, "title")
    frame = plot_frame(fair, "fair", "a fair-points frame (balance.fair_points)",
                       ["unit", "points", "fair_points", "fair_lo", "fair_hi", "flagged"],
                       ["points", "fair_points", "fair_lo", "fair_hi"])
    if len(frame):
        frame = frame[pd.to_numeric(frame["points"], errors="coerce") > 0]
    ax = _axes(ax, (6.4, 1.4 + 0.38 * max(len(frame), 1)))
    fair_pts = pd.to_numeric(frame["fair_points"], errors="coerce") if len(frame) else pd.Series(dtype=float)
    beyond = frame["beyond"].fillna("").astype(str) if "beyond" in frame else pd.Series("", index=frame.index)
    if not len(frame) or (fair_pts.isna() & (beyond == "")).all():
        ax.text(0.5, 0.5, "no fair-price suggestion\n(units without distinct points)", ha="center",
                va="center", transform=ax.transAxes)
        ax.set_yticks([])
    else:
        frame = frame.iloc[::-1]  # first unit at the top
        pts = frame["points"].to_numpy(float)
        y = np.arange(len(frame))
        cols = [pd.to_numeric(frame[c], errors="coerce").to_numpy(float) for c in ("fair_points", "fair_lo", "fair_hi")]
        fair_v, lo, hi = cols
        known = np.concatenate([pts, fair_v, lo, hi])
        known = known[np.isfinite(known) & (known > 0)]
        left, right = float(known.min()) / 1.4, float(known.max()) * 1.4
        flagged = frame["flagged"].to_numpy(bool)
        above = beyond[::-1].str.contains("estimate above").to_numpy()
        colours = np.where(flagged, LOSS, WIN)
        for i in range(len(frame)):
            a = lo[i] if np.isfinite(lo[i]) else left
            b = hi[i] if np.isfinite(hi[i]) else right
            if np.isfinite(fair_v[i]) or np.isfinite(lo[i]) or np.isfinite(hi[i]):
                ax.hlines(y[i], a, b, color=colours[i], lw=2)
            if np.isfinite(fair_v[i]):
                ax.plot(fair_v[i], y[i], "o", color=colours[i], ms=6)
            else:  # extrapolation: an arrow at the edge it lies beyond
                ax.plot(right if above[i] else left, y[i], ">" if above[i] else "<", color=colours[i], ms=8)
            for end, finite, mark in ((left, np.isfinite(lo[i]), "<"), (right, np.isfinite(hi[i]), ">")):
                if not finite and (np.isfinite(fair_v[i]) or np.isfinite(lo[i]) or np.isfinite(hi[i])):
                    ax.plot(end, y[i], mark, color=colours[i], ms=6)
        ax.plot(pts, y, "|", color="black", ms=14, mew=2)
        ax.set_xscale("log")
        ax.set_xlim(left, right)
        plain_log_axis(ax.xaxis, (left, right))
        ax.set_yticks(y, [wrap_label(u, 28) for u in frame["unit"]])
        ax.set_ylim(-0.7, len(frame) - 0.3)
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color="black", marker="|", ls="", ms=12, mew=2, label="points now"),
                   Line2D([], [], color=WIN, marker="o", lw=2, label="fair price, 95% interval"),
                   Line2D([], [], color=LOSS, marker="o", lw=2, label="flagged: re-cost")]
        if not (np.isfinite(fair_v) & np.isfinite(lo) & np.isfinite(hi)).all():
            handles.append(Line2D([], [], color=DRAW, marker=">", ls="", label="beyond the roster's range"))
        legend_outside(ax, handles=handles, fontsize=8)
    ax.set_xlabel("points (log scale)")
    ax.set_ylabel("unit")
    ax.set_title(title or "Points now against fair price")
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

    check_ax(ax)
    check_text(title, "title")
    for name, text in (("value", value), ("group", group), ("series", series)):
        check_text(text, name, optional=False)
    check_text(lo, "lo")
    check_text(hi, "hi")
    order = check_names(order, "order")
    if order is not None and not order:
        raise InputError("order: got an empty list, expected the settings to draw (or None: all of them)")
    frame = plot_frame(frame, "frame", "a long frame (one row per group and series)", [value, group, series],
                       [c for c in (value, lo, hi) if c])
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
    legend_above_data(ax, top, probability=top <= 1, fontsize=8, title=series, ncol=min(len(settings), 3))
    return ax
