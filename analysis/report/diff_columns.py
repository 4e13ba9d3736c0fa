"""What ``meleelab diff`` reads from a run folder: each file's columns by role, the items' keys, the quantities.

A file that gains or renames a column needs one line changed here (:mod:`.diff` reads
the first name present for each role).
"""

from __future__ import annotations

__all__ = ["COLUMNS", "KEYS", "QUANTITIES"]

#: Per file, each role and the column names that may hold it (the first present is used).
COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
    "matrix_long.csv": {
        "attacker": ("attacker",), "defender": ("defender",), "trials": ("trials",), "method": ("method",),
        "p_attacker": ("p_attacker",), "p_attacker_se": ("p_attacker_se",),
        "p_defender": ("p_defender",), "p_defender_se": ("p_defender_se",),
    },
    "rankings.csv": {
        "unit": ("unit", "list"), "rank": ("rank",),
        "win_rate": ("win_rate",), "win_rate_se": ("win_rate_se",), "score": ("score",), "score_se": ("score_se",),
        "strength": ("strength",), "strength_se": ("strength_se",),
    },
    "fair_points.csv": {
        "unit": ("unit",), "points": ("points",),
        "fair_price": ("fair_price", "fair_points"), "fair_lo": ("fair_lo",), "fair_hi": ("fair_hi",),
    },
    "unit_value.csv": {
        "unit": ("unit",), "list": ("list",), "points": ("price",),
        "value": ("value",), "fair_lo": ("value_lo",), "fair_hi": ("value_hi",),
    },
}

#: The columns naming an item of each file (a cell is an attacker and a defender; a unit value a unit and a list).
KEYS = {"matrix_long.csv": ("attacker", "defender"), "unit_value.csv": ("unit", "list")}

#: What is compared: (kind, file, quantity, how its standard error is found, human label).
QUANTITIES: tuple[tuple[str, str, str, str, str], ...] = (
    ("cell", "matrix_long.csv", "p_attacker", "p_attacker_se", "P(attacker wins)"),
    ("cell", "matrix_long.csv", "p_defender", "p_defender_se", "P(defender wins)"),
    ("ranking", "rankings.csv", "score", "score_se", "score"),
    ("ranking", "rankings.csv", "win_rate", "win_rate_se", "win rate"),
    ("ranking", "rankings.csv", "strength", "strength_se", "strength (logit)"),
    ("fair price", "fair_points.csv", "fair_price", "interval", "fair price (points)"),
    ("unit value", "unit_value.csv", "value", "interval", "unit value in a list (points)"),
)
