"""Issue 38, item 4: every long run speaks within seconds: an estimate first, then progress (a bar on a terminal,
plain lines in a pipe, nothing with --quiet), while matchups are built as while cells are fought.

``rebalance duel --max-trials 1000000000000000 --half-width 0.0000001`` printed nothing for a minute, and
``matrix duel`` of a 100-unit roster nothing for 75-90 s while its matchups' plans were built.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import sim
from analysis.cli import main

ROOT = Path(__file__).resolve().parents[2]
#: Seconds from starting the process to its first line on stderr, at most (the goal is 2 s after the start on a
#: quiet machine; the imports alone take one to two, and the suite shares its cores).
FIRST_LINE = 12.0


def _first_lines(argv: list[str], n: int = 2, timeout: float = 60.0) -> list[tuple[float, str]]:
    """The first ``n`` stderr lines of ``meleelab ARGV`` run in a pipe, with their times; the run is then
    stopped (Ctrl-C)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "analysis", *argv], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.put((time.monotonic() - start, line.rstrip("\n")))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    got: list[tuple[float, str]] = []
    try:
        while len(got) < n:
            item = lines.get(timeout=max(0.1, timeout - (time.monotonic() - start)))
            if item is None:
                break
            got.append(item)
    except queue.Empty:
        pass
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return got


def test_a_rebalance_of_years_says_so_before_it_starts():
    got = _first_lines(["rebalance", "duel", "--max-trials", "1000000000000000", "--half-width", "0.0000001"], n=1)
    assert got, "nothing said"
    seconds, line = got[0]
    assert seconds < FIRST_LINE, got
    assert line.startswith("meleelab: estimate: rebalance duel: 10 units at 120 points"), line
    assert re.search(r"up to [\d,]+ days of fights", line) and "whole-copy cells" in line, line


def _roster_of_groups(path: Path, n: int) -> Path:
    """``n`` duel units, most of them groups (a group's plan is its exact chain: tens of milliseconds to build)."""
    text = ['ruleset = "duel"', "budget = 120", ""]
    for i in range(n):
        count, wounds = (1, 3) if i % 4 == 0 else (2 + i % 3, 1 + i % 2)
        text += ["[[unit]]", f'name = "U{i}"', f"count = {count}", f"wounds = {wounds}", f"toughness = {3 + i % 4}",
                 f"ws = {2 + i % 4}", f"strength = {3 + i % 3}", f"points = {20 + (i * 7) % 41}",
                 f"weapon = {{ strength = {3 + i % 4}, damage = 1 }}", ""]
    path.write_text("\n".join(text))
    return path


def test_a_large_roster_says_what_building_its_matchups_costs_then_counts_them(tmp_path):
    roster = _roster_of_groups(tmp_path / "groups100.toml", 100)
    got = _first_lines(["matrix", "duel", "--roster", str(roster)], n=2)  # the estimate, then the first count
    assert got and got[0][0] < FIRST_LINE, got
    text = [line for _, line in got]
    # the estimate (from a spread of 16 matchups built first), then the count of the rest
    estimate = next(i for i, line in enumerate(text) if line.startswith("meleelab: estimate: duel: building "))
    assert re.search(r"building [\d,]+ matchups' plans before their fights: about .+ of CPU", text[estimate])
    progress = [line for line in text[estimate:] if line.startswith("meleelab: building matchups: ")]
    assert progress and re.search(r"[\d,]+ of [\d,]+ matchups \(\d+%\), \d+ s so far, about .+ left", progress[0])


def test_progress_in_a_pipe_is_a_plain_line_now_and_then_and_nothing_with_quiet(tmp_path, capsys, monkeypatch):
    import analysis.cli.progress as progress
    import analysis.runs.progress as runs_progress

    monkeypatch.setattr(progress, "SPEAK_SECONDS", 0.0)  # every step is "long": it speaks at once
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    monkeypatch.setattr(runs_progress, "TIMED_BUILDS", 1)
    monkeypatch.setattr("analysis.cli.scale.told", lambda estimate, quiet: not quiet)
    argv = ["matrix", "duel", "--units", "Sellsword,Goblin Mob,Militia", "--max-trials", "2000", "--method", "mc"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err, "nothing said"
    assert all(not ln.startswith("\r") and "\x1b" not in ln for ln in err)  # no bar redraws in a pipe
    said = [ln for ln in err if not ln.startswith("meleelab: note: ")]
    kinds = [re.match(r"meleelab: (sizing the matchups|estimate: duel: building|building matchups|estimate: duel: "
                      r"\d+ cells|duel matrix)", ln) for ln in said]
    assert all(kinds), said
    order = list(dict.fromkeys(k.group(1) for k in kinds))  # each step's estimate before its progress
    assert order == ["sizing the matchups", "estimate: duel: building", "building matchups",
                     "estimate: duel: 9 cells", "duel matrix"], order
    assert said[-1] == "meleelab: duel matrix: 9 of 9 cells in 0 s" or said[-1].endswith(" cells in 1 s"), said
    assert main([*argv, "--quiet"]) == 0
    quiet = capsys.readouterr().err.splitlines()
    assert quiet and all(ln.startswith("meleelab: note: ") for ln in quiet), quiet  # no estimate, no progress


def test_plain_lines_wait_two_seconds_then_speak_at_most_every_ten_and_end_once():
    from analysis.cli.progress import PlainLines

    now = [0.0]
    said: list[str] = []
    lines = PlainLines("duel matrix", "cells", clock=lambda: now[0])
    import click

    echo = click.echo
    click.echo = lambda text, err=False: said.append(text)  # type: ignore[assignment]
    try:
        for t, done in [(0, 0), (1.9, 10), (2.1, 20), (5, 40), (12.0, 60), (12.2, 70), (20, 100)]:
            now[0] = t
            lines.update(done, 100)
        assert said == ["meleelab: duel matrix: 20 of 100 cells (20%), 2 s so far, about 8 s left",
                        "meleelab: duel matrix: 70 of 100 cells (70%), 12 s so far, about 5 s left",
                        "meleelab: duel matrix: 100 of 100 cells in 20 s"]
        said.clear()
        now[0] = 30.0
        lines.update(0, 7)  # the next batch: its own clock, silent while short
        now[0] = 31.0
        lines.update(7, 7)
        assert said == []
        now[0], lines = 0.0, PlainLines("building matchups", "matchups", clock=lambda: now[0])
        for t, done in [(0, 0), (3, 5)]:
            now[0] = t
            lines.update(done, 50)
        lines.close()  # Ctrl-C: said how far it got
        assert said[-1] == "meleelab: building matchups: stopped at 5 of 50 matchups after 3 s"
    finally:
        click.echo = echo


def test_the_build_estimate_comes_from_a_spread_of_the_matchups_and_the_stored_cells_need_none(tmp_path):
    from analysis.runs.matrix import matchup_matrix
    from analysis.runs.progress import build_listener
    from analysis.runs.store import ResultsStore

    ros = sim.default_roster("duel")
    # five units, one of them a group: 16 plans timed for the estimate, 9 still to build (the whole roster timed 16
    # and had 84 to build: 5 s for the same estimate)
    kw = dict(units=["Sellsword", "Duellist", "Knight", "Brawler", "Militia"], max_trials=500, half_width=None,
              seed=1, method="mc")
    seen = []
    with build_listener(seen.append), ResultsStore(tmp_path / "s.sqlite") as store:
        matchup_matrix("duel", ros, store=store, **kw)
    assert seen and seen[0].builds > 0 and seen[0].seconds_each > 0 and seen[0].measured >= 10
    assert "of CPU" in seen[0].text() and seen[0].stored == 0
    seen.clear()
    with build_listener(seen.append), ResultsStore(tmp_path / "s.sqlite") as store:
        matchup_matrix("duel", ros, store=store, **kw)
    assert seen == []  # every cell in the store: nothing to build, nothing to announce
