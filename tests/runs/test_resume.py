"""Resumable runs (the results store) and output folders replaced whole or not at all."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sim
from analysis.cli import main
from analysis.report.build import write_all
from analysis.report.outdir import MARKER, STORE_DIR, STORE_FILE, OutputFolder
from analysis.runs.jobs import CellJob
from analysis.runs.matrix import cell_stream, matchup_matrix
from analysis.runs.store import ResultsStore, cell_key, tally_from_dict, tally_to_dict
from sim.rng import BLOCK_TRIALS, root_sequence
from sim.roster import Roster
from sim.rulesets import get_ruleset
from tests.processes import descendants, gone, interrupt_like_a_terminal

ROOT = Path(__file__).resolve().parents[2]


# sampled cells throughout, as with --method mc (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("monte_carlo_cells")


def _files(folder: Path) -> dict[str, bytes]:
    """The output files (not the store, nor the markers saying meleelab wrote the folders)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and STORE_DIR not in p.parts and p.name != MARKER}


def _same_output(a: Path, b: Path) -> None:
    fa, fb = _files(a), _files(b)
    assert sorted(fa) == sorted(fb)
    for name in fa:
        if name.endswith("metadata.json"):
            ma, mb = json.loads(fa[name]), json.loads(fb[name])
            ma.pop("resumed_cells"), mb.pop("resumed_cells")
            assert ma == mb, name
        else:
            assert fa[name] == fb[name], name


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}.")] + \
        [str(p) for p in folder.rglob("*.tmp")]


# ------------------------------------------------------------------ the store
def test_tallies_round_trip_exactly():
    r = sim.fight("grimdark", *sim.default_roster("grimdark").names[:2], trials=3000, seed=1, budget="none",
                  method="mc")
    back = tally_from_dict(json.loads(json.dumps(tally_to_dict(r.tally))))
    assert back.same_as(r.tally) and back.extra_names == r.tally.extra_names and back.extras.keys()


def _job(**change):
    rs = get_ruleset("duel")
    matchup, plan = sim.build_matchup(rs, "Sellsword", "Knight", overrides=change.pop("overrides", None),
                                      states=change.pop("states", None), options=change.pop("options", None),
                                      budget=change.pop("budget", "none"))
    fields = dict(key=("Sellsword", "Knight"), plan=plan, stream=cell_stream("Sellsword", "Knight"),
                  max_trials=100_000, half_width=0.01, identity=matchup)
    fields.update(change)
    return CellJob(**fields)


def test_the_key_covers_every_setting_and_nothing_else():
    rs = get_ruleset("duel")
    base = dict(ruleset=rs, root=root_sequence(1), rounds=rs.default_rounds, max_rounds=50)

    def key(job=None, **kw):
        return cell_key(**{**base, **kw}, job=job or _job())

    k = key()
    # rebuilt: the same key; the caller's name for the job is not in it
    assert k == key(job=_job()) == key(job=_job(key="another name"))
    changed = [key(job=_job(overrides={"attacker": {"ws": 5}})), key(job=_job(overrides={"defender": {"ws": 3}})),
               key(job=_job(states={"defender": {"prone": True}})),
               key(job=_job(options={"hit_assignment": "spread"})), key(job=_job(budget=200)),
               key(job=_job(budget=300)), key(root=root_sequence(2)), key(rounds=3),
               key(max_rounds=40), key(job=_job(stream=(1, 2))), key(job=_job(half_width=0.02)),
               key(job=_job(max_trials=99_999)), key(job=_job(batch_trials=4096)), key(job=_job(keep_blocks=True))]
    assert len({k, *changed}) == len(changed) + 1

    @dataclasses.dataclass(frozen=True)
    class BudgetJob(CellJob):  # a setting added later is in the key without touching the store
        budget: int = 0

    j = _job()
    fields = {f.name: getattr(j, f.name) for f in dataclasses.fields(CellJob)}
    assert key(job=BudgetJob(**fields, budget=100)) != key(job=BudgetJob(**fields, budget=200))
    assert cell_key(**base, job=_job(identity=None)) is None


def _roster_with(ros: Roster, name: str, **change) -> Roster:
    units = dict(ros.units)
    units[name] = dataclasses.replace(units[name], **change)
    return dataclasses.replace(ros, units=units)  # every other field (options, budget...) as it was


def test_rerun_reuses_cells_and_a_changed_unit_recomputes_only_its_cells(tmp_path):
    ros = sim.default_roster("duel")
    kw = dict(units=["Sellsword", "Duellist", "Knight"], half_width=0.01, max_trials=20_000, seed=5)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        first = matchup_matrix("duel", ros, store=store, **kw)
        assert first.resumed_cells == 0 and len(store) == 9
        again = matchup_matrix("duel", ros, store=store, **kw)
        assert again.resumed_cells == 9 and again.long.equals(first.long)
        changed = _roster_with(ros, "Knight", ws=2)
        third = matchup_matrix("duel", changed, store=store, **kw)
        assert third.resumed_cells == 9 - 5  # Knight is in 5 of the 9 cells
        assert third.long.equals(matchup_matrix("duel", changed, **kw).long)
        more = matchup_matrix("duel", ros, store=store, **{**kw, "max_trials": 30_000})
        assert more.resumed_cells == 0  # another trial setting: nothing reused
    with ResultsStore(tmp_path / "s.sqlite", fresh=True) as store:
        assert matchup_matrix("duel", ros, store=store, **kw).resumed_cells == 0


@pytest.mark.parametrize("budget", [None, "none"])
def test_a_rerun_builds_no_plan_for_a_stored_cell(tmp_path, monkeypatch, budget):
    """Issue 38, item 11: the store was asked only after every cell's plan was built, and a duel between groups
    builds its exact chain (a tenth of a second a plan: more than its fights), so a rerun saved little."""
    from sim.rulesets.duel import Duel as DuelRuleset

    ros = sim.default_roster("duel")
    kw = dict(units=["Sellsword", "Goblin Mob", "Militia"], half_width=0.05, max_trials=4_000, seed=5, budget=budget)
    built = []
    prepare = DuelRuleset.prepare
    monkeypatch.setattr(DuelRuleset, "prepare", lambda self, m: built.append(m) or prepare(self, m))
    with ResultsStore(tmp_path / "s.sqlite") as store:
        first = matchup_matrix("duel", ros, store=store, **kw)
        cells = len(store)
        assert cells and len(built) >= cells
    built.clear()
    with ResultsStore(tmp_path / "s.sqlite") as store:  # the next run
        again = matchup_matrix("duel", ros, store=store, **kw)
    assert again.long.equals(first.long) and again.resumed_cells == cells
    assert built == []  # every cell came from the store before its plan was needed
    # the store says what the cells had cost when they were computed (plans and fights)
    assert store.saved_seconds > 0 and len(store.reused) == cells


def test_a_fresh_store_ignores_earlier_rows_but_hands_out_the_cells_it_saved_itself(tmp_path):
    """report --fresh --rebalance: the rebalance reuses the report's cells, never a row of an earlier run."""
    ros = sim.default_roster("duel")
    kw = dict(units=["Sellsword", "Knight"], half_width=0.02, max_trials=4_000, seed=5)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        matchup_matrix("duel", ros, store=store, **kw)
    with ResultsStore(tmp_path / "s.sqlite", fresh=True) as store:
        first = matchup_matrix("duel", ros, store=store, **kw)
        assert first.resumed_cells == 0  # the earlier run's rows are not read
        again = matchup_matrix("duel", ros, store=store, **kw)
        assert again.resumed_cells == 4 and again.long.equals(first.long)
        # handed out, but fought in this command: no "came from the results store" note
        assert not store.reused and len(store.shared) == 4


def test_cli_rerun_resumes_and_fresh_recomputes(tmp_path, capsys):
    out = tmp_path / "m"
    args = ["matrix", "mecha", "--units", "AFS,Nutrocker", "--seed", "2", "--max-trials", "5000", "--quiet",
            "--out", str(out)]
    assert main(args) == 0
    ref = _files(out)
    assert json.loads(ref["metadata.json"])["resumed_cells"] == 0
    assert (out / STORE_DIR / STORE_FILE).is_file()
    assert main(args) == 0
    assert json.loads((out / "metadata.json").read_text())["resumed_cells"] == 4
    _same_output(out, out)  # all files still there
    assert {k: v for k, v in _files(out).items() if k != "metadata.json"} == \
        {k: v for k, v in ref.items() if k != "metadata.json"}
    assert main(args + ["--fresh"]) == 0
    assert json.loads((out / "metadata.json").read_text())["resumed_cells"] == 0
    sweep = ["sweep", "mecha", "AFS", "Gustav", "--vary", "defence=1..2", "--trials", "4000", "--seed", "1",
             "--quiet", "--out", str(tmp_path / "s")]
    assert main(sweep) == 0 and main(sweep) == 0
    assert json.loads((tmp_path / "s" / "metadata.json").read_text())["resumed_cells"] == 2
    assert not _leftovers(out) and not _leftovers(tmp_path / "s")


@pytest.mark.usefixtures("plain_figures")  # the store and the metadata, not the plots
def test_report_all_resumes_from_its_store(tmp_path):
    first = write_all(tmp_path / "r", rulesets=["mecha"], max_trials=2048)
    again = write_all(tmp_path / "r", rulesets=["mecha"], max_trials=2048)
    assert not first["failed"] and not again["failed"]
    meta = json.loads((tmp_path / "r" / "mecha" / "metadata.json").read_text())
    assert meta["resumed_cells"] == meta["cells"]["cells_fought"] > 0
    assert (tmp_path / "r" / STORE_DIR / STORE_FILE).is_file() and (tmp_path / "r" / "index.html").is_file()


# ------------------------------------------------------ killed and resumed
#: One warrior a side (the roster's budget would field copies, several times the work for the same test).
MATRIX = ["matrix", "warband", "--units", "Champion,Youngblood,Ogre Brute", "--seed", "6",
          "--max-trials", str(BLOCK_TRIALS), "--half-width", "0.004", "--budget", "none", "--quiet"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", *args], capture_output=True, text=True, timeout=300)


def _stored(out: Path) -> int:
    db = out / STORE_DIR / STORE_FILE
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return int(con.execute("SELECT COUNT(*) FROM cells").fetchone()[0])
    except sqlite3.Error:
        return 0


# three interpreters fight a warband matrix (6 s alone, up to 24 s in a busy suite): in the slow step (.ci/run).
# The default run has its parts: test_a_killed_run_leaves_no_local_workers (a SIGKILL leaves no worker),
# test_cli_rerun_resumes_and_fresh_recomputes and test_rerun_reuses_cells_and_a_changed_unit_recomputes_only_its_cells
# (a rerun takes the stored cells and writes the uninterrupted run's files), and test_users_files_kept's
# test_killed_at_every_step_then_rerun_gives_the_output_and_keeps_the_users_files (a kill leaves nothing half-written)
@pytest.mark.slow
def test_sigkill_mid_matrix_then_rerun_gives_the_uninterrupted_files(tmp_path):
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "analysis", *MATRIX, "--workers", "2", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _stored(out) < 2 and proc.poll() is None:
            workers = descendants(proc.pid) or workers
            time.sleep(0.05)
        stored = _stored(out)
        assert proc.poll() is None, "the run finished before it could be killed"
        assert stored >= 2
        workers = descendants(proc.pid) or workers
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert workers, "no worker processes seen"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(gone(p) for p in workers):
        time.sleep(0.1)
    assert all(gone(p) for p in workers), "worker processes outlived the killed run"
    assert not (out / "matrix_long.csv").exists()  # nothing half-written: only the store
    resumed = _cli(*MATRIX, "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((out / "metadata.json").read_text())["resumed_cells"] >= stored
    whole = _cli(*MATRIX, "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    assert json.loads((tmp_path / "whole" / "metadata.json").read_text())["resumed_cells"] == 0
    _same_output(out, tmp_path / "whole")
    assert not _leftovers(out)


# ------------------------------------------------------------ output folders
def _write(files: dict[str, str]):
    def write(d: Path) -> list[Path]:
        paths = []
        for name, text in files.items():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text(text)
            paths.append(d / name)
        return paths
    return write


def test_a_failed_write_leaves_the_previous_output_and_its_store(tmp_path):
    out = tmp_path / "o"
    OutputFolder(out).replace(_write({"a.csv": "old a", "b.csv": "old b"}))
    folder = OutputFolder(out)
    folder.open_store().put("k", sim.fight("mecha", "AFS", "Gustav", trials=10, seed=1, method="mc").tally)

    def broken(d: Path) -> list[Path]:
        (d / "a.csv").write_text("new a")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        folder.replace(broken)
    assert _files(out) == {"a.csv": b"old a", "b.csv": b"old b"}
    assert not _leftovers(out)
    with ResultsStore(out / STORE_DIR / STORE_FILE) as store:
        assert store.get("k") is not None
    paths = OutputFolder(out).replace(_write({"c.csv": "new c"}))
    assert paths == [out / "c.csv"] and _files(out) == {"c.csv": b"new c"}  # replaced whole: old files gone


KILL_SCRIPT = """
import os, signal, sys
from pathlib import Path
import analysis.report.outdir as o
folder = o.OutputFolder(sys.argv[1])
folder.open_store().put("k", __import__("sim").fight("mecha", "AFS", "Gustav", trials=10, seed=1, method="mc").tally)
def write(d):
    (d / "a.csv").write_text("new a")
    if sys.argv[2] == "writing":
        os.kill(os.getpid(), signal.SIGKILL)
    (d / "b.csv").write_text("new b")
    return [d / "a.csv", d / "b.csv"]
if sys.argv[2] == "swapping":
    o._exchange = lambda a, b: os.kill(os.getpid(), signal.SIGKILL)
if sys.argv[2] == "fallback":
    o._exchange = lambda a, b: False
    real = os.rename
    def rename(a, b):
        real(a, b)
        if ".old-" in str(b):
            os.kill(os.getpid(), signal.SIGKILL)
    os.rename = rename
folder.replace(write)
"""


@pytest.mark.parametrize("when", ["writing", "swapping", "fallback"])
def test_a_kill_at_any_moment_leaves_a_complete_output_and_the_next_run_cleans_up(tmp_path, when):
    out = tmp_path / "o"
    OutputFolder(out).replace(_write({"a.csv": "old a", "b.csv": "old b"}))
    script = tmp_path / "kill.py"
    script.write_text(textwrap.dedent(KILL_SCRIPT))
    run = subprocess.run([sys.executable, str(script), str(out), when], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == -signal.SIGKILL, run.stderr
    if out.exists():
        assert _files(out) in ({"a.csv": b"old a", "b.csv": b"old b"}, {"a.csv": b"new a", "b.csv": b"new b"})
    folder = OutputFolder(out)  # the next run: repairs and cleans up before anything else
    assert _files(out) == {"a.csv": b"old a", "b.csv": b"old b"}
    assert _leftovers(out) == [f".{out.name}.lock"]  # only the lock this run holds (the killed run's is free)
    assert folder.open_store().get("k") is not None  # the finished cells survived the kill
    folder.close()
    assert not _leftovers(out)


def test_a_folder_with_other_files_is_not_replaced(tmp_path, capsys):
    (tmp_path / "notes.docx").write_text("mine")
    rc = main(["compare", "mecha", "AFS", "defence=3", "Gustav", "--trials", "1000", "--seed", "1", "--quiet",
               "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "notes.docx" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "notes.docx").read_text() == "mine"


#: Every command that takes --scheduler, as a new user would type it.
SCHEDULER_COMMANDS = [
    ["fight", "mecha", "AFS", "Gustav", "--trials", "100"],
    ["matrix", "mecha", "--units", "AFS,Gustav", "--max-trials", "1000"],
    ["sweep", "mecha", "AFS", "Gustav", "--vary", "defence=1..2", "--trials", "1000"],
    ["compare", "mecha", "AFS", "defence=3", "Gustav", "--trials", "1000"],
    ["balance", "mecha", "--max-trials", "1000"],
    ["report", "mecha", "--max-trials", "1000"],
]

#: Runs every command in one interpreter where Dask is hidden (not installed) or broken; prints [rc, stderr] each.
HIDDEN_DASK = """
import contextlib, io, json, sys
if sys.argv[1] == "hidden":
    sys.modules["distributed"] = None  # what an interpreter without the package sees: import fails
else:
    sys.path.insert(0, sys.argv[2])  # a 'distributed' package whose import raises, as a broken install does
from analysis.cli import main
out = []
for args in json.loads(sys.argv[3]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(args)
    out.append([rc, err.getvalue()])
print(json.dumps(out))
"""


@pytest.mark.parametrize("how", ["hidden", "broken"])
def test_scheduler_without_a_working_dask_is_one_line_in_every_command(tmp_path, how):
    broken = tmp_path / "site"
    (broken / "distributed").mkdir(parents=True)
    (broken / "distributed" / "__init__.py").write_text('raise ImportError("libfoo.so: cannot open shared object")')
    commands = [c + ["--scheduler", spec] + (["--out", str(tmp_path / f"o{i}")] if c[0] == "report" else [])
                for i, c in enumerate(SCHEDULER_COMMANDS) for spec in ("local:2", "tcp://127.0.0.1:8786")]
    run = subprocess.run([sys.executable, "-c", HIDDEN_DASK, how, str(broken), json.dumps(commands)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for args, (rc, err) in zip(commands, json.loads(run.stdout)):
        assert rc == 2 and len(err.strip().splitlines()) == 1, (args, err)
        assert "--scheduler needs Dask" in err and 'pip install "meleelab[cluster]"' in err, (args, err)
        assert ("not installed" if how == "hidden" else "fails to import (ImportError: libfoo.so") in err
    assert not any(tmp_path.glob("o*")), "report --scheduler wrote a folder before failing"


@pytest.mark.parametrize("bad", ["local:2", 3, object()])
def test_api_executor_of_the_wrong_type_is_the_library_error(bad):
    from analysis.runs.compare import compare
    from analysis.runs.sweep import sweep

    calls = [lambda: sim.fight("mecha", "AFS", "Gustav", trials=100, executor=bad, method="mc"),
             lambda: matchup_matrix("mecha", units=["AFS", "Gustav"], max_trials=100, executor=bad),
             lambda: sweep("mecha", "AFS", "defence", [1, 2], ["Gustav"], trials=100, executor=bad),
             lambda: compare("mecha", "AFS", {"defence": 3}, ["Gustav"], trials=100, executor=bad)]
    for call in calls:
        with pytest.raises(sim.InputError, match=r"^executor: got .*expected a dask\.distributed\.Client"):
            call()


def test_the_base_install_never_imports_dask(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from analysis.cli import main
        assert main(["fight", "mecha", "AFS", "Gustav", "--trials", "2000", "--seed", "1", "--workers", "2",
                     "--quiet"]) == 0
        assert main(["matrix", "mecha", "--units", "AFS,Gustav", "--max-trials", "2000", "--seed", "1", "--quiet",
                     "--out", {str(tmp_path / "m")!r}]) == 0
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed"))
        assert not loaded, loaded
    """)
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_a_killed_run_leaves_no_local_workers():
    proc = subprocess.Popen([sys.executable, "-m", "analysis", "fight", "warband", "Champion", "Youngblood",
                             "--trials", str(400 * BLOCK_TRIALS), "--seed", "1", "--quiet", "--workers", "2",
                             "--method", "mc"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        kids: list[int] = []
        while time.monotonic() < deadline and len(kids) < 2:
            time.sleep(0.1)
            kids = descendants(proc.pid)
        assert len(kids) >= 2
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(gone(p) for p in kids):
        time.sleep(0.1)
    assert all(gone(p) for p in kids), f"orphaned workers: {[p for p in kids if not gone(p)]}"


def test_ctrl_c_in_a_terminal_is_one_line_and_keeps_the_finished_cells(tmp_path):
    out = tmp_path / "m"
    args = ["matrix", "warband", "--seed", "6", "--max-trials", str(100 * BLOCK_TRIALS), "--half-width", "0.001",
            "--quiet", "--workers", "2", "--out", str(out)]
    rc, err, kids = interrupt_like_a_terminal(args, workers=2)
    assert len(kids) >= 2
    assert rc == 130 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == "meleelab: aborted" and all(ln.startswith("meleelab: estimate: ") for ln in lines[:-1]), err
    assert not (out / "matrix_long.csv").exists() and not _leftovers(out)


def test_balance_refuses_an_out_folder_that_holds_its_from_matrix_input(tmp_path, capsys):
    """Replacing --out whole would delete the matrix that balance reads: refused in one line, nothing touched."""
    m = tmp_path / "m"
    assert main(["matrix", "mecha", "--units", "AFS,Gustav", "--max-trials", "2000", "--seed", "1", "--quiet",
                 "--out", str(m)]) == 0
    before = _files(m)
    capsys.readouterr()
    for source, out in [(m, m), (m / "matrix_long.csv", m), (m, tmp_path / "m" / ".." / "m"), (m, tmp_path)]:
        assert main(["balance", "mecha", "--from-matrix", str(source), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "holds the --from-matrix input" in err and len(err.strip().splitlines()) == 1, err
    assert _files(m) == before
    assert main(["balance", "mecha", "--from-matrix", str(m), "--out", str(tmp_path / "b")]) == 0


@pytest.mark.parametrize("command", [
    ["matrix", "mecha", "--max-trials", "2000"],
    ["sweep", "mecha", "A", "B", "--vary", "defence=1..2", "--trials", "2000"],
    ["compare", "mecha", "A", "defence=3", "B", "--trials", "2000"],
    ["balance", "mecha", "--max-trials", "2000"],
    ["report", "mecha", "--max-trials", "2000"],
], ids=lambda c: c[0])
def test_an_out_folder_holding_the_csv_roster_is_refused(tmp_path, capsys, command):
    """A CSV roster looks like an output file: replacing the folder whole would have deleted it."""
    roster = tmp_path / "units.csv"
    roster.write_text("name,defence,physical,armour,points\nA,2,0,B,20\nB,3,0,B,25\n", encoding="utf-8")
    assert main([*command, "--roster", str(roster), "--seed", "1", "--quiet", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds the --roster input" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["units.csv"]


def test_a_full_disk_while_storing_cells_is_one_line(tmp_path, monkeypatch, capsys):
    """SQLite's page limit stands in for a full disk: the same SQLITE_FULL error ("database or disk is full")."""
    real_open = ResultsStore._open

    def tiny(self):
        real_open(self)
        self.db.execute("PRAGMA max_page_count = 3")

    monkeypatch.setattr(ResultsStore, "_open", tiny)
    rc = main(["matrix", "mecha", "--max-trials", "2000", "--seed", "1", "--quiet", "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "cannot write the results store (database or disk is full)" in err


def test_a_damaged_store_is_one_line_and_fresh_starts_a_new_one(tmp_path, capsys):
    out = tmp_path / "m"
    args = ["matrix", "mecha", "--units", "AFS,Gustav", "--max-trials", "2000", "--seed", "1", "--quiet",
            "--out", str(out)]
    assert main(args) == 0
    (out / STORE_DIR / STORE_FILE).write_bytes(b"not a database, " * 100)
    for name in ("-wal", "-shm"):
        (out / STORE_DIR / (STORE_FILE + name)).unlink(missing_ok=True)
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot open the results store" in err and "--fresh" in err, err
    assert main(args + ["--fresh"]) == 0
    assert main(args) == 0 and json.loads((out / "metadata.json").read_text())["resumed_cells"] == 4
    with ResultsStore(out / STORE_DIR / STORE_FILE) as store:  # a row that does not parse is recomputed
        store.db.execute("UPDATE cells SET tally = '{not json'")
    assert main(args) == 0 and json.loads((out / "metadata.json").read_text())["resumed_cells"] == 0


def test_resuming_sub_block_cells_gives_the_uninterrupted_numbers_and_unfit_rows_are_recomputed(tmp_path):
    """Adaptive cells stop mid-block, at a sub-block: a resumed run reuses exactly those, and a stored row
    that no run of its job could have produced (a trial count between sub-blocks, or short of the target)
    is not used, even when it is consistent and signed."""
    from analysis.runs.jobs import stored_result_fits
    from sim.rng import SUB_BLOCK_TRIALS

    kw = dict(units=["Sellsword", "Duellist", "Knight"], half_width=0.004, max_trials=4 * BLOCK_TRIALS, seed=5,
              budget="none")
    whole = matchup_matrix("duel", **kw)
    assert any(t % BLOCK_TRIALS for t in whole.long["trials"]) and (whole.long["trials"] % SUB_BLOCK_TRIALS == 0).all()
    with ResultsStore(tmp_path / "s.sqlite") as store:
        matchup_matrix("duel", store=store, **kw)
        again = matchup_matrix("duel", store=store, **kw)
        assert again.resumed_cells == 9 and again.long.equals(whole.long) and not store.ignored
    job = _job(max_trials=4 * BLOCK_TRIALS, half_width=0.004)
    rs = get_ruleset("duel")
    r = whole.results[("Sellsword", "Knight")].tally
    assert stored_result_fits(job, rs, r, None)
    assert not stored_result_fits(dataclasses.replace(job, half_width=0.0001), rs, r, None)  # short of target
    odd = sim.fight("duel", "Sellsword", "Knight", trials=SUB_BLOCK_TRIALS + 7, seed=1, budget="none",
                    method="mc").tally
    assert not stored_result_fits(job, rs, odd, None)  # between two sub-blocks
    assert not stored_result_fits(dataclasses.replace(job, half_width=None), rs, r, None)  # fixed: the whole cap
    assert not stored_result_fits(job, get_ruleset("mecha"), r, None)  # another ruleset's categories
