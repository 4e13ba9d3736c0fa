"""Reports whose plots are built but not rasterised, for tests that read no plot.

Laying out and encoding a report's PNGs (eleven for a small roster) is most of a small report's time: about
2 of its 3 seconds. Tests whose checks read the CSV, Markdown, HTML or JSON files, a diff or the store, never a
plot, can write their reports under :func:`blank_figures`: every plot function still runs on the report's
tables (a plot that fails to build still fails the test), only the finished figure becomes :data:`BLANK_PNG`
instead of being laid out and encoded. The PNGs themselves are tested on the real renderer in
tests/report/test_plots.py, test_plot_layout.py, test_cell_image.py and test_hardening_outputs.py (and by every
report test that does not use this). Only the report's own figures (:func:`analysis.report.figures.render`)
change; the PNG files of ``matrix``, ``diff`` and the lists are drawn as ever.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

#: A valid 1 x 1 PNG.
BLANK_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8ffffff7f0009fb03fd"
    "2a86e38a0000000049454e44ae426082")


@contextmanager
def blank_figures() -> Iterator[None]:
    """Within it, every plot of a report is :data:`BLANK_PNG` (the conftest fixture ``plain_figures`` is this)."""
    import analysis.report.render

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(analysis.report.render, "figure_png", lambda fig, *, dpi: BLANK_PNG)
        yield
