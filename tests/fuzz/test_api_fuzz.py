"""Property: the public Python API returns a result or raises the library's own error class, nothing else.

Every argument of ``sim``'s public functions (and of the analysis entry points
:func:`analysis.runs.matrix.matchup_matrix`, :func:`analysis.runs.sweep.sweep`,
:func:`analysis.runs.compare.compare`) is drawn from valid values mixed with values of
the wrong type or out of range. A call either succeeds or raises
:class:`sim.MeleelabError` with a one-line message; a bare ``TypeError``,
``AttributeError``, ``KeyError`` or a NumPy error is a bug.

:func:`test_analysis_api_raises_only_the_library_error_class` does the same for
the public names of :mod:`analysis` that take tables, paths and results (the
balance metrics, ``balance_summary``, ``fair_points``, ``diff_runs``,
``build_report``, ``write_all``, ``marginal_value``, ``result_frame``, a run's
shared arguments) and for ``FightResult.extra``/``damage``: frames missing
columns or holding text, dicts, None, strings, paths that are not report folders
(issue 30, item 9: 207 of 1,579 such calls raised raw errors).
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim
from analysis.runs.compare import compare
from analysis.runs.matrix import matchup_matrix
from analysis.runs.sweep import sweep

from .strategies import RULESET_IDS, one_in, roster_files

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("MELEELAB_FUZZ_EXAMPLES", "0")) or None
#: A third of each property's examples in the default suite (five minutes on two cores); all of them with
#: MELEELAB_FUZZ_FULL=1, which .ci/run's second step sets.
FULL = os.environ.get("MELEELAB_FUZZ_FULL") == "1"


def examples(full: int) -> int:
    return EXAMPLES or (full if FULL else full // 3)

#: Values of the wrong type (or shape) for any argument.
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.binary(max_size=4), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.just(object()), st.just(np.int64(3)),
    st.just(np.float32(0.5)), st.just({"attacker": "x"}), st.just({"attacker": {"x": []}}), st.just({3: 4}),
    st.just(("a", 1)), st.just(Path("/nonexistent.toml")), st.just(np.array([1, 2])),
)


def arg(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly valid values, sometimes (one in ten) junk."""
    return st.integers(0, 9).flatmap(lambda k: JUNK if k == 9 else valid)


def side_mapping(rid: str, kind: str) -> st.SearchStrategy[Any]:
    rs = sim.get_ruleset(rid)
    if kind == "states":
        pairs = [(side, s.name) for s in rs.state_fields for side in s.sides]
    else:
        pairs = [(side, f.name) for f in rs.unit_fields if f.name != "name" for side in ("attacker", "defender")]
    if not pairs:
        return st.just({})
    values = st.sampled_from([True, False, 0, 1, 3, -1, "3", "x", None, 2.5])
    return st.lists(st.tuples(st.sampled_from(pairs), values), max_size=2).map(
        lambda items: {side: {name: v for (s2, name), v in items if s2 == side} for (side, _), _ in items})


def options(rid: str) -> st.SearchStrategy[Any]:
    fields = [f for f in sim.get_ruleset(rid).option_fields if f.kind != "table"]
    values = st.sampled_from([True, False, 0, 1, -1, "x", "custom", "wide", "user", "2d6", None, "c.toml"])
    return st.dictionaries(st.sampled_from([f.name for f in fields] + ["warp"]), values, max_size=2)


@st.composite
def calls(draw: Callable, tmp: Path) -> tuple[str, Callable[[], Any]]:
    rid = draw(st.sampled_from(RULESET_IDS))
    roster_choice = draw(st.integers(0, 3))
    if roster_choice == 3:
        _, suffix, text, names = draw(roster_files(rid))
        path = tmp / f"r{suffix}"
        path.write_text(text, encoding="utf-8")
        roster: Any = str(path)
    else:
        names = sim.default_roster(rid).names[:3]
        roster = None
    roster = draw(arg(st.just(roster)))
    name = arg(st.sampled_from(names))
    ruleset = arg(st.just(rid)) if one_in(draw, 6) else st.just(rid)
    common = {
        "seed": arg(st.integers(0, 2**64)),
        "rounds": arg(st.sampled_from([None, 1, 2, "end", "3", 0, 1001])),
        "max_rounds": arg(st.sampled_from([1, 5, 50, 1000, 0, 1001])),
        "states": arg(side_mapping(rid, "states")),
        "overrides": arg(side_mapping(rid, "overrides")),
        "options": arg(options(rid)),
        "roster": st.just(roster),
        # mostly one unit a side: the shipped rosters' own budgets field group fights, slow for tiny runs
        "budget": arg(st.sampled_from(["none", "none", "none", 60, 60.5, -1, "x", float("nan")])),
    }
    fn = draw(st.sampled_from(["fight", "fight", "unit", "build_matchup", "parse_settings", "load_roster",
                               "roster_from_dict", "get_ruleset", "matrix", "sweep", "compare"]))
    kw = draw(st.fixed_dictionaries({}, optional=common)) if fn in ("fight", "matrix", "sweep", "compare") else {}
    if fn in ("fight", "matrix", "sweep", "compare"):
        kw.setdefault("budget", "none")
    if fn == "fight":
        kw.update(draw(st.fixed_dictionaries({}, optional={
            "trials": arg(st.integers(-2, 3000)), "workers": arg(st.sampled_from([1, 0, -1, 2, 64])),
            "stream": arg(st.tuples(st.integers(0, 2**40)))})))
        a, d, r = draw(name), draw(name), draw(ruleset)
        return fn, lambda: sim.fight(r, a, d, **kw)
    if fn == "unit":
        base = dict(sim.get_ruleset(rid).unit_to_dict(sim.default_roster(rid).units[sim.default_roster(rid).names[0]]))
        base = {k: v for k, v in base.items() if v is not None}
        for key in draw(st.lists(st.sampled_from(sorted(base) + ["speed"]), max_size=2)):
            base[key] = draw(JUNK)
        opts = draw(arg(options(rid)))
        return fn, lambda: sim.unit(rid, options=opts, **base)
    if fn == "build_matchup":
        kw = draw(st.fixed_dictionaries({}, optional={k: common[k] for k in ("states", "overrides", "options",
                                                                             "roster")}))
        a, d = draw(name), draw(name)
        return fn, lambda: sim.build_matchup(rid, a, d, **kw)
    if fn == "parse_settings":
        items = draw(arg(st.lists(st.sampled_from(["attacker.charging=true", "x=1", "defender.ws=3", "nonsense",
                                                   "a.b=1", "=", "attacker.=1"]), max_size=3)))
        return fn, lambda: sim.parse_settings(rid, items)
    if fn == "load_roster":
        path = draw(arg(st.just(roster if isinstance(roster, str) else "/nonexistent.toml")))
        expected = draw(arg(st.sampled_from([None, rid])))
        return fn, lambda: sim.load_roster(path, expected)
    if fn == "roster_from_dict":
        data = draw(arg(st.fixed_dictionaries({"ruleset": arg(st.just(rid)),
                                               "unit": arg(st.just([dict(u) for u in _units(rid)]))},
                                              optional={"options": arg(options(rid)), "description": JUNK})))
        return fn, lambda: sim.roster_from_dict(data)
    if fn == "get_ruleset":
        value = draw(arg(st.sampled_from(RULESET_IDS + ["chess"])))
        return fn, lambda: sim.get_ruleset(value)
    small = {"workers": st.just(1)}
    if fn == "matrix":
        kw.update(draw(st.fixed_dictionaries({}, optional={
            "max_trials": arg(st.integers(-1, 300)), "half_width": arg(st.sampled_from([None, 0.2, 0.5, 0.0])),
            "units": arg(st.lists(st.sampled_from(names), max_size=3)), **small})))
        kw.setdefault("max_trials", 100)
        r = draw(ruleset)
        return fn, lambda: matchup_matrix(r, **kw)
    if fn == "sweep":
        ints = [f for f in sim.get_ruleset(rid).unit_fields if f.kind == "int" and f.lo is not None]
        if rid == "grimdark":
            from sim.rulesets.grimdark.units import PROFILE_FIELDS

            ints = [f for f in PROFILE_FIELDS if f.kind == "int" and f.lo is not None]
        f = draw(st.sampled_from(ints))
        field = draw(arg(st.just(f.name)))
        hi = int(f.hi) if f.hi is not None else int(f.lo) + 5
        values = draw(arg(st.lists(st.integers(int(f.lo), hi), min_size=1, max_size=3)))
        kw.update(draw(st.fixed_dictionaries({}, optional={
            "trials": arg(st.integers(-1, 300)), "side": arg(st.sampled_from(["attacker", "defender"])), **small})))
        kw.setdefault("trials", 100)
        u, o = draw(name), draw(name)
        return fn, lambda: sweep(rid, u, field, values, [o] if isinstance(o, str) else o, **kw)
    variant = draw(arg(st.sampled_from([*names, {"points": 10}, {"x": 1}, {}])))
    kw.update(draw(st.fixed_dictionaries({}, optional={"trials": arg(st.integers(-1, 300)), **small})))
    kw.setdefault("trials", 100)
    b = draw(name)
    return fn, lambda: compare(rid, b, variant, **kw)


def _units(rid: str) -> list[dict[str, Any]]:
    from .strategies import base_units

    return base_units(rid)[:2]


OUTCOMES: Counter[str] = Counter()


@settings(max_examples=examples(500), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_api_raises_only_the_library_error_class(data: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fn, call = data.draw(calls(Path(tmp)))
        try:
            call()
            OUTCOMES[f"{fn}: ok"] += 1
        except sim.MeleelabError as e:
            message = str(e)
            assert message.strip() and "\n" not in message, (fn, message)
            OUTCOMES[f"{fn}: error"] += 1


def teardown_module() -> None:
    if "folder" in _FIXTURES:
        import shutil

        shutil.rmtree(_FIXTURES["folder"], ignore_errors=True)
    if OUTCOMES:
        print(f"\nAPI fuzz: {sum(OUTCOMES.values())} calls: "
              + ", ".join(f"{k} {v}" for k, v in sorted(OUTCOMES.items())))


# ------------------------------------------------------------------ the analysis entry points (issue 30, item 9)
_FIXTURES: dict[str, Any] = {}


def _fixtures() -> dict[str, Any]:
    """A small matrix, sweep, fight and report folder, made once: the valid values the junk is mixed with."""
    if not _FIXTURES:
        import pandas as pd

        from analysis.report.build import build_report

        m = matchup_matrix("mecha", units=["AFS", "Nutrocker", "Gustav"], max_trials=300, seed=1, budget="none")
        folder = Path(tempfile.mkdtemp(prefix="meleelab-fuzz-"))
        build_report("mecha", units=["AFS", "Nutrocker", "Gustav"], max_trials=300, budget="none").write(folder)
        long = m.long
        _FIXTURES.update(
            matrix=m, long=long, payoff=m.payoff_matrix(), folder=folder,
            sweep=sweep("mecha", "AFS", "defence", [1, 2], ["Nutrocker"], trials=300, seed=1, budget="none"),
            result=sim.fight("mecha", "AFS", "Nutrocker", trials=300, seed=1),
            frames=[long.drop(columns=[c]) for c in ("attacker", "defender", "p_attacker", "p_defender", "p_draw",
                                                      "trials", "p_attacker_se", "points_attacker")]
            + [long.assign(p_attacker="x"), long.assign(attacker=3), long.iloc[:0], long.assign(trials=-1),
               long.assign(p_attacker=np.nan), pd.DataFrame({"a": [1]}), m.wide(), long.astype(str),
               long.assign(p_attacker=None), long.set_index("attacker")],
        )
    return _FIXTURES


#: Values that are not a matrix, a frame, a path or a result: of every kind a caller might pass by mistake.
NOT_A_TABLE = st.sampled_from([None, "mecha", 3, 2.5, [1, 2], {"attacker": ["AFS"]}, (), b"x", object(),
                               np.array([[0.5]]), True])


def _table_like(kind: str) -> st.SearchStrategy[Any]:
    fx = _fixtures()
    valid = {"matrix": [fx["matrix"], fx["long"]], "payoff": [fx["payoff"]], "sweep": [fx["sweep"]],
             "path": [fx["folder"], str(fx["folder"])]}[kind]
    wrong = [*fx["frames"], fx["payoff"].iloc[:, :2], fx["payoff"].astype(str), fx["sweep"].drop(columns=["value"]),
             fx["sweep"].iloc[:0], fx["long"].to_dict(), fx["folder"] / "report.html", Path("/nonexistent"),
             fx["result"], fx["sweep"].assign(trials="x")]
    return st.one_of(st.sampled_from(valid), st.sampled_from(wrong), NOT_A_TABLE)


@st.composite
def analysis_calls(draw: Callable) -> tuple[str, Callable[[], Any]]:
    import analysis

    fx = _fixtures()
    fn = draw(st.sampled_from(["payoff_matrix", "side_averaged", "bradley_terry", "nash_equilibrium",
                               "dominated_units", "intransitive_triples", "balance_summary", "fair_points",
                               "diff_runs", "build_report", "marginal_value", "result_frame", "extra", "damage",
                               "matchup_matrix", "sweep", "compare", "balance_pair", "write_all"]))
    wrong = st.one_of(JUNK, NOT_A_TABLE, _table_like("matrix"), st.just(lambda *a: None))
    if fn in ("matchup_matrix", "sweep", "compare"):  # one argument of the wrong kind, the others valid and small
        junk = draw(st.sampled_from(["states", "overrides", "options", "progress", "from_text", "store", "roster",
                                     "seed", "rounds", "workers", "executor"]))
        kw: dict[str, Any] = {"budget": "none", junk: draw(wrong)}
        if fn == "matchup_matrix":
            return fn, lambda: analysis.matchup_matrix("mecha", units=["AFS", "Nutrocker"], max_trials=100, **kw)
        if fn == "sweep":
            return fn, lambda: analysis.sweep("mecha", "AFS", "defence", [1, 2], ["Nutrocker"], trials=100, **kw)
        return fn, lambda: analysis.compare("mecha", "AFS", {"defence": 3}, ["Nutrocker"], trials=100, **kw)
    if fn == "balance_pair":
        field, side = draw(st.sampled_from([("defence", draw(wrong)), (draw(wrong), "both")]))
        return fn, lambda: analysis.balance_pair("mecha", "AFS", "Nutrocker", field, side=side, trials=100)
    if fn == "write_all":  # (never a text path: it would be written, relative to the current folder)
        not_a_path = wrong.filter(lambda v: not isinstance(v, (str, os.PathLike)))
        out, which = draw(st.sampled_from([(draw(not_a_path), ["mecha"]), (fx["folder"] / "all", draw(wrong))]))
        return fn, lambda: analysis.write_all(out, rulesets=which, max_trials=100)
    z = arg(st.sampled_from([1.96, 3.0, 0.0]))
    if fn in ("payoff_matrix", "side_averaged", "bradley_terry", "dominated_units", "intransitive_triples",
              "balance_summary", "fair_points"):
        m = draw(_table_like("matrix"))
        kw = {"payoff_matrix": {"value": arg(st.sampled_from(["payoff", "p_win", "score"]))},
              "bradley_terry": {"full": arg(st.booleans())}, "dominated_units": {"z": z},
              "intransitive_triples": {"z": z}, "balance_summary": {"seed": arg(st.integers(0, 5))},
              "fair_points": {"seed": arg(st.integers(0, 5))}}.get(fn, {})
        drawn = draw(st.fixed_dictionaries({}, optional=kw))
        return fn, lambda: getattr(analysis, fn)(m, **drawn)
    if fn == "nash_equilibrium":
        p = draw(_table_like("payoff"))
        return fn, lambda: analysis.nash_equilibrium(p)
    if fn == "diff_runs":
        old, new = draw(_table_like("path")), draw(_table_like("path"))
        kw = draw(st.fixed_dictionaries({}, optional={"z": z}))
        return fn, lambda: analysis.diff_runs(old, new, **kw)
    if fn == "build_report":
        junk = draw(st.sampled_from(["ruleset", "roster", "units", "max_trials", "feature", "baseline", "seed",
                                     "half_width"]))
        kw = {"units": ["AFS", "Nutrocker"], "max_trials": 100, "budget": "none"}
        kw[junk] = draw(st.one_of(JUNK, _table_like("matrix")))
        rid = kw.pop("ruleset", "mecha")
        return fn, lambda: analysis.build_report(rid, **kw)
    if fn == "marginal_value":
        s = draw(_table_like("sweep"))
        return fn, lambda: analysis.marginal_value(s)
    if fn == "result_frame":
        r = draw(st.one_of(st.just(fx["result"]), NOT_A_TABLE, _table_like("matrix")))
        return fn, lambda: analysis.result_frame(r)
    value = draw(st.one_of(st.sampled_from(["attacker", "defender", "nope", ""]), JUNK))
    if fn == "extra":
        return fn, lambda: fx["result"].extra(value)
    return fn, lambda: fx["result"].damage(value)


@settings(max_examples=examples(300), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_analysis_api_raises_only_the_library_error_class(data: Any) -> None:
    """Frames missing columns, dicts, None, strings, paths that are not report folders: the library's error."""
    fn, call = data.draw(analysis_calls())
    try:
        call()
        OUTCOMES[f"{fn}: ok"] += 1
    except sim.MeleelabError as e:
        message = str(e)
        assert message.strip() and "\n" not in message, (fn, message)
        OUTCOMES[f"{fn}: error"] += 1
