"""Plots: each returns the Axes it drew on, with a title, axis labels and (where it has series) a legend."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import sim  # noqa: E402
from analysis import plots  # noqa: E402


@pytest.fixture(scope="module")
def result():
    # fight to the end so the rounds distribution has some spread
    return sim.fight("mecha", "AFS", "Nutrocker", trials=20_000, seed=3, rounds="end", max_rounds=10, method="mc")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _new_ax():
    return Figure().add_subplot()


def _labelled(ax, legend=True):
    assert ax.get_title()
    assert ax.get_xlabel() and ax.get_ylabel()
    if legend:
        assert ax.get_legend() is not None


def test_heatmap_numbers_and_diverging_palette_centred_on_an_even_fight():
    wide = pd.DataFrame([[0.5, 0.9, np.nan], [0.1, 0.5, 0.25], [0.3, 0.7, 0.5]], index=list("ABC"), columns=list("ABC"))
    ax = _new_ax()
    before = plt.get_fignums()
    out = plots.matrix_heatmap(wide, ax=ax)
    assert out is ax and plt.get_fignums() == before  # drew on the given Axes, made no figure
    norm = ax.images[0].norm
    # cells, colour bar and title all in percent: 0-100, white at 50
    assert isinstance(norm, TwoSlopeNorm) and norm.vcenter == 50 and (norm.vmin, norm.vmax) == (0, 100)
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 9 and "90.0" in texts and "–" in texts
    assert ax.get_xlabel() == "defender" and ax.get_ylabel() == "attacker" and ax.get_title()


def test_heatmap_without_ax_makes_one_figure():
    before = len(plt.get_fignums())
    ax = plots.matrix_heatmap(pd.DataFrame([[0.5]], index=["A"], columns=["A"]))
    assert len(plt.get_fignums()) == before + 1 and ax.figure.number in plt.get_fignums()


def test_wdl_bars_from_a_result_has_wilson_error_bars(result):
    ax = plots.wdl_bars(result, ax=_new_ax())
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([result.win["attacker"], result.win["draw"], result.win["defender"]])
    _labelled(ax, legend=False)
    assert len(ax.collections) >= 1  # the error bars


def test_wdl_bars_from_rankings_and_long_frames():
    ranks = pd.DataFrame({"unit": ["A", "B"], "win_rate": [0.6, 0.3], "win_rate_lo": [0.55, 0.25],
                          "win_rate_hi": [0.65, 0.35], "draw_rate": [0.1, 0.1], "loss_rate": [0.3, 0.6]})
    ax = plots.wdl_bars(ranks, ax=_new_ax())
    assert len(ax.patches) == 6
    _labelled(ax)
    long = pd.DataFrame({"attacker": ["A"], "defender": ["B"], "p_attacker": [0.4], "p_defender": [0.5],
                         "p_draw": [0.1]})
    ax = plots.wdl_bars(long, ax=_new_ax())
    _labelled(ax)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["attacker wins", "draw", "defender wins"]


def test_damage_distributions_both_ways(result):
    ax = plots.damage_distributions(result, ax=_new_ax())
    _labelled(ax)
    assert result.ruleset.damage_unit in ax.get_xlabel()
    n_def = len(result.damage_distribution("defender"))
    n_att = len(result.damage_distribution("attacker"))
    assert len(ax.patches) == n_def + n_att
    assert len(ax.get_legend().get_texts()) == 2


def test_rounds_curve_is_cumulative(result):
    ax = plots.rounds_curve([result, result], ax=_new_ax(), labels=["one", "two"])
    _labelled(ax)
    y = ax.lines[0].get_ydata()
    assert np.all(np.diff(y) >= -1e-12) and y[-1] == pytest.approx(1.0)


def test_sweep_curves_with_bands():
    frame = pd.DataFrame({"value": [1, 2, 3] * 2, "opponent": ["X"] * 3 + ["Y"] * 3,
                          "p_win": [0.2, 0.4, 0.6, 0.1, 0.3, 0.5], "p_win_lo": [0.15, 0.35, 0.55, 0.05, 0.25, 0.45],
                          "p_win_hi": [0.25, 0.45, 0.65, 0.15, 0.35, 0.55]})
    ax = plots.sweep_curves(frame, ax=_new_ax(), field="defence")
    _labelled(ax)
    assert "defence" in ax.get_xlabel()
    assert len(ax.collections) == 2  # one band per opponent


def test_ranking_chart_sorted_with_intervals():
    ranks = pd.DataFrame({"unit": ["A", "B", "C"], "strength": [0.1, 0.5, -0.6], "strength_lo": [0.0, 0.4, -0.7],
                          "strength_hi": [0.2, 0.6, -0.5]})
    ax = plots.ranking_chart(ranks, ax=_new_ax())
    _labelled(ax, legend=False)  # the title says what dot and bar are: no legend to cover an interval
    assert [t.get_text() for t in ax.get_yticklabels()] == ["C", "A", "B"]


def test_points_chart_marks_flagged_units():
    fair = pd.DataFrame({"unit": ["A", "B"], "points": [20.0, 30.0], "fair_points": [21.0, 45.0],
                         "fair_lo": [18.0, 40.0], "fair_hi": [24.0, 50.0], "flagged": [False, True]})
    ax = plots.points_chart(fair, ax=_new_ax())
    _labelled(ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "flagged: re-cost" in labels and "points now" in labels
    assert [t.get_text() for t in ax.get_yticklabels()] == ["B", "A"]  # one row per unit, first at the top
    empty = plots.points_chart(fair.iloc[0:0], ax=_new_ax())
    assert empty.get_title() and empty.texts
