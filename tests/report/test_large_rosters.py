"""The figures of a large roster (:mod:`analysis.report.large_rosters`): what they leave out, they say.

Over 20 units a heatmap shows colours only (no number in a cell, its title says so);
up to 20 units nothing changes (the shipped reports' figures stay byte for byte).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.report import large_rosters as lr  # noqa: E402
from analysis.report import plots  # noqa: E402
from analysis.report.html import environment  # noqa: E402


def _wide(n: int, seed: int = 0) -> pd.DataFrame:
    names = [f"Mercenary Captain v{i}" for i in range(n)]
    values = np.random.default_rng(seed).random((n, n))
    values[0, 1] = np.nan
    return pd.DataFrame(values, index=names, columns=names)


def _apart(labels) -> bool:
    boxes = [t.get_window_extent() for t in labels if t.get_text()]
    return not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_a_40_unit_heatmap_shows_colours_only_and_says_so():
    n = 40
    fig = Figure(figsize=lr.heatmap_size(n, n, len("Mercenary Captain v39")))
    ax = plots.matrix_heatmap(_wide(n), ax=fig.add_subplot())
    assert not ax.texts  # no number in any cell
    assert "colours only" in ax.get_title() and "left out over 20 rows or columns" in ax.get_title()
    assert ax.images[0].get_array().shape == (n, n)  # every cell still coloured
    xs, ys = ax.get_xticklabels(), ax.get_yticklabels()
    assert [t.get_text() for t in xs] == list(_wide(n).columns) and len(ys) == n  # every name, whole, one line
    assert all("\n" not in t.get_text() for t in [*xs, *ys])
    fig.tight_layout()
    fig.canvas.draw()
    assert _apart(xs) and _apart(ys)
    w, h = fig.get_size_inches()
    assert w < 12 and h < 11  # 0.2 inch a cell, not 0.7 x 0.6


def test_a_20_unit_heatmap_keeps_its_numbers_and_title():
    ax = plots.matrix_heatmap(_wide(20), ax=Figure(figsize=(16.6, 13.8)).add_subplot(), title="P (%)")
    assert len(ax.texts) == 400 and "–" in [t.get_text() for t in ax.texts]
    assert ax.get_title() == "P (%)"


def test_numbers_can_be_chosen_either_way():
    ax = plots.matrix_heatmap(_wide(3), ax=Figure().add_subplot(), numbers=False)
    assert not ax.texts and "left out" in ax.get_title() and "over 20" not in ax.get_title()
    ax = plots.matrix_heatmap(_wide(21), ax=Figure().add_subplot(), numbers=True)
    assert len(ax.texts) == 21 * 21


def test_past_200_units_one_name_in_k_and_the_title_says_which():
    n = 250
    ax = plots.matrix_heatmap(_wide(n), ax=Figure(figsize=lr.heatmap_size(n, n, 21)).add_subplot())
    assert len(ax.get_xticklabels()) == len(ax.get_yticklabels()) == 125
    assert "one name in 2 shown" in ax.get_title()
    assert lr.heatmap_size(n, n, 21) == lr.heatmap_size(1000, 1000, 21)  # the canvas stops growing at 200


def test_the_report_caption_names_the_file_with_the_numbers():
    assert lr.heatmap_caption(20, "matrix.csv") is None
    caption = lr.heatmap_caption(100, "matrix.csv")
    html = environment().from_string('{% from "_macros.html" import colours %}<p>X.{{ colours(c) }}</p>').render(
        c=caption)
    assert "colours only" in html and "10,000 cells are left out" in html and '<a href="matrix.csv">' in html
    assert environment().from_string('{% from "_macros.html" import colours %}<p>X.{{ colours(c) }}</p>').render(
        c=None) == "<p>X.</p>"


@pytest.mark.parametrize("bad", ["yes", 1, []])
def test_numbers_must_be_true_false_or_none(bad):
    from sim.errors import InputError

    with pytest.raises(InputError, match="numbers"):
        plots.matrix_heatmap(_wide(2), ax=Figure().add_subplot(), numbers=bad)
