"""Issue 30, items 3, 4 and 10: input files bounded, TOML bounded in depth, names without invisible characters.

Every case is one line on stderr and exit status 2. The reads that could run
away (``/dev/zero``, a FIFO) run in a subprocess with a memory cap and a
timeout, so that the old behaviour fails the test instead of the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import sim
from analysis.cli import main
from analysis.report.safe_csv import csv_text, neutralise_cell, restore_cell
from sim.limits import MAX_MATRIX_BYTES, MAX_ROSTER_BYTES, MAX_TOML_DEPTH

ROOT = Path(__file__).resolve().parents[2]
HAS_DEV_ZERO = Path("/dev/zero").exists() and hasattr(os, "mkfifo")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code, err, *needles):
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("meleelab: error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _capped() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: /dev/zero read whole would pass it


def cli(*argv, timeout=60):
    """``python -m analysis ARGV`` with 1 GiB of address space and a timeout: (status, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        proc = subprocess.run([sys.executable, "-m", "analysis", *map(str, argv)], env=env, text=True,
                              capture_output=True, timeout=timeout, preexec_fn=_capped)
    except subprocess.TimeoutExpired:
        pytest.fail(f"meleelab {' '.join(map(str, argv))} still running after {timeout} s (a blocking read?)")
    return proc.returncode, proc.stderr


def one_line_sub(result, *needles):
    code, err = result
    return one_line(code, err, *needles)


MECHA = 'ruleset = "mecha"\n[[unit]]\nname = "AFS"\ndefence = 2\nphysical = 0\narmour = "B"\n'


# ------------------------------------------------------------------ item 3: what is read
@pytest.mark.skipif(not HAS_DEV_ZERO, reason="needs /dev/zero and FIFOs")
def test_a_roster_that_is_a_device_a_link_to_one_or_a_fifo_is_refused_before_reading(tmp_path):
    link = tmp_path / "roster.toml"
    link.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    one_line_sub(cli("units", "mecha", "--roster", "/dev/zero"), "/dev/zero", "character device", "roster file")
    one_line_sub(cli("units", "mecha", "--roster", link), str(link), "character device")
    one_line_sub(cli("units", "mecha", "--roster", fifo), str(fifo), "FIFO")


@pytest.mark.skipif(not HAS_DEV_ZERO, reason="needs /dev/zero and FIFOs")
def test_a_chart_file_that_is_a_device_or_a_fifo_is_refused(tmp_path):
    link = tmp_path / "chart.toml"
    link.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for chart in (link, fifo):
        one_line_sub(cli("fight", "mecha", "AFS", "Nutrocker", "--trials", "10", "--set", f"chart={chart}"),
                     str(chart), "chart file must be a file")


@pytest.mark.skipif(not HAS_DEV_ZERO, reason="needs /dev/zero and FIFOs")
@pytest.mark.usefixtures("plain_figures")  # the report is diff's input: its tables are read, not its plots
def test_a_saved_matrix_or_report_table_that_is_a_device_or_a_fifo_is_refused(tmp_path):
    one_line_sub(cli("balance", "mecha", "--from-matrix", "/dev/zero"), "/dev/zero", "matrix file")
    folder = tmp_path / "m"
    folder.mkdir()
    os.mkfifo(folder / "matrix_long.csv")
    one_line_sub(cli("balance", "mecha", "--from-matrix", folder), "FIFO")
    old = tmp_path / "old"
    assert main(["report", "mecha", "--units", "AFS,Nutrocker,Gustav", "--max-trials", "200", "--quiet",
                 "--out", str(old)]) == 0
    for name, make in (("metadata.json", lambda p: p.symlink_to("/dev/zero")), ("rankings.csv", os.mkfifo)):
        new = tmp_path / f"new-{name}"
        subprocess.run(["cp", "-r", str(old), str(new)], check=True)
        (new / name).unlink()
        make(new / name)
        one_line_sub(cli("diff", old, new), str(new / name), "not a regular file")


def test_a_roster_over_the_size_limit_is_refused_without_reading_it(tmp_path, capsys):
    path = tmp_path / "big.csv"
    row = "AFS{},2,0,B\n"
    with path.open("w", encoding="utf-8") as f:
        f.write("name,defence,physical,armour\n")
        k = 0
        while f.tell() <= MAX_ROSTER_BYTES:
            f.write("".join(row.format(k + i) for i in range(10_000)))
            k += 10_000
    code, _, err = run(capsys, "units", "mecha", "--roster", path)
    one_line(code, err, str(path), "roster file is", "over the 4.0 MiB limit")
    with pytest.raises(sim.InputError, match="over the 4.0 MiB limit"):
        sim.load_roster(path, "mecha")


def test_a_saved_matrix_over_the_size_limit_is_refused(tmp_path, capsys):
    path = tmp_path / "matrix_long.csv"
    with path.open("wb") as f:
        f.write(b"attacker,defender,p_attacker,p_defender,p_draw\n")
        f.truncate(MAX_MATRIX_BYTES + 1)  # sparse: no disk used
    code, _, err = run(capsys, "balance", "mecha", "--from-matrix", path)
    one_line(code, err, "matrix file is", "over the 16.0 MiB limit")


def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path, monkeypatch):
    """The size is checked on the open file and again while reading: at most limit + 1 bytes are read."""
    from sim import files

    path = tmp_path / "r.toml"
    path.write_text(MECHA + "#" * 100, encoding="utf-8")
    real_fstat = os.fstat

    class Small:  # the file claims to be small, as a growing one would when it is opened
        def __init__(self, fd):
            self._st = real_fstat(fd)

        def __getattr__(self, name):
            return 0 if name == "st_size" else getattr(self._st, name)

    monkeypatch.setattr(files.os, "fstat", Small)
    with pytest.raises(sim.InputError, match="more than 64 B"):
        files.read_input_text(path, "roster file", 64)


# ------------------------------------------------------------------ item 4: depth
@pytest.mark.parametrize("body", [
    "x = " + "[" * 3000 + "]" * 3000,                                # RecursionError inside tomllib
    "[options]\n" + ".".join(["a"] * 3000) + " = 1",                  # parses, then nested 3,000 deep
    "x = " + "[" * (MAX_TOML_DEPTH + 1) + "1" + "]" * (MAX_TOML_DEPTH + 1),
])
def test_deeply_nested_toml_rosters_are_one_line(tmp_path, capsys, body):
    path = tmp_path / "deep.toml"
    path.write_text('ruleset = "mecha"\n' + body + "\n", encoding="utf-8")
    code, _, err = run(capsys, "units", "mecha", "--roster", path)
    line = one_line(code, err, str(path), f"nested deeper than {MAX_TOML_DEPTH} levels")
    assert len(line) < 300


def test_deeply_nested_chart_files_are_one_line(tmp_path, capsys):
    for k, body in enumerate(["[chart]\nA = " + "[" * 3000 + "]" * 3000, ".".join(["A"] * 3000) + " = 1"]):
        path = tmp_path / f"chart{k}.toml"
        path.write_text(body + "\n", encoding="utf-8")
        code, _, err = run(capsys, "fight", "mecha", "AFS", "Nutrocker", "--trials", "10", "--set", f"chart={path}")
        one_line(code, err, str(path), "nested deeper than")


def test_a_deeply_nested_mapping_from_python_is_the_library_error():
    deep: dict = {"ruleset": "mecha"}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(sim.MeleelabError, match="nested deeper"):
        sim.roster_from_dict(deep)


def test_values_in_messages_are_cut_to_one_readable_line():
    with pytest.raises(sim.MeleelabError) as e:
        sim.unit("mecha", name="x" * 100_000, defence=2, physical=0, armour="B")
    assert len(str(e.value)) < 600 and "..." in str(e.value)


# ------------------------------------------------------------------ item 10: invisible characters
@pytest.mark.parametrize("char,name", [("\u200b", "ZERO WIDTH SPACE"), ("\u202e", "RIGHT-TO-LEFT OVERRIDE"),
                                       ("\ufeff", "ZERO WIDTH NO-BREAK SPACE"), ("\u00ad", "SOFT HYPHEN")])
def test_unit_names_with_format_characters_are_refused_naming_the_code_point(tmp_path, capsys, char, name):
    path = tmp_path / "r.csv"
    path.write_text(f"name,defence,physical,armour\nAFS{char},2,0,B\nPKA,3,0,C\n", encoding="utf-8")
    code, _, err = run(capsys, "units", "mecha", "--roster", path)
    one_line(code, err, "field 'name'", f"U+{ord(char):04X} {name}")
    toml = tmp_path / "r.toml"
    toml.write_text(MECHA.replace('"AFS"', f'"AF{char}S"'), encoding="utf-8")
    with pytest.raises(sim.InputError, match=f"field 'name'.*U\\+{ord(char):04X}"):
        sim.load_roster(toml)


def test_group_names_with_format_characters_are_refused():
    text = (ROOT / "sim" / "rosters" / "grimdark.toml").read_text(encoding="utf-8")
    bad = text.replace('name = "Sergeant"', 'name = "Serg\u200beant"', 1)
    assert bad != text
    with pytest.raises(sim.InputError, match="U\\+200B"):
        import tomllib

        sim.roster_from_dict(tomllib.loads(bad))


@pytest.mark.parametrize("text", ["\ufeff=2+2", "\u200b+cmd", "\u202e\u200b-1+1", "\ufeff@SUM(A1)"])
def test_a_formula_behind_format_characters_is_neutralised_and_restored(text):
    assert neutralise_cell(text) == "'" + text
    assert restore_cell(neutralise_cell(text)) == text
    import pandas as pd

    assert csv_text(pd.DataFrame({"unit": [text]})).splitlines()[1].startswith("'")
    assert neutralise_cell("\ufeffplain") == "\ufeffplain"
