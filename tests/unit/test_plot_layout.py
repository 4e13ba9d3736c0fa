"""Plot layout, measured on the drawn figure: no legend over data, no overlapping labels, integer ticks.

These are the defects the ruleset notebooks showed (issue 13); the checks compare
the rendered bounding boxes (Agg renderer), after ``tight_layout`` as the
notebooks call it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import sim  # noqa: E402
from analysis import plots  # noqa: E402


def _draw(fig: Figure) -> None:
    fig.tight_layout()
    fig.canvas.draw()


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _data_boxes(ax):
    boxes = [p.get_window_extent() for p in ax.patches if p.get_height() > 0]
    for coll in ax.collections:  # error bars
        boxes += [path.get_extents(coll.get_transform()) for path in coll.get_paths()]
    return boxes


@pytest.mark.parametrize("attacker,defender", [("Champion", "Warrior brood"), ("Tactical squad", "Horde mob")])
def test_damage_legend_is_never_over_a_bar(attacker, defender):
    # the Champion takes 3 wounds 80% of the time: a tall bar where the legend used to sit
    r = sim.fight("grimdark", attacker, defender, trials=5_000, seed=2026, rounds="end", budget="none")
    fig = Figure(figsize=(5.5, 3.8))
    ax = plots.damage_distributions(r, ax=fig.add_subplot())
    _draw(fig)
    legend = ax.get_legend().get_window_extent()
    assert not any(_overlaps(legend, box) for box in _data_boxes(ax))
    assert max(ax.get_yticks()) <= 1.0  # a probability axis: no tick above 1


def _switch_frame() -> pd.DataFrame:
    rows = []
    for matchup, values in {"Monster vs Veteran squad": (0.98, 0.89), "Terminators vs Warrior brood": (0.99, 0.88),
                            "Monster vs Champion": (0.97, 0.81), "Tactical squad vs Troopers": (1.0, 1.0)}.items():
        for setting, v in zip(("instant death (default)", "no instant death"), values):
            rows.append({"matchup": matchup, "setting": setting, "attacker wins": v, "lo": v - 0.01,
                         "hi": min(v + 0.01, 1.0)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("width", [9.0, 6.4])
def test_interpretation_bars_labels_and_legend_do_not_collide(width):
    fig = Figure(figsize=(width, 4.2))
    ax = plots.interpretation_bars(_switch_frame(), ax=fig.add_subplot(), order=["instant death (default)",
                                                                                 "no instant death"])
    _draw(fig)
    legend = ax.get_legend().get_window_extent()
    assert not any(_overlaps(legend, box) for box in _data_boxes(ax))
    labels = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) == 4
    assert not any(_overlaps(a, b) for i, a in enumerate(labels) for b in labels[i + 1:])
    assert len(ax.patches) == 8 and ax.get_title() and ax.get_ylabel()


def test_rounds_and_integer_stats_get_integer_ticks():
    r = sim.fight("mecha", "AFS", "Nutrocker", trials=5_000, seed=1, rounds="end", max_rounds=20)
    fig = Figure(figsize=(5.5, 3.8))
    ax = plots.rounds_curve([r], ax=fig.add_subplot())
    _draw(fig)
    ticks = ax.get_xticks()
    assert np.allclose(ticks, np.round(ticks))
    frame = pd.DataFrame({"value": [0, 1, 2, 3, 4, 5], "opponent": ["X"] * 6, "p_win": np.linspace(0.2, 0.7, 6)})
    fig = Figure(figsize=(6.4, 4.8))
    ax = plots.sweep_curves(frame, ax=fig.add_subplot(), field="defence")
    _draw(fig)
    ticks = ax.get_xticks()
    assert np.allclose(ticks, np.round(ticks))
