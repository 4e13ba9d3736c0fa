"""Issue 12, inputs: every bad input is one line on stderr and exit 2; the API raises its own error class.

One test (or one parametrised case) per input the issue lists.
"""

from __future__ import annotations

import warnings

import pytest

import sim
from analysis.cli import main
from sim.limits import MAX_ROUNDS

MECHA_TOML = '''ruleset = "mecha"
[[unit]]
name = "AFS"
defence = 2
physical = 0
armour = "B"
points = {points}
[[unit]]
name = "{name}"
defence = 4
physical = -2
armour = "A"
points = 45
'''


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code, err, *needles):
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("meleelab: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def mecha_roster(tmp_path, points="20", name="Nutrocker", suffix=".toml"):
    path = tmp_path / f"roster{suffix}"
    path.write_text(MECHA_TOML.format(points=points, name=name), encoding="utf-8")
    return path


# ------------------------------------------------------------ numbers out of range
FIGHT = ["fight", "mecha", "AFS", "Nutrocker", "--quiet"]


@pytest.mark.parametrize("extra,needles", [
    (["--seed", "-1"], ["--seed", "-1"]),
    (["--seed", str(2**200)], ["--seed"]),
    (["--trials", str(10**20)], ["--trials", "10**15"]),
    (["--trials", "1_000"], ["--trials", "digits"]),
    (["--trials", "٣"], ["--trials", "digits"]),
    (["--rounds", str(10**9)], ["--rounds", f"1..{MAX_ROUNDS:,}"]),
    (["--rounds", "end", "--max-rounds", str(10**11)], ["--max-rounds", f"{MAX_ROUNDS:,}"]),
    (["--workers", "many"], ["--workers"]),
])
def test_fight_numbers_out_of_range_are_one_line(capsys, extra, needles):
    code, _, err = run(capsys, *FIGHT, *extra)
    assert_one_line(code, err, *needles)


def test_limits_are_accepted_at_the_edge(capsys):
    code, out, err = run(capsys, *FIGHT, "--trials", "3", "--rounds", str(MAX_ROUNDS), "--seed", "0", "--json")
    assert code == 0, err
    code, out, err = run(capsys, *FIGHT, "--trials", "3", "--rounds", "end", "--max-rounds", str(MAX_ROUNDS))
    assert code == 0, err


def test_sweep_range_too_wide_is_one_line(capsys):
    code, _, err = run(capsys, "sweep", "mecha", "AFS", "Nutrocker", "--vary", f"defence=0..{10**11}", "--quiet")
    assert_one_line(code, err, "--vary", "at most")


@pytest.mark.parametrize("vary", ["defence=١..٣", "defence=1_0..12", "defence=1..x"])
def test_sweep_range_needs_ascii_integers(capsys, vary):
    code, _, err = run(capsys, "sweep", "mecha", "AFS", "Nutrocker", "--vary", vary, "--quiet")
    assert_one_line(code, err, "--vary")


@pytest.mark.parametrize("seconds", ["-1", "0", "nan", "inf", "61"])
def test_bench_seconds_out_of_range(capsys, seconds):
    code, _, err = run(capsys, "bench", "mecha", "--seconds", seconds)
    assert_one_line(code, err, "--seconds")


@pytest.mark.parametrize("half_width", ["0", "0.5", "nan", "-0.1"])
def test_matrix_half_width_out_of_range(capsys, half_width):
    code, _, err = run(capsys, "matrix", "mecha", "--half-width", half_width)
    assert_one_line(code, err, "--half-width")


def test_workers_above_the_cores_are_clamped_with_a_note(capsys):
    code, out, err = run(capsys, *FIGHT, "--trials", "100", "--seed", "1", "--workers", "999", "--json")
    assert code == 0 and out.strip()
    notes = [ln for ln in err.splitlines() if ln.strip()]
    assert len(notes) == 1 and notes[0].startswith("meleelab: note: --workers 999") and "cores" in notes[0]


def test_a_note_never_comes_with_an_error(capsys):
    code, _, err = run(capsys, *FIGHT, "--workers", "999", "--trials", "0")
    assert_one_line(code, err, "--trials")


# ------------------------------------------------------------ balance --from-matrix
def _matrix_csv(tmp_path, capsys):
    folder = tmp_path / "m"
    code, _, err = run(capsys, "matrix", "mecha", "--units", "AFS,Nutrocker,Gustav", "--max-trials", "2000",
                       "--seed", "1", "--quiet", "--out", folder)
    assert code == 0, err
    return folder / "matrix_long.csv"


def _edit_cell(path, line, column, value):
    import csv
    import io

    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    rows[line - 1][rows[0].index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


@pytest.mark.parametrize("column,value,expected", [
    ("p_attacker", "lots", "a probability 0..1"),
    ("p_defender", "1.5", "a probability 0..1"),
    ("p_draw", "-0.2", "a probability 0..1"),
    ("p_draw", "0.9", "sum to"),
    ("trials", "many", "an integer 0.."),
    ("points_attacker", "0", "points 0.01.."),
    ("p_attacker", "nan", "a probability 0..1"),
    ("p_attacker", "٠.٥", "a probability 0..1"),
])
def test_from_matrix_bad_cells_name_file_line_column_value(tmp_path, capsys, column, value, expected):
    path = _matrix_csv(tmp_path, capsys)
    _edit_cell(path, 3, column, value)
    code, _, err = run(capsys, "balance", "mecha", "--from-matrix", path)
    assert_one_line(code, err, str(path), "line 3", f"column {column!r}", repr(value), expected)


def test_from_matrix_incomplete_or_duplicated(tmp_path, capsys):
    path = _matrix_csv(tmp_path, capsys)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "balance", "mecha", "--from-matrix", path)
    assert_one_line(code, err, "incomplete matrix", "Gustav")
    path.write_text("\n".join(lines + [lines[1]]) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "balance", "mecha", "--from-matrix", path)
    assert_one_line(code, err, f"line {len(lines) + 1}", "each attacker-defender pair once")
    path.write_text("attacker,defender,p_attacker\nA,B,0.5\n", encoding="utf-8")
    code, _, err = run(capsys, "balance", "mecha", "--from-matrix", path)
    assert_one_line(code, err, "not a matrix_long.csv", "p_defender")


def test_from_matrix_reads_our_own_file_back(tmp_path, capsys):
    path = _matrix_csv(tmp_path, capsys)
    code, out, err = run(capsys, "balance", "mecha", "--from-matrix", path.parent)
    assert code == 0 and "Rankings" in out, err


def test_from_matrix_of_another_ruleset_is_one_line(tmp_path, capsys):
    """matrix.json beside the file names its ruleset: a mecha matrix is not balanced as grimdark."""
    path = _matrix_csv(tmp_path, capsys)
    code, _, err = run(capsys, "balance", "grimdark", "--from-matrix", path.parent)
    assert_one_line(code, err, "matrix.json", "a mecha matrix, not grimdark", "balance mecha --from-matrix")


# ------------------------------------------------------------------ rosters
def test_csv_cell_over_the_field_limit(tmp_path, capsys):
    path = tmp_path / "big.csv"
    path.write_text("name,defence,physical,armour\nAFS,2,0,B\n" + "X" * 200_000 + ",3,0,C\n", encoding="utf-8")
    code, _, err = run(capsys, "units", "mecha", "--roster", path)
    assert_one_line(code, err, str(path), "line 3", "longer than")


@pytest.mark.parametrize("points", ["1e308", "0", "-1", "0.001", "1000001", "inf", "nan"])
def test_points_outside_the_allowed_range(tmp_path, capsys, points):
    code, _, err = run(capsys, "units", "mecha", "--roster", mecha_roster(tmp_path, points=points))
    assert_one_line(code, err, "field 'points'", "0.01..1000000")


@pytest.mark.parametrize("points", ["0.01", "1000000", "7.5"])
def test_points_at_the_edges_of_the_range_give_clean_reports(tmp_path, capsys, points):
    roster = mecha_roster(tmp_path, points=points)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero or overflow warnings
        code, out, err = run(capsys, "balance", "mecha", "--roster", roster, "--max-trials", "500", "--half-width",
                             "0.05", "--quiet")  # 500 fights reach +-5 pp: no note on the precision
    assert code == 0 and not err.strip(), err


def test_a_byte_order_mark_is_accepted_in_toml_and_csv(tmp_path, capsys):
    toml = tmp_path / "bom.toml"
    toml.write_text("\ufeff" + MECHA_TOML.format(points=20, name="Nutrocker"), encoding="utf-8")
    csv = tmp_path / "bom.csv"
    csv.write_text("\ufeffname,defence,physical,armour\nAFS,2,0,B\n", encoding="utf-8")
    assert sim.load_roster(toml).names == ["AFS", "Nutrocker"]
    assert sim.load_roster(csv, "mecha").names == ["AFS"]


def test_name_and_ruleset_are_required(tmp_path):
    no_ruleset = tmp_path / "a.toml"
    no_ruleset.write_text(MECHA_TOML.format(points=20, name="N").split("\n", 1)[1], encoding="utf-8")
    with pytest.raises(sim.InputError, match="'ruleset'.*required"):
        sim.load_roster(no_ruleset, "mecha")
    no_name = tmp_path / "b.toml"
    no_name.write_text('ruleset = "mecha"\n[[unit]]\ndefence = 2\nphysical = 0\narmour = "B"\n', encoding="utf-8")
    with pytest.raises(sim.InputError, match="unit '#1': field 'name'.*required"):
        sim.load_roster(no_name)
    no_name_csv = tmp_path / "c.csv"
    no_name_csv.write_text("name,defence,physical,armour\n,2,0,B\n", encoding="utf-8")
    with pytest.raises(sim.InputError, match="'name'"):
        sim.load_roster(no_name_csv, "mecha")


def test_a_duplicate_csv_header_column_is_an_error(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("name,defence,defence,physical,armour\nAFS,2,3,0,B\n", encoding="utf-8")
    with pytest.raises(sim.InputError, match="line 1: column 'defence' appears twice"):
        sim.load_roster(path, "mecha")


@pytest.mark.parametrize("cell", ["2_0", "٣", "+ 3", "0x3", "3.0e0x"])
def test_numbers_are_ascii_digits_only(tmp_path, capsys, cell):
    path = tmp_path / "n.csv"
    path.write_text(f"name,defence,physical,armour\nAFS,{cell},0,B\n", encoding="utf-8")
    with pytest.raises(sim.InputError, match="field 'defence'"):
        sim.load_roster(path, "mecha")
    code, _, err = run(capsys, *FIGHT, "--set", f"attacker.defence={cell}")
    assert_one_line(code, err, "defence")


def test_a_switch_that_needs_a_field_is_checked_when_the_roster_is_loaded(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text('ruleset = "warband"\n[options]\nall_alone = true\n[[unit]]\nname = "Lone"\n'
                    'ws = 3\ns = 3\nt = 3\ni = 3\nw = 1\na = 1\n', encoding="utf-8")
    with pytest.raises(sim.InputError, match="unit 'Lone': field 'ld'.*all_alone"):
        sim.load_roster(path)


def test_a_switch_set_on_the_command_line_checks_the_roster_too(tmp_path, capsys):
    path = tmp_path / "w.csv"
    path.write_text("name,ws,s,t,i,w,a\nLone,3,3,3,3,1,1\nOther,3,3,3,3,1,1\n", encoding="utf-8")
    code, _, err = run(capsys, "fight", "warband", "Lone", "Other", "--roster", path, "--set", "rout=true",
                       "--trials", "10")
    assert_one_line(code, err, "field 'ld'", "rout")


def test_names_are_one_line_of_limited_length(tmp_path):
    for bad in ["line\nbreak", "tab\there", "x" * 101]:
        with pytest.raises(sim.InputError, match="field 'name'"):
            sim.unit("mecha", name=bad, defence=2, physical=0, armour="B")


# ---------------------------------------------------------- unit names with commas
def test_units_with_commas_by_repeated_unit_or_quoting(tmp_path, capsys):
    roster = mecha_roster(tmp_path, name="B, the second")
    code, out, err = run(capsys, "matrix", "mecha", "--roster", roster, "--unit", "AFS", "--unit", "B, the second",
                         "--max-trials", "300", "--quiet")
    assert code == 0 and "B, the second" in out, err
    code, out, err = run(capsys, "matrix", "mecha", "--roster", roster, "--units", 'AFS,"B, the second"',
                         "--max-trials", "300", "--quiet")
    assert code == 0 and "B, the second" in out, err
    code, _, err = run(capsys, "matrix", "mecha", "--roster", roster, "--units", "AFS,B, the second", "--quiet")
    assert_one_line(code, err, "no unit 'B'")


# ------------------------------------------------------------------ the API
@pytest.mark.parametrize("kwargs,argument", [
    ({"workers": "2"}, "workers"),
    ({"workers": 1.5}, "workers"),
    ({"seed": "x"}, "seed"),
    ({"seed": -1}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"states": "x"}, "states"),
    ({"states": {"attacker": "x"}}, "states"),
    ({"states": {"middle": {}}}, "states"),
    ({"options": "x"}, "options"),
    ({"options": {3: True}}, "options"),
    ({"overrides": "x"}, "overrides"),
    ({"overrides": {"attacker": 3}}, "overrides"),
    ({"roster": 3}, "roster"),
    ({"trials": "10"}, "trials"),
    ({"trials": 10**20}, "trials"),
    ({"max_rounds": 10**11}, "max_rounds"),
    ({"rounds": [1]}, "rounds"),
    ({"stream": "ab"}, "stream"),
    ({"progress": 3}, "progress"),
    ({"overrides": {"attacker": {"defence": "x"}}}, "overrides"),  # was named --set attacker, a CLI flag
    ({"executor": "local:2"}, "executor"),
])
def test_api_wrong_types_raise_the_library_error_naming_the_argument(kwargs, argument):
    with pytest.raises(sim.MeleelabError) as e:
        sim.fight("mecha", "AFS", "Nutrocker", trials=kwargs.pop("trials", 10), **kwargs)
    msg = str(e.value)
    assert argument in msg and "--" not in msg.split(":")[0] and "\n" not in msg


@pytest.mark.parametrize("kwargs,argument", [
    ({"budget": "x"}, "budget"),
    ({"budget": -1}, "budget"),
    ({"copies": "x"}, "copies"),  # was an AttributeError
    ({"copies": {"attacker": 0}}, "copies"),
])
def test_api_budget_and_copies_name_the_argument(kwargs, argument):
    from analysis.runs.matrix import matchup_matrix

    calls = [lambda: sim.fight("duel", "Knight", "Sellsword", trials=10, **kwargs)]
    if "budget" in kwargs:
        calls.append(lambda: matchup_matrix("duel", units=["Knight", "Sellsword"], max_trials=10, **kwargs))
    for call in calls:
        with pytest.raises(sim.MeleelabError) as e:
            call()
        msg = str(e.value)
        assert msg.startswith(argument) and "--" not in msg.split(":")[0] and "\n" not in msg, msg


def test_sweep_values_out_of_range_name_values_in_the_api_and_vary_in_the_cli(capsys):
    from analysis.runs.sweep import sweep

    with pytest.raises(sim.InputError, match=r"^values: unit 'Knight': field 'ws'"):
        sweep("duel", "Knight", "ws", [1, 30], ["Sellsword"], trials=10)
    code, _, err = run(capsys, "sweep", "duel", "Knight", "Sellsword", "--vary", "ws=30..31", "--trials", "10")
    assert_one_line(code, err, "--vary: unit 'Knight': field 'ws'")


def test_parse_settings_given_a_string_names_the_argument():
    with pytest.raises(sim.MeleelabError, match="items: .*list"):
        sim.parse_settings("mecha", "attacker.defence=3")
    with pytest.raises(sim.MeleelabError, match="items"):
        sim.parse_settings("mecha", [3])


@pytest.mark.parametrize("call", [
    lambda: sim.get_ruleset(["mecha"]),
    lambda: sim.load_roster(3),
    lambda: sim.load_roster("a\0b.toml"),
    lambda: sim.roster_from_dict("ruleset = 'mecha'"),
    lambda: sim.default_roster("mecha").unit(["AFS"]),
    lambda: sim.build_matchup("mecha", "AFS", "Nutrocker", states={"attacker": []}),
    lambda: __import__("analysis.runs.balance").runs.balance.balance_summary("not a matrix"),  # was a TypeError
    lambda: sim.fight("mecha", "AFS", "Nutrocker", trials=10, seed=1).damage("sideways"),
    # a field change keyed by a number (found by the API fuzzer at 1,500 examples: an AttributeError in duel)
    lambda: __import__("analysis.runs.compare").runs.compare.compare("duel", "Knight", {3: 1}, ["Sellsword"], trials=10),
    lambda: sim.get_ruleset("duel").with_overrides(sim.default_roster("duel").unit("Knight"), {3: 1},
                                                    sim.errors.Where("overrides"), from_text=False),
    lambda: sim.get_ruleset("grimdark").with_overrides(sim.default_roster("grimdark").unit("Troopers"), {3: 1},
                                                        sim.errors.Where("overrides"), from_text=False),
])
def test_other_api_misuse_raises_the_library_error(call):
    with pytest.raises(sim.MeleelabError):
        call()


def test_unit_validates_everything_at_construction():
    with pytest.raises(sim.InputError, match="field 'armour'.*chart"):
        sim.unit("mecha", name="X", defence=2, physical=0, armour="Z")
    chart = {"chart": "custom", "custom_chart": {"Z": ["D", "D", "M", "-", "-", "-"]}}
    assert sim.unit("mecha", options=chart, name="X", defence=2, physical=0, armour="Z").armour == "Z"


def test_points_none_is_still_allowed():
    u = sim.unit("mecha", name="X", defence=2, physical=0, armour="B")
    assert u.points is None


# ------------------------------------------------- found by the fuzzer: fair points overflow
def test_a_degenerate_points_line_gives_no_suggestion_instead_of_an_overflow(tmp_path, capsys):
    """Nearly equal points and one strong unit: the leave-one-out line is almost flat, and its fair cost
    exp(strength gap / tiny slope) overflowed math.exp (fuzzer: balance grimdark --max-trials 1)."""
    import itertools

    import pandas as pd

    from analysis.runs.balance import balance_summary
    from analysis.runs.pricing import fair_points

    points = dict(zip("ABCD", (10, 10.01, 10.02, 10.03)))

    def p_attacker(a: str, d: str) -> float:  # B beats everyone, every other fight is a coin toss
        return 1.0 if a == "B" and d != "B" else 0.0 if d == "B" and a != "B" else 0.5

    rows = [dict(attacker=a, defender=d, trials=1, p_attacker=p_attacker(a, d), p_defender=1 - p_attacker(a, d),
                 p_draw=0.0, points_attacker=points[a], points_defender=points[d])
            for a, d in itertools.product(points, points)]
    frame = pd.DataFrame(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fair = fair_points(frame)
        balance_summary(frame)
    suggested = fair["fair_points"].dropna()
    assert ((suggested >= 1e-4) & (suggested <= 1e8)).all()
    path = tmp_path / "matrix_long.csv"
    frame.to_csv(path, index=False)
    code, out, err = run(capsys, "balance", "mecha", "--from-matrix", path)
    assert code == 0 and "Fair prices" in out, err
