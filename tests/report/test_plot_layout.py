"""Plot layout, measured on the drawn figure: no legend over data, no overlapping labels, integer ticks.

These are the defects the ruleset notebooks showed (issue 13); the checks compare
the rendered bounding boxes (Agg renderer), after ``tight_layout`` as the
notebooks call it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

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
    r = sim.fight("grimdark", attacker, defender, trials=5_000, seed=2026, rounds="end", budget="none", method="mc")
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
    r = sim.fight("mecha", "AFS", "Nutrocker", trials=5_000, seed=1, rounds="end", max_rounds=20, method="mc")
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


# ------------------------------------------------------------- the report's plots (issue 13)
def _legend_clear_of_axes(ax) -> bool:
    """The legend lies outside the axes' data area (beside it), so it covers nothing."""
    legend, area = ax.get_legend().get_window_extent(), ax.get_window_extent()
    return not _overlaps(legend, area)


def _tick_labels_apart(labels) -> bool:
    boxes = [t.get_window_extent() for t in labels if t.get_text()]
    return not any(_overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


LONG_NAMES = [f"{kind} squad with {gear} {i}" for i, (kind, gear) in enumerate(
    [("Assault", "flamers"), ("Tactical", "melta guns"), ("Veteran", "power swords"), ("Devastator", "heavy bolters"),
     ("Scout", "sniper rifles"), ("Command", "a banner"), ("Terminator", "chainfists"), ("Sternguard", "combi-meltas"),
     ("Vanguard", "jump packs"), ("Honour", "relic blades"), ("Crusader", "chainswords"), ("Wolf", "frost axes"),
     ("Breacher", "shields"), ("Reiver", "grapnels")])]


@pytest.mark.parametrize("value_label,title", [("P(attacker wins)", None),
                                               ("side-averaged score", "Side-averaged score (%)")])
def test_heatmap_scale_is_in_the_units_of_its_title(value_label, title):
    rng = np.random.default_rng(3)
    wide = pd.DataFrame(rng.uniform(0, 1, (4, 4)), index=list("ABCD"), columns=list("ABCD"))
    fig = Figure(figsize=(6, 5))
    ax = plots.matrix_heatmap(wide, ax=fig.add_subplot(), value_label=value_label, title=title)
    _draw(fig)
    bar = ax.images[0].colorbar
    assert ax.get_title().endswith("(%)") and "%" in bar.ax.get_ylabel()
    assert bar.ax.get_ylim() == pytest.approx((0, 100))  # a "(%)" title has a 0-100 bar, not 0-1
    assert max(bar.get_ticks()) == 100 and ax.images[0].norm.vcenter == 50  # diverging about an even fight
    cells = sorted(float(t.get_text()) for t in ax.texts)
    assert cells == pytest.approx(sorted(100 * wide.to_numpy().ravel()), abs=0.05)


def test_heatmap_with_many_long_names_has_no_overlapping_labels():
    n = len(LONG_NAMES)
    wide = pd.DataFrame(np.full((n, n), 0.5), index=LONG_NAMES, columns=LONG_NAMES)
    fig = Figure(figsize=(2.6 + 0.7 * n, 1.8 + 0.6 * n))  # the report's size
    ax = plots.matrix_heatmap(wide, ax=fig.add_subplot())
    _draw(fig)
    assert _tick_labels_apart(ax.get_xticklabels()) and _tick_labels_apart(ax.get_yticklabels())
    fig_box = fig.bbox
    assert all(fig_box.x0 <= t.get_window_extent().x0 and t.get_window_extent().y0 >= fig_box.y0
               for t in ax.get_xticklabels())  # nothing cut off at the edge


class _Curve:
    """The part of a FightResult that rounds_curve reads."""

    def __init__(self, defender: str, dist: np.ndarray) -> None:
        self.attacker, self.defender = "Hero", defender
        self._dist = dist

    def rounds_distribution(self):
        return self._dist

    @property
    def mean_rounds(self):
        return float(np.arange(len(self._dist)) @ self._dist), 0.0


@pytest.mark.parametrize("n", [4, 14, 25])
def test_rounds_curves_past_ten_lines_stay_distinct_and_the_legend_is_beside_them(n):
    curves = [_Curve(f"unit {i}", np.diff(np.concatenate([[0], 1 - 0.8 ** (np.arange(1, 31) / (1 + i / 4)), [1]])))
              for i in range(n)]
    fig = Figure(figsize=(9.0, 4.8))
    ax = plots.rounds_curve(curves, ax=fig.add_subplot())
    _draw(fig)
    styles = {(tuple(np.round(matplotlib.colors.to_rgba(line.get_color()), 3)), line.get_linestyle())
              for line in ax.lines}
    assert len(styles) == n  # no two curves look alike (the default cycle repeats after ten)
    assert _legend_clear_of_axes(ax)
    assert np.allclose(ax.get_xticks(), np.round(ax.get_xticks()))


def test_sweep_with_many_opponents_has_distinct_lines_and_a_legend_beside_them():
    frame = pd.DataFrame([{"value": v, "opponent": f"opponent {k}", "p_win": 0.05 * k + 0.02 * v}
                          for k in range(12) for v in range(1, 6)])
    fig = Figure(figsize=(8, 4.8))
    ax = plots.sweep_curves(frame, ax=fig.add_subplot(), field="ws")
    _draw(fig)
    colours = {tuple(np.round(matplotlib.colors.to_rgba(line.get_color()), 3)) for line in ax.lines
               if line.get_label().startswith("opponent")}
    assert len(colours) == 12 and _legend_clear_of_axes(ax)


def test_outcome_bars_legend_beside_the_bars_and_names_apart():
    n = len(LONG_NAMES)
    ranks = pd.DataFrame({"unit": LONG_NAMES, "win_rate": np.linspace(0.95, 0.05, n), "draw_rate": 0.02,
                          "loss_rate": np.linspace(0.03, 0.93, n)})
    ranks["win_rate_lo"], ranks["win_rate_hi"] = ranks["win_rate"] - 0.01, ranks["win_rate"] + 0.01
    fig = Figure(figsize=(min(max(7.5, 0.8 * n + 3), 14.0), 4.8))
    ax = plots.wdl_bars(ranks, ax=fig.add_subplot())
    _draw(fig)
    assert _legend_clear_of_axes(ax) and _tick_labels_apart(ax.get_xticklabels())


def test_ranking_chart_has_no_legend_over_its_intervals():
    ranks = pd.DataFrame({"unit": list("ABCDEF"), "strength": np.linspace(-1, 1, 6)})
    ranks["strength_lo"], ranks["strength_hi"] = ranks["strength"] - 0.1, ranks["strength"] + 0.1
    ax = plots.ranking_chart(ranks, ax=Figure().add_subplot())
    assert ax.get_legend() is None and "95%" in ax.get_title()


def test_points_chart_ticks_are_plain_numbers_and_extrapolations_are_drawn():
    fair = pd.DataFrame({"unit": ["Troopers", "Spear Wall", "Terminators", "Monster"],
                         "points": [60.0, 180.0, 240.0, 110.0], "fair_points": [35.6, np.nan, 435.5, 355.4],
                         "fair_lo": [22.9, 255.6, 339.2, 171.0], "fair_hi": [45.9, np.nan, 569.9, np.nan],
                         "flagged": [True, True, True, True],
                         "beyond": ["", "estimate above 960", "", "upper bound above 960"]})
    fig = Figure(figsize=(8.0, 1.6 + 0.38 * 4))
    ax = plots.points_chart(fair, ax=fig.add_subplot())
    _draw(fig)
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) >= 3 and all(re.fullmatch(r"[\d,.]+", s) for s in labels), labels  # 20, 50, 100: no 6x10^1
    assert _tick_labels_apart(ax.get_xticklabels()) and _legend_clear_of_axes(ax)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Monster", "Terminators", "Spear Wall", "Troopers"]
    assert any(line.get_marker() == ">" for line in ax.lines)  # the extrapolations, at the right edge
    assert "beyond the roster's range" in [t.get_text() for t in ax.get_legend().get_texts()]
    narrow = plots.points_chart(fair.assign(points=[20.0, 24.0, 30.0, 26.0], fair_points=[21.0, 25.0, 28.0, 27.0],
                                            fair_lo=[19.0, 22.0, 25.0, 24.0], fair_hi=[23.0, 28.0, 33.0, 31.0],
                                            beyond=""), ax=Figure(figsize=(8, 3)).add_subplot())
    narrow.figure.canvas.draw()
    assert len([t for t in narrow.get_xticklabels() if t.get_text()]) >= 3  # within a decade, still several ticks


def test_mirror_match_plots_say_attacker_and_defender():
    r = sim.fight("mecha", "Gustav", "Gustav", trials=2_000, seed=4, rounds="end", max_rounds=20, method="mc")
    ax = plots.wdl_bars(r, ax=Figure().add_subplot())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["attacker wins", "draw", "defender wins"]
    assert ax.get_title().count("Gustav") == 1
    ax = plots.damage_distributions(r, ax=Figure().add_subplot())
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("to the defender") and legend[1].startswith("to the attacker")
    assert not any("Gustav" in t for t in legend)
    ax = plots.rounds_curve([r], ax=Figure().add_subplot())
    assert ax.get_legend().get_texts()[0].get_text().startswith("attacker vs defender")


def test_before_after_plots_keep_their_legends_off_the_data(tmp_path):
    from analysis.report.diff import TABLE_COLUMNS, RunDiff, plot_cells, plot_changes

    rows = [{"ruleset": "x", "kind": "cell", "item": f"A vs {k}", "quantity": "p_attacker", "old": 0.1 * k,
             "new": min(1.0, 0.1 * k + 0.2 * (k % 2)), "diff": 0.2 * (k % 2), "diff_se": 0.01, "z": 20.0 * (k % 2),
             "status": "changed" if k % 2 else "identical"} for k in range(10)]
    rows += [{"ruleset": "x", "kind": "fair price", "item": f"U{k}", "quantity": "fair_price", "old": 20.0 + k,
              "new": 25.0 + 2 * k, "diff": 5.0 + k, "diff_se": 1.0, "z": 5.0 + k, "status": "changed"}
             for k in range(6)]
    diff = RunDiff(pd.DataFrame(rows).reindex(columns=TABLE_COLUMNS), 3.0, "old", "new")
    for draw in (lambda ax: plot_cells(diff, ax=ax), lambda ax: plot_changes(diff, ax=ax, kind="fair price")):
        fig = Figure(figsize=(7.4, 5.0))
        ax = draw(fig.add_subplot())
        _draw(fig)
        assert _legend_clear_of_axes(ax)
