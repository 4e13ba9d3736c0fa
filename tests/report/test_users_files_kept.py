"""Issue 38 (items 1, 2, 8, 10, 12): nothing of the user's is ever lost, and no run is silent.

Each reproduction of the issue is a test here (each failed on the code before: exit 0 and the files gone, a
pid written through a link, a MemoryError or a hang, an unquoted formula, lookalike names accepted, a note
that did not say why). Then the same promise in general: a property test over any folder content, and
kills at every step of the swap followed by a rerun.
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sim
from analysis.cli import main
from analysis.report.outdir import MARKER, STORE_DIR, STORE_FILE, OutputFolder
from analysis.report.safe_csv import neutralise_cell, restore_cell
from analysis.runs.store_check import KEY_ENV, RowSigner
from sim.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
MATRIX = ["matrix", "mecha", "--units", "AFS,Nutrocker", "--max-trials", "2000", "--seed", "3", "--quiet",
          "--method", "mc"]
REPORT = ["report", "mecha", "--units", "AFS,Nutrocker,Gustav", "--max-trials", "300", "--seed", "3", "--quiet"]
#: What is checked here is which files are kept, replaced or refused, never what a plot shows: reports are
#: written with their plots built but not rasterised (tests/plain_figures.py).
pytestmark = pytest.mark.usefixtures("plain_figures")


def one_error(rc: int, err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("meleelab: error:") and "Traceback" not in err, err
    return lines[0]


def snapshot(root: Path) -> dict[str, object]:
    """Everything under ``root`` as the user sees it, following nothing: bytes, link targets, modes, links."""
    out: dict[str, object] = {}
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            p = Path(here) / name
            st_ = os.lstat(p)
            key = str(p.relative_to(root))
            if stat.S_ISLNK(st_.st_mode):
                out[key] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st_.st_mode):
                out[key] = ("dir", stat.S_IMODE(st_.st_mode))
            elif stat.S_ISREG(st_.st_mode):
                out[key] = ("file", p.read_bytes(), stat.S_IMODE(st_.st_mode), st_.st_nlink)
            else:
                out[key] = ("other", stat.S_IFMT(st_.st_mode))
    return out


def user_files(snap: dict[str, object], out_name: str) -> dict[str, object]:
    """What is the user's in a snapshot of the parent folder: all but the output folder and the lock."""
    return {k: v for k, v in snap.items() if not (k == out_name or k.startswith(out_name + os.sep))}


# ------------------------------------------------------------ item 1: files that look like old output
def test_a_website_folder_with_index_files_is_kept(tmp_path, capsys):
    site = tmp_path / "site"
    for name in ("index.html", "index.md", "blog/index.html", "blog/index.md"):
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(f"my {name}\n")
    before = snapshot(tmp_path)
    err = one_error(main([*REPORT, "--out", str(site)]), capsys.readouterr().err)
    assert "which meleelab did not write" in err and "blog" in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["compare.csv", "sweep.csv", "diff.csv", ".x.tmp", ".meleelab-write-check.abc",
                                  MARKER])
def test_a_lone_file_with_a_name_meleelab_writes_is_kept(tmp_path, capsys, name):
    out = tmp_path / "o"
    out.mkdir()
    (out / name).write_text("the user's own\n")
    before = snapshot(tmp_path)
    err = one_error(main([*MATRIX, "--out", str(out)]), capsys.readouterr().err)
    assert name in err
    assert snapshot(tmp_path) == before


def test_a_folder_holding_every_name_meleelab_writes_is_kept(tmp_path, capsys):
    """Every file and folder name a report --all writes, with the user's own bytes, plus links of each kind."""
    from analysis.report.build import write_all

    made = tmp_path / "made"
    write_all(made, rulesets=["mecha"], max_trials=300)
    names = sorted(str(p.relative_to(made)) for p in made.rglob("*") if p.is_file()) + [
        f"mecha/rebalance/{n}" for n in ("rebalanced.toml", "changes.csv", "verification.csv", "summary.md",
                                         "report.html", "metadata.json", MARKER)] + [
        "sweep.csv", "sweep_marginal.csv", "sweep.png", "compare.csv", "diff.csv", "diff_changed.csv", "diff.png",
        ".x.tmp", ".meleelab-write-check.x", f"{STORE_DIR}/{STORE_FILE}-x"]
    assert len(names) > 40 and any(n.endswith(MARKER) for n in names) and any("rebalance/" in n for n in names)
    mine = tmp_path / "mine"
    for name in names:
        (mine / name).parent.mkdir(parents=True, exist_ok=True)
        (mine / name).write_text(f"the user's {name}\n")
    before = snapshot(tmp_path / "mine")
    capsys.readouterr()
    for argv in (["report", "--all", "--max-trials", "300", "--quiet"], REPORT, MATRIX):
        one_error(main([*argv, "--out", str(mine)]), capsys.readouterr().err)
        one_error(main([*argv, "--out", str(mine / "mecha")]), capsys.readouterr().err)
        assert snapshot(tmp_path / "mine") == before


@pytest.mark.parametrize("kind", ["symlink to a file", "symlink to a folder", "hard link", "read-only file",
                                  "edited output", "added file", "fifo"])
def test_links_read_only_and_edited_files_in_an_output_folder_are_kept(tmp_path, capsys, kind):
    """A folder meleelab wrote, then changed by the user: the change is the user's, and the run is refused."""
    out, thesis = tmp_path / "o", tmp_path / "thesis.txt"
    thesis.write_text("my thesis\n")
    assert main([*MATRIX, "--out", str(out)]) == 0
    if kind == "symlink to a file":
        (out / "matrix.csv").unlink()
        (out / "matrix.csv").symlink_to(thesis)
    elif kind == "symlink to a folder":
        (out / "docs").symlink_to(tmp_path)
    elif kind == "hard link":
        (out / "matrix.csv").unlink()
        os.link(thesis, out / "matrix.csv")
    elif kind == "read-only file":
        (out / "notes.txt").write_text("read-only notes\n")
        (out / "notes.txt").chmod(0o444)
    elif kind == "edited output":
        with open(out / "matrix.csv", "a") as f:
            f.write("my own row\n")
    elif kind == "added file":
        (out / "sub").mkdir()
        (out / "sub" / "mine.csv").write_text("x\n")
    else:
        os.mkfifo(out / "pipe")
    before = snapshot(tmp_path)
    capsys.readouterr()
    err = one_error(main([*MATRIX, "--out", str(out)]), capsys.readouterr().err)
    assert "which meleelab did not write" in err
    assert snapshot(tmp_path) == before


def test_a_file_added_while_the_run_goes_on_is_kept(tmp_path):
    """The folder is checked again just before the swap: a file the user saved into it meanwhile is theirs."""
    out = tmp_path / "o"
    OutputFolder(out, "matrix").replace(lambda d: [_write(d / "a.csv", "old a")])

    def write(staging: Path) -> list[Path]:
        (out / "notes.md").write_text("written while the cells ran\n")
        return [_write(staging / "a.csv", "new a")]

    with pytest.raises(InputError, match="notes.md"):
        OutputFolder(out, "matrix").replace(write)
    assert (out / "notes.md").read_text() == "written while the cells ran\n" and (out / "a.csv").read_text() == "old a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]  # no staging folder, no lock left behind


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _dead_pid() -> int:
    top = int(Path("/proc/sys/kernel/pid_max").read_text()) if Path("/proc/sys/kernel/pid_max").exists() else 32768
    for pid in range(top - 1, 1, -1):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    raise AssertionError("no free process id")


def test_folders_beside_the_output_named_like_leftovers_are_kept(tmp_path, capsys):
    """``.o.tmp-PID-x`` and ``.o.old-PID-x`` of a dead process are a killed run's leftovers only when meleelab
    claimed them (a staging manifest) or proves their files by hash; the user's folders of those names stay."""
    pid = _dead_pid()
    out = tmp_path / "o"
    for name in (f".o.tmp-{pid}-abc", f".o.old-{pid}-xyz"):
        (tmp_path / name / "deep").mkdir(parents=True)
        (tmp_path / name / "deep" / "mine.csv").write_text("the user's\n")
        (tmp_path / name / "matrix.csv").write_text("the user's matrix\n")
    (tmp_path / f".o.tmp-{pid}-lnk").symlink_to(tmp_path / f".o.old-{pid}-xyz")
    before = snapshot(tmp_path)
    assert main([*MATRIX, "--out", str(out)]) == 0
    assert main([*MATRIX, "--out", str(out)]) == 0
    assert user_files(snapshot(tmp_path), "o") == before


# ------------------------------------------------------------- item 2: the lock file
@pytest.mark.parametrize("kind", ["symlink", "hard link", "a file of that name"])
def test_the_lock_file_is_never_written_through_a_link_or_over_a_users_file(tmp_path, capsys, kind, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("victim.txt").write_text("thesis\n")
    if kind == "symlink":
        Path(".LK.lock").symlink_to("victim.txt")
    elif kind == "hard link":
        os.link("victim.txt", ".LK.lock")
    else:
        Path(".LK.lock").write_text("my lock notes\n")
    before = snapshot(tmp_path)
    err = one_error(main([*MATRIX, "--out", "LK"]), capsys.readouterr().err)
    assert ".LK.lock" in err
    assert snapshot(tmp_path) == before  # the victim unchanged, the link kept, no LK made


def test_a_stale_lock_of_a_killed_run_is_still_taken_over(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path(".LK.lock").write_text(f"{_dead_pid()}\n")
    assert main([*MATRIX, "--out", "LK"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["LK"]


# ------------------------------------------------------------- item 8: the key file
def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # the old code read /dev/zero until 2.7 GB


def _run_with_key(tmp_path: Path, key: str) -> subprocess.CompletedProcess:
    env = {**os.environ, KEY_ENV: key}
    return subprocess.run([sys.executable, "-m", "analysis", *MATRIX, "--out", str(tmp_path / "o")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, preexec_fn=_limited)


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder", "too large", "not hex", "too short"])
def test_a_bad_key_file_is_one_line_at_once(tmp_path, kind):
    key = {"/dev/zero": "/dev/zero", "fifo": str(tmp_path / "fifo"), "folder": str(tmp_path)}.get(
        kind, str(tmp_path / "key"))
    if kind == "fifo":
        os.mkfifo(key)
    elif kind == "too large":
        Path(key).write_text("ab" * 1_000_000)
    elif kind == "not hex":
        Path(key).write_text("my password\n")
    elif kind == "too short":
        Path(key).write_text("abcd\n")
    try:
        run = _run_with_key(tmp_path, key)
    except subprocess.TimeoutExpired:
        pytest.fail("the run hung on the key file")
    line = one_error(run.returncode, run.stderr)
    assert key in line and KEY_ENV in line
    assert not (tmp_path / "o").exists()


def test_a_key_file_behind_a_symlink_is_read(tmp_path):
    (tmp_path / "real.key").write_text("ab" * 32 + "\n")
    (tmp_path / "link.key").symlink_to(tmp_path / "real.key")
    assert RowSigner(tmp_path / "link.key").id == RowSigner(tmp_path / "real.key").id


# ------------------------------------------------------------- item 10: names
def test_a_formula_behind_a_combining_grapheme_joiner_is_quoted_in_every_csv_cell(tmp_path, capsys):
    name = "\u034f=1+1"
    roster = tmp_path / "r.toml"
    roster.write_text(textwrap.dedent(f"""\
        ruleset = "mecha"
        [[unit]]
        name = "{name}"
        defence = 2
        physical = 0
        armour = "B"
        points = 20
        [[unit]]
        name = "AFS"
        defence = 3
        physical = 0
        armour = "B"
        points = 25
        """), encoding="utf-8")
    out = tmp_path / "o"
    assert main(["report", "mecha", "--roster", str(roster), "--max-trials", "300", "--quiet", "--out", str(out)]) == 0
    import csv
    import io

    cells = [cell for path in out.glob("*.csv") for row in csv.reader(io.StringIO(path.read_text("utf-8")))
             for cell in row if "=1+1" in cell]
    assert len(cells) >= 10 and all(c.startswith("'") for c in cells), cells
    for hidden in ("\u034f", "\u115f", "\u1160", "\u3164", "\ufe0f", "\U000e0100", "\u17b4"):
        for start in ("=", "+", "-", "@", "\t", "\r"):
            text = hidden + start + "x"
            assert neutralise_cell(text) == "'" + text and restore_cell(neutralise_cell(text)) == text


def _toml(names: list[str]) -> str:
    return 'ruleset = "mecha"\n' + "".join(f'[[unit]]\nname = "{n}"\ndefence = 2\nphysical = 0\narmour = "B"\n'
                                           for n in names)


@pytest.mark.parametrize("a, b", [("K\u00e1", "Ka\u0301"), ("AFS", "AFS\u3164"), ("AFS", "\u0410FS"),
                                  ("AFS", "\u0391FS"), ("Ogre", "\u041egre"), ("AFS", "\uff21\uff26\uff33"),
                                  ("Unit 1", "Unit l"), ("Arm", "Arrn"), ("AFS", "A\u034fFS")],
                         ids=["two Ká", "Hangul filler", "Cyrillic A", "Greek Alpha", "Cyrillic O", "fullwidth",
                              "1 and l", "m and rn", "grapheme joiner"])
def test_lookalike_unit_names_are_refused(tmp_path, capsys, a, b):
    for fmt in ("toml", "csv"):
        path = tmp_path / f"r.{fmt}"
        if fmt == "toml":
            path.write_text(_toml([a, b]), encoding="utf-8")
        else:
            path.write_text("name,defence,physical,armour\n" + "".join(f"{n},2,0,B\n" for n in (a, b)),
                            encoding="utf-8")
        err = one_error(main(["units", "mecha", "--roster", str(path)]), capsys.readouterr().err)
        assert "print alike" in err and ascii(b) in err
    roster = sim.default_roster("mecha")
    with pytest.raises(InputError, match="print alike"):
        roster.with_unit(dataclasses.replace(roster.unit("AFS"), name="\u0410FS"))


def test_names_that_differ_to_the_eye_are_kept(tmp_path, capsys):
    path = tmp_path / "r.toml"
    names = ["Knight", "KNIGHT", "Ogre", "Ogre Brute", "Ωмега", "漢字の戦車", "naïve café", "Ka"]
    path.write_text(_toml(names), encoding="utf-8")
    assert sim.load_roster(path).names == names
    for rid in [r.id for r in sim.rulesets()]:  # the shipped rosters have no lookalikes
        sim.default_roster(rid)


@pytest.mark.parametrize("name", ["\u3164", "\u115f\u1160", "\u034f", "\ufe0f"])
def test_a_name_that_shows_nothing_is_refused(tmp_path, capsys, name):
    path = tmp_path / "r.toml"
    path.write_text(_toml([name]), encoding="utf-8")
    err = one_error(main(["units", "mecha", "--roster", str(path)]), capsys.readouterr().err)
    assert "shows something" in err or "invisible" in err


# ------------------------------------------------------------- item 12: why rows are ignored
def _store_rows(out: Path) -> sqlite3.Connection:
    return sqlite3.connect(out / STORE_DIR / STORE_FILE, isolation_level=None)


@pytest.mark.parametrize("how, words", [
    ("another machine", "4 signed with another user's or machine's key"),
    ("edited", "4 edited after they were signed"),
    ("unsigned", "4 not signed"),
    ("impossible", "4 impossible"),
    ("mixed", "2 signed with another user's or machine's key; 1 edited after they were signed; 1 not signed"),
])
def test_the_note_says_why_stored_rows_were_ignored(tmp_path, capsys, monkeypatch, how, words):
    out = tmp_path / "m"
    if how in ("another machine", "mixed"):
        monkeypatch.setenv(KEY_ENV, str(tmp_path / "other machine" / "store.key"))
    assert main([*MATRIX, "--out", str(out)]) == 0
    monkeypatch.setenv(KEY_ENV, os.environ[KEY_ENV] if how not in ("another machine", "mixed") else
                       str(tmp_path / "this machine" / "store.key"))
    signer = RowSigner()
    with _store_rows(out) as db:
        rows = db.execute("SELECT key, format, tally, blocks, mac FROM cells ORDER BY key").fetchall()
        for i, (k, fmt, tally, blocks, mac) in enumerate(rows):
            if how == "edited" or (how == "mixed" and i == 2):
                d = json.loads(tally)
                d["wins"]["int64"][1] += 1
                d["wins"]["int64"][2] -= 1
                mac = f"{signer.id}:{mac.rpartition(':')[2]}"  # this machine's id on a row it did not sign
                db.execute("UPDATE cells SET tally = ?, mac = ? WHERE key = ?", (json.dumps(d), mac, k))
            elif how == "unsigned" or (how == "mixed" and i == 3):
                db.execute("UPDATE cells SET mac = NULL WHERE key = ?", (k,))
            elif how == "impossible":
                d = json.loads(tally)
                d["wins"]["int64"] = [d["trials"]] * 3
                text = json.dumps(d)
                db.execute("UPDATE cells SET tally = ?, mac = ? WHERE key = ?",
                           (text, signer.sign(k, fmt, text, blocks), k))
    capsys.readouterr()
    assert main([*MATRIX, "--out", str(out)]) == 0
    notes = [ln for ln in capsys.readouterr().err.splitlines() if "ignored" in ln]
    assert len(notes) == 1 and notes[0].startswith("meleelab: note: 4 cells in the results store"), notes
    assert words in notes[0], notes


# ------------------------------------------------------------- the promise in general
NAMES = ["matrix.csv", "matrix_long.csv", "metadata.json", "report.html", "index.md", MARKER, STORE_DIR,
         "compare.csv", ".x.tmp", "notes.txt", "mecha", "rebalance", "a"]
_CONTENT = st.binary(max_size=40)


@st.composite
def folder_contents(draw: st.DrawFn) -> list[tuple[str, str, object]]:
    """Entries (kind, path, payload) of a folder the user made: files, folders, links, read-only files."""
    entries = []
    for _ in range(draw(st.integers(0, 6))):
        depth = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=1) |
                     st.lists(st.sampled_from(NAMES), min_size=1, max_size=3))
        kind = draw(st.sampled_from(["file", "file", "read-only", "symlink", "hard link", "dir"]))
        entries.append((kind, "/".join(depth), draw(_CONTENT)))
    return entries


def _make(root: Path, outside: Path, entries: list[tuple[str, str, object]]) -> None:
    for kind, rel, payload in entries:
        path = root / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(path):
                continue
            if kind == "dir":
                path.mkdir()
            elif kind == "symlink":
                path.symlink_to(outside)
            elif kind == "hard link":
                os.link(outside, path)
            else:
                path.write_bytes(payload)
                if kind == "read-only":
                    path.chmod(0o444)
        except (FileExistsError, NotADirectoryError):
            continue


#: Examples of the folder property: 40 in the default suite, 400 with MELEELAB_FUZZ_FULL=1 (.ci/run's second step).
FOLDER_EXAMPLES = int(os.environ.get("MELEELAB_FUZZ_EXAMPLES", "0")) or (
    400 if os.environ.get("MELEELAB_FUZZ_FULL") == "1" else 40)


@pytest.mark.fuzz
@settings(max_examples=FOLDER_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(entries=folder_contents(), own_first=st.booleans())
@example(entries=[("file", "compare.csv", b"mine")], own_first=False)
@example(entries=[("file", ".x.tmp", b"mine")], own_first=False)
@example(entries=[("file", "index.md", b"mine"), ("file", "index.html", b"mine")], own_first=False)
def test_any_folder_content_of_the_users_is_byte_identical_after_any_run(tmp_path_factory, entries, own_first):
    """Before a run the folder holds anything (or an output of meleelab's plus anything): after the run, whether
    it was refused or not, every entry of the user's is as it was, and the victim outside is untouched."""
    base = tmp_path_factory.mktemp("prop")
    out, outside = base / "o", base / "victim.txt"
    outside.write_text("the user's file outside\n")
    if own_first:
        OutputFolder(out, "matrix").replace(lambda d: [_write(d / n, f"old {n}") for n in ("matrix.csv", "a")])
    out.mkdir(exist_ok=True)
    ours = snapshot(out)
    _make(out, outside, entries)
    theirs = {k: v for k, v in snapshot(out).items() if k not in ours or ours[k] != v}
    victim = outside.read_bytes()
    try:
        OutputFolder(out, "matrix").replace(lambda d: [_write(d / n, f"new {n}") for n in ("matrix.csv", "a")])
        refused = False
    except InputError:
        refused = True
    after = snapshot(out)
    assert outside.read_bytes() == victim
    for key, value in theirs.items():  # the user's entries (and what is inside their folders) are unchanged
        if value[0] == "dir" and not any(k.startswith(key + os.sep) for k in theirs):
            continue  # an empty folder holds nothing to lose
        assert after.get(key) == value, key
    # refused exactly when the user added anything but an empty results-store folder (which the run keeps)
    assert refused == any(not (k == STORE_DIR and v[0] == "dir") for k, v in theirs.items()), (theirs, refused)


# ------------------------------------------------------------- killed at every step, then run again
KILL_AT = """
import os, signal, sys, shutil
from pathlib import Path
import analysis.report.outdir as o
n = int(sys.argv[2])
calls = [0]
def step(fn):
    def wrapped(*a, **kw):
        calls[0] += 1
        if calls[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*a, **kw)
    return wrapped
for mod in (os, ):
    for name in ("rename", "replace", "unlink", "rmdir", "mkdir"):
        setattr(mod, name, step(getattr(mod, name)))
shutil.rmtree = step(shutil.rmtree)
o._exchange = step(o._exchange)
if sys.argv[3] == "fallback":
    o._exchange = lambda a, b: False
folder = o.OutputFolder(sys.argv[1], "matrix")
def write(d):
    (d / "a.csv").write_bytes(b"new a.csv")
    (d / "sub").write_bytes(b"new sub")
    return [d / "a.csv", d / "sub"]
folder.replace(write)
print("finished")
"""


@pytest.mark.parametrize("swap", ["exchange", pytest.param("fallback", marks=pytest.mark.slow)])
def test_killed_at_every_step_then_rerun_gives_the_output_and_keeps_the_users_files(tmp_path, swap):
    """SIGKILL at the n-th file-system step of a run (every n until the run finishes), then a normal run: its
    output is byte-identical to an uninterrupted run's, and every file of the user's beside it is kept."""
    parent, pid = tmp_path / "work", _dead_pid()
    parent.mkdir()
    (parent / "notes.md").write_text("my notes\n")
    (parent / f".o.tmp-{pid}-mine").mkdir()
    (parent / f".o.tmp-{pid}-mine" / "a.csv").write_text("the user's a.csv\n")
    (parent / ".o.lock.bak").write_text("mine\n")
    users = user_files(snapshot(parent), "o")
    out = parent / "o"
    OutputFolder(out, "matrix").replace(lambda d: [_write(d / "a.csv", "old a")])
    assert user_files(snapshot(parent), "o") == users
    script = tmp_path / "kill.py"
    script.write_text(KILL_AT)
    for n in range(1, 60):
        run = subprocess.run([sys.executable, str(script), str(out), str(n), swap], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode in (0, -signal.SIGKILL), run.stderr
        if out.exists():  # whole before the rerun too: the old output or the new one
            files = {p.name: p.read_bytes() for p in out.iterdir() if p.name not in (MARKER, STORE_DIR)}
            assert files in ({"a.csv": b"old a"}, {"a.csv": b"new a.csv", "sub": b"new sub"}), (n, files)
        OutputFolder(out, "matrix").replace(lambda d: [_write(d / "a.csv", "old a")])  # the rerun
        assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != MARKER} == {"a.csv": b"old a"}, n
        after = user_files(snapshot(parent), "o")
        assert after == users, (n, set(after) ^ set(users))
        if run.returncode == 0:
            break
    else:
        pytest.fail("the run never finished")
    assert n > 5  # the kills did land inside the run


def test_a_saved_matrix_with_lookalike_names_is_refused(tmp_path, capsys):
    out = tmp_path / "m"
    assert main(["matrix", "mecha", "--units", "AFS,PKA", "--max-trials", "500", "--quiet", "--out", str(out)]) == 0
    text = (out / "matrix_long.csv").read_text(encoding="utf-8")
    lines = [ln.replace("PKA,", "\u0410FS,") for ln in text.splitlines()]
    (tmp_path / "edited.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    err = one_error(main(["balance", "mecha", "--from-matrix", str(tmp_path / "edited.csv")]), capsys.readouterr().err)
    assert "print alike" in err


def test_the_python_api_replaces_a_folder_as_out_does(tmp_path):
    """``Report.write`` and ``RunDiff.write`` replace their folder whole, so only a folder meleelab wrote."""
    from analysis.report.build import build_report
    from analysis.report.diff import diff_runs

    rep = build_report("mecha", units=["AFS", "Nutrocker"], max_trials=300, budget="none", seed=1)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.md").write_text("my summary\n")
    before = snapshot(mine)
    with pytest.raises(InputError, match="summary.md"):
        rep.write(mine)
    assert snapshot(mine) == before
    a, b = tmp_path / "a", tmp_path / "b"
    assert rep.write(a)[0].parent == a and rep.write(a) and rep.write(b)  # its own folder: replaced
    (mine / "diff.csv").write_text("my diff\n")
    before = snapshot(mine)
    with pytest.raises(InputError, match="diff.csv"):
        diff_runs(a, b).write(mine)
    assert snapshot(mine) == before


KILLED = ["matrix", "warband", "--units", "Champion,Youngblood,Ogre Brute", "--seed", "6", "--max-trials", "65536",
          "--half-width", "0.004", "--budget", "none", "--quiet"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_a_cli_run_killed_at_a_random_moment_then_rerun_gives_the_same_files_and_keeps_the_users(tmp_path, seed):
    """SIGKILL a real matrix run after a random delay (seeded), beside the user's files, then run it again:
    the output is byte-identical to an uninterrupted run's and every file of the user's is as it was."""
    import random
    import time

    delay = random.Random(seed).uniform(0.5, 6.0)
    parent, pid = tmp_path / "work", _dead_pid()
    (parent / f".o.tmp-{pid}-mine").mkdir(parents=True)
    (parent / f".o.tmp-{pid}-mine" / "matrix.csv").write_text("the user's\n")
    (parent / "notes.md").write_text("my notes\n")
    users = snapshot(parent)
    out = parent / "o"
    proc = subprocess.Popen([sys.executable, "-m", "analysis", *KILLED, "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for run_out in (out, tmp_path / "whole"):
        done = subprocess.run([sys.executable, "-m", "analysis", *KILLED, "--out", str(run_out)], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    for name in ("matrix_long.csv", "matrix.csv", "matrix.json", "matrix.png"):
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert user_files(snapshot(parent), "o") == users
