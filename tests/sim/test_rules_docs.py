"""docs/rules/: every ruleset documents its own rules, and the tables printed there are the code's tables.

The pages are prose for designers; these tests keep them honest: every field,
state and switch of a ruleset's schema is named on its page, each ruleset's
``spec`` points at its page, no pointer to the project's private spec folder
is left anywhere a user reads, and the charts printed on the pages are rebuilt
here from the code's own tables (so a chart changed in the code and not in the
docs, or the other way round, fails).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import sim
from sim.rulesets.duel.plan import check_pass_probability
from sim.rulesets.grimdark.charts import WOUND_CHART, WS_CHART
from sim.rulesets.mecha import Chart
from sim.rulesets.warband import tables as wt

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docs" / "rules"
IDS = [rs.id for rs in sim.rulesets()]


def _page(rid: str) -> str:
    return (RULES / f"{rid}.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("rid", IDS)
def test_every_ruleset_has_a_page_naming_its_whole_schema(rid: str) -> None:
    rs = sim.get_ruleset(rid)
    assert (RULES / f"{rid}.md").is_file(), f"docs/rules/{rid}.md is missing"
    page = _page(rid)
    names = ([f.name for f in rs.unit_fields] + [s.name for s in rs.state_fields]
             + [f.name for f in rs.option_fields] + [e.name for e in rs.extras] + list(rs.outcome_categories))
    missing = [n for n in names if f"`{n}`" not in page]
    assert not missing, f"docs/rules/{rid}.md does not name {', '.join(missing)}"
    for section in ("## One round, step by step", "## Interpretations where the text is silent",
                    "## What is refused before anything runs", "## Not simulated", "## Equal points"):
        assert section in page, f"docs/rules/{rid}.md has no section {section!r}"


@pytest.mark.parametrize("rid", IDS)
def test_spec_points_at_the_page(rid: str) -> None:
    rs = sim.get_ruleset(rid)
    assert rs.spec == f"docs/rules/{rid}.md"
    assert (ROOT / rs.spec).is_file()
    assert f"[{rid}.md]({rid}.md)" in (RULES / "README.md").read_text(encoding="utf-8"), \
        f"docs/rules/README.md does not link {rid}.md"


def test_no_pointer_to_the_private_spec_folder() -> None:
    """A clone has no ../shared/rules: README, docs, notebooks and code must not send readers there."""
    files = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("notebooks/*.ipynb"),
             *ROOT.glob("sim/**/*.py"), *ROOT.glob("analysis/**/*.py")]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in files
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1) if "shared/rules" in line]
    assert not hits, f"pointers to shared/rules remain: {', '.join(hits)}"


# ------------------------------------------------- the printed tables are the code's
def _chart_rows(chart: Chart) -> str:
    lines = ["| armour | ≤1 | 2 | 3 | 4 | 5 | 6 | ≥7 |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {letter} | " + " | ".join(row) + " | - |" for letter, row in chart.rows.items()]
    return "\n".join(lines)


def _grid(corner: str, need, text) -> str:
    lines = [f"| {corner} | " + " | ".join(str(j) for j in range(1, 11)) + " |", "|---" * 11 + "|"]
    lines += [f"| **{i}** | " + " | ".join(text(need(i, j)) for j in range(1, 11)) + " |" for i in range(1, 11)]
    return "\n".join(lines)


def _plus(v: int) -> str:
    return f"{v}+"


def test_mecha_page_prints_both_charts() -> None:
    page = _page("mecha")
    assert _chart_rows(Chart.reconstructed()) in page
    assert _chart_rows(Chart.wide()) in page


def test_grimdark_page_prints_the_charts() -> None:
    page = _page("grimdark")
    assert _grid("WS \\ target WS", lambda a, d: WS_CHART[a - 1][d - 1], _plus) in page
    assert _grid("S \\ T", lambda s, t: WOUND_CHART[s - 1][t - 1], lambda v: "–" if v == 0 else _plus(v)) in page


def test_warband_page_prints_the_tables() -> None:
    page = _page("warband")
    assert _grid("WS \\ target WS", wt.to_hit_needed, _plus) in page
    assert _grid("S \\ T", wt.to_wound_needed, lambda v: "–" if v > 6 else _plus(v)) in page
    saves = " | ".join("none (7)" if wt.ARMOUR_SAVE[a] > 6 else _plus(wt.ARMOUR_SAVE[a]) for a in wt.ARMOUR_SAVE)
    assert f"| save | {saves} |" in page
    mods = [wt.strength_save_modifier(s) for s in range(1, 10)]
    assert mods[:3] == [0, 0, 0] and wt.strength_save_modifier(10) == mods[-1]
    assert "| strength modifier | 0 | " + " | ".join(f"+{m}" for m in mods[3:]) + " |" in page
    crit = [wt.critical_result(r) for r in range(1, 7)]
    assert crit == [wt.VITAL_PART] * 2 + [wt.EXPOSED_SPOT] * 2 + [wt.MASTER_STRIKE] * 2
    assert "| 1-2 | vital part" in page and "| 3-4 | exposed spot" in page and "| 5-6 | master strike" in page
    plain = [wt.injury_result(t, False) for t in range(1, 7)]
    hammer = [wt.injury_result(t, True) for t in range(1, 7)]
    names = {wt.KNOCKED_DOWN: "knocked down", wt.STUNNED: "stunned", wt.OUT_OF_ACTION: "out of action"}
    for total, label in ((1, "1"), (2, "2"), (3, "3-4"), (5, "5-6")):
        assert f"| {label} | {names[plain[total - 1]]} | {names[hammer[total - 1]]} |" in page
    for name, weapon in wt.WEAPONS.items():
        assert f"| `{name}`" in page, f"weapon {name} missing from the weapons table"
        assert (f"user + {weapon.strength_bonus}" in page) if weapon.strength_bonus > 0 else True
    for alias in wt.WEAPON_ALIASES:
        assert f"`{alias}`" in page


def test_duel_page_prints_the_toughness_check() -> None:
    page = _page("duel")
    for die in ("d6", "2d6"):
        row = " | ".join(str(check_pass_probability(t, die)) for t in range(1, 12))
        assert f"| `{die}` | {row} |" in page


# ---------------------------------------------------- documented behaviour, checked
def test_weapon_none_disarms_a_model_with_two_weapons() -> None:
    """docs/rules/duel.md and the guide: `attacker.weapon=none` disarms the model (the Knight has two weapons)."""
    states, overrides, options = sim.parse_settings("duel", ["attacker.weapon=none"])
    matchup, _ = sim.build_matchup("duel", "Knight", "Reaver", states=states, overrides=overrides, options=options,
                                   from_text=True, budget="none")
    knight = matchup.attacker
    assert knight.weapon is None and knight.second_weapon is None
    assert knight.hit_strength == -(-knight.strength // 2) and knight.hit_damage == 1
    # a second weapon given in the same breath is still refused: it needs a first one
    items = ["attacker.weapon=none", "attacker.second_weapon.strength=3"]
    states, overrides, options = sim.parse_settings("duel", items)
    with pytest.raises(sim.InputError, match="second weapon needs"):
        sim.build_matchup("duel", "Knight", "Reaver", states=states, overrides=overrides, options=options,
                          from_text=True, budget="none")


def test_guide_links_the_rules_pages() -> None:
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    for rid in IDS:
        assert re.search(rf"\(rules/{rid}\.md\)", guide), f"docs/guide.md does not link rules/{rid}.md"
