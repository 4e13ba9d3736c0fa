"""Dask: a LocalCluster of 2 worker processes started here gives the numbers of one process, even when a worker dies."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

import sim  # noqa: E402
from analysis.cli import main
from analysis.runs.matrix import matchup_matrix
from analysis.runs.sweep import sweep
from sim.rng import BLOCK_TRIALS  # noqa: E402
from tests.processes import descendants, gone, interrupt_like_a_terminal  # noqa: E402

# Dask clusters start and stop in every test: run by pytest -m slow (.ci/run does), not in the five-minute suite
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("monte_carlo_cells")]  # sampled cells (tests/conftest.py)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB",
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def test_fight_on_the_cluster_is_bit_identical(client):
    kw = dict(trials=7 * BLOCK_TRIALS + 11, seed=21, method="mc")
    a = sim.fight("duel", "Sellsword", "Knight", **kw, budget="none")
    b = sim.fight("duel", "Sellsword", "Knight", executor=client, **kw, budget="none")
    assert a.tally.same_as(b.tally)
    assert a.to_dict() == b.to_dict()


def test_adaptive_matrix_and_sweep_on_the_cluster_match_one_process(client):
    kw = dict(units=["Sellsword", "Duellist", "Knight"], half_width=0.0025, max_trials=400_000, seed=8,
              budget="none")  # one a side: lopsided cells stop at other blocks than even ones
    a = matchup_matrix("duel", **kw)
    b = matchup_matrix("duel", executor=client, **kw)
    assert len(set(a.long["trials"])) > 1  # cells stopped at different blocks
    assert a.long.equals(b.long)
    assert all(a.results[k].tally.same_as(b.results[k].tally) for k in a.results)
    skw = dict(trials=3 * BLOCK_TRIALS, seed=2)
    assert sweep("mecha", "AFS", "defence", [1, 2, 3], ["Nutrocker"], **skw).equals(
        sweep("mecha", "AFS", "defence", [1, 2, 3], ["Nutrocker"], executor=client, **skw))


def test_a_worker_killed_mid_run_changes_nothing(client):
    pids = client.run(os.getpid)  # worker address -> process id
    assert len(pids) == 2
    killed: list[int] = []

    def kill_one(done: int, total: int) -> None:
        if not killed:  # a cell has finished: take down a worker that is running tasks now
            busy = [w for w, keys in client.processing().items() if keys]
            if busy:
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(pids[busy[0]])

    kw = dict(units=["Champion", "Youngblood", "Ogre Brute"], half_width=None, max_trials=2 * BLOCK_TRIALS, seed=4,
              budget="none")
    b = matchup_matrix("warband", executor=client, progress=kill_one, **kw)
    a = matchup_matrix("warband", **kw)
    assert killed and gone(killed[0])
    assert a.long.equals(b.long)
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it


def test_cli_scheduler_local_gives_the_same_files(tmp_path, capsys):
    args = ["matrix", "mecha", "--units", "AFS,Nutrocker,Gustav", "--seed", "3", "--max-trials", "70000", "--quiet"]
    assert main(args + ["--out", str(tmp_path / "one")]) == 0
    assert main(args + ["--scheduler", "local:2", "--out", str(tmp_path / "dask")]) == 0
    for name in ("matrix_long.csv", "matrix.csv", "matrix.json", "matrix.png", "metadata.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "dask" / name).read_bytes(), name


def test_a_killed_run_leaves_no_dask_workers(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "analysis", "fight", "warband", "Champion", "Youngblood",
                             "--trials", str(400 * BLOCK_TRIALS), "--seed", "1", "--quiet", "--scheduler", "local:2",
                             "--method", "mc"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        kids: list[int] = []
        while time.monotonic() < deadline and len(kids) < 2:
            time.sleep(0.3)
            kids = descendants(proc.pid)
        assert len(kids) >= 2, "the local cluster's workers never started"
        time.sleep(1.0)
        kids = descendants(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(gone(p) for p in kids):
        time.sleep(0.2)
    assert all(gone(p) for p in kids), f"orphaned workers: {[p for p in kids if not gone(p)]}"


def test_a_remote_scheduler_by_address(client, capsys, monkeypatch):
    import analysis.runs.executor

    monkeypatch.setattr(analysis.runs.executor, "CONNECT_TIMEOUT", 2)
    address = client.scheduler.address
    assert main(["fight", "mecha", "AFS", "Gustav", "--trials", "3000", "--seed", "1", "--quiet",
                 "--scheduler", address]) == 0
    assert "AFS" in capsys.readouterr().out
    assert main(["fight", "mecha", "AFS", "Gustav", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "cannot connect" in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_in_a_terminal_is_one_line_and_leaves_no_dask_workers():
    """SIGINT reaches the workers too (one process group): they leave it to the command, and print no tracebacks.

    The first Ctrl-C comes while the cluster starts, and is ignored (a half-started cluster prints tracebacks as it
    dies); the next ones come while it fights, and stop the run.
    """
    rc, err, kids = interrupt_like_a_terminal(
        ["fight", "warband", "Champion", "Youngblood", "--trials", str(2000 * BLOCK_TRIALS), "--seed", "1", "--quiet",
         "--scheduler", "local:2", "--method", "mc"], workers=2, early=True)
    assert len(kids) >= 2, "the local cluster's workers never started"
    assert rc == 130 and "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.strip()] == ["meleelab: aborted"], err
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(gone(p) for p in kids):
        time.sleep(0.2)
    assert all(gone(p) for p in kids), f"orphaned workers: {[p for p in kids if not gone(p)]}"


@pytest.mark.parametrize("args", [
    ["sweep", "mecha", "AFS", "Gustav", "--vary", "defence=1..3", "--trials", "70000"],
    ["compare", "duel", "Knight", "weapon.strength=5", "Sellsword", "Duellist", "--trials", "70000"],
    ["balance", "duel", "--unit", "Knight", "--unit", "Sellsword", "--unit", "Duellist", "--max-trials", "70000"],
    # (duel fights copies at its roster budget: the fair prices then fight more copy counts on the cluster)
    ["report", "duel", "--unit", "Knight", "--unit", "Sellsword", "--unit", "Duellist", "--max-trials", "70000"],
], ids=lambda a: a[0])
def test_every_command_on_the_cluster_gives_the_files_and_text_of_one_process(client, tmp_path, capsys, args):
    def run(name: str, *extra: str) -> tuple[str, dict[str, bytes]]:
        out = tmp_path / name
        assert main([*args, "--seed", "1", "--quiet", "--out", str(out), *extra]) == 0
        text = capsys.readouterr().out.replace(str(out), "OUT")
        files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
                 if p.is_file() and ".meleelab-store" not in p.parts}
        return "\n".join(line for line in text.splitlines() if " s;" not in line), files  # report: wall time

    one = run("one")
    dask = run("dask", "--scheduler", client.scheduler.address)
    assert one[0] == dask[0]
    assert sorted(one[1]) == sorted(dask[1]) and one[1]
    for name in one[1]:
        assert one[1][name] == dask[1][name], name


def test_one_fight_spreads_over_every_worker(client):
    """The unit of work is a block range, not a cell: a single fight's blocks run on both workers."""
    with distributed.get_task_stream(client) as stream:
        sim.fight("warband", "Champion", "Youngblood", trials=16 * BLOCK_TRIALS, seed=3, budget="none",
                  executor=client, method="mc")
    workers = {t["worker"] for t in stream.data}
    assert len(stream.data) >= 2 and len(workers) == 2, stream.data


def test_cells_built_and_fought_by_the_workers_match_one_process(client, tmp_path):
    """Over 64 cells, the workers build the plans and fight each cell to its end (analysis.runs.remote_cells):
    the same numbers as one process, on local workers and on the cluster, and from the store on a rerun."""
    from analysis.runs.store import ResultsStore

    kw = dict(seed=4, score_half_width=0.01, max_trials=1 << 14, method="mc")  # duel: 10 units, expected copies
    one = matchup_matrix("duel", **kw)
    on_cluster = matchup_matrix("duel", executor=client, **kw)
    pd.testing.assert_frame_equal(one.long, on_cluster.long)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        local = matchup_matrix("duel", workers=2, store=store, **kw)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        again = matchup_matrix("duel", workers=2, store=store, **kw)
    pd.testing.assert_frame_equal(one.long, local.long)
    pd.testing.assert_frame_equal(one.long, again.long)
    assert again.resumed_cells == again.bank.fought > 64
