"""Issue 30, items 1 and 5: --half-width is a promise, checked every sub-block; long runs say what they cost."""

from __future__ import annotations

import json
import random
import sys
import time

import pytest

import sim
from analysis.cli import main
from analysis.runs.cost import cost_listener, estimate_cost, expected_trials
from analysis.runs.jobs import CellJob, job_steps, outcome_half_width, run_jobs
from analysis.runs.matrix import cell_stream, matchup_matrix
from sim.rng import BLOCK_TRIALS, SUB_BLOCK_TRIALS, root_sequence
from sim.rulesets import get_ruleset
from tests.runs.test_runner import _same

DUEL = ["Sellsword", "Duellist", "Knight"]


# sampled cells throughout, as with --method mc (tests/conftest.py); the notes and the cells are checked here,
# never a plot: reports are written with their plots built but not rasterised (tests/plain_figures.py)
pytestmark = pytest.mark.usefixtures("monte_carlo_cells", "plain_figures")


def _notes(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("meleelab: note:")]


# ------------------------------------------------------------- the stopping grain
def test_a_loose_target_stops_after_one_sub_block_under_the_default_cap():
    """+-5 pp needs 384 fights at worst: one sub-block, not the whole 32,768 of the default cap."""
    m = matchup_matrix("duel", units=DUEL, half_width=0.05, max_trials=32_768, seed=2026, budget="none")
    assert (m.long["trials"] == SUB_BLOCK_TRIALS).all()


def test_the_default_target_stops_each_cell_at_its_first_narrow_enough_sub_block():
    m = matchup_matrix("duel", units=DUEL, half_width=0.01, max_trials=32_768, seed=2026, budget="none")
    for r in m.results.values():
        assert r.trials % SUB_BLOCK_TRIALS == 0 and r.trials <= 12_288  # p = 0.5 needs 9,604: three sub-blocks
        assert outcome_half_width(r.tally) <= 0.01
    assert m.long["trials"].sum() < len(m.long) * 32_768 / 2  # at least twice fewer fights than the whole cap


def _jobs(rs, names, half_width, cap):
    ros = sim.default_roster(rs.id)
    out = []
    for a in names:
        for d in names:
            _, plan = sim.build_matchup(rs, a, d, roster=ros, budget="none")
            out.append(CellJob((a, d), plan, cell_stream(a, d), cap, half_width))
    return out


def test_sub_block_steps_and_fixed_blocks():
    _, plan = sim.build_matchup("mecha", "AFS", "Gustav", budget="none")
    adaptive = job_steps(CellJob("a", plan, (1,), 100_000, 0.01))
    fixed = job_steps(CellJob("f", plan, (1,), 100_000, None))
    assert (adaptive.trials, adaptive.per_block, adaptive.count) == (SUB_BLOCK_TRIALS, BLOCK_TRIALS // 4096, 25)
    assert adaptive.size(24) == 100_000 - 24 * SUB_BLOCK_TRIALS
    assert (fixed.trials, fixed.per_block, fixed.count) == (BLOCK_TRIALS, 0, 2)
    root = root_sequence(1)
    # sub-block 17 is sub-block 1 of block 1; its stream is neither block 1's nor that of a caller's (b, s) stream
    draws = adaptive.rng(root, (1,), 17).integers(0, 1 << 62, 4).tolist()
    assert draws != fixed.rng(root, (1,), 1).integers(0, 1 << 62, 4).tolist()
    assert draws != fixed.rng(root, (1, 1), 1).integers(0, 1 << 62, 4).tolist()


# ----------------------------------------------------------- cells short of the target
def _check_shortfall(meta, err, cells):
    assert meta["cells_short_of_half_width"] > 0 and meta["widest_half_width"] > 0.002
    short = meta["short_of_half_width"]
    assert len(short) == meta["cells_short_of_half_width"] and all(c["half_width"] > 0.002 for c in short)
    assert " vs " in short[0]["cell"] and short[0]["trials"] == 8192
    lines = [ln for ln in _notes(err) if "wider than --half-width" in ln]
    assert len(lines) == 1, err
    assert f"{meta['cells_short_of_half_width']:,} of {cells:,} cells stopped at --max-trials 8,192" in lines[0]
    assert f"+-{meta['widest_half_width']:.4f}" in lines[0]


ARGS = ["--units", "AFS,Nutrocker,Gustav", "--half-width", "0.002", "--max-trials", "8192", "--quiet"]


@pytest.mark.parametrize("command", ["matrix", "balance", "report"])
def test_every_command_names_the_cells_the_cap_left_short(tmp_path, capsys, command):
    out = tmp_path / command
    assert main([command, "mecha", *ARGS, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    meta = json.loads((out / "metadata.json").read_text())
    _check_shortfall(meta, err, 9)


def test_report_all_names_the_cells_the_cap_left_short(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sim, "rulesets", lambda: [get_ruleset("mecha")])  # one ruleset keeps the test short
    assert main(["report", "--all", "--half-width", "0.002", "--max-trials", "8192", "--quiet",
                 "--out", str(tmp_path / "all")]) == 0
    err = capsys.readouterr().err
    meta = json.loads((tmp_path / "all" / "mecha" / "metadata.json").read_text())
    _check_shortfall(meta, err, meta["half_width_cells"])


def test_no_note_when_every_cell_meets_the_target(tmp_path, capsys):
    assert main(["matrix", "mecha", "--units", "AFS,Gustav", "--quiet", "--out", str(tmp_path / "m")]) == 0
    assert not [ln for ln in _notes(capsys.readouterr().err) if "wider" in ln]
    meta = json.loads((tmp_path / "m" / "metadata.json").read_text())
    assert meta["cells_short_of_half_width"] == 0 and meta["short_of_half_width"] == []
    assert meta["widest_half_width"] <= 0.01


# ----------------------------------------------------------------- cost and progress
def test_progress_knows_its_total_before_any_cell_runs():
    calls = []
    matchup_matrix("mecha", units=["AFS", "Gustav"], seed=1, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 4) and calls[-1] == (4, 4)


def test_the_cost_is_estimated_before_the_cells_run_and_matches_them():
    seen = []
    # whole copies: one cell per matchup (expected fielding fights the neighbouring whole-copy cells instead)
    kw = dict(units=["Champion", "Ogre Brute", "Youngblood", "Pit Fighter"], half_width=0.01, seed=3,
              fielding="whole")
    with cost_listener(seen.append):
        t0 = time.perf_counter()
        m = matchup_matrix("warband", **kw)
        took = time.perf_counter() - t0
    est = seen[0]
    assert est.cells == len(m.long) and est.ruleset == "warband" and est.slots == 1
    assert est.fights >= m.long["trials"].sum()  # an upper bound: p = 0.5 in every cell
    assert est.most_per_cell == 12_288 and est.seconds_per_fight > 0
    # measured on this machine from a few hundred fights: the right order of magnitude (the cells stop early,
    # the estimate assumes they do not; plans were built before the estimate)
    assert est.cpu_seconds / 20 < took < est.cpu_seconds * 20 + 5


def test_a_huge_matrix_is_announced_in_hours_before_it_starts():
    """10,000 cells of 20 warriors a side (one plan, 10,000 streams: the estimate probes a few of them)."""
    rs = get_ruleset("warband")
    _, plan = sim.build_matchup(rs, "Champion", "Youngblood", copies={"attacker": 20, "defender": 20})
    jobs = [CellJob(i, plan, (i,), 32_768, 0.01) for i in range(10_000)]
    est = estimate_cost(rs, root_sequence(1), jobs, rounds=rs.default_rounds, max_rounds=50, slots=2)
    assert est.cells == 10_000 and est.fights == 10_000 * expected_trials(jobs[0]) == 10_000 * 12_288
    assert est.cpu_seconds > 60 and est.wall_seconds == est.cpu_seconds / 2
    assert "10,000 cells" in est.text() and "on 2 workers" in est.text()


def test_the_command_prints_the_estimate_of_a_long_run_first(tmp_path, capsys, monkeypatch):
    import analysis.cli.scale as scale

    monkeypatch.setattr(scale, "ANNOUNCE_SECONDS", 0.0)  # every run is "long"
    assert main(["matrix", "mecha", "--units", "AFS,Gustav", "--quiet"]) == 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert err[0].startswith("meleelab: estimate: mecha: 4 cells of up to 12,288 fights"), err
    assert "of CPU" in err[0] and "Ctrl-C" in err[0]
    monkeypatch.setattr(scale, "ANNOUNCE_SECONDS", 60.0)
    assert main(["matrix", "mecha", "--units", "AFS,Gustav", "--quiet"]) == 0
    assert "estimate" not in capsys.readouterr().err  # a run of seconds starts without a word


def test_progress_bars_carry_a_total_and_restart_for_each_batch(monkeypatch):
    from analysis.cli.options import count_bar

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    update, close = count_bar(False, "test", "cells")
    try:
        bar = update.__closure__[0].cell_contents if update.__closure__ else None
        update(0, 9)
        update(3, 9)
        assert bar.total == 9 and bar.n == 3 and bar.format_dict["total"] == 9  # a total: tqdm shows the ETA
        update(0, 4)  # the next matrix of a report
        assert bar.total == 4 and bar.n == 0
        update(1, 4)
        update(0, 4)  # a new batch of the same size (fair-price rounds)
        assert bar.n == 0
    finally:
        close()


def test_random_order_of_jobs_gives_the_same_cells():
    rs = get_ruleset("mecha")
    jobs = _jobs(rs, ["AFS", "Nutrocker", "Gustav"], 0.004, 3 * BLOCK_TRIALS)
    root = root_sequence(9)
    a = run_jobs(rs, root, jobs, rounds=rs.default_rounds, max_rounds=50)
    shuffled = list(jobs)
    random.Random(1).shuffle(shuffled)
    b = run_jobs(rs, root, shuffled, rounds=rs.default_rounds, max_rounds=50)
    _same(a, {j.key: b[j.key] for j in jobs})
