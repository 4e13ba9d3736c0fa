"""Paired comparisons: a base unit and a variant on common random numbers.

Base and variant fight each opponent, in each role, on the SAME random stream
(the matrix cell's stream of the base unit: ``(key(base), key(opponent))``
when attacking, ``(key(opponent), key(base))`` when defending). Fights that
the change does not affect then end the same way for both, so the difference is
measured with far fewer trials than two independent runs would need.

Kernels aggregate trials (their outcomes carry weights), so trial-by-trial
pairs are not available; the paired standard error comes from *batch means*:
each block is a batch, base and variant share it, and the spread of the
per-batch differences gives the standard error (a t interval with
``batches - 1`` degrees of freedom).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

import sim
from sim.errors import InputError, MatchupError, Where
from sim.limits import PlanBudget, check_kept_batches, check_mapping, check_names
from sim.rng import BLOCK_TRIALS, SeedLike, root_sequence
from sim.roster import Roster
from sim.ruleset import SIDES, Rounds, Ruleset
from sim.rulesets import get_ruleset
from sim.stats import Z95
from sim.tally import Tally

from .fielding import budget_in_force, check_fair_settings, check_fielding, check_run_arguments
from .jobs import CellJob, JobResult, run_jobs
from .matrix import cell_stream, check_run_settings, resolve_roster
from .methods import exact_side, grouped_methods
from .settings import check_method

__all__ = ["compare", "paired_difference", "batch_trials_for", "resolve_variant", "welch_df", "COMPARE_COLUMNS",
           "MIN_BATCHES"]

#: Fewest batches behind a paired standard error; below ``MIN_BATCHES * BLOCK_TRIALS``
#: trials, batches are made smaller than a block (so the streams then differ from
#: the engine's block addressing).
MIN_BATCHES = 16

COMPARE_COLUMNS = [
    "opponent", "role", "trials", "batches",
    "p_win_base", "p_win_variant", "diff", "diff_se", "diff_lo", "diff_hi", "diff_se_independent",
    "p_loss_base", "p_loss_variant", "loss_diff", "loss_diff_se",
    "damage_dealt_base", "damage_dealt_variant", "damage_taken_base", "damage_taken_variant", "note", "method",
]


def welch_df(se: np.ndarray, df: np.ndarray) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of independent terms with errors ``se`` on ``df``."""
    se, df = np.asarray(se, float), np.asarray(df, float)
    ok = np.isfinite(se) & np.isfinite(df) & (df > 0)
    num = float((se[ok] ** 2).sum()) ** 2
    den = float((se[ok] ** 4 / df[ok]).sum())
    return num / den if den > 0 else math.inf


def batch_trials_for(trials: int) -> int:
    """Trials per batch: a whole block when there are at least :data:`MIN_BATCHES` of them."""
    if trials >= MIN_BATCHES * BLOCK_TRIALS:
        return BLOCK_TRIALS
    return max(1, math.ceil(trials / MIN_BATCHES))


def paired_difference(base_counts: Sequence[int], variant_counts: Sequence[int],
                      sizes: Sequence[int]) -> tuple[float, float, float, float]:
    """Difference of two proportions measured on shared batches, by batch means.

    Parameters
    ----------
    base_counts, variant_counts : sequence of int
        Successes per batch (batch ``b`` of both ran on the same random numbers).
    sizes : sequence of int
        Trials per batch.

    Returns
    -------
    (diff, se, lo, hi)
        ``diff = (sum variant - sum base) / N``; ``se`` from the spread of the
        per-batch differences, ``sigma^2 = sum_b (d_b - n_b diff)^2 / n_b / (B - 1)``,
        ``se = sqrt(sigma^2 / N)``; a t interval with ``B - 1`` degrees of freedom.
    """
    d = np.asarray(variant_counts, float) - np.asarray(base_counts, float)
    n = np.asarray(sizes, float)
    total = n.sum()
    diff = d.sum() / total
    b = len(n)
    if b < 2:
        return diff, float("nan"), float("nan"), float("nan")
    sigma2 = float(((d - n * diff) ** 2 / n).sum() / (b - 1))
    se = math.sqrt(sigma2 / total)
    t = float(stats.t.ppf(0.975, b - 1))
    return diff, se, diff - t * se, diff + t * se


def resolve_variant(rs: Ruleset, ros: Roster, base: Any, variant: Any, *, from_text: bool = False) -> tuple[Any, Any, str]:
    """The base and variant profiles and the variant's display name.

    ``variant`` is a unit name of the roster, a unit profile, or a mapping of
    field changes applied to the base (``{"defence": 3}``).
    """
    base_unit = ros.unit(base) if isinstance(base, str) else base
    if not isinstance(base_unit, rs.unit_type):
        raise InputError(f"base: expected a {rs.id} unit or a unit name, got {type(base_unit).__name__}")
    if isinstance(variant, Mapping):
        variant = check_mapping(variant, "variant")  # field names are strings (a key 3 is refused, not crashed on)
        if not variant:
            raise InputError("variant: no field changes given (expected FIELD=VALUE[,FIELD=VALUE...] or a unit name)")
        unit = rs.with_overrides(base_unit, variant, Where("variant", base_unit.name), from_text=from_text)
        label = f"{base_unit.name}[" + ",".join(f"{k}={v}" for k, v in variant.items()) + "]"
        return base_unit, unit, label
    unit = ros.unit(variant) if isinstance(variant, str) else variant
    if not isinstance(unit, rs.unit_type):
        raise InputError(f"variant: expected a {rs.id} unit, a unit name or field changes, got {type(unit).__name__}")
    label = unit.name if unit.name != base_unit.name or unit == base_unit else f"{unit.name} (variant)"
    return base_unit, unit, label


def _side_numbers(t: Tally, role: str) -> tuple[int, int, float, float]:
    """(wins, losses, damage dealt, damage taken) of the unit playing ``role``."""
    n = t.trials
    if role == "attacker":
        return int(t.wins[1]), int(t.wins[2]), t.damage_to_defender.total / n, t.damage_to_attacker.total / n
    return int(t.wins[2]), int(t.wins[1]), t.damage_to_attacker.total / n, t.damage_to_defender.total / n


def compare(
    ruleset: str | Ruleset,
    base: Any,
    variant: Any,
    opponents: Sequence[str] | None = None,
    *,
    roster: Roster | str | Path | None = None,
    roles: Sequence[str] = SIDES,
    trials: int = MIN_BATCHES * BLOCK_TRIALS,
    seed: SeedLike = None,
    rounds: Rounds | str | None = None,
    max_rounds: int | None = None,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    from_text: bool = False,
    paired: bool = True,
    budget: Any = None,
    fair: bool = False,
    fair_trials: int = 32_768,
    fair_half_width: float | None = 0.01,
    executor: Any = None,
    store: Any = None,
    rules_defaults: bool = False,
    fielding: str | None = None,
    method: str = "auto",
) -> pd.DataFrame:
    """Measure how a change to a unit moves its results, on common random numbers.

    Parameters
    ----------
    ruleset : str or Ruleset
    base : str or unit profile
    variant : str, unit profile or mapping
        Another unit, or field changes to the base (``{"defence": 3}``).
    opponents : sequence of str, optional
        Default: every unit of the roster (the base itself included).
    roster : Roster, path or None
    roles : sequence of {"attacker", "defender"}
        The base/variant's roles; default both.
    trials : int
        Fights per opponent, role and unit.
    seed, rounds, max_rounds, states, overrides, options, workers, from_text, rules_defaults
        As in :func:`analysis.runs.matrix.matchup_matrix` (the ruleset's balance settings unless told otherwise).
    progress : callable, optional
        ``progress(runs_done, runs_total)``.
    paired : bool
        ``False`` runs the variant on an independent stream (to show what pairing saves).
    budget : number, "none" or None
        Equal-points fights (default the roster's budget): each side fields
        ``floor(budget / points)`` copies.
    fair : bool
        Also price the base and the variant (:mod:`analysis.runs.pricing`, the one
        fair-price model) against the opponents: ``frame.attrs["fair"]``.
    fair_trials, fair_half_width : int, float
        Precision of the fights behind the fair prices (as a matrix cell; as in :func:`analysis.runs.sweep.sweep`).
    executor, store : optional
        As in :func:`analysis.runs.matrix.matchup_matrix`.
    method : {"auto", "exact", "mc"}
        ``"exact"`` answers each opponent's base and variant cells from their
        Markov chains (the difference is then exact: ``diff_se`` 0, ``method``
        ``"exact"``); ``"auto"`` (default) does so where both cells have a chain
        cheaper than their fights (:mod:`analysis.runs.methods`); ``"mc"`` always
        fights. The fair prices (``fair=True``) follow the same setting.

    Returns
    -------
    pandas.DataFrame
        One row per opponent and role, then ``opponent == "(all)"`` rows per role
        (and ``role == "both"``) averaging over opponents with equal weight (a t
        interval on Welch-Satterthwaite degrees of freedom of the batch means).
        ``diff = p_win_variant - p_win_base`` with its paired standard error,
        95% interval and, for contrast, the standard error two independent runs
        of the same size would have (``diff_se_independent``). ``frame.attrs``
        holds ``base``, ``variant`` and ``paired``.
    """
    rs = get_ruleset(ruleset)
    check_run_arguments(states=states, overrides=overrides, options=options, progress=progress,
                        from_text=from_text, store=store)
    ros = resolve_roster(rs, roster)
    method = check_method(method)
    run = check_run_settings(rs, rounds, max_rounds, trials, states=states, rules_defaults=rules_defaults)
    rounds, max_rounds, states = run.rounds, run.max_rounds, run.states
    check_fair_settings(fair, fair_trials, fair_half_width)
    if not isinstance(paired, (bool, np.bool_)):
        raise InputError(f"paired: got {paired!r:.60}, expected True or False")
    roles = check_names(roles, "roles")
    if not roles or any(r not in SIDES for r in roles):
        raise InputError(f"roles (--role): got {roles!r:.60}, expected attacker, defender or both")
    base_unit, variant_unit, label = resolve_variant(rs, ros, base, variant, from_text=from_text)
    opps = list(ros.names) if opponents is None else check_names(opponents, "opponents")
    if not opps:
        raise InputError("compare: no opponents")
    for o in opps:
        ros.unit(o)
    batch = batch_trials_for(int(trials))
    check_kept_batches("compare", 2 * len(opps) * len(roles), int(trials), batch)
    root = root_sequence(seed)
    in_force = budget_in_force(rs, ros, budget)
    plan_budget = PlanBudget("compare")

    jobs, notes = [], {}
    for o in opps:
        for role in roles:
            stream = cell_stream(base_unit.name, o) if role == "attacker" else cell_stream(o, base_unit.name)
            for which, unit in (("base", base_unit), ("variant", variant_unit)):
                a, d = (unit, o) if role == "attacker" else (o, unit)
                try:
                    matchup, plan = sim.build_matchup(rs, a, d, states=states, overrides=overrides, options=options,
                                                      roster=ros, from_text=from_text, budget=in_force or "none")
                except MatchupError as e:
                    notes[(o, role)] = str(e)
                    continue
                plan_budget.add(rs, plan)
                s = stream if (paired or which == "base") else stream + (1,)
                jobs.append(CellJob((o, role, which), plan, s, int(trials), None, True, batch, identity=matchup))
    jobs = [j for j in jobs if j.key[:2] not in notes]
    # base and variant against one opponent in one role are exact together or Monte Carlo together
    jobs = grouped_methods(rs, jobs, lambda j: j.key[:2], lambda j: f"{j.key[2]} v {j.key[0]} ({j.key[1]})",
                           rounds=rounds, max_rounds=int(max_rounds), method=method)
    if not jobs:
        raise InputError(f"compare: {base_unit.name} can fight none of the opponents ({next(iter(notes.values()))})")
    done = run_jobs(rs, root, jobs, rounds=rounds, max_rounds=int(max_rounds), workers=workers, progress=progress,
                    executor=executor, store=store)

    rows = []
    for o in opps:
        for role in roles:
            if (o, role) in notes:
                rows.append({"opponent": o, "role": role, "trials": 0, "batches": 0, "note": notes[(o, role)]})
                continue
            rows.append(_row(o, role, done[(o, role, "base")], done[(o, role, "variant")]))
    frame = pd.DataFrame(rows).reindex(columns=COMPARE_COLUMNS)
    ok = frame[(frame["trials"] > 0) | (frame["method"] == "exact")]
    for role in roles + (["both"] if len(roles) > 1 else []):
        part = ok if role == "both" else ok[ok["role"] == role]
        rows.append(_overall(part, role))
    frame = pd.DataFrame(rows).reindex(columns=COMPARE_COLUMNS)
    frame["trials"] = frame["trials"].astype(np.int64)
    frame["batches"] = frame["batches"].astype(np.int64)
    frame["note"] = frame["note"].fillna("")
    frame.attrs.update({"base": base_unit.name, "variant": label, "paired": paired,
                        "seed_entropy": root.entropy, "ruleset": rs.id, "budget": in_force,
                        "resumed_cells": sum(r.from_store for r in done.values())})
    if fair:
        from .fielding import RunContext
        from .pricing import price_variants

        context = RunContext(rs.id, ros, root, rounds, int(max_rounds), dict(states or {}), dict(overrides or {}),
                             dict(options or {}), fair_half_width, int(fair_trials), workers, from_text, in_force,
                             executor, store, check_fielding(fielding), method)
        table, _ = price_variants(context, base_unit, [base_unit, variant_unit], ["base", "variant"], opps)
        frame.attrs["fair"] = table
    return frame


def _exact_row(opponent: str, role: str, base: JobResult, variant: JobResult) -> dict[str, Any]:
    """Both cells exact: the differences themselves, with no error (nothing sampled, no batches)."""
    wb, lb, _, dealt_b, taken_b = exact_side(base.exact, role)
    wv, lv, _, dealt_v, taken_v = exact_side(variant.exact, role)
    return {
        "opponent": opponent, "role": role, "trials": 0, "batches": 0, "method": "exact",
        "p_win_base": wb, "p_win_variant": wv, "diff": wv - wb, "diff_se": 0.0, "diff_lo": wv - wb,
        "diff_hi": wv - wb, "diff_se_independent": 0.0,
        "p_loss_base": lb, "p_loss_variant": lv, "loss_diff": lv - lb, "loss_diff_se": 0.0,
        "damage_dealt_base": dealt_b, "damage_dealt_variant": dealt_v,
        "damage_taken_base": taken_b, "damage_taken_variant": taken_v, "note": "",
    }


def _row(opponent: str, role: str, base: JobResult, variant: JobResult) -> dict[str, Any]:
    if base.exact is not None and variant.exact is not None:
        return _exact_row(opponent, role, base, variant)
    assert base.blocks is not None and variant.blocks is not None
    sizes = [b.trials for b in base.blocks]
    bw = [_side_numbers(b, role)[0] for b in base.blocks]
    vw = [_side_numbers(b, role)[0] for b in variant.blocks]
    bl = [_side_numbers(b, role)[1] for b in base.blocks]
    vl = [_side_numbers(b, role)[1] for b in variant.blocks]
    diff, se, lo, hi = paired_difference(bw, vw, sizes)
    loss_diff, loss_se, _, _ = paired_difference(bl, vl, sizes)
    n = base.tally.trials
    wb, lb, dealt_b, taken_b = _side_numbers(base.tally, role)
    wv, lv, dealt_v, taken_v = _side_numbers(variant.tally, role)
    pb, pv = wb / n, wv / n
    return {
        "opponent": opponent, "role": role, "trials": n, "batches": len(sizes),
        "p_win_base": pb, "p_win_variant": pv, "diff": diff, "diff_se": se, "diff_lo": lo, "diff_hi": hi,
        "diff_se_independent": math.sqrt((pb * (1 - pb) + pv * (1 - pv)) / n),
        "p_loss_base": lb / n, "p_loss_variant": lv / n, "loss_diff": loss_diff, "loss_diff_se": loss_se,
        "damage_dealt_base": dealt_b, "damage_dealt_variant": dealt_v,
        "damage_taken_base": taken_b, "damage_taken_variant": taken_v, "note": "", "method": "mc",
    }


def _overall(part: pd.DataFrame, role: str) -> dict[str, Any]:
    """Equal-weight mean over opponents; their streams are independent, so variances add."""
    k = len(part)
    if k == 0:
        return {"opponent": "(all)", "role": role, "trials": 0, "batches": 0, "note": "no opponent could fight"}
    mean = lambda c: float(part[c].mean())  # noqa: E731
    rss = lambda c: float(np.sqrt((part[c] ** 2).sum()) / k)  # noqa: E731
    diff, se = mean("diff"), rss("diff_se")
    # each opponent's error comes from its own B - 1 batch means: Welch-Satterthwaite pools their degrees
    # of freedom (the normal quantile would cover about 93.5% with 16 batches, not 95%)
    df = welch_df(part["diff_se"].to_numpy(float) / k, part["batches"].to_numpy(float) - 1)
    t = float(stats.t.ppf(0.975, df)) if np.isfinite(df) and df > 0 else Z95
    return {
        "opponent": "(all)", "role": role, "trials": int(part["trials"].sum()), "batches": int(part["batches"].sum()),
        "p_win_base": mean("p_win_base"), "p_win_variant": mean("p_win_variant"), "diff": diff, "diff_se": se,
        "diff_lo": diff - t * se, "diff_hi": diff + t * se, "diff_se_independent": rss("diff_se_independent"),
        "p_loss_base": mean("p_loss_base"), "p_loss_variant": mean("p_loss_variant"),
        "loss_diff": mean("loss_diff"), "loss_diff_se": rss("loss_diff_se"),
        "damage_dealt_base": mean("damage_dealt_base"), "damage_dealt_variant": mean("damage_dealt_variant"),
        "damage_taken_base": mean("damage_taken_base"), "damage_taken_variant": mean("damage_taken_variant"),
        "note": "", "method": "exact" if "method" in part and (part["method"] == "exact").all() else "mc",
    }
