"""The conformance kit: :func:`check_ruleset` runs every check on one ruleset and a roster."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ..api import build_matchup
from ..engine import run_tally
from ..errors import InputError, MatchupError
from ..outcomes import DRAW, Outcomes, TrialOutcome
from ..plugins import check_protocol
from ..rng import BLOCK_TRIALS, block_rng, block_sizes
from ..roster import Roster, default_roster, load_roster, roster_from_dict
from ..ruleset import END, Rounds, Ruleset, parse_rounds
from ..rulesets import get_ruleset
from ..tally import Tally
from ._dice import DiceAccessError, GuardedDice, ReplayDice
from ._exact import check_exact
from ._report import ConformanceReport
from ._settings import check_bad_values, check_setting, check_units, declared_settings
from ._stats import detectable_shift, histogram, homogeneity, mean_difference

__all__ = ["check_ruleset", "choose_pairs"]

Pair = tuple[str, str]
Variant = tuple[Rounds, int]
_MEAN_TESTED = ("damage_to_attacker", "damage_to_defender", "rounds")


def check_ruleset(
    ruleset: Ruleset | str,
    roster: Roster | str | Path | Mapping[str, Any] | None = None,
    *,
    trials: int = 20_000,
    reference_trials: int = 2_000,
    pairs: int | Sequence[Pair] | None = None,
    rounds: Sequence[Rounds | Variant] | None = None,
    max_rounds: int = 50,
    seed: int = 20240601,
    alpha: float = 1e-4,
    workers: int = 2,
    replay: int = 25,
    settings: bool = True,
    raise_on_failure: bool = True,
    exact_work: int = 50_000_000,
) -> ConformanceReport:
    """Check that a ruleset keeps the protocol's promises, on every pair of a roster.

    The checks:

    * **protocol**: metadata, schema, outcome categories and the three methods
      (:func:`sim.plugins.check_protocol`);
    * **kernel vs reference**: on every pair and rounds setting, ``trials``
      kernel fights against ``reference_trials`` reference fights, chi-square
      tests of homogeneity on the winner, both sides' outcome categories, both
      sides' damage, rounds fought and every extra, and z-tests on mean damage
      and rounds. The tests share a family-wise level ``alpha`` (Bonferroni),
      half for the per-pair tests and half for one test per quantity pooled
      over all pairs (sums of chi-square), which catches a small bias that
      shows on every pair. Tolerances come from the sample sizes;
      ``report.settings["detectable_shift"]`` says what one pair can see;
    * **kernel vs exact**: where the ruleset has an exact chain for a pair and
      rounds setting (``exact_work`` not None), its :class:`~sim.exact.ExactOutcome`
      sums to 1 (check ``exact``) and the kernel's fights fit it: chi-square
      goodness of fit on the same quantities and z-tests on the means, a family
      of its own at level ``alpha`` (per pair and pooled over every pair);
    * **outcomes**: kernel arrays and reference results well formed (codes in
      range, damage non-negative, rounds within the limit, capped fights drawn);
    * **dice**: the reference reads dice only through ``dice.d6()`` and
      ``dice.d(sides)`` (anything else on the stream raises), and the first
      ``replay`` fights of each pair give the same result when their dice are
      replayed (a reference with randomness of its own does not);
    * **kernel randomness**: the kernel gives identical output on identically
      seeded generators (no global or fresh randomness);
    * **reproducible**: :func:`sim.engine.run_tally` gives identical tallies
      for 1 or ``workers`` processes, any block order and any blocks per task;
    * **settings**: every declared state (each side) and option, at
      representative values, written as ``--set`` text, is accepted on some pair
      and reaches the matchup unchanged; non-default values are also compared
      kernel against reference on that pair, under every rounds setting;
    * **bad values**: out-of-range, mistyped and unknown ``--set`` values are
      refused with a one-line :class:`~sim.errors.MeleelabError` naming the field;
    * **units round-trip**: every roster unit survives ``unit_to_dict`` then
      ``parse_unit``, and each field survives ``--set attacker.FIELD=...``.

    Parameters
    ----------
    ruleset : Ruleset or str
        The ruleset instance (need not be installed) or a registered id.
    roster : Roster, path, mapping or None
        Units to pair up; default the ruleset's shipped roster.
    trials, reference_trials : int
        Kernel and reference fights per pair and rounds setting.
    pairs : int, sequence of (str, str) or None
        ``None``: every ordered pair, mirror matches included. An int ``k``: the
        first ``k`` pairs of the roster's diagonals (unit i against unit i+1,
        then i against i, then i+2...), so every unit attacks and defends in
        each run of ``len(roster)`` pairs. Or the pairs themselves.
    rounds : sequence, optional
        Rounds settings, each ``rounds`` or ``(rounds, max_rounds)``. Default:
        the ruleset's default rounds, the other of ``1``/``"end"``, and
        ``("end", 2)`` so fights that hit the cap are checked too.
    max_rounds : int
    seed : int
        Root of every random stream the kit uses (fixed: the verdict is reproducible).
    alpha : float
        Family-wise false-alarm rate of the statistical tests.
    workers : int
        Processes for the reproducibility check (``1`` skips the multi-process part).
    replay : int
        Reference fights per pair and rounds setting whose dice are replayed.
    settings : bool
        Run the settings, bad-values and units checks.
    raise_on_failure : bool
        Raise :class:`ConformanceError` (an ``AssertionError``) listing every
        failure; otherwise return the report either way.
    exact_work : int
        Exact answers whose estimated work (``exact_work``, about a nanosecond a
        unit) is above this are not checked, so the kit stays quick.

    Returns
    -------
    ConformanceReport

    Examples
    --------
    In a plugin's tests::

        from sim.testing import check_ruleset
        from mygame.rules import RULESET

        def test_conformance():
            check_ruleset(RULESET)
    """
    start = time.perf_counter()
    rs = ruleset if isinstance(ruleset, Ruleset) else get_ruleset(ruleset)
    report = ConformanceReport(str(getattr(rs, "id", rs)))
    problems = check_protocol(rs)
    if report.add("protocol", report.ruleset, not problems, "; ".join(problems)):
        ros = _roster(rs, roster, report)
        if ros is not None:
            _run(rs, ros, report, trials=trials, reference_trials=reference_trials, pairs=pairs, rounds=rounds,
                 max_rounds=max_rounds, seed=seed, alpha=alpha, workers=workers, replay=replay, settings=settings,
                 exact_work=exact_work)
    report.seconds = time.perf_counter() - start
    return report.raise_for_failures() if raise_on_failure else report


def _roster(rs: Ruleset, roster: Any, report: ConformanceReport) -> Roster | None:
    try:
        if roster is None:
            ros = default_roster(rs)
        elif isinstance(roster, Roster):
            ros = roster
        elif isinstance(roster, Mapping):
            ros = roster_from_dict(roster, ruleset=rs)
        else:
            ros = load_roster(roster, rs)
    except InputError as e:
        report.add("roster", str(roster or "default roster"), False, str(e))
        return None
    ok = ros.ruleset == rs.id and len(ros) > 0
    report.add("roster", ros.source, ok, f"{len(ros)} units" if ok else f"a {ros.ruleset} roster with {len(ros)} units")
    return ros if ok else None


def choose_pairs(names: Sequence[str], pairs: int | Sequence[Pair] | None) -> list[Pair]:
    """The pairs to check (see :func:`check_ruleset`'s ``pairs``)."""
    if pairs is not None and not isinstance(pairs, int):
        return [tuple(p) for p in pairs]  # type: ignore[misc]
    n = len(names)
    shifts = [1 % n, 0] + [s for s in range(2, n)] if n > 1 else [0]
    out = [(names[i], names[(i + s) % n]) for s in dict.fromkeys(shifts) for i in range(n)]
    return out if pairs is None else out[: max(int(pairs), 1)]


def _variants(rs: Ruleset, rounds: Sequence[Any] | None, max_rounds: int) -> list[Variant]:
    if rounds is None:
        other: Rounds = 1 if rs.default_rounds == END else END
        rounds = [rs.default_rounds, other, (END, 2)]
    out: list[Variant] = []
    for r in rounds:
        v = (parse_rounds(r[0]), int(r[1])) if isinstance(r, tuple) else (parse_rounds(r), int(max_rounds))
        if v not in out:
            out.append(v)
    return out


def _rounds_text(v: Variant) -> str:
    return f"rounds={v[0]}" + (f" (max {v[1]})" if v[0] == END else "")


@dataclass
class _Family:
    """The statistical tests of one run, decided together at a family-wise level."""

    name: str = "kernel vs reference"
    tests: list[tuple[str, str, float, str]] = field(default_factory=list)  # subject, quantity, p, evidence
    pooled: dict[str, list[float]] = field(default_factory=dict)  # quantity -> [chi2, dof]

    def add_chi2(self, subject: str, quantity: str, chi2: float, dof: int, note: str = "") -> None:
        """A chi-square test (kept for the pooled test over every pair too)."""
        if dof > 0:
            p = float(stats.chi2.sf(chi2, dof))
            self.tests.append((subject, quantity, p, f"chi2 {chi2:.1f} on {dof} df{note}"))
            acc = self.pooled.setdefault(quantity, [0.0, 0])
            acc[0] += chi2
            acc[1] += dof

    def add_histograms(self, subject: str, quantity: str, kernel: np.ndarray, reference: np.ndarray) -> None:
        self.add_chi2(subject, quantity, *homogeneity(kernel, reference))
        if quantity in _MEAN_TESTED:
            p = mean_difference(kernel, reference)
            evidence = f"kernel {_mean(kernel):.4g}, reference {_mean(reference):.4g}"
            self.tests.append((subject, f"mean {quantity}", p, evidence))

    def decide(self, report: ConformanceReport, alpha: float) -> float:
        each = alpha / 2 / max(len(self.tests), 1)
        by_subject: dict[str, list[tuple[str, float, str]]] = {}
        for subject, q, p, ev in self.tests:
            by_subject.setdefault(subject, []).append((q, p, ev))
        for subject, tests in by_subject.items():
            bad = [f"{q} p={p:.2g} ({ev})" for q, p, ev in tests if p < each]
            worst = min(p for _, p, _ in tests)
            report.add(self.name, subject, not bad, "; ".join(bad) if bad else f"smallest p {worst:.2g}")
        pooled_each = alpha / 2 / max(len(self.pooled), 1)
        for q, (chi2, dof) in self.pooled.items():
            p = float(stats.chi2.sf(chi2, dof))
            report.add(f"{self.name} (pooled)", q, p >= pooled_each,
                       f"chi2 {chi2:.1f} on {dof} df over every pair, p={p:.2g}")
        return each


def _mean(h: np.ndarray) -> float:
    return float(np.arange(len(h)) @ h / max(h.sum(), 1))


def _run(rs: Ruleset, ros: Roster, report: ConformanceReport, *, trials: int, reference_trials: int, pairs: Any,
         rounds: Any, max_rounds: int, seed: int, alpha: float, workers: int, replay: int, settings: bool,
         exact_work: int) -> None:
    variants = _variants(rs, rounds, max_rounds)
    root = np.random.SeedSequence(seed)
    family = _Family()
    plans: dict[Pair, Any] = {}
    for a, d in choose_pairs(ros.names, pairs):
        try:
            plans[(a, d)] = build_matchup(rs, a, d, roster=ros, budget="none")[1]  # the units as listed
        except MatchupError as e:
            report.refused[(a, d)] = " ".join(str(e).split())
        except Exception as e:  # noqa: BLE001 - a crash in prepare is a finding, not the kit's end
            report.add("prepare", f"{a} v {d}", False, f"{type(e).__name__}: {' '.join(str(e).split())}")
    report.pairs = list(plans)
    report.settings = {"trials": trials, "reference_trials": reference_trials, "alpha": alpha, "seed": seed,
                       "rounds": [_rounds_text(v) for v in variants], "replay": replay, "workers": workers,
                       "exact_work": exact_work}
    if not plans:
        reasons = "; ".join(report.refused.values())[:300]
        report.add("pairs", ros.source, False, f"prepare refused every pair: {reasons}")
        return
    stream = iter(range(10**9))
    exact_family = _Family("kernel vs exact")

    def compare(subject: str, plan: Any, variant: Variant) -> None:
        k = next(stream)
        _compare(rs, plan, subject, variant, trials, reference_trials, block_rng(root, 0, k), block_rng(root, 1, k),
                 replay, family, report, (exact_family, exact_work))

    for v in variants:
        for a, d in report.pairs:
            compare(f"{a} v {d}, {_rounds_text(v)}", plans[(a, d)], v)
    first = report.pairs[0]
    if settings:
        declared = declared_settings(rs)
        for i, s in enumerate(declared):
            others = [o for o in declared if (o.kind, o.name, o.side) != (s.kind, s.name, s.side)]
            check_setting(rs, ros, report.pairs, i, s, others, report, lambda subject, pair, plan: [
                compare(f"{subject}, {_rounds_text(v)}", plan, v) for v in variants])
        check_bad_values(rs, ros, first, report)
        check_units(rs, ros, first, report)
    each = family.decide(report, alpha)
    if exact_family.tests:
        exact_family.decide(report, alpha)
    report.settings["detectable_shift"] = detectable_shift(trials, reference_trials, each)
    for i, v in enumerate(variants[:2]):
        _reproducible(rs, plans[first], f"{first[0]} v {first[1]}, {_rounds_text(v)}", v,
                      np.random.SeedSequence(seed, spawn_key=(2, i)), workers, report)


# ------------------------------------------------------------ one comparison
_FIELDS = ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender",
           "rounds", "capped")


def _outcomes_problem(rs: Ruleset, out: Any, n: int, variant: Variant) -> str | None:
    """Why a kernel's output breaks the Outcomes contract, or None."""
    if not isinstance(out, Outcomes):
        return f"simulate returned {type(out).__name__}, expected sim.ruleset.Outcomes"
    if set(out.extras) != {e.name for e in rs.extras}:
        return f"extras {sorted(out.extras)} differ from the declared {sorted(e.name for e in rs.extras)}"
    arrays = {k: np.asarray(getattr(out, k)) for k in _FIELDS} | {k: np.asarray(v) for k, v in out.extras.items()}
    if len({a.shape for a in arrays.values()}) != 1 or arrays["winner"].ndim != 1:
        return "the Outcomes arrays differ in shape: " + ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
    if out.weights is not None and (len(out.weights) != len(out.winner) or (np.asarray(out.weights) < 0).any()):
        return "weights must give a non-negative count for each row"
    if out.n_trials != n:
        return f"asked for {n} fights, the Outcomes hold {out.n_trials}"
    bad = [k for k, a in arrays.items() if a.dtype.kind not in ("iu" if k != "capped" else "b")]
    if bad:
        return "arrays of the wrong type: " + ", ".join(f"{k} ({arrays[k].dtype})" for k in bad)
    if out.weights is not None:  # rows that stand for no fight say nothing
        arrays = {k: a[np.asarray(out.weights) > 0] for k, a in arrays.items()}
    return _arrays_problem(rs, arrays, variant)


def _trials_problem(rs: Ruleset, rows: list[Any], variant: Variant) -> str | None:
    """Why the reference's results break the TrialOutcome contract, or None."""
    names = {e.name for e in rs.extras}
    for t in rows:
        if not isinstance(t, TrialOutcome):
            return f"resolve_one returned {type(t).__name__}, expected sim.ruleset.TrialOutcome"
        if set(t.extras) != names:
            return f"extras {sorted(t.extras)} differ from the declared {sorted(names)}"
    for t in rows[:50]:
        values = [getattr(t, k) for k in _FIELDS[:-1]] + list(t.extras.values())
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in values):
            return f"non-integer values in {t}"
    stacked = Outcomes.stack(rows)
    arrays = {k: np.asarray(getattr(stacked, k)) for k in _FIELDS} | stacked.extras
    return _arrays_problem(rs, arrays, variant)


def _arrays_problem(rs: Ruleset, a: dict[str, np.ndarray], variant: Variant) -> str | None:
    limit = variant[1] if variant[0] == END else int(variant[0])
    n_cat = len(rs.outcome_categories)
    extras = [a[e.name] for e in rs.extras]
    checks = [
        (~np.isin(a["winner"], (0, 1, 2)), "winner is not 0 (draw), 1 (attacker) or 2 (defender)"),
        ((a["category_attacker"] < 0) | (a["category_attacker"] >= n_cat)
         | (a["category_defender"] < 0) | (a["category_defender"] >= n_cat), f"a category outside 0..{n_cat - 1}"),
        ((a["damage_to_attacker"] < 0) | (a["damage_to_defender"] < 0), "negative damage"),
        ((a["rounds"] < 1) | (a["rounds"] > limit), f"rounds fought outside 1..{limit}"),
        (a["capped"] & ((variant[0] != END) | (a["rounds"] != limit) | (a["winner"] != DRAW)),
         "a capped fight must be rounds=end, reach max_rounds and be a draw"),
    ]
    checks += [(x < 0, f"extra {e.name} is negative") for e, x in zip(rs.extras, extras)]
    checks += [((x != 0) & (x != 1), f"extra {e.name} is a proportion but not 0 or 1")
               for e, x in zip(rs.extras, extras) if e.kind == "proportion"]
    for mask, what in checks:
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            return f"{what}: {', '.join(f'{k}={a[k][i]}' for k in a)}"
    return None


def _compare(rs: Ruleset, plan: Any, subject: str, variant: Variant, n_kernel: int, n_reference: int,
             rng_kernel: np.random.Generator, rng_reference: np.random.Generator, replay: int, family: _Family,
             report: ConformanceReport, exact: tuple[_Family, int] | None = None) -> None:
    rounds, max_rounds = variant
    try:
        out = rs.simulate(plan, n_kernel, rng_kernel, rounds, max_rounds)
        problem = _outcomes_problem(rs, out, n_kernel, variant)
    except Exception as e:  # noqa: BLE001
        problem = f"simulate raised {type(e).__name__}: {' '.join(str(e).split())}"
    if not report.add("outcomes", f"kernel, {subject}", problem is None, problem or ""):
        return
    if exact is not None:
        check_exact(rs, plan, subject, variant, out, exact[0], report, exact[1])
    dice = GuardedDice(rng_reference)
    rows: list[TrialOutcome] = []
    logs: list[list[tuple[int, int]]] = []
    try:
        for i in range(n_reference):
            if i < replay:
                GuardedDice.start_recording(dice)
            rows.append(rs.resolve_one(plan, dice, rounds, max_rounds))
            if i < replay:
                logs.append(GuardedDice.stop_recording(dice))
    except DiceAccessError as e:
        report.add("dice", subject, False, str(e))
        return
    except Exception as e:  # noqa: BLE001
        report.add("outcomes", f"reference, {subject}", False, f"resolve_one raised {type(e).__name__}: {e}")
        return
    report.dice |= GuardedDice.sides_of(dice)
    problem = _trials_problem(rs, rows, variant)
    if not report.add("outcomes", f"reference, {subject}", problem is None, problem or ""):
        return
    report.add("dice", subject, *_replay(rs, plan, rows, logs, variant))
    ref = Outcomes.stack(rows)
    quantities = ["winner", "category_attacker", "category_defender", "damage_to_attacker", "damage_to_defender",
                  "rounds"]
    for q in quantities:
        family.add_histograms(subject, q, histogram(getattr(out, q), out.weights), histogram(getattr(ref, q)))
    for e in rs.extras:
        family.add_histograms(subject, f"extra {e.name}", histogram(out.extras[e.name], out.weights),
                              histogram(ref.extras[e.name]))


def _replay(rs: Ruleset, plan: Any, rows: list[TrialOutcome], logs: list[list[tuple[int, int]]],
            variant: Variant) -> tuple[bool, str]:
    for k, log in enumerate(logs):
        dice = ReplayDice(log)
        try:
            again = rs.resolve_one(plan, dice, *variant)
        except DiceAccessError as e:
            return False, f"fight {k + 1}: {e} (the reference has randomness of its own)"
        if again.row() != rows[k].row():
            return False, (f"fight {k + 1}: the same {len(log)} dice gave {again.row()} then {rows[k].row()} "
                           "(the reference has randomness of its own)")
        if dice.remaining:
            return False, f"fight {k + 1}: on replay the reference read {dice.remaining} dice fewer"
    return True, f"{len(logs)} fights replayed from their dice"


# ----------------------------------------------------------- reproducibility
def _reproducible(rs: Ruleset, plan: Any, subject: str, variant: Variant, root: np.random.SeedSequence, workers: int,
                  report: ConformanceReport) -> None:
    rounds, max_rounds = variant
    a = Tally(len(rs.outcome_categories), tuple(e.name for e in rs.extras))
    b = Tally(len(rs.outcome_categories), tuple(e.name for e in rs.extras))
    try:
        a.add(rs.simulate(plan, 5_000, np.random.default_rng(root), rounds, max_rounds))
        b.add(rs.simulate(plan, 5_000, np.random.default_rng(root), rounds, max_rounds))
    except Exception as e:  # noqa: BLE001
        report.add("kernel randomness", subject, False, f"{type(e).__name__}: {e}")
        return
    report.add("kernel randomness", subject, a.same_as(b),
               "identically seeded generators gave the same fights" if a.same_as(b) else
               "identically seeded generators gave different fights: the kernel draws randomness not from rng")
    n = 2 * BLOCK_TRIALS + 777
    blocks = len(block_sizes(n))
    runs = {"one process, blocks in order, one block per task": dict(workers=1, blocks_per_task=1),
            "blocks in reverse order": dict(workers=1, block_order=list(range(blocks))[::-1]),
            "all blocks in one task": dict(workers=1, blocks_per_task=blocks)}
    if workers > 1:
        runs[f"{workers} processes, blocks out of order"] = dict(workers=workers, blocks_per_task=1,
                                                                 block_order=list(range(1, blocks)) + [0])
    tallies = {}
    for label, kw in runs.items():
        try:
            tallies[label] = run_tally(rs, plan, n, root, rounds=rounds, max_rounds=max_rounds, **kw)
        except Exception as e:  # noqa: BLE001
            report.add("reproducible", f"{subject}: {label}", False, f"{type(e).__name__}: {' '.join(str(e).split())}")
            return
    base_label, base = next(iter(tallies.items()))
    for label, t in list(tallies.items())[1:]:
        report.add("reproducible", f"{subject}: {label}", t.same_as(base),
                   f"same tally as {base_label}" if t.same_as(base) else f"the tally differs from {base_label}")
