"""Heatmap cells coloured cell by cell (:mod:`analysis.report.cell_image`): the pixels matplotlib draws, byte for byte.

The lean path reproduces matplotlib's data-stage nearest-neighbour drawing (its
bbox rounding, resampling and alpha); a matplotlib that drew differently would
show here as a pixel difference rather than as a changed report.png.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import io  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.report import cell_image, plots  # noqa: E402


def _pixels(n: int, size: tuple[float, float], lean: bool, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """The RGBA pixels of an ``n`` x ``n`` heatmap with NaN cells, drawn lean or by matplotlib alone."""
    monkeypatch.setattr(plots, "lean_cells", cell_image.lean_cells if lean else (lambda image: image))
    rng = np.random.default_rng(n)
    values = rng.random((n, n))
    values[rng.random((n, n)) < 0.1] = np.nan
    values[0, 0] = 0.5
    names = [f"unit {i}" for i in range(n)]
    fig = Figure(figsize=size)
    plots.matrix_heatmap(pd.DataFrame(values, index=names, columns=names), ax=fig.add_subplot())
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=100)
    return np.frombuffer(buf.getvalue(), np.uint8)


@pytest.mark.parametrize("n, size", [(1, (3.3, 2.4)), (4, (5.4, 4.2)), (13, (11.7, 9.6)), (13, (5.0, 4.0)),
                                     (13, (2.5, 2.0))])
def test_lean_cells_draw_matplotlibs_pixels(n, size, monkeypatch):
    # the report's sizes (0.7 x 0.6 inch a cell), a cramped one, and one too small for nearest neighbour
    # (matplotlib's own path then runs)
    assert np.array_equal(_pixels(n, size, True, monkeypatch), _pixels(n, size, False, monkeypatch))


def test_lean_cells_take_the_lean_path_at_report_sizes(monkeypatch):
    spread = []
    original = cell_image.CellImage._spread
    monkeypatch.setattr(cell_image.CellImage, "_spread", lambda self, *a: spread.append(1) or original(self, *a))
    _pixels(13, (11.7, 9.6), True, monkeypatch)
    assert spread  # else the test above compares matplotlib with itself
