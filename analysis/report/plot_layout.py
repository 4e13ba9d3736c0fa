"""Layout helpers for the plots: labels that never collide, legends off the data, distinct lines, plain ticks.

Each answers one defect seen in the shipped reports and notebooks (issue 13):
long unit names running into each other (:func:`wrap_label`, :func:`x_tick_labels`),
legends over bars (:func:`legend_outside`, :func:`legend_above_data`), the
eleventh curve coloured like the first (:func:`line_styles`) and log axes ticked
``6x10^1`` (:func:`plain_log_axis`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

__all__ = ["wrap_label", "x_tick_labels", "line_styles", "plain_log_axis", "legend_outside", "legend_above_data"]


def wrap_label(text: Any, width: int = 16) -> str:
    """A tick label broken onto lines of at most ``width`` characters (long unit names never run into each other)."""
    import textwrap

    from .plot_checks import check_count

    check_count(width, "width", 1)
    return "\n".join(textwrap.wrap(str(text), width, break_long_words=True)) or str(text)


def x_tick_labels(ax: Axes, x: Any, names: Sequence[Any], *, width: int = 16, fontsize: float = 9) -> None:
    """Category names under the x axis that never run into each other.

    Short names are turned 45 degrees; long ones are wrapped onto lines of at most
    ``width`` characters and turned upright (90 degrees), so that each label takes
    no more room across than the height of its lines.
    """
    texts = [str(n) for n in names]
    if len(texts) <= 4 and max((len(t) for t in texts), default=0) <= 24:
        ax.set_xticks(x, [wrap_label(t, 24) for t in texts], fontsize=fontsize)
    elif max((len(t) for t in texts), default=0) <= 12:
        ax.set_xticks(x, texts, rotation=45, ha="right", rotation_mode="anchor", fontsize=fontsize)
    else:
        ax.set_xticks(x, [wrap_label(t, width) for t in texts], rotation=90, ha="center", va="top",
                      fontsize=fontsize)


def line_styles(n: int) -> list[dict[str, Any]]:
    """``n`` distinguishable line styles: tab10 up to ten lines, tab20 up to twenty, then dashes as well.

    matplotlib's default cycle repeats after ten colours, so an eleventh curve would
    look like the first one.
    """
    import matplotlib

    from .plot_checks import check_count

    n = check_count(n, "n")

    if n <= 10:
        return [{"color": matplotlib.colormaps["tab10"](i)} for i in range(n)]
    colours = matplotlib.colormaps["tab20"]
    order = list(range(0, 20, 2)) + list(range(1, 20, 2))  # the ten strong colours first, then their light pairs
    dashes = ["-", "--", ":", "-."]
    return [{"color": colours(order[i % 20]), "linestyle": dashes[(i // 20) % len(dashes)]} for i in range(n)]


def _plain_number(v: float, _pos: Any = None) -> str:
    if v <= 0 or not np.isfinite(v):
        return ""
    return f"{v:,.0f}" if v >= 10 else f"{v:.3g}"


def plain_log_axis(axis: Any, span: tuple[float, float] | None = None) -> None:
    """A log axis with ticks as plain numbers (20, 50, 100, 200), never ``6x10^1`` (or raw mathtext).

    ``span`` (the axis limits): within about a decade, ticks at 1, 1.5, 2, 3, 4, 5, 6, 8
    times each power of ten so that the axis has more than two labels.
    """
    from .plot_checks import check_axis, check_span

    check_axis(axis)
    span = check_span(span)
    narrow = span is not None and span[0] > 0 and span[1] / span[0] < 12
    subs = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0) if narrow else (1.0, 2.0, 5.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(_plain_number))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(x for x in range(1, 10) if x not in subs)))
    axis.set_minor_formatter(NullFormatter())


def legend_outside(ax: Axes, **kwargs: Any) -> Any:
    """The legend to the right of the axes, never over the data (``tight_layout`` makes room for it)."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)


def legend_above_data(ax: Axes, top: float, *, probability: bool = True, **kwargs: Any) -> None:
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
    else:  # no room inside: put the legend beside the axes instead
        legend.remove()
        legend_outside(ax, **kwargs)
    if probability:  # ticks up to the top of the axes (never above 1), so that they do not stretch it
        top_shown = min(ax.get_ylim()[1], 1.0)
        ticks = [t for t in MaxNLocator(nbins=6).tick_values(0, top_shown) if t <= top_shown + 1e-9]
        ax.set_yticks(ticks)
        ax.set_ylim(0, max(ax.get_ylim()[1], ticks[-1] if ticks else 0))
