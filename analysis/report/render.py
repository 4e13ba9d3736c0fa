"""PNG rendering that any unit name survives.

* Plot labels are plain text: matplotlib would read ``$...$`` in a unit name as
  mathtext (and raise on ``Bad $\\frac{$ math``), so figures are built and saved
  with ``text.parse_math`` off (:func:`plain_text`, also applied to every plot
  function in :mod:`analysis.report.plots`).
* Characters the plot font lacks (CJK, for instance, in DejaVu Sans) fall back to
  any installed font that has them (Noto CJK, WenQuanYi, Arial Unicode...);
  those still missing give **one** warning per run listing them, instead of one
  warning per glyph per figure.
"""

from __future__ import annotations

import functools
import io
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["plain_text", "plain_text_plots", "make_plain", "figure_png", "glyph_warnings", "FALLBACK_FONTS"]

#: Wide-coverage fonts used as fallbacks when installed (never required).
FALLBACK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans", "WenQuanYi Zen Hei", "Droid Sans Fallback",
                  "Arial Unicode MS", "Source Han Sans", "Unifont")

_GLYPH = re.compile(r"Glyph (\d+) .*missing from (?:current )?font")
#: Characters already reported as missing in this process (one warning per new set).
_reported: set[str] = set()

F = TypeVar("F", bound=Callable[..., Any])


@functools.lru_cache(maxsize=1)
def _installed_fallbacks() -> tuple[str, ...]:
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    return tuple(n for n in FALLBACK_FONTS if n in names)


def _rc() -> dict[str, Any]:
    import matplotlib

    rc: dict[str, Any] = {"text.parse_math": False}
    extra = [f for f in _installed_fallbacks() if f not in matplotlib.rcParams["font.sans-serif"]]
    if extra:
        rc["font.sans-serif"] = list(matplotlib.rcParams["font.sans-serif"]) + extra
    return rc


@contextmanager
def plain_text() -> Iterator[None]:
    """Texts created (and drawn) inside are plain text, with installed fallback fonts."""
    import matplotlib

    with matplotlib.rc_context(_rc()):
        yield


def plain_text_plots(fn: F) -> F:
    """Decorator: the plot function builds its texts as plain text (unit names are never mathtext)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with plain_text():
            ax = fn(*args, **kwargs)
            figure = getattr(ax, "figure", None)
            if figure is not None:
                make_plain(figure)
            return ax

    return wrapper  # type: ignore[return-value]


def make_plain(fig: Any) -> None:
    """Turn mathtext off on every text of ``fig``, tick labels included.

    Texts made before :func:`plain_text` was in force (an axes' title, its first
    tick) keep the setting they were made with, so they are switched here; the
    ticks a draw would add are made now, so that they are switched too.
    """
    from matplotlib.text import Text

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            axis.get_major_ticks(len(axis.get_majorticklocs()))
    for text in fig.findobj(Text):
        text.set_parse_math(False)


@contextmanager
def glyph_warnings() -> Iterator[None]:
    """Collect matplotlib's per-glyph "missing from font" warnings raised inside; warn once for new characters.

    Drawing a figure is not the only place they come from: a plot function that
    measures its texts (to place a legend) renders them too.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    missing: set[str] = set()
    for w in caught:
        m = _GLYPH.search(str(w.message))
        if m:
            missing.add(chr(int(m.group(1))))
        elif "tight_layout" in str(w.message) or "Tight layout" in str(w.message):
            continue  # labels too long for the figure: it is still drawn, only less tidily
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    new = missing - _reported
    if new:
        _reported.update(new)
        shown = "".join(sorted(new)[:20]) + ("..." if len(new) > 20 else "")
        warnings.warn(f"{len(new)} characters of unit names are not in the plot fonts and show as boxes ({shown}); "
                      "install a font that has them (e.g. Noto Sans CJK) to draw them", UserWarning, stacklevel=3)


def figure_png(fig: Any, *, dpi: int) -> bytes:
    """``fig`` as PNG bytes (deterministic: no software stamp), plain text, one warning for missing glyphs."""
    buf = io.BytesIO()
    with plain_text(), glyph_warnings():
        make_plain(fig)
        fig.tight_layout()
        # laid out: without this, the placeholder engine tight_layout leaves makes savefig draw the figure twice,
        # once with drawing disabled (its texts laid out all the same); the same pixels, a sixth less time
        fig.set_layout_engine(None)
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()
