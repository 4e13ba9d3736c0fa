"""The meta that the prices make: the army lists that are strong at a budget, by a double oracle over compositions.

:func:`meta` plays the game "each player picks a list of at most ``budget`` points"
(payoff: side-averaged P(win) - P(loss), as the unit game of the balance tables):

1. it starts from a few lists: the roster's lists within the budget, and each unit alone,
   as many copies as the budget (and the side's model limit) buys;
2. it fights every pair of the current lists (the matrix's precision, streams named by the
   lists' compositions) and solves their game (:func:`analysis.stats.double_oracle.double_oracle`);
3. the oracle searches for a best response to that mix: from the lists with the best score
   against it, a hill climb over compositions *at the budget* (no roster unit fits in what is
   left, or the side is full), each step swapping one unit for another, one for two, or two
   for one; neighbours are screened with ``screen_trials`` fights a cell against the mix, in
   batches, and a step is taken only when it beats the current list by more than twice the
   error of the difference;
4. the best list found is fought against every current list at full precision; if it scores
   more than ``0.5 + tolerance`` against the mix it joins the lists and the loop goes on, else
   the mix is the meta (no list the search can find beats it by more than the tolerance).

The result names the meta's lists with their weights, each unit's share of the meta's
points, and the units no meta list takes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sim.errors import InputError, MatchupError
from sim.lists import ArmyList, field_list, list_models, list_points, side_limit
from sim.rng import SeedLike, root_sequence, stable_key
from sim.roster import Roster
from sim.ruleset import Rounds, Ruleset
from sim.rulesets import get_ruleset

from ..stats.double_oracle import OracleStep, double_oracle
from .fielding import check_run_arguments
from .jobs import result_row
from .list_checks import check_list_run, check_meta_arguments
from .lists import canonical_list, field_scores, fight_lists, list_context, roster_with_lists
from .matrix import check_run_settings
from .settings import check_method

__all__ = ["MetaResult", "meta", "meta_units", "META_COLUMNS", "META_UNIT_COLUMNS", "META_LOG_COLUMNS"]

META_COLUMNS = ["list", "weight", "points", "models", "units", "score_vs_meta"]
META_UNIT_COLUMNS = ["unit", "price", "share", "models_share", "lists", "in_meta"]
META_LOG_COLUMNS = ["iteration", "lists", "value", "best_response", "score_vs_mix", "added", "candidates", "seconds"]


@dataclass
class MetaResult:
    """The meta at a budget: ``lists`` (:data:`META_COLUMNS`, weight first), ``units`` (:data:`META_UNIT_COLUMNS`),
    the double oracle's ``log`` (:data:`META_LOG_COLUMNS`) and every list it fought (``pool``)."""

    ruleset: str
    budget: float
    lists: pd.DataFrame
    units: pd.DataFrame
    log: pd.DataFrame
    pool: pd.DataFrame
    converged: bool
    settings: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def units_used(self) -> list[str]:
        return list(self.units.loc[self.units["in_meta"], "unit"])

    @property
    def units_left_out(self) -> list[str]:
        return list(self.units.loc[~self.units["in_meta"], "unit"])


class _Game:
    """The lists fought so far, their cells at full precision, and the screening cells of the search."""

    def __init__(self, rs: Ruleset, roster: Roster, ctx: Any, budget: float, screen_trials: int,
                 progress: Callable[[str], None] | None) -> None:
        self.rs, self.roster, self.ctx, self.budget = rs, roster, ctx, budget
        self.screen_trials = int(screen_trials)
        self.say = progress or (lambda text: None)
        self.limit = side_limit(rs) or 10 ** 9
        self.order = meta_units(rs, roster, budget)
        self.price = {u: float(roster.unit(u).points) for u in self.order}
        self.size = {u: int(getattr(roster.unit(u), "count", 1)) for u in self.order}
        self.cheapest = min(self.price.values())
        self.lists: dict[str, ArmyList] = {}
        self.display: dict[str, str] = {}
        self.cells: dict[tuple[str, str], dict[str, Any]] = {}
        self.screen: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.fought = 0
        #: candidates screened at most per hill-climb step before the climb stops (a local optimum, as far as seen)
        self.step_cap = 48

    # ----------------------------------------------------------- lists
    def add(self, counts: Mapping[str, int], display: str | None = None) -> str:
        lst = canonical_list(counts, self.order)
        self.lists.setdefault(lst.name, lst)
        if display and lst.name not in self.display:
            self.display[lst.name] = display
        return lst.name

    def points(self, counts: Mapping[str, int]) -> float:
        return sum(self.price[u] * k for u, k in counts.items())

    def models(self, counts: Mapping[str, int]) -> int:
        return sum(self.size[u] * k for u, k in counts.items())

    def valid(self, counts: Mapping[str, int]) -> bool:
        return (all(k >= 0 for k in counts.values()) and sum(counts.values()) > 0
                and self.points(counts) <= self.budget * (1 + 1e-9) and self.models(counts) <= self.limit)

    def full(self, counts: Mapping[str, int]) -> bool:
        """Nothing more fits: no unit's price in the points left, or no room for its models."""
        left, room = self.budget - self.points(counts), self.limit - self.models(counts)
        return not any(self.price[u] <= left * (1 + 1e-9) and self.size[u] <= room for u in self.order)

    def blend(self, a: Mapping[str, int], b: Mapping[str, int], rng: np.random.Generator) -> dict[str, int] | None:
        """Half of each of two lists (their counts halved, odd ones rounded at random), filled to the budget."""
        counts = {u: 0 for u in self.order}
        for src in (a, b):
            for u, k in src.items():
                counts[u] += k // 2 + int(k % 2 and rng.random() < 0.5)
        return self.fill(counts, rng)

    def random_full(self, rng: np.random.Generator) -> dict[str, int] | None:
        """A composition at the budget: units drawn at random until nothing more fits."""
        return self.fill({u: 0 for u in self.order}, rng)

    def fill(self, counts: dict[str, int], rng: np.random.Generator) -> dict[str, int] | None:
        """``counts`` trimmed to the budget and the model limit (random units removed), then filled with random
        units until nothing more fits; None if nothing valid comes of it."""
        counts = dict(counts)
        while sum(counts.values()) and (self.points(counts) > self.budget * (1 + 1e-9)
                                        or self.models(counts) > self.limit):
            present = [u for u in self.order if counts[u] > 0]
            counts[present[int(rng.integers(len(present)))]] -= 1
        while not self.full(counts):
            left, room = self.budget - self.points(counts), self.limit - self.models(counts)
            fits = [u for u in self.order if self.price[u] <= left * (1 + 1e-9) and self.size[u] <= room]
            counts[fits[int(rng.integers(len(fits)))]] += 1
        return counts if self.valid(counts) else None

    def neighbours(self, counts: Mapping[str, int]) -> list[dict[str, int]]:
        """Compositions at the budget one swap away: one unit for another, one for two, two for one, two for two
        (and one more unit where the list is not full)."""
        present = [u for u in self.order if counts.get(u, 0) > 0]
        base = {u: int(counts.get(u, 0)) for u in self.order}
        out: dict[str, dict[str, int]] = {}

        def offer(c: dict[str, int]) -> None:
            if self.valid(c) and self.full(c):
                out.setdefault(canonical_list(c, self.order).name, c)

        for y in self.order:
            offer({**base, y: base[y] + 1})
        for x in present:
            minus = {**base, x: base[x] - 1}
            for i, y in enumerate(self.order):
                if y == x:
                    continue
                one = {**minus, y: minus[y] + 1}
                offer(one)
                for z in self.order[i:]:
                    if z != x:
                        offer({**one, z: one[z] + 1})
            for w in present:
                if self.order.index(w) < self.order.index(x) or minus[w] == 0:
                    continue
                two = {**minus, w: minus[w] - 1}
                for i, y in enumerate(self.order):
                    if y not in (x, w):
                        one = {**two, y: two[y] + 1}
                        offer(one)
                        for z in self.order[i:]:
                            if z not in (x, w):
                                offer({**one, z: one[z] + 1})
        me = canonical_list(base, self.order).name
        return [c for n, c in out.items() if n != me]

    # ----------------------------------------------------------- fights
    def ensure_cells(self, names: list[str]) -> None:
        """Fight, at full precision, every ordered pair of ``names`` not fought yet (mirrors included)."""
        pairs = {(a, d): (self.lists[a], self.lists[d]) for a in names for d in names if (a, d) not in self.cells}
        if not pairs:
            return
        done, _, notes = fight_lists(self.ctx, pairs, None)
        for key in pairs:
            if key in notes:
                raise InputError(f"meta: {key[0]} v {key[1]}: {notes[key]}")
            self.cells[key] = result_row(done[key])
        self.fought += len(pairs)

    def payoff(self, names: list[str]) -> np.ndarray:
        self.ensure_cells(names)
        k = len(names)
        a = np.zeros((k, k))
        for i, x in enumerate(names):
            for j, y in enumerate(names):
                if i != j:
                    att, dfn = self.cells[(x, y)], self.cells[(y, x)]
                    win = (att["p_attacker"] + dfn["p_defender"]) / 2
                    loss = (att["p_defender"] + dfn["p_attacker"]) / 2
                    a[i, j] = win - loss
        return a

    def score_vs(self, name: str, mix: Mapping[str, float]) -> float:
        """Side-averaged win + draw / 2 of ``name`` against the mix, from full-precision cells."""
        total = 0.0
        for f, w in mix.items():
            att, dfn = self.cells[(name, f)], self.cells[(f, name)]
            total += w * ((att["p_attacker"] + dfn["p_defender"]) / 2 + (att["p_draw"] + dfn["p_draw"]) / 4)
        return total / sum(mix.values())

    def screen_scores(self, candidates: list[dict[str, int]], mix: Mapping[str, float]) -> dict[str, tuple[float, float]]:
        """Screening scores (``screen_trials`` fights a cell) of compositions against the mix."""
        lists = [canonical_list(c, self.order) for c in candidates]
        fs = field_scores(self.ctx, lists, mix, half_width=None, max_trials=self.screen_trials, known=self.screen,
                          lists=self.lists)
        self.fought += sum(1 for k in fs.cells if k not in self.screen)
        self.screen.update(fs.cells)
        out = {}
        for _, r in fs.table.iterrows():
            out[r["name"]] = (float(r["score"]), float(r["score_se"]))
        return out


def meta_units(rs: Ruleset, roster: Roster, budget: float) -> list[str]:
    """The units a list at ``budget`` can hold (a positive price within it); one line if there are none."""
    order = [u for u in roster.names if _fieldable(rs, roster.unit(u), budget)]
    if not order:
        raise InputError(f"budget {budget:g}: no unit of {roster.source} can be fielded alone at it")
    return order


def _fieldable(rs: Ruleset, unit: Any, budget: float) -> bool:
    p = getattr(unit, "points", None)
    if p is None or not p > 0 or p > budget * (1 + 1e-9):
        return False
    try:
        rs.copies(unit, 1)
    except MatchupError:
        return False
    return True


def _oracle(game: _Game, names: list[str], weights: np.ndarray, starts: int, batch: int, rng: np.random.Generator,
            stats: dict[str, int]) -> tuple[str, float]:
    """A best response to the mix: hill climbs (see the module docstring) from the ``starts`` lists that score best
    against it, from blends of two of the mix's lists, and from one random composition at the budget.

    Returns the best list found (added to the game's lists) and its payoff against the mix at full precision.
    """
    mix = {n: float(w) for n, w in zip(names, weights) if w > 1e-9}
    ranked = sorted(names, key=lambda n: -game.score_vs(n, mix))
    origins = [dict(game.lists[n].counts) for n in ranked[:starts]]
    support = sorted(mix, key=lambda n: -mix[n])
    for a, b in list(zip(support, support[1:]))[:2]:
        blend = game.blend(game.lists[a].counts, game.lists[b].counts, rng)
        if blend is not None:
            origins.append(blend)
    random_start = game.random_full(rng)
    if random_start is not None:
        origins.append(random_start)
    best_name, best_score = ranked[0], -math.inf
    seen: set[str] = set()
    for origin in origins:
        cur = origin
        cur_name = canonical_list(cur, game.order).name
        if cur_name in seen:
            continue
        seen.add(cur_name)
        cur_score, cur_se = game.screen_scores([cur], mix)[cur_name]
        stats["candidates"] += 1
        while math.isfinite(cur_score):
            nbrs = [c for c in game.neighbours(cur) if canonical_list(c, game.order).name not in seen]
            rng.shuffle(nbrs)
            moved = False
            for i in range(0, min(len(nbrs), game.step_cap), batch):
                chunk = nbrs[i:i + batch]
                scores = game.screen_scores(chunk, mix)
                stats["candidates"] += len(chunk)
                seen.update(scores)
                name, (s, se) = max(scores.items(), key=lambda kv: (kv[1][0] if math.isfinite(kv[1][0]) else -1, kv[0]))
                if math.isfinite(s) and s - cur_score > math.hypot(se, cur_se):
                    cur = next(c for c in chunk if canonical_list(c, game.order).name == name)
                    cur_name, cur_score, cur_se = name, s, se
                    moved = True
                    break
            if not moved:
                break
        if cur_score > best_score:
            best_name, best_score = cur_name, cur_score
            game.add(cur)
    game.ensure_cells(names + [best_name] if best_name not in names else names)
    gain = 2 * game.score_vs(best_name, mix) - 1
    return best_name, gain


def meta(
    ruleset: str | Ruleset,
    roster: Roster | str | Path | None = None,
    *,
    budget: Any = None,
    lists_file: str | Path | None = None,
    seed: SeedLike = 2026,
    half_width: float | None = 0.01,
    max_trials: int = 32_768,
    screen_trials: int = 4096,
    tolerance: float = 0.02,
    max_iterations: int = 30,
    starts: int = 2,
    batch: int = 12,
    rounds: Rounds | str | None = None,
    max_rounds: int | None = None,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    rules_defaults: bool = False,
    method: str = "auto",
    workers: int = 1,
    executor: Any = None,
    store: Any = None,
    progress: Callable[[str], None] | None = None,
) -> MetaResult:
    """The lists that are strong at ``budget`` points, and the units they use (see the module docstring).

    Parameters
    ----------
    budget : number, optional
        Points of a list (default: the roster's budget; required).
    tolerance : float
        Stop when the best list the search finds scores at most ``0.5 + tolerance`` (win + draw / 2,
        side-averaged) against the meta's mix.
    screen_trials : int
        Fights per cell when the search screens candidate compositions.
    half_width, max_trials : cell precision of the lists' game (as ``matrix``).
    starts : int
        Hill climbs per search (from the lists that score best against the mix).
    batch : int
        Candidates screened at once (a step is taken from the first batch holding a clear improvement).
    progress : callable, optional
        Called with one line of text per iteration.
    """
    rs = get_ruleset(ruleset)
    method = check_method(method)
    check_run_arguments(states=states, options=options, progress=progress, store=store)
    check_list_run(half_width=half_width, max_trials=max_trials, seed=seed, workers=workers, executor=executor,
                   lists_file=lists_file)
    check_meta_arguments(tolerance=tolerance, screen_trials=screen_trials, max_iterations=max_iterations,
                         starts=starts, batch=batch)
    ros = roster_with_lists(rs, roster, lists_file)
    from sim.budget import resolve_budget

    in_force = resolve_budget(budget, ros.budget, "budget")
    if in_force is None:
        raise InputError(f"meta {rs.id}: give a budget (--budget POINTS): the lists are built at it")
    run = check_run_settings(rs, rounds, max_rounds, max_trials, "max_trials", states=states,
                             rules_defaults=rules_defaults)
    root = root_sequence(seed)
    start = time.perf_counter()
    own_pool = None
    if executor is None and workers != 1:
        from sim.limits import check_workers

        from .runner import local_workers

        own_pool = executor = local_workers(max(1, check_workers(workers)))
    try:
        ctx = list_context(rs, ros, root=root, rounds=run.rounds, max_rounds=run.max_rounds, states=run.states,
                           options=options, half_width=half_width, max_trials=max_trials, workers=1,
                           from_text=False, executor=executor, store=store, method=method)
        game = _Game(rs, ros, ctx, in_force, screen_trials, progress)
        initial = _initial_lists(game)
        game.say(f"meta {rs.id} at {in_force:g} points: {len(game.order)} units, starting from {len(initial)} lists")
        # the search's own draws (the order candidates are screened in), from the seed, apart from the fights'
        rng = np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, stable_key("meta search"))))
        stats = {"candidates": 0}
        log: list[dict[str, Any]] = []
        clock = [time.perf_counter()]

        def step(s: OracleStep) -> None:
            now = time.perf_counter()
            log.append({"iteration": s.iteration, "lists": s.strategies, "value": s.value,
                        "best_response": s.response, "score_vs_mix": (1 + s.gain) / 2, "added": s.added,
                        "candidates": stats["candidates"], "seconds": now - clock[0]})
            clock[0] = now
            what = "added" if s.added else "no list beats the mix by more than the tolerance"
            game.say(f"iteration {s.iteration}: {s.strategies} lists; best response {_shown(game, s.response)} "
                     f"scores {(1 + s.gain) / 2:.1%} against the mix ({what})")

        result = double_oracle(initial, game.payoff,
                               lambda names, w: _oracle(game, list(names), w, int(starts), int(batch), rng, stats),
                               tol=2 * float(tolerance), max_iterations=int(max_iterations), on_step=step)
    finally:
        if own_pool is not None:
            own_pool.shutdown(wait=True, cancel_futures=True)
    names, weights = result.strategies, result.weights
    mix = {n: float(w) for n, w in zip(names, weights) if w > 1e-9}
    rows = []
    for n, w in sorted(zip(names, weights), key=lambda nw: (-nw[1], nw[0])):
        lst = game.lists[n]
        rows.append({"list": _shown(game, n), "weight": float(w), "points": list_points(lst, ros.units),
                     "models": list_models(lst, ros.units), "units": lst.units_text(),
                     "score_vs_meta": game.score_vs(n, mix)})
    pool = pd.DataFrame(rows, columns=META_COLUMNS)
    lists = pool[pool["weight"] > 1e-9].reset_index(drop=True)
    settings = {"budget": in_force, "tolerance": tolerance, "screen_trials": screen_trials, "half_width": half_width,
                "max_trials": max_trials, "starts": starts, "batch": batch, "rounds": run.rounds,
                "max_rounds": run.max_rounds, "states": run.states, "options": dict(options or {}),
                "max_iterations": max_iterations, "cells_fought": game.fought, "roster": ros.source,
                "method": method, "balance_settings": run.describe()}
    from sim.api import provenance

    prov = provenance(root, ruleset=rs.id, spec=rs.spec,
                      seed=int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None,
                      stream="(blake2b-128(attacker list's composition), blake2b-128(defender list's), block, ...)")
    return MetaResult(rs.id, in_force, lists, _unit_shares(game, mix), pd.DataFrame(log, columns=META_LOG_COLUMNS),
                      pool, result.converged, settings, prov, time.perf_counter() - start)


def _shown(game: _Game, name: str) -> str:
    """A list's name for people: the roster's name for it where it has one, else its composition."""
    return game.display.get(name, name)


def _initial_lists(game: _Game) -> list[str]:
    """The roster's lists within the budget, then each unit alone at the budget (as many copies as fit)."""
    names = []
    for n, lst in game.roster.lists.items():
        if all(u in game.price for u, _ in lst.units) and game.valid(lst.counts):
            try:
                field_list(game.rs, lst, game.roster.units)
            except MatchupError:
                continue
            names.append(game.add(lst.counts, display=n))
    for u in game.order:
        k = min(int(game.budget // game.price[u] + 1e-9), game.limit // game.size[u])
        if k >= 1:
            names.append(game.add({u: k}))
    return list(dict.fromkeys(names))


def _unit_shares(game: _Game, mix: Mapping[str, float]) -> pd.DataFrame:
    """Each unit's share of the meta's points (and of its models), the meta lists holding it, and whether any does."""
    total = sum(mix.values())
    rows = []
    for u in game.order:
        share = models = 0.0
        holding = 0
        for n, w in mix.items():
            counts = game.lists[n].counts
            if counts.get(u, 0):
                holding += 1
                share += w / total * game.price[u] * counts[u] / game.points(counts)
                models += w / total * game.size[u] * counts[u] / game.models(counts)
        rows.append({"unit": u, "price": game.price[u], "share": share, "models_share": models, "lists": holding,
                     "in_meta": holding > 0})
    out = pd.DataFrame(rows, columns=META_UNIT_COLUMNS)
    return out.sort_values(["share", "unit"], ascending=[False, True], kind="mergesort").reset_index(drop=True)
