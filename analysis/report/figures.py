"""The report's plots: which are drawn, at what size, and as what PNG.

:func:`draw_figures` draws every plot of a built :class:`analysis.report.build.Report`
(the plot functions live in :mod:`analysis.report.plots`); figure sizes grow with the
number of units so that names and cells keep their room. Over 20 units the heatmaps
show colours only, at a fifth of an inch a cell, and the rounds plot draws a few
opponents over the range of all of them (:mod:`analysis.report.large_rosters`: what
is left out, each figure's title says).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import plots
from .cell_stats import method_note
from .large_rosters import heatmap_size, numbered, rounds_subset
from .plot_layout import wrap_label

__all__ = ["draw_figures", "render"]


def draw_figures(rep: Any) -> dict[str, bytes]:
    """Name -> PNG bytes of every plot of ``rep``."""
    m, b = rep.matrix, rep.balance
    n = max(len(m.units), 1)
    square = (2.6 + 0.7 * n, 1.8 + 0.6 * n) if numbered((n, n)) else \
        heatmap_size(n, n, max((len(str(u)) for u in m.units), default=1))
    score = b.payoff.copy()
    score[:] = (b.payoff.to_numpy(float) + 1) / 2  # side-averaged score = (1 + payoff) / 2
    score.index.name, score.columns.name = "unit", "opponent"
    draw: list[tuple[str, tuple[float, float], Callable[[Any], Any]]] = [
        ("matrix", square, lambda ax: plots.matrix_heatmap(m.wide("p_attacker"), ax=ax, title=(
            f"P(attacker wins) at equal points, {m.budget:g} points a side (%){method_note(m.long)}"
            if m.budget is not None else (f"P(attacker wins) (%){method_note(m.long)}" if method_note(m.long)
                                          else None)))),
        ("score", square, lambda ax: plots.matrix_heatmap(
            score, ax=ax, value_label="side-averaged score of the row unit",
            title="Side-averaged score, win + draw/2 (%): row unit vs column unit")),
        # ranked by the one score, as the rankings table beside it (the strength model is a column there)
        ("ranking", (7.0, 1.4 + 0.38 * n), lambda ax: plots.ranking_chart(
            b.rankings, ax=ax, value="score", title="Ranking by score: estimate (dot) with its 95% interval (bar)")),
        # past 20 units a sixth of an inch a unit, its name on one line (14 inches made 100 names run together)
        ("outcomes", (min(max(7.5, 0.8 * n + 3), 14.0) if numbered((n, n)) else max(14.0, 3.0 + n / 6), 4.8),
         lambda ax: plots.wdl_bars(b.rankings, ax=ax)),
        ("points", (8.0, 1.6 + 0.38 * n), lambda ax: plots.points_chart(b.fair_points, ax=ax)),
    ]
    for k, pair in enumerate(rep.featured):
        draw += _featured(rep, k, pair)
    if rep.one_for_one is not None:
        one = rep.one_for_one
        draw.append(("one_for_one", square, lambda ax: plots.matrix_heatmap(
            one.wide("p_attacker"), ax=ax,
            title=f"P(attacker wins), one unit a side (whatever it costs) (%){method_note(one.long)}")))
    if rep.baseline is not None:
        from .diff import plot_cells, plot_changes

        diff = rep.baseline
        moved = diff.table[diff.table["status"].isin(["changed", "within noise"])]

        def rows(quantity: str) -> int:  # plot_changes shows at most 15 items, one row each
            return int(min(15, max(1, (moved["quantity"] == quantity).sum())))

        draw += [("baseline_cells", (7.4, 5.0), lambda ax: plot_cells(diff, ax=ax)),
                 ("baseline_strength", (8.0, 1.4 + 0.35 * rows("strength")), lambda ax: plot_changes(
                     diff, ax=ax, kind="ranking", quantity="strength", title="Bradley-Terry strength")),
                 ("baseline_prices", (8.0, 1.4 + 0.35 * rows("fair_price")), lambda ax: plot_changes(
                     diff, ax=ax, kind="fair price", quantity="fair_price", title="Fair prices (points)"))]
    return {name: render(fn, size) for name, size, fn in draw}


def _featured(rep: Any, k: int, pair: tuple[str, str]) -> list[tuple[str, tuple[float, float], Callable]]:
    """The plots of the k-th featured matchup: win/draw/loss, damage, and its attacker's rounds curves."""
    m = rep.matrix
    res = m.results.get(pair)
    if res is None:
        return []
    att = pair[0]
    curves = rep.to_the_end.get(att) or [m.results[(att, d)] for d in m.units if (att, d) in m.results]
    drawn, labels, note = rounds_subset(curves, att, pair[1])  # past 20 opponents, a few over the range of all
    cap = m.settings.get("max_rounds")
    # these fights field whole copies (sim.fight: floor(budget / points)), not the matrix's expected mixture
    whole = "; floor(budget / points) copies a side" if m.budget is not None and getattr(m, "fielding", "") == \
        "expected" else ""
    title = f"{att} attacking each unit, fought to the end (cap {cap} rounds{whole})"
    size = (9.0, 4.8)
    if note:  # the few drawn of many: the title says which, on a wider figure, wrapped to fit beside the legend
        title, size = f"{wrap_label(title, 70)}\n{wrap_label(note, 70)}", (10.5, 5.4)
    return [(f"featured_{k}_wdl", (6.6, 4.2), lambda ax: plots.wdl_bars(res, ax=ax)),
            (f"featured_{k}_damage", (7.0, 4.2), lambda ax: plots.damage_distributions(res, ax=ax)),
            (f"featured_{k}_rounds", size, lambda ax: plots.rounds_curve(
                drawn, ax=ax, labels=labels, title=title,
                spread=curves if note else None, spread_label=f"all {len(curves)} opponents (range)"))]


def render(draw: Callable[[Any], Any], size: tuple[float, float]) -> bytes:
    """PNG bytes of ``draw(ax)`` on a new figure of ``size`` inches (plain text, one glyph warning at most)."""
    from matplotlib.figure import Figure

    from .render import figure_png, glyph_warnings, plain_text

    fig = Figure(figsize=size)
    with plain_text(), glyph_warnings():
        ax = fig.add_subplot()
        draw(ax)
    return figure_png(fig, dpi=100)
