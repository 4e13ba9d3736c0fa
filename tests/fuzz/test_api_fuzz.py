"""Property: the public Python API returns a result or raises the library's own error class, nothing else.

Every argument of ``sim``'s public functions (and of the analysis entry points
:func:`analysis.runs.matrix.matchup_matrix`, :func:`analysis.runs.sweep.sweep`,
:func:`analysis.runs.compare.compare`) is drawn from valid values mixed with values of
the wrong type or out of range. A call either succeeds or raises
:class:`sim.MeleelabError` with a one-line message; a bare ``TypeError``,
``AttributeError``, ``KeyError`` or a NumPy error is a bug.
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


@settings(max_examples=EXAMPLES or 500, deadline=None, derandomize=True, database=None,
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
    if OUTCOMES:
        print(f"\nAPI fuzz: {sum(OUTCOMES.values())} calls: "
              + ", ".join(f"{k} {v}" for k, v in sorted(OUTCOMES.items())))
