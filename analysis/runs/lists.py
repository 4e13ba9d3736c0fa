"""Army lists in an analysis: every list against every list, and any list scored against a field of lists.

:func:`list_matrix` is :func:`analysis.runs.matrix.matchup_matrix` with army lists
(:mod:`sim.lists`) in place of units: the same settings, adaptive precision, streams
(``(key(attacker list), key(defender list), block)``), results store and executors, and a
:class:`~analysis.runs.matrix.MatchupMatrix` whose "units" are list names (each fielded as
it is: one copy, its own points), so the balance machinery (side-averaged scores, the
payoff table, its Nash mix, the plots and ``diff``) reads it as it reads a unit matrix.

:func:`field_scores` fights any lists (variants a unit-value check or the meta search
builds) against a weighted field of lists, both roles, and returns each one's score
(win + draw / 2, side-averaged, weighted over the field) with its standard error.

Lists come from the roster's ``[[list]]`` tables and from a lists file (a TOML file of
``[[list]]`` tables over the roster's units, :func:`load_lists_file`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sim.api import provenance as _provenance
from sim.budget import resolve_budget
from sim.errors import InputError, MatchupError, Where, shown
from sim.files import parse_toml, read_input_text
from sim.limits import MAX_MATRIX_UNITS, MAX_ROSTER_BYTES
from sim.lists import ArmyList, composition_name, field_list, list_models, list_points, parse_list_tables
from sim.results import FightResult
from sim.rng import BLOCK_TRIALS, SeedLike, root_sequence
from sim.roster import Roster, check_lookalikes
from sim.ruleset import Rounds, Ruleset
from sim.rulesets import get_ruleset

from ..stats.estimates import score_variance
from .fielding import RunContext, check_run_arguments
from .jobs import JobResult, ProgressCallback, result_row, run_jobs
from .list_checks import check_list_run, check_lists_file
from .matrix import LONG_COLUMNS, MatchupMatrix, check_run_settings, resolve_roster
from .settings import check_method
from .streams import cell_stream

__all__ = ["load_lists_file", "roster_with_lists", "check_lists", "list_table", "list_matrix", "list_scores",
           "field_scores", "FieldScores", "list_context", "canonical_list", "fight_lists"]


# ------------------------------------------------------------------ lists in
def load_lists_file(rs: Ruleset, roster: Roster, path: str | Path) -> dict[str, ArmyList]:
    """The ``[[list]]`` tables of a lists file (TOML), checked against ``roster``'s units.

    The file holds ``[[list]]`` tables (and optionally ``ruleset``, which must match);
    anything else is refused in one line.
    """
    check_lists_file(path)
    text = read_input_text(path, "lists file", MAX_ROSTER_BYTES)
    if not str(path).lower().endswith(".toml"):
        raise InputError(f"{path}: a lists file is TOML ([[list]] tables), got {Path(path).suffix or 'no suffix'!r}")
    data = parse_toml(text, str(path), "lists")
    where = Where(str(path))
    for key in data:
        if key not in ("list", "ruleset", "description"):
            raise where.error(key, data[key], "a key of a lists file ([[list]] tables; ruleset, description)")
    if "ruleset" in data and data["ruleset"] != rs.id:
        raise where.error("ruleset", data["ruleset"], f"{rs.id!r} (the lists are for the {rs.id} roster)")
    if "list" not in data:
        raise where.error("list", None, "[[list]] tables (name and units), at least one")
    return parse_list_tables(rs, data["list"], roster.units, where)


def roster_with_lists(rs: Ruleset, roster: Roster | str | Path | None, lists_file: str | Path | None = None) -> Roster:
    """The roster holding its own lists and a lists file's (a name used twice is refused in one line)."""
    ros = resolve_roster(rs, roster)
    if not rs.fields_lists:
        raise InputError(f"{rs.id}: {rs.lists_refusal}, so army lists are not available")
    lists = dict(ros.lists)
    if lists_file is not None:
        extra = load_lists_file(rs, ros, lists_file)
        for name in extra:
            if name in lists:
                raise InputError(f"{lists_file}: list {name!r} is also in {ros.source} (a list name used once)")
        lists.update(extra)
        check_lookalikes(list(ros.units) + list(lists), Where(str(lists_file)))
    return ros.with_lists(lists)


def check_lists(rs: Ruleset, roster: Roster, names: Sequence[str], budget: float | None) -> None:
    """Every list exists, has points (with a budget) and costs at most the budget: else one line, before any fight."""
    if not names:
        raise InputError(f"{roster.source}: no army lists (add [[list]] tables to the roster, or give --lists FILE)")
    dup = sorted({n for n in names if list(names).count(n) > 1})
    if dup:
        raise InputError(f"lists: {', '.join(dup)} named more than once")
    if len(names) > MAX_MATRIX_UNITS:
        raise InputError(f"{len(names)} lists, a list matrix takes at most {MAX_MATRIX_UNITS}")
    for n in names:
        lst = roster.army_list(n)
        points = list_points(lst, roster.units)
        if budget is not None:
            if points is None:
                raise InputError(f"list {n!r}: a unit has no points, so it cannot be checked against the budget "
                                 f"of {budget:g}")
            if points > budget * (1 + 1e-9):
                raise InputError(f"list {n!r} costs {points:g} points, more than the budget of {budget:g}")
        try:  # a list the ruleset cannot field (too many models): one line now, not a hole in the matrix
            field_list(rs, lst, roster.units)
        except MatchupError as e:
            raise InputError(f"list {n!r}: {e}") from None


def canonical_list(counts: Mapping[str, int], order: Sequence[str]) -> ArmyList:
    """The list of ``counts`` with its units in roster ``order`` (zero counts dropped), named by its composition."""
    units = tuple((u, int(counts[u])) for u in order if int(counts.get(u, 0)) > 0)
    return ArmyList(composition_name(units), units)


def list_table(roster: Roster, names: Sequence[str] | None = None) -> pd.DataFrame:
    """``list, points, models, units`` (units as ``"1 Captain, 2 Champion"``) for the lists ``names``."""
    rows = []
    for n in names if names is not None else list(roster.lists):
        lst = roster.army_list(n)
        rows.append({"list": n, "points": list_points(lst, roster.units), "models": list_models(lst, roster.units),
                     "units": lst.units_text()})
    return pd.DataFrame(rows, columns=["list", "points", "models", "units"])


# ----------------------------------------------------------------- fighting
def list_context(rs: Ruleset, roster: Roster, *, root: np.random.SeedSequence, rounds: Rounds, max_rounds: int,
                 states: Mapping[str, Any] | None, options: Mapping[str, Any] | None, half_width: float | None,
                 max_trials: int, workers: int, from_text: bool, executor: Any, store: Any,
                 method: str) -> RunContext:
    """A run context for list fights: lists are fielded as they are, so no budget multiplies a side."""
    return RunContext(rs.id, roster, root, rounds, int(max_rounds), dict(states or {}), {}, dict(options or {}),
                      half_width, int(max_trials), workers, from_text, None, executor, store, method=method)


def fight_lists(ctx: RunContext, pairs: Mapping[Any, tuple[Any, Any]], progress: ProgressCallback | None,
                 *, half_width: float | None = None, max_trials: int | None = None
                 ) -> tuple[dict[Any, JobResult], dict[Any, Any], dict[Any, str]]:
    """Fight every ``key: (attacker, defender)`` (list names or :class:`ArmyList`) on its own stream
    ``(key(attacker's name), key(defender's name))``; returns the job results, the matchups, and why each pair
    that cannot be fielded was not fought."""
    rs = ctx.rs
    if half_width is not None or max_trials is not None:
        ctx = replace(ctx, half_width=half_width if half_width is not None else ctx.half_width,
                      max_trials=int(max_trials or ctx.max_trials))
    jobs, matchups, notes = [], {}, {}
    for key, (a, d) in pairs.items():
        na, nd = _name(a), _name(d)
        try:
            matchup, plan = ctx.build(a, d)
        except MatchupError as e:
            notes[key] = str(e)
            continue
        matchups[key] = matchup
        jobs.append(ctx.job(key, plan, cell_stream(na, nd), f"{na} v {nd}", identity=matchup))
    done = run_jobs(rs, ctx.root, jobs, rounds=ctx.rounds, max_rounds=ctx.max_rounds, workers=ctx.workers,
                    progress=progress, executor=ctx.executor, store=ctx.store)
    return done, matchups, notes


def _name(x: Any) -> str:
    return x.name if isinstance(x, ArmyList) else str(x)


def list_matrix(
    ruleset: str | Ruleset,
    roster: Roster | str | Path | None = None,
    lists: Sequence[str] | None = None,
    *,
    lists_file: str | Path | None = None,
    half_width: float | None = 0.01,
    max_trials: int = 32_768,
    seed: SeedLike = None,
    rounds: Rounds | str | None = None,
    max_rounds: int | None = None,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    progress: ProgressCallback | None = None,
    from_text: bool = False,
    budget: Any = None,
    executor: Any = None,
    store: Any = None,
    rules_defaults: bool = False,
    method: str = "auto",
) -> MatchupMatrix:
    """Every army list as attacker against every list as defender (mirror matches included).

    Parameters as :func:`analysis.runs.matrix.matchup_matrix` (no unit ``overrides``: a list's
    units are fielded as the roster defines them). ``lists``: names of the roster's lists (and
    ``lists_file``'s), default all; ``budget`` (default: the roster's): every list must cost at
    most this (a list over it, an unknown unit, a bad count... is one line before any fight).

    Returns
    -------
    MatchupMatrix
        ``units`` are the list names; ``settings["lists"]`` maps each to its composition and
        points; ``copies`` are 1 (a list is fielded as it is).
    """
    rs = get_ruleset(ruleset)
    method = check_method(method)
    check_run_arguments(states=states, options=options, progress=progress, from_text=from_text, store=store)
    check_list_run(half_width=half_width, max_trials=max_trials, seed=seed, workers=workers, executor=executor,
                   lists_file=lists_file)
    if lists is not None and (isinstance(lists, (str, bytes)) or not isinstance(lists, Sequence)
                              or not all(isinstance(n, str) for n in lists)):
        raise InputError(f"lists: got {shown(lists)}, expected a list of list names or None")
    ros = roster_with_lists(rs, roster, lists_file)
    run = check_run_settings(rs, rounds, max_rounds, max_trials, "max_trials", states=states,
                             rules_defaults=rules_defaults)
    names = list(ros.lists if lists is None else lists)
    in_force = resolve_budget(budget, ros.budget, "--budget" if from_text else "budget")
    check_lists(rs, ros, names, in_force)
    root = root_sequence(seed)
    ctx = list_context(rs, ros, root=root, rounds=run.rounds, max_rounds=run.max_rounds, states=run.states,
                       options=options, half_width=half_width, max_trials=max_trials, workers=workers,
                       from_text=from_text, executor=executor, store=store, method=method)
    pairs = {(a, d): (a, d) for a in names for d in names}
    done, matchups, notes = fight_lists(ctx, pairs, progress)
    seed_out = int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None
    prov = _provenance(root, ruleset=rs.id, spec=rs.spec, seed=seed_out,
                       stream="(blake2b-128(attacker list), blake2b-128(defender list), block"
                              + (", sub-block tag, sub-block)" if half_width is not None else ")"))
    points = {n: list_points(ros.army_list(n), ros.units) for n in names}
    some = next(iter(matchups.values()), None)
    settings = {
        "rounds": run.rounds, "max_rounds": int(run.max_rounds), "half_width": half_width,
        "max_trials": int(max_trials), "block_trials": BLOCK_TRIALS, "roster": ros.source, "units": names,
        "budget": in_force, "fielding": None, "states": {k: dict(v) for k, v in (run.states or {}).items()},
        "overrides": {}, "options": dict(some.options) if some is not None else {},
        "balance_settings": run.describe(), "method": method,
        "lists": {n: {"units": ros.army_list(n).counts, "points": points[n]} for n in names},
        "lists_file": str(lists_file) if lists_file is not None else None,
    }
    rows, results = [], {}
    for a in names:
        for d in names:
            pa, pd_ = _nan(points[a]), _nan(points[d])
            row = {"attacker": a, "defender": d, "points_attacker": pa, "points_defender": pd_, "attacker_copies": 1,
                   "defender_copies": 1, "attacker_fielded": pa, "defender_fielded": pd_}
            if (a, d) in notes:
                rows.append({**row, "trials": 0, "fights": 0, "note": notes[(a, d)]})
                continue
            res = done[(a, d)]
            numbers = result_row(res)
            rows.append({**row, **numbers, "fights": numbers["trials"], "note": ""})
            m = matchups[(a, d)]
            cell_settings = {"rounds": run.rounds, "max_rounds": int(run.max_rounds), "states": m.states,
                             "options": m.options, "overrides": {}, "attacker_profile": rs.side_rows(m.attacker),
                             "defender_profile": rs.side_rows(m.defender), "budget": in_force,
                             "copies": {"attacker": 1, "defender": 1},
                             "fielded": {"attacker": points[a], "defender": points[d]}}
            results[(a, d)] = FightResult(rs, a, d, res.tally, cell_settings, {**prov, "stream": list(cell_stream(a, d))},
                                          seed_out, res.exact)
    long = pd.DataFrame(rows).reindex(columns=LONG_COLUMNS)
    for c in ("trials", "fights", "attacker_copies", "defender_copies"):
        long[c] = long[c].astype(np.int64)
    long["note"] = long["note"].fillna("")
    profiles = {n: composition_name(ros.army_list(n).units) for n in names}
    matrix = MatchupMatrix(rs.id, names, long, results, settings, prov, {}, in_force, {n: 1 for n in names},
                           profiles, ctx, sum(r.from_store for r in done.values()), "whole", None)
    return matrix


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


# ------------------------------------------------------------------ scores
def list_scores(matrix: MatchupMatrix) -> pd.DataFrame:
    """Each list's score against the field (win + draw / 2, side-averaged, mean over every list, itself at 1/2),
    with its standard error, win rate and rank; best first.

    Columns ``list, rank, score, score_se, win_rate, win_rate_se, payoff, points``.
    """
    s = matrix.side_averaged()
    s = s.assign(score=s["p_win"] + s["p_draw"] / 2)
    # the score's error: a cell's win and draw indicators, (win + draw/2) has variance <= p(1-p)/n; use the payoff's
    # (a list against itself scores exactly 1/2 side-averaged: the same cell in both roles, no error)
    s.loc[s["unit"] == s["opponent"], ["payoff_se", "p_win_se"]] = 0.0
    rows = []
    for lst, g in s.groupby("unit", sort=False):
        k = len(g)
        rows.append({"list": lst, "score": float(g["score"].mean()),
                     "score_se": float(math.sqrt(((g["payoff_se"] / 2) ** 2).sum()) / k),
                     "win_rate": float(g["p_win"].mean()), "win_rate_se": float(math.sqrt((g["p_win_se"] ** 2).sum()) / k),
                     "payoff": float(g["payoff"].mean())})
    out = pd.DataFrame(rows)
    points = {n: v.get("points") for n, v in matrix.settings.get("lists", {}).items()}
    out["points"] = [points.get(n, float("nan")) for n in out["list"]]
    out = out.sort_values(["score", "list"], ascending=[False, True], kind="mergesort").reset_index(drop=True)
    out.insert(1, "rank", np.arange(1, len(out) + 1))
    return out


@dataclass
class FieldScores:
    """Scores of lists against a weighted field: ``table`` (``name, score, score_se, cells, note``) and the cells."""

    table: pd.DataFrame
    cells: dict[tuple[str, str, str], dict[str, Any]]
    resumed: int = 0

    def score(self, name: str) -> float:
        return float(self.table.set_index("name").loc[name, "score"])


def field_scores(ctx: RunContext, candidates: Sequence[ArmyList], field: Mapping[str, float],
                 progress: ProgressCallback | None = None, *, half_width: float | None = None,
                 max_trials: int | None = None, known: Mapping[tuple[str, str, str], dict[str, Any]] | None = None,
                 lists: Mapping[str, ArmyList] | None = None) -> FieldScores:
    """Each candidate list's score against ``field`` (list name -> weight, lists of ``ctx``'s roster), both roles.

    A candidate's score is ``sum_j w_j s(c, f_j) / sum w`` with ``s`` the side-averaged win + draw / 2 of
    the cell ``c`` attacking ``f_j`` and the cell ``f_j`` attacking ``c``; its error from the two cells'
    binomial errors (independent streams). A candidate the ruleset cannot field (too many models) has a
    NaN score and the reason in ``note``. ``known`` cells (key ``(role, candidate, opponent)``) are reused.
    ``lists``: field lists by name that are not the roster's (their compositions).
    """
    weights = {k: float(v) for k, v in field.items() if float(v) > 0}
    total = sum(weights.values())
    if not weights or total <= 0:
        raise InputError("field: no list with a positive weight to score against")
    pairs: dict[tuple[str, str, str], tuple[Any, Any]] = {}
    cells: dict[tuple[str, str, str], dict[str, Any]] = dict(known or {})
    by_name = {c.name: c for c in candidates}
    for c in candidates:
        for f in weights:
            opp = (lists or {}).get(f, f)
            for role, pair in (("attack", (c, opp)), ("defend", (opp, c))):
                key = (role, c.name, f)
                if key not in cells:
                    pairs[key] = pair
    done, _, notes = fight_lists(ctx, pairs, progress, half_width=half_width, max_trials=max_trials)
    for key in pairs:
        if key in notes:
            cells[key] = {"note": notes[key]}
        else:
            cells[key] = result_row(done[key])
    rows = []
    for name in by_name:
        score, var, note = 0.0, 0.0, ""
        for f, w in weights.items():
            a, d = cells[("attack", name, f)], cells[("defend", name, f)]
            if "p_attacker" not in a or "p_attacker" not in d:
                note = a.get("note") or d.get("note") or "not fought"
                break
            s = (a["p_attacker"] + d["p_defender"]) / 2 + (a["p_draw"] + d["p_draw"]) / 4
            score += w * s
            var += (w / 2) ** 2 * (_score_var(a, "p_attacker") + _score_var(d, "p_defender"))
        if note:
            rows.append({"name": name, "score": float("nan"), "score_se": float("nan"), "note": note})
        else:
            rows.append({"name": name, "score": score / total, "score_se": math.sqrt(var) / total, "note": ""})
    resumed = sum(r.from_store for r in done.values())
    return FieldScores(pd.DataFrame(rows, columns=["name", "score", "score_se", "note"]), cells, resumed)


def _score_var(row: Mapping[str, Any], win: str) -> float:
    """Variance of one cell's win + draw / 2 estimate: ``(E[x^2] - E[x]^2) / n`` with x in {0, 1/2, 1}."""
    n = row.get("trials", 0) or 0
    if not n:
        return 0.0                       # exact: no sampling error
    return score_variance(float(row[win]), float(row["p_draw"]), n)
