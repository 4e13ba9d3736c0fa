"""``grimdark`` charts, kept as data exactly as the spec prints them.

``WS_CHART[a - 1][d - 1]``: the d6 score needed to hit when an attacker of WS
``a`` strikes a target of WS ``d``. ``WOUND_CHART[s - 1][t - 1]``: the d6 score
needed to wound Toughness ``t`` with Strength ``s``; ``0`` is the chart's "–"
(the hit has no effect and no die is rolled).
"""

from __future__ import annotations

__all__ = ["WS_CHART", "WOUND_CHART", "to_hit", "to_wound", "p_success"]

WS_CHART: tuple[tuple[int, ...], ...] = (
    (4, 4, 5, 5, 5, 5, 5, 5, 5, 5),
    (3, 4, 4, 4, 5, 5, 5, 5, 5, 5),
    (3, 3, 4, 4, 4, 4, 5, 5, 5, 5),
    (3, 3, 3, 4, 4, 4, 4, 4, 5, 5),
    (3, 3, 3, 3, 4, 4, 4, 4, 4, 4),
    (3, 3, 3, 3, 3, 4, 4, 4, 4, 4),
    (3, 3, 3, 3, 3, 3, 4, 4, 4, 4),
    (3, 3, 3, 3, 3, 3, 3, 4, 4, 4),
    (3, 3, 3, 3, 3, 3, 3, 3, 4, 4),
    (3, 3, 3, 3, 3, 3, 3, 3, 3, 4),
)

WOUND_CHART: tuple[tuple[int, ...], ...] = (
    (4, 5, 6, 6, 0, 0, 0, 0, 0, 0),
    (3, 4, 5, 6, 6, 0, 0, 0, 0, 0),
    (2, 3, 4, 5, 6, 6, 0, 0, 0, 0),
    (2, 2, 3, 4, 5, 6, 6, 0, 0, 0),
    (2, 2, 2, 3, 4, 5, 6, 6, 0, 0),
    (2, 2, 2, 2, 3, 4, 5, 6, 6, 0),
    (2, 2, 2, 2, 2, 3, 4, 5, 6, 6),
    (2, 2, 2, 2, 2, 2, 3, 4, 5, 6),
    (2, 2, 2, 2, 2, 2, 2, 3, 4, 5),
    (2, 2, 2, 2, 2, 2, 2, 2, 3, 4),
)


def to_hit(ws_attacker: int, ws_target: int) -> int:
    """Score needed to hit (WS chart)."""
    return WS_CHART[ws_attacker - 1][ws_target - 1]


def to_wound(strength: int, toughness: int) -> int:
    """Score needed to wound (S vs T chart); 0 when the hit cannot wound."""
    return WOUND_CHART[strength - 1][toughness - 1]


def p_success(score: int) -> float:
    """Probability that one d6 rolls ``score`` or more; 0 for the chart's "–" (score 0)."""
    return 0.0 if score == 0 else (7 - score) / 6
