"""Rosters: strict validation with one-line errors naming file, unit, field, value, expectation."""

from __future__ import annotations

import pytest

import sim
from sim.errors import InputError

GOOD = """
ruleset = "mecha"
[[unit]]
name = "AFS"
defence = 2
physical = 0
armour = "B"
points = 20
"""


def write(tmp_path, text, name="roster.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def one_line_error(path, ruleset=None):
    with pytest.raises(InputError) as e:
        sim.load_roster(path, ruleset)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_good_roster_loads(tmp_path):
    r = sim.load_roster(write(tmp_path, GOOD))
    assert r.ruleset == "mecha" and r.names == ["AFS"] and r["AFS"].defence == 2 and r["AFS"].engageable is True


@pytest.mark.parametrize("change,field,expected", [
    (("defence = 2", "defence = 12"), "defence", "an integer in 0..10"),
    (("defence = 2", 'defence = "two"'), "defence", "an integer"),
    (("defence = 2", "defence = 2.5"), "defence", "an integer"),
    (("points = 20", "points = -1"), "points", "0.01..1000000"),
    (("points = 20", "points = 0"), "points", "0.01..1000000"),
    (("points = 20", "points = 1e308"), "points", "0.01..1000000"),
    (("points = 20", "points = 20\nspeed = 3"), "speed", "unknown field"),
    (("defence = 2\n", ""), "defence", "required"),
    (('armour = "B"', 'armour = "BB"'), "armour", "letter"),
    (('armour = "B"', 'armour = "F"'), "armour", "chart"),
])
def test_bad_fields_name_file_unit_field_and_expectation(tmp_path, change, field, expected):
    path = write(tmp_path, GOOD.replace(*change))
    msg = one_line_error(path)
    assert str(path) in msg and "unit 'AFS'" in msg and f"field '{field}'" in msg and expected in msg


def test_duplicate_names(tmp_path):
    msg = one_line_error(write(tmp_path, GOOD + GOOD.split("\n", 2)[2]))
    assert "duplicate" in msg and "AFS" in msg


def test_wrong_ruleset(tmp_path):
    path = write(tmp_path, GOOD.replace('"mecha"', '"chess"'))
    msg = one_line_error(path)
    assert "unknown ruleset 'chess'" in msg and str(path) in msg


def test_unknown_top_level_key_and_bad_toml(tmp_path):
    assert "top-level" in one_line_error(write(tmp_path, "foo = 1\n" + GOOD))
    assert "not valid TOML" in one_line_error(write(tmp_path, "ruleset = \n"))
    assert "no such roster file" in one_line_error(tmp_path / "missing.toml")
    assert "unknown roster format" in one_line_error(write(tmp_path, GOOD, "roster.yaml"))


def test_csv_roster(tmp_path):
    path = write(tmp_path, "name,defence,physical,armour,engageable,points\nAFS,2,0,B,true,20\nFly,2,0,C,false,\n",
                 "r.csv")
    r = sim.load_roster(path, "mecha")
    assert r["Fly"].engageable is False and r["Fly"].points is None and r["AFS"].points == 20
    bad = write(tmp_path, "name,defence,physical,armour\nAFS,x,0,B\n", "bad.csv")
    msg = one_line_error(bad, "mecha")
    assert "unit 'AFS'" in msg and "field 'defence'" in msg and "'x'" in msg
    assert "ruleset" in one_line_error(path)  # CSV without a ruleset column needs one named


def test_custom_chart_table(tmp_path):
    text = GOOD + '\n[chart]\nB = ["D", "D", "D", "D", "M", "-"]\n'
    r = sim.load_roster(write(tmp_path, text))
    assert r.options["chart"] == "custom"
    res = sim.fight("mecha", "AFS", "AFS", roster=r, trials=10_000, seed=1)
    # AFS total = d6 + 2: only a 3 (total 5) is M, a 4+ (total 6+) is no effect
    assert res.outcomes["attacker"]["destroyed"] == pytest.approx(2 / 6, abs=0.02)
    msg = one_line_error(write(tmp_path, GOOD + '\n[chart]\nB = ["D", "X"]\n'))
    assert "chart.B" in msg


def test_options_table(tmp_path):
    r = sim.load_roster(write(tmp_path, GOOD + "\n[options]\nsecond_m_destroys = true\n"))
    assert r.options["second_m_destroys"] is True
    assert "second_m_destroys" in one_line_error(write(tmp_path, GOOD + '\n[options]\nsecond_m_destroys = "yes"\n'))


def test_default_rosters_load_for_every_ruleset():
    for rs in sim.rulesets():
        roster = sim.default_roster(rs.id)
        assert len(roster) >= 2
        assert all(u.points is not None for u in roster.units.values())


def test_roster_for_another_ruleset_is_refused(tmp_path, capsys):
    path = write(tmp_path, GOOD)
    msg = one_line_error(path, "grimdark")
    assert str(path) in msg and "field 'ruleset'" in msg and "grimdark" in msg
    from analysis.cli import main

    assert main(["fight", "grimdark", "AFS", "AFS", "--roster", str(path)]) == 2
    assert "a grimdark roster" in capsys.readouterr().err
