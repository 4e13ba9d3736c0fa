"""``meleelab bench``: kernel and reference speed, in fights per second and bare d6 draws.

All rates come from the same run on the same machine, so their ratios are what
matter: ``speedup`` = kernel / reference, ``d6_equivalents`` = time per kernel
resolution / time per bare ``rng.integers(1, 7, dtype=int8)`` draw.

Where the ruleset has an exact chain for the matchup, ``exact`` times one exact
answer (:func:`sim.exact.exact_outcome`) against the Monte Carlo run it replaces
at a 95% half-width of 1 percentage point: the fights that needs at the exact
P(attacker wins) (:func:`sim.exact.trials_for_half_width`) divided by the
measured kernel rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import sim
from sim.dice import RandomDice
from sim.engine import run_tally
from sim.errors import InputError
from sim.rng import BLOCK_TRIALS, root_sequence
from sim.ruleset import Ruleset

__all__ = ["bench", "d6_rate"]


def _best_rate(work: Callable[[], int], min_seconds: float, repeats: int) -> float:
    """Highest items/second over ``repeats`` timed runs (the least disturbed by noise)."""
    best = 0.0
    for _ in range(repeats):
        done, start = 0, time.perf_counter()
        while True:
            done += work()
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = max(best, done / elapsed)
    return best


def d6_rate(seconds: float = 0.3, repeats: int = 3) -> float:
    """Bare d6 draws per second: ``rng.integers(1, 7, size=2**20, dtype=int8)``."""
    rng = np.random.default_rng(0)
    size = 1 << 20

    def work() -> int:
        rng.integers(1, 7, size=size, dtype=np.int8)
        return size

    return _best_rate(work, seconds, repeats)


def bench_ruleset(rs: Ruleset, *, seconds: float = 0.5, repeats: int = 3, d6_per_second: float) -> dict[str, Any]:
    """Kernel (engine, one process) and reference rates on the ruleset's standard matchup.

    Further matchups the ruleset names (``bench_extra_matchups``) are measured the
    same way and listed under ``"extra"``.
    """
    entry = bench_matchup(rs, rs.bench_matchup(), seconds=seconds, repeats=repeats, d6_per_second=d6_per_second)
    extra = [bench_matchup(rs, m, seconds=seconds, repeats=repeats, d6_per_second=d6_per_second)
             for m in rs.bench_extra_matchups()]
    if extra:
        entry["extra"] = extra
    return entry


def bench_matchup(rs: Ruleset, matchup: tuple, *, seconds: float, repeats: int, d6_per_second: float) -> dict[str, Any]:
    """Rates for one matchup ``(attacker, defender, states, rounds[, label])``.

    Attacker and defender are names in the default roster or unit profiles; an
    optional fifth item names the matchup in the output (sizes, budget).
    """
    att, dfn, states, rounds = matchup[:4]
    label = matchup[4] if len(matchup) > 4 else None
    # the matchup says its sizes: a roster's budget must not turn it into an equal-points fight
    _, plan = sim.build_matchup(rs, att, dfn, states=states, budget="none")
    root = root_sequence(12345)
    blocks = 4

    def kernel() -> int:
        run_tally(rs, plan, blocks * BLOCK_TRIALS, root, rounds=rounds, max_rounds=50)
        return blocks * BLOCK_TRIALS

    dice = RandomDice(np.random.default_rng(1))

    def reference() -> int:
        for _ in range(200):
            rs.resolve_one(plan, dice, rounds, 50)
        return 200

    k = _best_rate(kernel, seconds, repeats)
    r = _best_rate(reference, seconds / 2, repeats)
    return {**_rates(att, dfn, states, rounds, label, k, r, d6_per_second),
            "exact": bench_exact(rs, plan, rounds, k, seconds=seconds, repeats=repeats)}


def bench_exact(rs: Ruleset, plan: Any, rounds: Any, kernel_per_second: float, *, seconds: float,
                repeats: int) -> dict[str, Any]:
    """Seconds per exact answer of a prepared matchup against Monte Carlo at +-1 percentage point.

    Returns ``{"available": False, "why": ...}`` where the ruleset has no exact chain
    for it, else ``exact_seconds``, ``p_attacker`` (exact), ``mc_trials_1pp``,
    ``mc_seconds_1pp`` (those fights at the kernel's rate), ``speedup`` (that over the
    exact seconds), and ``mc_run_seconds_1pp`` (a whole Monte Carlo run of those fights,
    measured: engine and tally included) with ``run_speedup``.
    """
    from sim.exact import exact_outcome, trials_for_half_width

    if rs.exact_work(plan, rounds, 50) is None:
        try:
            rs.exact(plan, rounds, 50)
            why = "no exact chain"
        except sim.MeleelabError as e:
            why = str(e)
        return {"available": False, "why": why}
    result = exact_outcome(rs, plan, rounds, 50)  # once before timing: lazy imports and caches are not the cell's
    per_second = _best_rate(lambda: (exact_outcome(rs, plan, rounds, 50), 1)[1], seconds / 2, repeats)
    p = result.win_probability("attacker")
    trials = trials_for_half_width(0.01, min(max(p, 1e-12), 1 - 1e-12))
    mc = trials / kernel_per_second
    root = root_sequence(54321)
    runs = _best_rate(lambda: (run_tally(rs, plan, trials, root, rounds=rounds, max_rounds=50), 1)[1], seconds / 2,
                      repeats)
    return {"available": True, "exact_seconds": 1 / per_second, "p_attacker": p, "mc_trials_1pp": trials,
            "mc_seconds_1pp": mc, "speedup": mc * per_second, "mc_run_seconds_1pp": 1 / runs,
            "run_speedup": per_second / runs, "work": rs.exact_work(plan, rounds, 50)}


def _rates(att: Any, dfn: Any, states: Any, rounds: Any, label: str | None, k: float, r: float,
           d6_per_second: float) -> dict[str, Any]:
    return {
        "matchup": label or (f"{getattr(att, 'name', att)} vs {getattr(dfn, 'name', dfn)}"
                             + (f" ({states})" if states else "") + f", rounds={rounds}"),
        "kernel_per_second": k,
        "reference_per_second": r,
        "speedup": k / r,
        "d6_equivalents": d6_per_second / k,
    }


def bench(rulesets: list[str] | None = None, *, seconds: float = 0.5, repeats: int = 3) -> dict[str, Any]:
    """Benchmark the named rulesets (all by default).

    Returns
    -------
    dict
        ``{"d6_per_second": x, "rulesets": {id: {"matchup", "kernel_per_second",
        "reference_per_second", "speedup", "d6_equivalents", "exact"}}}``; ``exact``
        is :func:`bench_exact`'s (``available``, and the times where it is).
    """
    ids = rulesets or [r.id for r in sim.rulesets()]
    chosen = [sim.get_ruleset(i) for i in ids]
    d6 = d6_rate()
    out = {"d6_per_second": d6, "rulesets": {}}
    for rs in chosen:
        try:
            out["rulesets"][rs.id] = bench_ruleset(rs, seconds=seconds, repeats=repeats, d6_per_second=d6)
        except NotImplementedError:  # a plugin without a benchmark pair: skipped unless asked for by name
            if rulesets:
                raise InputError(f"{rs.id}: no benchmark matchup (the ruleset does not define bench_matchup)") from None
    out["d6_per_second"] = max(d6, d6_rate())  # measured again after the kernels: the better of two
    for entry in out["rulesets"].values():
        for e in [entry, *entry.get("extra", [])]:
            e["d6_equivalents"] = out["d6_per_second"] / e["kernel_per_second"]
    return out
