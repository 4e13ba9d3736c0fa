"""Terminal tables: whole names, headers over their numbers, the terminal's width, probabilities, plain text in pipes;
and one set of matrix defaults for matrix, balance and report."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from analysis.cli import cli, console, main
from analysis.cli.console import Column, table_text
from analysis.runs.defaults import DEFAULT_HALF_WIDTH, DEFAULT_MAX_TRIALS, DEFAULT_SEED
from sim.rng import SUB_BLOCK_TRIALS

LONG = "Assault squad of the Ninth Company with a name longer than a column"

ROSTER = f"""
ruleset = "mecha"
[[unit]]
name = "{LONG}"
defence = 2
physical = 0
armour = "B"
points = 20
[[unit]]
name = "Nutrocker"
defence = 4
physical = -2
armour = "A"
points = 45
"""


@pytest.fixture(autouse=True)
def _pipe_width(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # captured output is not a terminal: 120 columns


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def rule_at(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if line and set(line) == {"-"})


def right_edge(line: str, text: str) -> int:
    return line.index(text) + len(text)


# ----------------------------------------------------------- the table layer
def test_a_table_wider_than_the_terminal_is_cut_into_blocks_repeating_its_key():
    names = [f"Unit number {i}" for i in range(12)]
    cols = [Column("attacker \\ defender")] + [Column(n, numeric=True) for n in names]
    rows = [[n] + [f"{i:02d}.{j:02d}" for j in range(12)] for i, n in enumerate(names)]
    text = table_text(cols, rows, width=60)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 60
    blocks = text.split("\n\n")
    assert len(blocks) > 1
    for block in blocks:  # every block starts with the row labels, whole
        body = block.splitlines()[rule_at(block.splitlines()) + 1:]
        assert [line[:len(names[0])] for line in body] == [n.ljust(len(names[0]))[:len(names[0])] for n in names]
    assert sorted(re.findall(r"\d\d\.\d\d", text)) == sorted(c for row in rows for c in row[1:])  # every cell once


def test_long_names_wrap_and_are_never_cut():
    text = table_text([Column("unit"), Column("P(win)", numeric=True)], [[LONG, "0.1234"], ["AFS", "0.5000"]],
                      width=40)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 40
    words = [w for line in lines[2:] for w in line.split() if w not in ("0.1234", "0.5000", "AFS")]
    assert " ".join(words) == LONG and lines[2].endswith("0.1234") and lines[-1] == "AFS".ljust(34) + "0.5000"


def test_numbers_are_right_aligned_under_their_header_and_text_left_aligned():
    text = table_text([Column("unit"), Column("probability", numeric=True)], [["A", "0.5"], ["Bee", "0.1234"]])
    header, _, a, b = text.splitlines()
    assert right_edge(header, "probability") == right_edge(a, "0.5") == right_edge(b, "0.1234")
    assert header.index("unit") == a.index("A") == b.index("Bee") == 0


def test_plain_text_unless_a_terminal_and_no_colour_with_NO_COLOR(monkeypatch):
    cols, rows = [Column("unit"), Column("n", numeric=True)], [["A", "1"]]
    assert "\x1b[" not in table_text(cols, rows)
    monkeypatch.setattr(console, "is_terminal", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" in table_text(cols, rows)  # a terminal gets a bold header
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in table_text(cols, rows)


def test_width_is_COLUMNS_then_the_terminal_then_120(monkeypatch):
    assert console.output_width() == 120  # captured: not a terminal
    monkeypatch.setenv("COLUMNS", "77")
    assert console.output_width() == 77
    monkeypatch.setenv("COLUMNS", "5")
    assert console.output_width() == console.MIN_WIDTH


def test_number_formats():
    assert (console.prob(0.12345), console.prob(0.12345, 3), console.prob(0), console.prob(float("nan"))) == (
        "0.1235", "0.123", "0", "-")
    assert (console.signed(0.0123), console.signed(-0.004), console.signed(0.0)) == ("+0.0123", "-0.0040", "0")
    assert console.interval(0.0, 0.0008) == "[0.0000, 0.0008]"  # an interval keeps its decimals at 0
    assert (console.cell(True), console.cell(None), console.cell(60.0), console.cell(12.5)) == (
        "true", "-", "60", "12.5")


# ----------------------------------------------------------------- commands
def test_fight_prints_whole_names_and_probabilities(tmp_path, capsys):
    roster = tmp_path / "r.toml"
    roster.write_text(ROSTER)
    rc, out, _ = run(capsys, "fight", "mecha", LONG, "Nutrocker", "--roster", str(roster), "--trials", "20000",
                     "--seed", "1", "--method", "mc")  # the Monte Carlo table: probability and interval
    assert rc == 0 and "\x1b[" not in out
    lines = out.splitlines()
    wins = next(line for line in lines if line.startswith(f"{LONG} wins"))
    header = next(line for line in lines if line.startswith("result"))
    p = wins.split()[-3]
    assert 0 <= float(p) <= 1 and len(p.split(".")[1]) == 4  # a probability, four decimals
    assert right_edge(header, "probability") == right_edge(wins, p)
    assert f"damage to {LONG}" in out and "%" not in out.replace("95% interval", "")


def test_mirror_fight_says_which_side(capsys):
    rc, out, _ = run(capsys, "fight", "mecha", "AFS", "AFS", "--trials", "5000", "--seed", "1")
    assert rc == 0 and "AFS (attacker) wins" in out and "AFS (defender) wins" in out


def test_compare_and_sweep_print_probabilities_not_percentage_points(capsys):
    rc, out, _ = run(capsys, "compare", "mecha", "AFS", "defence=3", "Nutrocker", "--trials", "20000", "--seed", "2",
                     "--quiet", "--no-price", "--rules-defaults")
    assert rc == 0
    lines = out.splitlines()
    header, rows = lines[rule_at(lines) - 1], lines[rule_at(lines) + 1:]
    assert "P(win) base" in header and "difference" in header
    base, variant, diff = (float(v) for v in rows[0].split()[2:5])
    assert 0 < base < variant < 1 and diff == pytest.approx(variant - base, abs=2e-4) and diff < 0.1
    rc, out, _ = run(capsys, "sweep", "mecha", "AFS", "Nutrocker", "--vary", "defence=1..3", "--trials", "20000",
                     "--seed", "3", "--quiet", "--rules-defaults")
    assert rc == 0
    lines = out.splitlines()
    rows = lines[rule_at(lines) + 1:rule_at(lines) + 4]
    p_win = [float(r.split()[2]) for r in rows]
    assert all(0 < p < 1 for p in p_win) and p_win == sorted(p_win)
    marginal = out.split("value of one point of defence")[1].splitlines()
    per_point = float(marginal[rule_at(marginal) + 1].split()[2])
    assert per_point == pytest.approx((p_win[2] - p_win[0]) / 2, abs=1e-3)  # a probability per point, not pp


def test_matrix_fits_a_narrow_terminal_in_blocks(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "60")
    rc, out, _ = run(capsys, "matrix", "mecha", "--max-trials", "500", "--quiet")
    assert rc == 0
    table = out.split("\n", 1)[1].split("\ntrials per cell")[0]
    assert max(map(len, table.splitlines())) <= 60
    blocks = table.split("\n\n")
    assert len(blocks) >= 2
    for block in blocks:  # each block: every attacker row, labels whole
        body = block.splitlines()[rule_at(block.splitlines()) + 1:]
        assert [line.split("  ")[0] for line in body] == ["AFS", "PKA", "Nutrocker", "Sand Stalker", "Kroete",
                                                           "HAFS Jerry", "Snake Eye", "Gustav"]
    cells = [float(v) for v in re.findall(r"(?<![\w.])(?:0|0\.\d{3}|1\.000)(?![\w.])", table)]
    assert len(cells) == 64 and all(0 <= c <= 1 for c in cells)


def test_units_table_shows_roster_values(capsys):
    import sim

    rc, out, _ = run(capsys, "units", "grimdark")
    assert rc == 0
    points = sim.default_roster("grimdark").units["Troopers"].points
    row = next(line for line in out.splitlines() if line.startswith("Troopers"))
    assert row.split()[:3] == ["Troopers", console.cell(points), "Troopers"]  # whole number points without ".0"
    assert "false" in row and "False" not in out  # booleans as a roster writes them


# ----------------------------------------------------------------- defaults
def _defaults(command: str) -> dict[str, object]:
    params = {p.name: p.default for p in cli.commands[command].params}
    return {k: params[k] for k in ("seed", "half_width", "max_trials")}


def test_matrix_balance_and_report_share_their_defaults():
    shared = {"seed": DEFAULT_SEED, "half_width": DEFAULT_HALF_WIDTH, "max_trials": DEFAULT_MAX_TRIALS}
    assert _defaults("matrix") == _defaults("balance") == _defaults("report") == shared
    from analysis.report import build as report

    assert (report.DEFAULT_SEED, report.DEFAULT_HALF_WIDTH, report.DEFAULT_MAX_TRIALS) == tuple(shared.values())


def test_default_matrix_and_default_balance_run_the_same_cells(tmp_path, capsys):
    units = ["--units", "AFS,Gustav,Kroete", "--quiet"]
    assert main(["matrix", "mecha", *units, "--out", str(tmp_path / "m")]) == 0
    assert main(["balance", "mecha", *units, "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    m = pd.read_csv(tmp_path / "m" / "matrix_long.csv")
    assert (tmp_path / "m" / "matrix_long.csv").read_bytes() == (tmp_path / "b" / "matrix_long.csv").read_bytes()
    # each cell stops at the first sub-block that meets the default target, far below the cap
    assert (m["trials"] <= DEFAULT_MAX_TRIALS).all() and (m["trials"] % SUB_BLOCK_TRIALS == 0).all()
    assert (m["trials"] < DEFAULT_MAX_TRIALS).any()
    for side in ("attacker", "defender", "draw"):
        assert ((m[f"p_{side}_hi"] - m[f"p_{side}_lo"]) / 2 <= DEFAULT_HALF_WIDTH).all()
