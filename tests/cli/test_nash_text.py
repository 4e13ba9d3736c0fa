"""The terminal's Nash table: a range when the equilibrium is not unique, a mix that adds up to 1 as shown."""

from __future__ import annotations

import pandas as pd

from analysis.cli import main


def _row(text: str, unit: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(unit + " "))
    return line[len(unit):].split()


def test_interchangeable_units_show_the_range_over_every_equilibrium(capsys) -> None:
    """Nutrocker (defence 4, physical -2, armour A) and Kroete (3, 0, B) take the same damage from every die
    (the chart as tests/report/test_diff.py types it: total = die + defence + physical, destroyed at most 2 + k,
    immobilised at 3 + k, k the armour letter's index: Nutrocker d + 2 against 2 and 3, Kroete d + 3 against 3
    and 4: never destroyed, immobilised on a 1), so any split of the weight between them is an equilibrium.
    Before, the table said Nutrocker 1.000 and Kroete 0, as if one were the better pick."""
    assert main(["balance", "mecha", "--units", "AFS,Nutrocker,Kroete,Sand Stalker", "--quiet"]) == 0
    out = capsys.readouterr().out
    nash = out[out.index("Nash equilibrium mix"):out.index("Dominated units")]
    assert "any equilibrium" in nash and "not unique" in nash
    for unit in ("Nutrocker", "Kroete"):
        assert "[0.000, 1.000]" in " ".join(_row(nash, unit)), unit
    assert "[0.000, 0.000]" in " ".join(_row(nash, "AFS"))  # dominated: in no equilibrium


def test_a_unique_equilibrium_has_no_range_column_and_adds_up() -> None:
    from analysis.cli.tables import _nash_text

    # duel's shipped mix: each weight rounded alone shows 0.130 + 0.353 + 0.516 = 0.999
    w = [0.130449, 0.353107, 0.516444]
    nash = pd.DataFrame({"unit": ["Reaver", "Brawler", "Ogre"], "weight": w, "weight_min": w, "weight_max": w,
                         "support_share": [1.0, 1.0, 1.0]})
    text = _nash_text(nash, 3)
    assert "any equilibrium" not in text
    shown = [float(_row(text, u)[0]) for u in ("Reaver", "Brawler", "Ogre")]
    assert round(sum(shown), 3) == 1.0 and all(abs(s - x) < 1e-3 for s, x in zip(shown, w))
