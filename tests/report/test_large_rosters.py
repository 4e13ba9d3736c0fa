"""The figures of a large roster (:mod:`analysis.report.large_rosters`): what they leave out, they say.

Over 20 units a heatmap shows colours only (no number in a cell, its title says so)
a rounds plot draws a few opponents over the range of all of them, and the outcome
bars name each unit on one line; up to 20 units nothing changes (the shipped
reports' figures stay byte for byte).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
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


class _Curve:
    """The part of a FightResult that the rounds plot reads: P(over by round k) = 1 - 0.8 ** (k / speed)."""

    def __init__(self, defender: str, speed: float, attacker: str = "Hero") -> None:
        self.attacker, self.defender = attacker, defender
        cdf = np.concatenate([[0.0], 1 - 0.8 ** (np.arange(1, 60) / speed), [1.0]])
        self._dist = np.diff(np.concatenate([[0.0], cdf]))

    def rounds_distribution(self):
        return self._dist

    @property
    def mean_rounds(self):
        return float(np.arange(len(self._dist)) @ self._dist), 0.0


def test_past_20_opponents_the_rounds_plot_draws_the_featured_mirror_and_extremes_over_the_range_of_all():
    speeds = [1 + (7 * i % 30) / 3 for i in range(30)]  # opponent i: distinct speeds, not in order
    curves = [_Curve("Hero" if i == 5 else f"unit {i}", s) for i, s in enumerate(speeds)]
    drawn, labels, note = lr.rounds_subset(curves, "Hero", "unit 12")
    by_speed = sorted(range(30), key=lambda i: speeds[i])
    quick, slow = by_speed[:3], by_speed[-3:]
    assert [c.defender for c in drawn] == [curves[i].defender for i in sorted({5, 12, *quick, *slow})]
    assert "vs itself (mirror match)" in labels and "vs unit 12 (featured)" in labels
    assert {f"vs unit {i} (quickest)" for i in quick} | {f"vs unit {i} (slowest)" for i in slow} <= set(labels)
    assert note.startswith("8 of its 30 opponents drawn (featured, mirror match,") and "range of all 30" in note
    fig = Figure(figsize=(10.5, 5.4))
    ax = plots.rounds_curve(drawn, ax=fig.add_subplot(), labels=labels, spread=curves, spread_label="all 30")
    assert len(ax.lines) == 8 and any(isinstance(c, PolyCollection) for c in ax.collections)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == "all 30" and len(legend) == 9


def test_up_to_20_opponents_every_curve_is_drawn_as_before():
    curves = [_Curve(f"unit {i}", 1 + i / 4) for i in range(20)]
    drawn, labels, note = lr.rounds_subset(curves, "Hero", "unit 3")
    assert drawn == curves and labels == [f"vs unit {i}" for i in range(20)] and note == ""


@pytest.mark.parametrize("bad", ["yes", 1, []])
def test_numbers_must_be_true_false_or_none(bad):
    from sim.errors import InputError

    with pytest.raises(InputError, match="numbers"):
        plots.matrix_heatmap(_wide(2), ax=Figure().add_subplot(), numbers=bad)


def test_past_20_units_the_outcome_bars_name_each_unit_on_one_line():
    n = 30
    frame = pd.DataFrame({"unit": [f"Mercenary Captain v{i}" for i in range(n)], "win_rate": np.linspace(0.2, 0.8, n),
                          "draw_rate": 0.0, "loss_rate": np.linspace(0.8, 0.2, n)})
    fig = Figure(figsize=(max(14.0, 3.0 + n / 6), 4.8))  # the report's size
    ax = plots.wdl_bars(frame, ax=fig.add_subplot())
    labels = ax.get_xticklabels()
    assert [t.get_text() for t in labels] == list(frame["unit"]) and all(t.get_rotation() == 90 for t in labels)
    fig.tight_layout()
    fig.canvas.draw()
    assert _apart(labels)
