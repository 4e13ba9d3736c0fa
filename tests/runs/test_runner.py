"""The block-range runner: any executor, any finishing order, the numbers of a sequential run."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

import sim
from analysis.runs.compare import compare
from analysis.runs.jobs import CellJob, run_jobs
from analysis.runs.matrix import cell_stream, matchup_matrix
from sim.rng import BLOCK_TRIALS, SUB_BLOCK_TRIALS, root_sequence
from sim.rulesets import get_ruleset


class ShuffledExecutor:
    """Runs submitted tasks on one thread, always picking a random waiting one (a worst-case finishing order)."""

    def __init__(self, seed: int, slots: int = 3) -> None:
        self._max_workers = slots
        self._random = random.Random(seed)
        self._waiting: list[tuple[Future, Any, tuple]] = []
        self._lock = threading.Condition()
        self._stop = False
        self.tasks = 0
        self.items: list[tuple[int, int, int]] = []  # (cell, first block, last block + 1) of every task
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def submit(self, fn: Any, *args: Any) -> Future:
        fut: Future = Future()
        with self._lock:
            self._waiting.append((fut, fn, args))
            self.tasks += 1
            if fn.__name__ == "run_items":
                self.items += [(it[0], it[4], it[5]) for it in args[4]]
            self._lock.notify()
        return fut

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._waiting and not self._stop:
                    self._lock.wait()
                if self._stop:
                    return
            time.sleep(0.002)  # let several tasks queue up, so there is an order to shuffle
            with self._lock:
                fut, fn, args = self._waiting.pop(self._random.randrange(len(self._waiting)))
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
                fut.set_exception(e)

    def close(self) -> None:
        with self._lock:
            self._stop = True
            self._lock.notify()
        self._thread.join()


# sampled cells throughout, as with --method mc (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("monte_carlo_cells")


@pytest.fixture
def shuffled():
    ex = ShuffledExecutor(seed=7)
    yield ex
    ex.close()


def _same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for k in a:
        assert a[k].tally.same_as(b[k].tally), k
        assert (a[k].blocks is None) == (b[k].blocks is None)
        if a[k].blocks is not None:
            assert len(a[k].blocks) == len(b[k].blocks)
            assert all(x.same_as(y) for x, y in zip(a[k].blocks, b[k].blocks))


@pytest.mark.parametrize("slots", [3, 1000])
def test_adaptive_cells_stop_at_the_same_block_in_any_finishing_order(slots):
    rs = get_ruleset("duel")
    ros = sim.default_roster("duel")
    names = ros.names[:4]
    root = root_sequence(11)
    jobs = []
    for a in names:
        for d in names:
            _, plan = sim.build_matchup(rs, a, d, roster=ros, budget="none")
            # small blocks: many boundaries at which the stopping rule is checked
            jobs.append(CellJob((a, d), plan, cell_stream(a, d), 120_000, 0.006, batch_trials=4096))
    seq = run_jobs(rs, root, jobs, rounds=rs.default_rounds, max_rounds=50)
    trials = sorted({r.tally.trials for r in seq.values()})
    assert len(trials) > 2 and trials[-1] > 4 * 4096  # cells really stop at different, later blocks
    shuffled = ShuffledExecutor(seed=slots, slots=slots)  # 1000 slots: every block is run ahead speculatively
    try:
        par = run_jobs(rs, root, jobs, rounds=rs.default_rounds, max_rounds=50, executor=shuffled)
    finally:
        shuffled.close()
    _same(seq, par)
    cells = [c for c, _, _ in shuffled.items]
    assert max(cells.count(c) for c in set(cells)) > 1  # a cell's blocks were spread over several tasks


def test_kept_blocks_and_fixed_trials_in_any_finishing_order(shuffled):
    kw = dict(opponents=["Nutrocker", "Gustav"], trials=20 * BLOCK_TRIALS // 8, seed=3)
    a = compare("mecha", "AFS", {"defence": 3}, **kw)
    b = compare("mecha", "AFS", {"defence": 3}, executor=shuffled, **kw)
    assert a.equals(b)


def test_one_big_fight_spreads_over_tasks(shuffled):
    a = sim.fight("duel", "Sellsword", "Duellist", trials=9 * BLOCK_TRIALS + 5, seed=4, budget="none", method="mc")
    b = sim.fight("duel", "Sellsword", "Duellist", trials=9 * BLOCK_TRIALS + 5, seed=4, executor=shuffled,
                  budget="none", method="mc")
    assert a.tally.same_as(b.tally) and shuffled.tasks > 1


def test_matrix_with_local_workers_matches_one_process():
    kw = dict(units=["Sellsword", "Duellist", "Knight"], half_width=0.0025, max_trials=300_000, seed=9, budget="none")
    a = matchup_matrix("duel", **kw)
    b = matchup_matrix("duel", workers=2, **kw)
    assert a.long.equals(b.long)
    assert len(set(a.long["trials"])) > 1


def test_a_failing_task_is_reported():
    class Broken:
        _max_workers = 2

        def submit(self, fn: Any, *args: Any) -> Future:
            fut: Future = Future()
            fut.set_exception(MemoryError("worker out of memory"))
            return fut

    rs = get_ruleset("mecha")
    _, plan = sim.build_matchup(rs, "AFS", "Nutrocker", budget="none")
    with pytest.raises(MemoryError):
        run_jobs(rs, root_sequence(1), [CellJob("x", plan, (1,), 1000)], rounds=rs.default_rounds, max_rounds=50,
                 executor=Broken())


def _duel_jobs(rs, names, half_width, cap):
    ros = sim.default_roster(rs.id)
    out = []
    for a in names:
        for d in names:
            _, plan = sim.build_matchup(rs, a, d, roster=ros, budget="none")
            out.append(CellJob((a, d), plan, cell_stream(a, d), cap, half_width))
    return out


@pytest.mark.parametrize("slots", [3, 1000])
def test_sub_block_stops_are_the_same_in_any_finishing_order(slots):
    """Default blocks cut in sub-blocks: cells stop mid-block, at the same sub-block whoever runs them."""
    rs = get_ruleset("duel")
    jobs = _duel_jobs(rs, ["Sellsword", "Duellist", "Knight", "Ogre"], 0.003, 4 * BLOCK_TRIALS)
    root = root_sequence(5)
    seq = run_jobs(rs, root, jobs, rounds=rs.default_rounds, max_rounds=50)
    trials = [r.tally.trials for r in seq.values()]
    assert any(t % BLOCK_TRIALS for t in trials) and max(trials) > BLOCK_TRIALS  # mid-block stops, past a block
    assert all(t % SUB_BLOCK_TRIALS == 0 for t in trials)
    shuffled = ShuffledExecutor(seed=slots, slots=slots)
    try:
        par = run_jobs(rs, root, jobs, rounds=rs.default_rounds, max_rounds=50, executor=shuffled)
    finally:
        shuffled.close()
    _same(seq, par)
    assert len(shuffled.items) > len(jobs)  # the cells' sub-blocks went out in several tasks
    _same(seq, run_jobs(rs, root, jobs, rounds=rs.default_rounds, max_rounds=50, workers=2))
