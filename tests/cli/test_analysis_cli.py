"""The matrix, sweep and compare commands, run in-process."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.cli import main

ROSTER = """
ruleset = "mecha"
[[unit]]
name = "Light"
defence = 1
physical = 0
armour = "C"
points = 10
[[unit]]
name = "Heavy"
defence = 3
physical = 0
armour = "A"
points = 30
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str, *needles: str) -> None:
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meleelab: error:"), err
    for n in needles:
        assert n in lines[0], (n, err)


# ------------------------------------------------------------------ matrix
def test_matrix_writes_files_and_is_reproducible(tmp_path, capsys):
    argv = ["matrix", "mecha", "--units", "AFS,Nutrocker,Fliege", "--half-width", "0.004", "--seed", "7", "--quiet",
            "--method", "mc"]  # reproducible Monte Carlo bytes
    rc, out, _ = run(capsys, *argv, "--out", str(tmp_path / "a"))
    assert rc == 0
    assert "P(attacker wins)" in out and "left out Fliege" in out and "seed entropy 7" in out
    for name in ("matrix_long.csv", "matrix.csv", "matrix.png", "matrix.json"):
        assert (tmp_path / "a" / name).is_file(), name
    long = pd.read_csv(tmp_path / "a" / "matrix_long.csv")
    assert len(long) == 4 and set(long.attacker) == {"AFS", "Nutrocker"}
    assert {"attacker", "defender", "trials", "p_attacker", "p_defender", "p_draw", "p_attacker_lo", "p_attacker_hi",
            "damage_to_attacker", "damage_to_defender", "mean_rounds"} <= set(long.columns)
    assert (long.trials > 0).all()
    rc, _, _ = run(capsys, *argv, "--out", str(tmp_path / "b"))
    assert rc == 0
    for name in ("matrix_long.csv", "matrix.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_matrix_with_roster_file_set_rounds_and_workers(tmp_path, capsys):
    roster = tmp_path / "r.toml"
    roster.write_text(ROSTER)
    rc, out, _ = run(capsys, "matrix", "mecha", "--roster", str(roster), "--seed", "1", "--rounds", "end",
                     "--set", "defender.immobilised=true", "--max-trials", "70000", "--workers", "2", "--quiet",
                     "--out", str(tmp_path / "o"))
    assert rc == 0 and "Light" in out and "Heavy" in out
    meta = (tmp_path / "o" / "matrix.json").read_text()
    assert '"rounds": "end"' in meta and '"immobilised": "true"' in meta
    long = pd.read_csv(tmp_path / "o" / "matrix_long.csv")
    assert (long.trials <= 70000).all() and (long.mean_rounds >= 1).all()


@pytest.mark.parametrize("extra, needles", [
    (["--units", "AFS,Nobody"], ["Nobody"]),
    (["--half-width", "2"], ["--half-width"]),
    (["--max-trials", "0"], ["--max-trials"]),
    (["--set", "attacker.defence=99"], ["defence", "99"]),
    (["--rounds", "sometimes"], ["rounds"]),
])
def test_matrix_bad_input(capsys, extra, needles):
    rc, _, err = run(capsys, "matrix", "mecha", "--quiet", *extra)
    one_line_error(rc, err, *needles)


def test_unknown_ruleset(capsys):
    rc, _, err = run(capsys, "matrix", "chess")
    one_line_error(rc, err, "unknown ruleset")


# ------------------------------------------------------------------- sweep
def test_sweep_against_one_opponent(tmp_path, capsys):
    rc, out, _ = run(capsys, "sweep", "mecha", "AFS", "Nutrocker", "--vary", "defence=1..3", "--trials", "65536",
                     "--seed", "3", "--quiet", "--out", str(tmp_path))
    assert rc == 0 and "value of one point of defence" in out
    frame = pd.read_csv(tmp_path / "sweep.csv")
    assert frame.value.tolist() == [1, 2, 3] and set(frame.opponent) == {"Nutrocker"}
    assert {"value", "opponent", "p_win", "p_win_lo", "p_win_hi", "p_loss", "damage_dealt", "damage_dealt_se",
            "damage_taken", "damage_taken_se"} <= set(frame.columns)
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "win_points_per_point" in pd.read_csv(tmp_path / "sweep_marginal.csv").columns
    # same command, same seed: identical bytes
    rc, _, _ = run(capsys, "sweep", "mecha", "AFS", "Nutrocker", "--vary", "defence=1..3", "--trials", "65536",
                   "--seed", "3", "--quiet", "--out", str(tmp_path / "again"))
    assert (tmp_path / "sweep.csv").read_bytes() == (tmp_path / "again" / "sweep.csv").read_bytes()


def test_sweep_all_opponents_means_every_unit(tmp_path, capsys):
    rc, _, _ = run(capsys, "sweep", "mecha", "AFS", "--all-opponents", "--vary", "physical=0..1", "--trials", "20000",
                   "--seed", "1", "--side", "defender", "--quiet", "--out", str(tmp_path))
    assert rc == 0
    frame = pd.read_csv(tmp_path / "sweep.csv")
    assert {"AFS", "Nutrocker", "Gustav", "Fliege"} <= set(frame.opponent)
    assert set(frame.side) == {"defender"}


def test_sweep_roster_is_a_file_as_in_every_command(tmp_path, capsys):
    roster = tmp_path / "r.toml"
    roster.write_text(ROSTER)
    rc, _, _ = run(capsys, "sweep", "mecha", "Light", "--roster", str(roster), "--all-opponents", "--vary",
                   "defence=1..2", "--trials", "20000", "--seed", "1", "--quiet", "--out", str(tmp_path / "a"))
    assert rc == 0
    assert set(pd.read_csv(tmp_path / "a" / "sweep.csv").opponent) == {"Light", "Heavy"}
    rc, _, _ = run(capsys, "sweep", "mecha", "Light", "Heavy", "--roster", str(roster), "--vary", "defence=1..2",
                   "--trials", "20000", "--seed", "1", "--quiet", "--out", str(tmp_path / "b"))
    assert rc == 0
    assert set(pd.read_csv(tmp_path / "b" / "sweep.csv").opponent) == {"Heavy"}
    # the old spelling still works, with a note; its runs are the same (same seed, same file)
    rc, _, err = run(capsys, "sweep", "mecha", "Light", "Heavy", "--roster-file", str(roster), "--vary",
                     "defence=1..2", "--trials", "20000", "--seed", "1", "--quiet", "--out", str(tmp_path / "c"))
    assert rc == 0 and err.strip() == "meleelab: note: --roster-file is deprecated: use --roster FILE"
    assert (tmp_path / "b" / "sweep.csv").read_bytes() == (tmp_path / "c" / "sweep.csv").read_bytes()


@pytest.mark.parametrize("argv, needles", [
    (["AFS", "--vary", "defence=1..2"], ["OPPONENT", "--all-opponents"]),
    (["AFS", "--roster", "--vary", "defence=1..2"], ["--roster takes a roster FILE", "--all-opponents"]),
    (["AFS", "Nutrocker", "--all-opponents", "--vary", "defence=1..2"], ["not both"]),
    (["AFS", "--roster", "a.toml", "--roster-file", "b.toml", "--all-opponents", "--vary", "defence=1..2"],
     ["once"]),
    (["AFS", "Nutrocker", "--vary", "defence=1-2"], ["FIELD=LO..HI"]),
    (["AFS", "Nutrocker", "--vary", "defence=1..11"], ["defence", "11"]),
    (["AFS", "Nobody", "--vary", "defence=1..2"], ["Nobody"]),
    (["AFS", "Nutrocker", "--vary", "armour=1..2"], ["armour"]),
    (["AFS", "Nutrocker", "--vary", "defence=1..2", "--side", "left"], ["--side"]),
])
def test_sweep_bad_input(capsys, argv, needles):
    rc, _, err = run(capsys, "sweep", "mecha", *argv, "--trials", "1000", "--quiet")
    one_line_error(rc, err, *needles)


# ----------------------------------------------------------------- compare
def test_compare_field_changes(tmp_path, capsys):
    rc, out, _ = run(capsys, "compare", "mecha", "AFS", "defence=3", "Nutrocker", "Gustav", "--trials", "65536",
                     "--seed", "2", "--quiet", "--out", str(tmp_path))
    assert rc == 0 and "AFS[defence=3] vs AFS" in out and "s.e. paired" in out
    frame = pd.read_csv(tmp_path / "compare.csv")
    assert frame.opponent.tolist() == ["Nutrocker", "Nutrocker", "Gustav", "Gustav", "(all)", "(all)", "(all)"]
    assert {"p_win_base", "p_win_variant", "diff", "diff_se", "diff_lo", "diff_hi"} <= set(frame.columns)
    nut = frame[(frame.opponent == "Nutrocker") & (frame.role == "attacker")].iloc[0]
    assert nut["diff"] > 0 and nut.diff_lo > 0


def test_compare_unit_variant_role_and_roster_default(capsys):
    rc, out, _ = run(capsys, "compare", "mecha", "AFS", "Gustav", "--role", "attacker", "--trials", "16000",
                     "--seed", "2", "--quiet", "--rules-defaults")  # one round: Gustav can be harmed
    assert rc == 0 and "Gustav vs AFS" in out and "not fought: Fliege" in out
    # the fair price of both, by the one model (mecha: the calibration)
    table, prices = out.split("\n\nfair price")
    assert [line.split()[0] for line in _below_rule(prices)] == ["AFS", "Gustav"]
    assert all("calibration" in line for line in _below_rule(prices))
    rows = [line for line in _below_rule(table) if not line.startswith("not fought")]
    assert rows and all("attacker" in line and "defender" not in line for line in rows)


def _below_rule(text: str) -> list[str]:
    """The rows of the first table in ``text``: the lines below its header's rule of dashes, up to a blank line
    (a table wider than ``COLUMNS`` continues in another block; pytest-xdist workers set ``COLUMNS=80``)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) == {"-"})
    rows = lines[rule + 1:]
    return rows[:rows.index("")] if "" in rows else rows


@pytest.mark.parametrize("argv, needles", [
    (["AFS", "Nobody"], ["Nobody"]),
    (["AFS", "defence=42"], ["defence", "42"]),
    (["AFS", "=3"], ["FIELD=VALUE"]),
    (["AFS", "defence=3", "Nobody"], ["Nobody"]),
    (["AFS", "defence=3", "--trials", "0"], ["--trials"]),
])
def test_compare_bad_input(capsys, argv, needles):
    rc, _, err = run(capsys, "compare", "mecha", *argv, "--quiet")
    one_line_error(rc, err, *needles)
