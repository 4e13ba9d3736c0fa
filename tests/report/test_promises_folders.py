"""Issue 30, items 2-4: only folders meleelab wrote are replaced; the results store is checked and signed;
one run at a time per output folder."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sim
from analysis.cli import main
from analysis.report.outdir import MARKER, STORE_DIR, STORE_FILE, OutputFolder
from analysis.runs.store import ResultsStore
from analysis.runs.store_check import KEY_ENV, RowSigner, check_row
from sim.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
MATRIX = ["matrix", "mecha", "--units", "AFS,Nutrocker", "--max-trials", "5000", "--seed", "3", "--quiet"]


# sampled cells throughout, as with --method mc (tests/conftest.py); the folders and the store are checked here,
# never a plot: reports are written with their plots built but not rasterised (tests/plain_figures.py)
pytestmark = pytest.mark.usefixtures("monte_carlo_cells", "plain_figures")


def one_error(rc: int, err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("meleelab: error:") and "Traceback" not in err, err
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------ item 2: whose folder
def users_folder(root: Path) -> Path:
    mine = root / "mine"
    for name, text in {"notes.md": "# my notes", "data/results.csv": "a,b\n1,2\n", "data/plot.png": "png",
                       "settings.json": "{}", "page.html": "<p>", "deep/er/log.txt": "log"}.items():
        (mine / name).parent.mkdir(parents=True, exist_ok=True)
        (mine / name).write_text(text)
    return mine


@pytest.mark.parametrize("argv", [MATRIX, ["report", "mecha", "--max-trials", "300", "--quiet"],
                                  ["report", "--all", "--max-trials", "300", "--quiet"]], ids=lambda a: a[0] + a[1])
def test_a_folder_of_the_users_own_output_like_files_is_never_replaced(tmp_path, capsys, argv):
    mine = users_folder(tmp_path)
    before = snapshot(mine)
    err = one_error(main([*argv, "--out", str(mine)]), capsys.readouterr().err)
    assert "which meleelab did not write" in err
    assert snapshot(mine) == before and sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_out_dot_in_a_folder_with_a_readme_and_a_log_is_refused(tmp_path, capsys, monkeypatch):
    (tmp_path / "README.md").write_text("# project")
    (tmp_path / "log.txt").write_text("ran it")
    monkeypatch.chdir(tmp_path)
    err = one_error(main([*MATRIX, "--out", "."]), capsys.readouterr().err)
    assert "README.md" in err or "log.txt" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "log.txt"]


def test_empty_new_and_own_folders_are_replaced_and_marked(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "deeper"):
        assert main([*MATRIX, "--out", str(out)]) == 0
        marker = json.loads((out / MARKER).read_text())
        assert marker["written_by"] == "meleelab" and marker["command"] == "matrix"
        assert marker["version"] == sim.__version__
        assert marker["files"] == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir()
                                   if p.name not in (MARKER, STORE_DIR)} and marker["folders"] == []
        assert main([*MATRIX, "--out", str(out)]) == 0  # its own output: replaced
    capsys.readouterr()
    (tmp_path / "empty" / "mine.csv").write_text("x")  # a file added to an output folder later is the user's
    err = one_error(main([*MATRIX, "--out", str(tmp_path / "empty")]), capsys.readouterr().err)
    assert "mine.csv" in err and (tmp_path / "empty" / "mine.csv").read_text() == "x"


def test_every_folder_of_report_all_is_marked(tmp_path):
    from analysis.report.build import write_all

    write_all(tmp_path / "r", rulesets=["mecha"], max_trials=512)
    for folder in (tmp_path / "r", tmp_path / "r" / "mecha"):
        marker = json.loads((folder / MARKER).read_text())
        assert sorted(marker["files"]) + sorted(marker["folders"]) == \
            sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != MARKER) + \
            sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name != STORE_DIR)
    assert json.loads((tmp_path / "r" / MARKER).read_text())["folders"] == ["mecha"]
    (tmp_path / "r" / "mecha" / "extra").mkdir()
    (tmp_path / "r" / "mecha" / "extra" / "x.csv").write_text("x")
    with pytest.raises(InputError, match="holds mecha/extra"):
        OutputFolder(tmp_path / "r")


def test_folders_of_earlier_versions_are_not_recognised_by_their_file_names(tmp_path, capsys):
    """Issue 38: ownership is proven by the manifest's hashes, never by file names: a folder without a manifest,
    or with a manifest of the earlier layout (names without hashes), is refused and kept whole."""
    old = tmp_path / "reports"
    (old / "mecha").mkdir(parents=True)
    for name in ("report.html", "summary.md", "metadata.json", "matrix_long.csv"):
        (old / "mecha" / name).write_text("made by meleelab 0.0")
    (old / "index.html").write_text("<p>")
    (old / "index.md").write_text("# index")
    before = snapshot(old)
    with pytest.raises(InputError, match="no .meleelab manifest"):
        OutputFolder(old / "mecha")
    (old / MARKER).write_text(json.dumps({"written_by": "meleelab", "version": "0.1.0", "command": "meleelab",
                                          "entries": ["index.html", "index.md", "mecha/"]}))
    before = snapshot(old)
    with pytest.raises(InputError, match="older meleelab, without file hashes"):
        OutputFolder(old)
    assert main(["report", "mecha", "--max-trials", "300", "--quiet", "--out", str(old / "mecha")]) == 2
    assert snapshot(old) == before


def test_a_symlink_or_a_foreign_entry_in_the_store_folder_is_refused(tmp_path):
    out = tmp_path / "o"
    (out / STORE_DIR).mkdir(parents=True)
    (out / STORE_DIR / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="keep.txt"):
        OutputFolder(out)
    (out / STORE_DIR / "keep.txt").unlink()
    (out / "link").symlink_to(tmp_path)
    with pytest.raises(InputError, match="link"):
        OutputFolder(out)


# ------------------------------------------------------------- item 3: the store
@pytest.fixture
def key(tmp_path, monkeypatch):
    path = tmp_path / "keys" / "store.key"
    monkeypatch.setenv(KEY_ENV, str(path))
    return path


def _rows(out: Path) -> sqlite3.Connection:
    return sqlite3.connect(out / STORE_DIR / STORE_FILE, isolation_level=None)


def _edit(out: Path, change, resign: bool = True) -> None:
    """Change every row's tally with ``change(dict)``; re-sign it with this user's key (the worst case) or not."""
    signer = RowSigner()
    with _rows(out) as db:
        for k, fmt, tally, blocks in db.execute("SELECT key, format, tally, blocks FROM cells").fetchall():
            d = json.loads(tally)
            change(d)
            text = json.dumps(d)
            mac = signer.sign(k, fmt, text, blocks) if resign else db.execute(
                "SELECT mac FROM cells WHERE key = ?", (k,)).fetchone()[0]
            db.execute("UPDATE cells SET tally = ?, mac = ? WHERE key = ?", (text, mac, k))


def _wins_tripled(d):
    d["wins"]["int64"] = [d["trials"]] * 3  # p = 1 for win, loss and draw alike


def _zero_trials(d):
    d["trials"] = 0


def _negative(d):
    d["wins"]["int64"][0] = -5
    d["wins"]["int64"][1] += 5


def _huge(d):
    d["trials"] = 10 ** 30


def _plausible(d):
    d["wins"]["int64"][1] += 100  # more attacker wins, fewer defender wins: every sum still holds
    d["wins"]["int64"][2] -= 100


@pytest.mark.parametrize("change, resign", [(_wins_tripled, True), (_zero_trials, True), (_negative, True),
                                            (_huge, True), (_plausible, False), (_plausible, True)],
                         ids=["wins 3x trials", "trials 0", "negative wins", "trials 1e30", "plausible, unsigned",
                              "plausible, re-signed"])
def test_an_edited_store_never_changes_the_published_numbers(tmp_path, capsys, key, change, resign):
    out, fresh = tmp_path / "m", tmp_path / "fresh"
    assert main([*MATRIX, "--out", str(out)]) == 0 and main([*MATRIX, "--out", str(fresh)]) == 0
    _edit(out, change, resign)
    capsys.readouterr()
    rc = main([*MATRIX, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err, err
    if change is _plausible and resign:  # a consistent row signed with this user's own key is this user's
        assert json.loads((out / "metadata.json").read_text())["resumed_cells"] == 4
        return
    assert (out / "matrix_long.csv").read_bytes() == (fresh / "matrix_long.csv").read_bytes()
    assert json.loads((out / "metadata.json").read_text())["resumed_cells"] == 0
    notes = [ln for ln in err.splitlines() if "ignored" in ln]
    assert len(notes) == 1 and notes[0].startswith("meleelab: note: 4 cells in the results store"), err
    assert main([*MATRIX, "--out", str(out)]) == 0  # recomputed and signed again: now reused
    assert json.loads((out / "metadata.json").read_text())["resumed_cells"] == 4


def test_a_store_from_another_user_is_recomputed_and_the_key_is_private(tmp_path, capsys, key, monkeypatch):
    out = tmp_path / "m"
    assert main([*MATRIX, "--out", str(out)]) == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(bytes.fromhex(key.read_text().strip())) == 32
    assert main([*MATRIX, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "meleelab: note: 4 cells came from the results store" in err
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "someone else" / "store.key"))
    assert main([*MATRIX, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert json.loads((out / "metadata.json").read_text())["resumed_cells"] == 0
    assert [ln for ln in err.splitlines() if "ignored" in ln], err


def test_a_file_that_is_not_a_results_store_is_refused_in_one_line(tmp_path, capsys, key):
    out = tmp_path / "m"
    (out / STORE_DIR).mkdir(parents=True)
    with sqlite3.connect(out / STORE_DIR / STORE_FILE) as db:
        db.execute("CREATE TABLE accounts (name TEXT, balance INTEGER)")
    err = one_error(main([*MATRIX, "--out", str(out)]), capsys.readouterr().err)
    assert "not a meleelab results store" in err and "--fresh" in err
    with sqlite3.connect(out / STORE_DIR / STORE_FILE) as db:  # untouched
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["accounts"]


@pytest.mark.parametrize("change, why", [
    (lambda d: d.update(trials=True), "trials"), (lambda d: d.update(trials=1.5), "trials"),
    (lambda d: d["categories"]["int64"][0].__setitem__(0, d["categories"]["int64"][0][0] + 1), "categories"),
    (lambda d: d["rounds"]["moments"].update(total=d["rounds"]["moments"]["total"] + 1), "rounds"),
    (lambda d: d["damage_to_defender"]["moments"]["hist"].append(1), "histogram"),
    (lambda d: d.update(capped=d["trials"] + 1), "capped"), (lambda d: d.pop("extras"), "fields"),
    (lambda d: d.update(wins={"int64": [1, 2], "shape": [2]}), "wins"),
], ids=["bool", "float", "categories", "rounds total", "histogram", "capped", "field missing", "wins shape"])
def test_each_inconsistency_is_named(change, why):
    from analysis.runs.store import tally_to_dict

    d = tally_to_dict(sim.fight("duel", "Sellsword", "Knight", trials=3000, seed=1, budget="none", method="mc").tally)
    check_row(json.loads(json.dumps(d)), None)
    change(d)
    with pytest.raises(ValueError, match=why):
        check_row(d, None)


def test_rows_are_signed_with_the_key_and_the_values(tmp_path, key):
    signer = RowSigner()
    mac = signer.sign("k", 2, '{"a": 1}', None)
    assert signer.verify("k", 2, '{"a": 1}', None, mac)
    assert not signer.verify("k2", 2, '{"a": 1}', None, mac)  # another cell's key
    assert not signer.verify("k", 2, '{"a": 2}', None, mac)
    assert not signer.verify("k", 2, '{"a": 1}', "[]", mac)
    assert not RowSigner(tmp_path / "other.key").verify("k", 2, '{"a": 1}', None, mac)
    with ResultsStore(tmp_path / "s.sqlite") as store:  # a row that fits no job is counted as ignored
        store.put("k", sim.fight("mecha", "AFS", "Gustav", trials=10, seed=1, method="mc").tally)
        assert store.get("k") is not None and store.shared == {"k"}  # saved by this store: not an earlier run's
        store.reject("k")
        assert store.ignored == {"k"} and not store.reused and not store.shared


# ---------------------------------------------------------- item 4: one run at a time
HOLD = """
import sys, time
from analysis.report.outdir import OutputFolder
folder = OutputFolder(sys.argv[1])
print("locked", flush=True)
time.sleep(120)
"""


def test_a_second_run_on_the_same_out_is_refused_and_a_killed_one_does_not_block(tmp_path, capsys):
    out = tmp_path / "m"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        err = one_error(main([*MATRIX, "--out", str(out)]), capsys.readouterr().err)
        assert "another meleelab run" in err and f"process {holder.pid}" in err
        assert not out.exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (tmp_path / ".m.lock").exists()  # the killed run's lock file stays, its lock does not
    assert main([*MATRIX, "--out", str(out)]) == 0
    assert not (tmp_path / ".m.lock").exists()


def test_two_real_runs_on_one_out(tmp_path, capsys):
    out = tmp_path / "m"
    slow = ["matrix", "warband", "--seed", "6", "--max-trials", "6553600", "--half-width", "0.001", "--quiet",
            "--out", str(out)]
    first = subprocess.Popen([sys.executable, "-m", "analysis", *slow], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out / STORE_DIR).exists() and first.poll() is None:
            time.sleep(0.05)
        assert first.poll() is None, first.stderr.read()
        err = one_error(main([*MATRIX, "--out", str(out)]), capsys.readouterr().err)
        assert "another meleelab run" in err
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert main([*MATRIX, "--out", str(out)]) == 0


def test_the_lock_is_released_after_a_failed_run(tmp_path, capsys):
    out = tmp_path / "m"
    assert main(["matrix", "mecha", "--units", "AFS,Nobody", "--out", str(out)]) == 2
    assert main([*MATRIX, "--out", str(out)]) == 0
    assert sorted(os.listdir(tmp_path)) == ["m"]


def test_bad_input_leaves_no_new_out_folder(tmp_path, capsys):
    """A run refused after its --out was locked (an unknown featured unit) leaves no folder it made and stored
    nothing in; a folder with finished cells stays, to resume."""
    out = tmp_path / "r"
    err = one_error(main(["report", "duel", "--feature", "Nobody vs Knight", "--out", str(out), "--quiet"]),
                    capsys.readouterr().err)
    assert "no unit 'Nobody'" in err and not out.exists()
