"""A killed ``report`` or ``rebalance``, rerun with the same arguments: every stored cell reused, the same files.

Issue 38, item 11: a rerun after a kill saved little time, because every cell's
plan was built again before the store was asked for it (for a duel between groups
the plan costs more than the fights). The store is now asked first
(:meth:`analysis.runs.fielding.RunContext.stored`), the rerun says how many cells it
took from the store and roughly what they had cost, and its files are the files of
an uninterrupted run.

The kill is a real ``SIGKILL`` of a subprocess, at a chosen moment: right after the
n-th cell is committed to the store (the moment a kill loses least and the easiest
to get wrong: a cell committed, the next not), for several n; behind
``@pytest.mark.slow``, a kill at a random time from outside.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from analysis.cli import main
from analysis.report.outdir import MARKER, STORE_DIR, STORE_FILE

#: Kill-and-rerun runs (20 s on 2 cores): behind the slow marker, which .ci/run runs.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

SMALL = textwrap.dedent("""\
    ruleset = "duel"
    budget = 120
    [[unit]]
    name = "Guard"
    count = 1
    wounds = 2
    toughness = 4
    ws = 3
    strength = 3
    points = 30
    weapon = { strength = 3, damage = 1 }
    [[unit]]
    name = "Blade"
    count = 1
    wounds = 2
    toughness = 4
    ws = 5
    strength = 3
    points = 30
    weapon = { strength = 4, damage = 1 }
    [[unit]]
    name = "Brute"
    count = 1
    wounds = 4
    toughness = 4
    ws = 3
    strength = 3
    points = 40
    weapon = { strength = 5, damage = 1 }
    """)

#: The argument lists (after ``--roster FILE``); Monte Carlo cells, which are the ones stored.
COMMANDS = {
    "report": ["report", "duel", "--method", "mc", "--max-trials", "2048", "--half-width", "0.05", "--quiet"],
    "rebalance": ["rebalance", "duel", "--method", "mc", "--max-trials", "4096", "--half-width", "0.03",
                  "--quiet"],
}

#: Runs the command line in a subprocess that SIGKILLs itself right after the n-th cell is committed.
KILL_AFTER = """
import os, signal, sys
from analysis.runs.store import ResultsStore
after = int(sys.argv[1])
put = ResultsStore.put
def put_then_die(self, *args, **kwargs):
    put(self, *args, **kwargs)
    if len(self._mine) >= after:
        os.kill(os.getpid(), signal.SIGKILL)
ResultsStore.put = put_then_die
from analysis.cli import main
sys.exit(main(sys.argv[2:]))
"""

def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and STORE_DIR not in p.parts and p.name != MARKER}


def _same_files(resumed: Path, clean: Path) -> None:
    a, b = _files(resumed), _files(clean)
    assert sorted(a) == sorted(b)
    for name in a:
        if name.endswith("metadata.json"):
            ma, mb = json.loads(a[name]), json.loads(b[name])
            for key in ("resumed_cells", "cells_from_store"):  # what the store gave: the one intended difference
                ma.pop(key, None), mb.pop(key, None)
            assert ma == mb, name
        else:
            assert a[name] == b[name], name  # every table, roster and picture byte for byte


def _stored(out: Path) -> int:
    db = out / STORE_DIR / STORE_FILE
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return int(con.execute("SELECT COUNT(*) FROM cells").fetchone()[0])
    except sqlite3.Error:
        return 0


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """Each command's uninterrupted output, and how many cells it stored."""
    base = tmp_path_factory.mktemp("clean")
    roster = base / "small.toml"
    roster.write_text(SMALL)
    out = {}
    for name, argv in COMMANDS.items():
        folder = base / name
        assert main([*argv, "--roster", str(roster), "--out", str(folder)]) in (0, None)
        out[name] = (folder, _stored(folder))
    return roster, out


def _kill_rerun_compare(tmp_path: Path, capsys, clean, name: str, after: int) -> None:
    roster, runs = clean
    reference, total = runs[name]
    assert 0 < after < total
    out = tmp_path / "killed"
    script = tmp_path / "kill_after.py"
    script.write_text(KILL_AFTER)
    argv = [*COMMANDS[name], "--roster", str(roster), "--out", str(out)]
    killed = subprocess.run([sys.executable, str(script), str(after), *argv], cwd=ROOT, env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _stored(out) == after and not (out / "summary.md").exists()  # only the store survived the kill
    capsys.readouterr()
    assert main(argv) in (0, None)
    err = capsys.readouterr().err
    # every stored cell reused, and said so with what they had cost
    note = re.search(r"meleelab: note: ([\d,]+) cells came from the results store \S+, saving about [\d.]+ s of "
                     r"computing", err)
    assert note and int(note.group(1).replace(",", "")) == after, err
    assert _stored(out) == total
    _same_files(out, reference)


@pytest.mark.parametrize("name, fraction", [("report", 0.5), ("rebalance", 0.5)])
def test_a_rerun_after_a_kill_reuses_every_stored_cell_and_writes_the_same_files(tmp_path, capsys, clean, name,
                                                                                   fraction):
    total = clean[1][name][1]
    _kill_rerun_compare(tmp_path, capsys, clean, name, max(1, int(total * fraction)))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("draw", range(3))
def test_kills_after_random_cells_then_rerun_give_the_same_files(tmp_path, capsys, clean, name, draw):
    total = clean[1][name][1]
    _kill_rerun_compare(tmp_path, capsys, clean, name, random.Random(f"{name}{draw}").randrange(1, total))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_kill_at_a_random_time_then_rerun_gives_the_same_files(tmp_path, capsys, clean, name):
    """SIGKILL from outside, at a random moment after the first cell is stored."""
    roster, runs = clean
    reference, total = runs[name]
    out = tmp_path / "killed"
    argv = [*COMMANDS[name], "--roster", str(roster), "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "analysis", *argv], cwd=ROOT, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _stored(out) < 1 and proc.poll() is None:
            time.sleep(0.02)
        time.sleep(random.Random(name).uniform(0, 1.0))
        assert proc.poll() is None, "the run finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    stored = _stored(out)
    capsys.readouterr()
    assert main(argv) in (0, None)
    err = capsys.readouterr().err
    if stored:
        assert f"{stored:,} cells came from the results store" in err, err
    _same_files(out, reference)
