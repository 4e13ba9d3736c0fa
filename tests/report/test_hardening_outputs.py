"""Issue 12, outputs: paths that cannot be written, a full disk, formulas, HTML, mathtext, glyphs."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli import main
from analysis.report import io as aio
from analysis.report.safe_csv import FORMULA_START, csv_text, neutralise_cell, restore_cell
from analysis.report.safe_markdown import md_cell, md_text

HOSTILE = ['=HYPERLINK("http://evil","x")', "+cmd", "-2+3", "@SUM(A1)", "Bad $\\frac{$ math",
           "<script>alert(1)</script>", "[link](javascript:alert(1))"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(code, err):
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("meleelab: error: ") and "Traceback" not in err, err
    return lines[0]


def hostile_roster(tmp_path: Path, names=HOSTILE) -> Path:
    rows = ["name,defence,physical,armour,points"]
    for k, n in enumerate(names):
        quoted = '"' + n.replace('"', '""') + '"'
        rows.append(f"{quoted},{k % 5},0,{'ABCDE'[k % 5]},{20 + k}")
    path = tmp_path / "hostile.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------- output paths
def test_out_below_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "matrix", "mecha", "--units", "AFS,PKA", "--max-trials", "100",
                       "--out", tmp_path / "file" / "sub")
    assert "lies below the file" in one_error_line(code, err)


def test_out_that_is_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "sweep", "mecha", "AFS", "PKA", "--vary", "defence=1..2", "--trials", "100",
                       "--out", tmp_path / "file")
    one_error_line(code, err)


def test_out_in_a_folder_that_cannot_be_created(capsys):
    code, _, err = run(capsys, "compare", "mecha", "AFS", "defence=3", "PKA", "--trials", "100",
                       "--out", "/proc/meleelab-cannot/x")
    assert "cannot write the output folder" in one_error_line(code, err)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders")
def test_out_in_a_read_only_folder(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        code, _, err = run(capsys, "matrix", "mecha", "--units", "AFS,PKA", "--max-trials", "100", "--out", ro / "x")
        one_error_line(code, err)
    finally:
        ro.chmod(0o700)


def test_out_in_a_folder_without_write_permission_even_as_root(tmp_path, capsys, monkeypatch):
    """Root writes everywhere, so the test above is skipped under root: the same error, raised where it would come."""
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(aio.tempfile, "mkstemp", denied)
    for argv in (["matrix", "mecha", "--units", "AFS,PKA", "--max-trials", "100"], ["report", "--all"]):
        code, _, err = run(capsys, *argv, "--out", tmp_path / "ro" / "x")
        assert "cannot write the output folder (Permission denied)" in one_error_line(code, err)
    assert not list(tmp_path.iterdir())  # the folders made for the check are gone again


def test_a_write_that_fails_midway_is_one_line(tmp_path, capsys, monkeypatch):
    def no_space(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(aio.os, "fsync", no_space)
    with pytest.raises(aio.OutputError, match="No space left on device"):
        aio.atomic_write_text(tmp_path / "x.csv", "a,b\n")
    assert not list(tmp_path.iterdir())  # the temporary file is gone too
    code, _, err = run(capsys, "matrix", "mecha", "--units", "AFS,PKA", "--max-trials", "100", "--out", tmp_path / "o")
    assert "No space left on device" in one_error_line(code, err)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["fight", "mecha", "AFS", "Nutrocker", "--json", "--trials", "1000", "--seed", "1"],
                                  ["units", "grimdark"]])
def test_a_full_disk_on_stdout_is_one_line(argv):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "analysis", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines == ["meleelab: error: cannot write standard output (No space left on device)"], proc.stderr


def test_report_all_checks_the_folder_before_computing(tmp_path, capsys, monkeypatch):
    import analysis.report.build as report

    def must_not_run(*args, **kwargs):
        raise AssertionError("a report was computed before the output folder was checked")

    monkeypatch.setattr(report, "build_report", must_not_run)
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "report", "--all", "--out", tmp_path / "file" / "reports")
    assert "lies below the file" in one_error_line(code, err)
    with pytest.raises(aio.OutputError):
        report.write_all(tmp_path / "file" / "reports")


# ------------------------------------------------------------------ CSV safety
@pytest.mark.parametrize("text,expected", [
    ("=1+1", "'=1+1"), ("+cmd", "'+cmd"), ("-x", "'-x"), ("@A1", "'@A1"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("plain", "plain"), ("a=b", "a=b"), ("", ""), ("'=x", "''=x"), ("''+y", "'''+y"), ("'Tis", "'Tis"),
])
def test_formula_cells_are_neutralised_and_restored(text, expected):
    assert neutralise_cell(text) == expected
    assert restore_cell(neutralise_cell(text)) == text


def test_csv_text_leaves_numbers_alone_and_quotes_text_names_and_labels():
    frame = pd.DataFrame({"unit": ["=evil", "ok"], "value": [-0.5, 2.0]}).set_index("unit")
    wide = pd.DataFrame([[0.1]], index=pd.Index(["+a"], name="attacker"), columns=pd.Index(["-b"], name="defender"))
    text = csv_text(frame, index=True) + csv_text(wide, index=True)
    assert "'=evil,-0.500000" in text and "'+a,0.100000" in text and ",'-b" in text


def _formula_cells(folder: Path) -> list[tuple[str, str]]:
    bad = []
    for path in folder.glob("*.csv"):
        for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))):
            for cell in row:
                if cell.startswith(FORMULA_START):
                    try:
                        float(cell)
                    except ValueError:
                        bad.append((path.name, cell))
    return bad


@pytest.mark.usefixtures("plain_figures")  # the CSV files; names in plots: the mathtext test below
def test_every_csv_the_tool_writes_is_neutralised(tmp_path, capsys):
    roster = hostile_roster(tmp_path)
    for argv, folder in [
        (["report", "mecha", "--roster", roster, "--max-trials", "300", "--quiet"], "report"),
        (["matrix", "mecha", "--roster", roster, "--max-trials", "200", "--quiet"], "matrix"),
        (["sweep", "mecha", HOSTILE[0], "--all-opponents", "--roster", roster, "--vary", "defence=1..2",
          "--trials", "200", "--quiet"], "sweep"),
        (["compare", "mecha", HOSTILE[0], HOSTILE[1], "--roster", roster, "--trials", "200", "--quiet"], "compare"),
        (["balance", "mecha", "--roster", roster, "--max-trials", "200", "--quiet"], "balance"),
    ]:
        out = tmp_path / folder
        code, _, err = run(capsys, *argv, "--out", out)
        assert code == 0, (argv, err)
        assert list(out.glob("*.csv")) and not _formula_cells(out), (folder, _formula_cells(out))
    # and balance reads the neutralised matrix back with the names as the roster wrote them
    code, outtext, err = run(capsys, "balance", "mecha", "--from-matrix", tmp_path / "matrix")
    assert code == 0 and HOSTILE[0] in outtext, err
    # diff: its own CSVs are safe, and it reads the reports' names back as written (not as neutralised)
    code, _, err = run(capsys, "report", "mecha", "--roster", roster, "--max-trials", "300", "--seed", "9",
                       "--quiet", "--out", tmp_path / "report2")
    assert code == 0, err
    code, outtext, err = run(capsys, "diff", tmp_path / "report", tmp_path / "report2", "--all",
                             "--out", tmp_path / "diff")
    assert code == 0, err
    assert list((tmp_path / "diff").glob("*.csv")) and not _formula_cells(tmp_path / "diff")
    items = set(pd.read_csv(tmp_path / "diff" / "diff.csv", dtype=str, keep_default_na=False)["item"])
    assert f"'{HOSTILE[1]} vs {HOSTILE[0]}" in items and "'" + HOSTILE[1] in items  # quoted once, on the cell
    from analysis.report.diff import diff_runs

    table = diff_runs(tmp_path / "report", tmp_path / "report2").table
    assert f"{HOSTILE[1]} vs {HOSTILE[0]}" in set(table["item"]) and HOSTILE[2] in set(table["item"])


# ------------------------------------------------------- Markdown, HTML, plots
def test_markdown_escapes_html_and_links():
    assert md_text("<script>x</script>") == "&lt;script&gt;x&lt;/script&gt;"
    assert md_cell("[a](javascript:1)|b\nc") == "\\[a\\](javascript:1)\\|b c"


@pytest.mark.usefixtures("plain_figures")  # the Markdown and the HTML text; plots: the mathtext test
def test_summary_md_escapes_names_and_description(tmp_path, capsys):
    roster = tmp_path / "r.toml"
    roster.write_text('ruleset = "mecha"\ndescription = "<img src=x onerror=alert(1)>"\n'
                      '[[unit]]\nname = "<script>alert(1)</script>"\ndefence = 2\nphysical = 0\narmour = "B"\n'
                      'points = 20\n[[unit]]\nname = "[x](javascript:alert(1))"\ndefence = 3\nphysical = 0\n'
                      'armour = "C"\npoints = 30\n', encoding="utf-8")
    code, _, err = run(capsys, "report", "mecha", "--roster", roster, "--max-trials", "300", "--quiet",
                       "--out", tmp_path / "rep")
    assert code == 0, err
    md = (tmp_path / "rep" / "summary.md").read_text(encoding="utf-8")
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    for text in (md, html):
        assert "<script>" not in text and "<img src=x" not in text
    assert not re.search(r"(?<!\\)\]\(javascript:", md) and "\\[x\\](javascript:" in md and "&lt;script&gt;" in md


def test_mathtext_names_are_plain_text_in_plots(tmp_path, capsys):
    roster = hostile_roster(tmp_path, ["Bad $\\frac{$ math", "$x^2$", "Plain"])
    code, _, err = run(capsys, "matrix", "mecha", "--roster", roster, "--max-trials", "200", "--quiet",
                       "--out", tmp_path / "m")
    assert code == 0 and (tmp_path / "m" / "matrix.png").stat().st_size > 1000, err
    code, _, err = run(capsys, "report", "mecha", "--roster", roster, "--max-trials", "200", "--quiet",
                       "--out", tmp_path / "r")
    assert code == 0 and (tmp_path / "r" / "report.html").is_file(), err


def test_plot_functions_take_dollar_signs_literally():
    from matplotlib.figure import Figure

    from analysis.report.plots import matrix_heatmap
    from analysis.report.render import figure_png

    wide = pd.DataFrame([[0.5, 0.4], [0.6, 0.5]], index=["$a$", "Bad $\\frac{$"], columns=["$a$", "Bad $\\frac{$"])
    fig = Figure()
    ax = matrix_heatmap(wide, ax=fig.add_subplot())
    assert all(not t.get_parse_math() for t in ax.get_xticklabels() + [ax.title])
    assert figure_png(fig, dpi=50)[:4] == b"\x89PNG"


def test_missing_glyphs_give_at_most_one_warning(tmp_path, capsys):
    import analysis.report.render as render

    render._reported.clear()
    names = ["漢字の戦車", "東京の騎士", "Ωмега"]
    roster = hostile_roster(tmp_path, names)
    code, _, err = run(capsys, "report", "mecha", "--roster", roster, "--max-trials", "200", "--half-width", "0.1",
                       "--quiet", "--out", tmp_path / "r")  # 200 fights reach +-10 pp: no note on the precision
    assert code == 0, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) <= 1 and all(ln.startswith("meleelab: note:") and "characters" in ln for ln in lines), err


def test_missing_glyph_warnings_are_collapsed_in_the_library():
    from matplotlib.figure import Figure

    import analysis.report.render as render

    render._reported.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            fig = Figure()
            fig.add_subplot().set_title("漢字漢字 戦車")
            render.figure_png(fig, dpi=40)
    glyph = [w for w in caught if "Glyph" in str(w.message) or "characters" in str(w.message)]
    assert len(glyph) <= 1
