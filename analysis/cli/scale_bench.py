"""Scaling measurements behind ``docs/scale.md``: ``python -m analysis.cli.scale_bench [--json]``.

Measures, in one run on this machine (needs the ``cluster`` extra):

* the cost of one block (65,536 fights) of each ruleset's benchmark matchup, one process;
* the throughput of one workload (a matrix of fixed-size cells, so every setting
  does the same work) in this process, on 2 local processes, and on a
  ``LocalCluster`` of 1 and 2 workers;
* the scheduler overhead per task: the wall time per no-op task pushed through
  a 2-worker ``LocalCluster`` (client, scheduler and worker round trip; an upper
  bound, the machine's two cores also run the client and the scheduler), and
  through a local process pool;
* the peak memory (RSS) of a worker process after running blocks of every ruleset;
* the projection to 64 and 1,000 workers (see :func:`project`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import time
from typing import Any

import sim
from sim.executor import local_pool
from sim.rng import BLOCK_TRIALS, block_rng, root_sequence

from ..runs.matrix import matchup_matrix
from ..runs.runner import TASK_SECONDS

__all__ = ["measure", "project"]

#: One unit a side (budget "none"), as docs/scale.md measured it: the roster's budget would field copies instead.
WORKLOAD = dict(ruleset="duel", half_width=None, max_trials=8 * BLOCK_TRIALS, seed=1, budget="none")


def _noop(x: int) -> int:
    return x


def _peak_rss_mib() -> float:
    # VmHWM is this process's own peak; ru_maxrss survives exec, so a worker started by a large
    # process would report its parent's peak
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _run_every_ruleset_block() -> float:
    for r in sim.rulesets():
        att, dfn, states, rounds = r.bench_matchup()
        _, plan = sim.build_matchup(r, att, dfn, states=states, budget="none")  # the bench sizes, not the roster budget
        r.simulate(plan, BLOCK_TRIALS, block_rng(root_sequence(1), 0), rounds, 50)
    return _peak_rss_mib()


def block_costs(repeats: int = 3) -> dict[str, float]:
    """Best-of-``repeats`` seconds per block of each ruleset's benchmark matchup."""
    out = {}
    for r in sim.rulesets():
        att, dfn, states, rounds = r.bench_matchup()
        _, plan = sim.build_matchup(r, att, dfn, states=states, budget="none")  # the bench sizes, not the roster budget
        best = float("inf")
        for k in range(repeats + 1):
            t = time.perf_counter()
            r.simulate(plan, BLOCK_TRIALS, block_rng(root_sequence(1), k), rounds, 50)
            if k:  # the first block warms caches (alias tables, chains)
                best = min(best, time.perf_counter() - t)
        out[r.id] = best
    return out


def _workload_rate(**kw: Any) -> tuple[float, int]:
    t = time.perf_counter()
    m = matchup_matrix(**WORKLOAD, **kw)
    seconds = time.perf_counter() - t
    trials = int(m.long["trials"].sum())
    return trials / seconds, trials


def _task_overhead(submit: Any, gather: Any, n: int) -> float:
    t = time.perf_counter()
    gather([submit(_noop, i) for i in range(n)])
    return (time.perf_counter() - t) / n


def measure(n_noop: int = 2000) -> dict[str, Any]:
    """Every measurement listed in the module docstring."""
    from distributed import Client, LocalCluster, wait

    out: dict[str, Any] = {"cores": os.cpu_count(), "block_trials": BLOCK_TRIALS,
                           "workload": {k: v for k, v in WORKLOAD.items()}}
    out["block_seconds"] = block_costs()
    _workload_rate()  # warm-up
    rates: dict[str, float] = {}
    rates["one process"], out["workload"]["trials"] = _workload_rate()
    rates["local processes, 2"] = _workload_rate(workers=2)[0]
    with local_pool(2) as pool:
        list(pool.map(_noop, range(8)))
        out["pool_seconds_per_task"] = _task_overhead(pool.submit, lambda fs: [f.result() for f in fs], n_noop)
    for n in (1, 2):
        # (a fresh cluster per size: the 2-worker cluster below also measures a worker's memory from scratch)
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                          silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            _workload_rate(executor=client)  # warm-up: imports and ruleset caches on the workers
            rates[f"LocalCluster, {n} worker{'s' if n > 1 else ''}"] = _workload_rate(executor=client)[0]
            if n == 2:
                def submit(fn: Any, x: int) -> Any:
                    return client.submit(fn, x, pure=False)

                _task_overhead(submit, lambda fs: wait(fs), 200)
                out["dask_seconds_per_task"] = _task_overhead(submit, lambda fs: wait(fs), n_noop)
                out["worker_peak_rss_mib"] = max(client.run(_run_every_ruleset_block).values())
    out["trials_per_second"] = rates
    out["projection"] = project(out["dask_seconds_per_task"], out["block_seconds"])
    return out


def project(seconds_per_task: float, block_seconds: dict[str, float],
            workers: tuple[int, ...] = (1, 2, 64, 1000)) -> dict[str, Any]:
    """Throughput on paper for ``workers`` single-threaded workers.

    The scheduler handles at most ``1 / seconds_per_task`` tasks a second (the
    measured round trip, an upper bound of its cost); ``W`` workers running
    tasks of ``d`` seconds ask for ``W / d``. Overhead stays under 5% while
    ``W * seconds_per_task <= 0.05 * d``, so the task length that keeps it there
    is ``d_min = 20 * W * seconds_per_task``; with that task length, throughput is
    ``0.95 * W / block_seconds`` blocks a second.
    """
    out: dict[str, Any] = {"seconds_per_task": seconds_per_task, "workers": {}}
    for w in workers:
        d_min = max(20 * w * seconds_per_task, TASK_SECONDS)
        out["workers"][w] = {
            "task_seconds_for_5pct": d_min,
            "blocks_per_task": {rid: max(1, int(-(-d_min // s))) for rid, s in block_seconds.items()},
            "fights_per_second": {rid: 0.95 * w * BLOCK_TRIALS / s for rid, s in block_seconds.items()},
            "tasks_per_second_one_block_tasks": {rid: w / s for rid, s in block_seconds.items()},
        }
    return out


def main() -> None:  # pragma: no cover - a measuring script
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    res = measure()
    if args.json:
        print(json.dumps(res, indent=2, default=str))
        return
    print(f"{res['cores']} cores; block = {BLOCK_TRIALS:,} fights")
    for rid, s in res["block_seconds"].items():
        print(f"  block of {rid:<9} {1000 * s:8.2f} ms   ({BLOCK_TRIALS / s:,.0f} fights/s)")
    print(f"workload: {res['workload']}")
    for k, v in res["trials_per_second"].items():
        print(f"  {k:<26} {v:>12,.0f} fights/s  ({v / res['trials_per_second']['one process']:.2f}x)")
    print(f"no-op task round trip: Dask {1000 * res['dask_seconds_per_task']:.3f} ms, "
          f"process pool {1000 * res['pool_seconds_per_task']:.3f} ms")
    print(f"worker peak RSS after a block of every ruleset: {res['worker_peak_rss_mib']:.0f} MiB")
    for w, p in res["projection"]["workers"].items():
        print(f"  {w:>5} workers: tasks >= {p['task_seconds_for_5pct']:.2f} s for < 5% overhead; blocks/task "
              + ", ".join(f"{k} {v}" for k, v in p["blocks_per_task"].items()))


if __name__ == "__main__":  # pragma: no cover
    main()
