"""Property: every public function of ``analysis`` and ``sim`` raises the library's error, naming the argument,
for every bad argument (issue 38, item 9: 87 of 467 calls raised raw errors, mostly ``analysis.rebalance(lock=...,
max_iterations=..., progress=...)`` and the exported helpers).

The functions are found, not listed: every callable of ``analysis.__all__`` and ``sim.__all__``, the
functions of ``analysis.plots.__all__``, and the public methods that take arguments of the public result
classes (a class's constructor, a plain record, is not checked). Each gets a small valid call
(:data:`VALID`, seconds at most); every example replaces one or two of the parameters its signature
names with a wrong value (of the wrong type, out of range, or near a valid one) and calls it:

* it returns; or
* it raises :class:`sim.MeleelabError` with one line that names the argument (its name, its flag,
  or the value given);

anything else (``TypeError``, ``KeyError``, ``ValueError`` from NumPy or pandas...) is a bug. A new
public function without an entry in :data:`VALID` fails :func:`test_every_public_function_is_fuzzed`.
"""

from __future__ import annotations

import inspect
import math
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import analysis
import sim

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("MELEELAB_FUZZ_EXAMPLES", "0")) or None
#: A third of the examples in the default suite; all of them with MELEELAB_FUZZ_FULL=1 (.ci/run's second step).
FULL = os.environ.get("MELEELAB_FUZZ_FULL") == "1"


def examples(full: int) -> int:
    return EXAMPLES or (full if FULL else full // 3)


SMALL_DUEL = """ruleset = "duel"
budget = 40
[[unit]]
name = "Guard"
count = 1
wounds = 2
toughness = 4
ws = 3
strength = 3
points = 20
weapon = { strength = 3, damage = 1 }
[[unit]]
name = "Blade"
count = 1
wounds = 1
toughness = 4
ws = 5
strength = 3
points = 20
weapon = { strength = 4, damage = 1 }
"""

#: The small duel roster with two army lists, for the list functions.
LISTS = """
[[list]]
name = "Pair"
units = { "Guard" = 2 }

[[list]]
name = "Mix"
units = { "Guard" = 1, "Blade" = 1 }
"""

_FX: dict[str, Any] = {}


def fixtures() -> dict[str, Any]:
    """The valid values the wrong ones replace: small runs of every kind, made once."""
    if _FX:
        return _FX
    folder = Path(tempfile.mkdtemp(prefix="meleelab-signatures-"))
    units = ["AFS", "Nutrocker"]
    m = analysis.matchup_matrix("mecha", units=units, max_trials=200, seed=1, budget="none")
    report = analysis.build_report("mecha", units=units, max_trials=200, budget="none")
    report.write(folder / "report")
    duel = folder / "small_duel.toml"
    duel.write_text(SMALL_DUEL)
    roster = sim.load_roster(duel)
    listed = folder / "small_duel_lists.toml"
    listed.write_text(SMALL_DUEL + LISTS)
    lists_roster = sim.load_roster(listed)
    lists = analysis.list_matrix("duel", lists_roster, max_trials=200, half_width=None, seed=1)
    rb = analysis.rebalance("duel", roster, max_trials=256, half_width=None, max_iterations=1)
    sw = analysis.sweep("mecha", "AFS", "defence", [1, 2], ["Nutrocker"], trials=200, seed=1, budget="none")
    result = sim.fight("mecha", "AFS", "Nutrocker", trials=200, seed=1, method="mc")
    summary = analysis.balance_summary(m)
    _FX.update(folder=folder, matrix=m, report=report, duel=duel, roster=roster, rebalance=rb, sweep=sw,
               result=result, summary=summary, payoff=m.payoff_matrix(), wide=m.wide(), rankings=summary.rankings,
               fair=summary.fair_points, mecha=sim.default_roster("mecha"),
               unit=sim.default_roster("mecha").unit("AFS"), lists_roster=lists_roster, lists=lists)
    return _FX


def _out(name: str) -> Path:
    return fixtures()["folder"] / "out" / name


#: name -> (the callable, its valid keyword arguments). Every call is small: a few hundred fights.
def valid_calls() -> dict[str, tuple[Callable[..., Any], dict[str, Any]]]:
    fx = fixtures()
    plots = analysis.plots
    small = {"max_trials": 200, "budget": "none", "seed": 1}
    calls: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
        # analysis
        "balance": (analysis.balance, {"matrix": fx["matrix"]}),
        "balance_summary": (analysis.balance_summary, {"matrix": fx["matrix"]}),
        "balance_pair": (analysis.balance_pair, {"ruleset": "mecha", "unit": "AFS", "opponent": "Nutrocker",
                                                 "field": "defence", "trials": 200, "seed": 1}),
        "bradley_terry": (analysis.bradley_terry, {"matrix": fx["matrix"]}),
        "build_report": (analysis.build_report, {"ruleset": "mecha", "units": ["AFS", "Nutrocker"], **small}),
        "compare": (analysis.compare, {"ruleset": "mecha", "base": "AFS", "variant": {"defence": 3},
                                       "opponents": ["Nutrocker"], "trials": 200, "seed": 1}),
        "diff": (analysis.diff, {"old": fx["folder"] / "report", "new": fx["folder"] / "report"}),
        "diff_runs": (analysis.diff_runs, {"old": fx["folder"] / "report", "new": fx["folder"] / "report"}),
        "dominated_units": (analysis.dominated_units, {"matrix": fx["matrix"]}),
        "explorer": (analysis.explorer, {"ruleset": "mecha", "attacker": "AFS", "defender": "Nutrocker",
                                         "trials": 200, "plot": False}),
        "fair_points": (analysis.fair_points, {"matrix": fx["matrix"], "replicates": 20}),
        "intransitive_triples": (analysis.intransitive_triples, {"matrix": fx["matrix"]}),
        "marginal_value": (analysis.marginal_value, {"frame": fx["sweep"]}),
        "matchup_matrix": (analysis.matchup_matrix, {"ruleset": "mecha", "units": ["AFS", "Nutrocker"], **small}),
        "nash_equilibrium": (analysis.nash_equilibrium, {"payoff": fx["payoff"]}),
        "list_matrix": (analysis.list_matrix, {"ruleset": "duel", "roster": fx["lists_roster"], "max_trials": 200,
                                               "half_width": None, "seed": 1}),
        "meta": (analysis.meta, {"ruleset": "duel", "roster": fx["lists_roster"], "budget": 40, "max_trials": 256,
                                 "screen_trials": 128, "half_width": None, "max_iterations": 1, "starts": 1,
                                 "batch": 2, "seed": 1}),
        "unit_values": (analysis.unit_values, {"matrix": fx["lists"], "draws": 100}),
        "payoff_matrix": (analysis.payoff_matrix, {"matrix": fx["matrix"]}),
        "rebalance": (analysis.rebalance, {"ruleset": "duel", "roster": fx["roster"], "max_trials": 256,
                                           "half_width": None, "max_iterations": 1}),
        "result_frame": (analysis.result_frame, {"result": fx["result"]}),
        "side_averaged": (analysis.side_averaged, {"matrix": fx["matrix"]}),
        "sweep": (analysis.sweep, {"ruleset": "mecha", "unit": "AFS", "field": "defence", "values": [1, 2],
                                   "opponents": ["Nutrocker"], "trials": 200, "seed": 1}),
        "write_all": (analysis.write_all, {"out_dir": _out("all"), "rulesets": ["mecha"], "max_trials": 64}),
        # analysis.plots: the exported drawing helpers
        "plots.matrix_heatmap": (plots.matrix_heatmap, {"wide": fx["wide"]}),
        "plots.wdl_bars": (plots.wdl_bars, {"data": fx["result"]}),
        "plots.damage_distributions": (plots.damage_distributions, {"result": fx["result"]}),
        "plots.rounds_curve": (plots.rounds_curve, {"results": [fx["result"]]}),
        "plots.sweep_curves": (plots.sweep_curves, {"sweep": fx["sweep"]}),
        "plots.ranking_chart": (plots.ranking_chart, {"rankings": fx["rankings"]}),
        "plots.points_chart": (plots.points_chart, {"fair": fx["fair"]}),
        "plots.interpretation_bars": (plots.interpretation_bars, {
            "frame": pd.DataFrame({"matchup": ["a", "a"], "setting": ["x", "y"], "attacker wins": [0.4, 0.6],
                                   "lo": [0.3, 0.5], "hi": [0.5, 0.7]})}),
        "plots.line_styles": (plots.line_styles, {"n": 3}),
        "plots.plain_log_axis": (plots.plain_log_axis, {"axis": _axes().xaxis, "span": (1.0, 100.0)}),
        "plots.wrap_label": (plots.wrap_label, {"text": "a long label to wrap", "width": 8}),
        # sim
        "sim.fight": (sim.fight, {"ruleset": "mecha", "attacker": "AFS", "defender": "Nutrocker", "trials": 200,
                                  "seed": 1}),
        "sim.unit": (sim.unit, {"ruleset": "mecha", **{k: v for k, v in sim.get_ruleset("mecha").unit_to_dict(
            fx["unit"]).items() if v is not None}}),
        "sim.rulesets": (sim.rulesets, {}),
        "sim.get_ruleset": (sim.get_ruleset, {"ruleset": "mecha"}),
        "sim.load_roster": (sim.load_roster, {"path": fx["duel"], "ruleset": "duel"}),
        "sim.default_roster": (sim.default_roster, {"ruleset": "mecha"}),
        "sim.roster_from_dict": (sim.roster_from_dict, {"data": {"ruleset": "duel", "unit": [
            {k: v for k, v in sim.get_ruleset("duel").unit_to_dict(u).items() if v is not None}
            for u in fx["roster"].units.values()]}}),
        "sim.build_matchup": (sim.build_matchup, {"ruleset": "mecha", "attacker": "AFS", "defender": "Nutrocker"}),
        "sim.parse_settings": (sim.parse_settings, {"ruleset": "duel", "items": ["attacker.ws=3"]}),
        # methods of the public result classes that take arguments
        "MatchupMatrix.wide": (fx["matrix"].wide, {"value": "p_attacker"}),
        "RebalanceResult.nash_support": (fx["rebalance"].nash_support, {"when": "after"}),
        "Report.write": (fx["report"].write, {"out_dir": _out("report")}),
        "Report.write_files": (fx["report"].write_files, {"out_dir": _out("report_files")}),
        "FightResult.damage": (fx["result"].damage, {"to": "attacker"}),
        "FightResult.damage_distribution": (fx["result"].damage_distribution, {"to": "defender"}),
        "FightResult.extra": (fx["result"].extra, {"name": next(iter(fx["result"].tally.extras), "x")}),
        "Roster.army_list": (fx["lists_roster"].army_list, {"name": "Pair"}),
        "Roster.side": (fx["lists_roster"].side, {"name": "Mix"}),
        "Roster.with_lists": (fx["lists_roster"].with_lists, {"lists": dict(fx["lists_roster"].lists)}),
        "Roster.subset": (fx["mecha"].subset, {"names": ["AFS"]}),
        "Roster.unit": (fx["mecha"].unit, {"name": "AFS"}),
        "Roster.with_budget": (fx["roster"].with_budget, {"budget": 60.0}),
        "Roster.with_unit": (fx["mecha"].with_unit, {"unit": fx["unit"]}),
    }
    return calls


def _axes() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if "axes" not in _FX:
        _FX["axes"] = plt.figure().add_subplot()
    return _FX["axes"]


def public_callables() -> dict[str, Any]:
    """Every public function and method with arguments the property must cover (found by introspection)."""
    found: dict[str, Any] = {}
    for mod, prefix in ((analysis, ""), (sim, "sim.")):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                for sub in obj.__all__:
                    if inspect.isfunction(getattr(obj, sub)):
                        found[f"{name}.{sub}"] = getattr(obj, sub)
            elif inspect.isclass(obj):
                for meth, fn in inspect.getmembers(obj, inspect.isfunction):
                    if not meth.startswith("_") and len(inspect.signature(fn).parameters) > 1:
                        found[f"{name}.{meth}"] = fn
            elif callable(obj):
                found[f"{prefix}{name}"] = obj
    return found


def test_every_public_function_is_fuzzed():
    """A new public function or method gets an entry in :func:`valid_calls` (else it is never fuzzed)."""
    missing = sorted(set(public_callables()) - set(valid_calls()))
    assert not missing, f"no valid call for {missing}: add one to valid_calls()"


# ------------------------------------------------------------------ wrong values
class _Weird:
    """An object with no behaviour at all."""


def _raises(*_: Any, **__: Any) -> Any:
    raise RuntimeError("a callback that fails")


JUNK = st.sampled_from([
    None, True, False, 0, -1, 1, 3, 2**64, -(2**70), 10**20, 0.0, -0.5, 0.5, 1.5, 1e-300, 1e300, math.nan, math.inf,
    -math.inf, "", " ", "x", "nope", "3", "-1", "nan", "٣", "\x00", "a" * 500, b"bytes", [], [1, 2], ["nope"],
    [None], (), ("a", 1), {}, {"x": 1}, {3: 4}, {"attacker": "x"}, {"attacker": {"x": []}}, set(), {"a"},
    object(), _Weird(), np.int64(3), np.float32(0.5), np.bool_(True), np.array([1, 2]), np.array([]),
    np.array([[0.5]]), pd.DataFrame(), pd.DataFrame({"a": [1]}), pd.Series([1.0]), Path("/nonexistent"),
    lambda *a, **k: None, _raises, print, int, type, iter([1]), range(3), 1j,
])


def near(name: str, value: Any) -> st.SearchStrategy[Any]:
    """Values close to a valid one: the edges a person might pass by mistake."""
    if isinstance(value, bool):
        return st.sampled_from([1, 0, "yes", None])
    if isinstance(value, int):  # 10**16: over every count's limit (a huge valid count would just run for ever)
        return st.sampled_from([-1, 0, 10**16, value + 0.5, str(value), np.int64(value), None])
    if isinstance(value, float):
        return st.sampled_from([-value, 0.0, value * 1e12, math.nan, math.inf, str(value), np.float64(value)])
    if isinstance(value, str):
        return st.sampled_from(["", value.upper(), value + "x", f" {value} ", [value], value.encode()])
    if isinstance(value, (list, tuple)):
        return st.sampled_from([[], list(value) * 2, [str(v) + "x" for v in value], tuple(value), set(map(str, value)),
                                ",".join(map(str, value))])
    if isinstance(value, dict):
        return st.sampled_from([{}, {k: None for k in value}, {str(k) + "x": v for k, v in value.items()}, list(value)])
    return JUNK


def _path_param(name: str) -> bool:
    return name in ("out_dir",)  # written to: a wrong text path would write wherever the tests run


def _junk_for(name: str, valid: Any) -> st.SearchStrategy[Any]:
    options = JUNK if valid is _NO_VALUE else st.one_of(JUNK, near(name, valid))
    if _path_param(name):
        tmp = fixtures()["folder"]
        return options.filter(lambda v: not isinstance(v, (str, os.PathLike))) | st.sampled_from(
            [tmp / "report" / "report.html", tmp / "FILE" / "below", tmp])
    return options


_NO_VALUE = object()


class CallbackFailed(Exception):
    """A wrong value that is a function failed when the library called it (``log=int``: ``int("text")``).
    The caller's own function failing is the caller's error, and comes through as it is: not a bug."""


def _as_callback(value: Any) -> Any:
    """A function given where a value is expected is called as the caller's: its own failure is marked."""
    if not callable(value) or isinstance(value, (np.ndarray, pd.DataFrame, pd.Series)):
        return value

    def called(*args: Any, **kwargs: Any) -> Any:
        try:
            return value(*args, **kwargs)
        except Exception as e:
            raise CallbackFailed(f"{value!r} failed: {e}") from e

    called.__name__ = getattr(value, "__name__", "callback")
    return called

#: Values that are valid and make a long run, not a quick one: the shipped duel roster rebalanced (half a
#: minute), a report of every ruleset.
SLOW = {("rebalance", "roster"): (None,), ("write_all", "rulesets"): (None,)}


@st.composite
def api_calls(draw: Callable) -> tuple[str, str, Callable[[], Any], tuple[str, ...], tuple[Any, ...]]:
    calls = valid_calls()
    name = draw(st.sampled_from(sorted(calls)))
    fn, kwargs = calls[name]
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
    if not params:
        return name, "", lambda: fn(**kwargs), (), ()
    chosen = draw(st.lists(st.sampled_from([p.name for p in params]), min_size=1, max_size=2, unique=True))
    args = dict(kwargs)
    values = []
    for p in chosen:
        valid = kwargs.get(p, next(q.default for q in params if q.name == p))
        valid = _NO_VALUE if valid is inspect.Parameter.empty else valid
        slow = SLOW.get((name, p), ())
        v = _as_callback(draw(_junk_for(p, valid).filter(lambda v: not any(v is s for s in slow))))
        args[p] = v
        values.append(v)
    return name, chosen[0], lambda: fn(**args), tuple(chosen), tuple(values)


#: Other ways a message names an argument: a roster built from a mapping is named by its source, "<memory>"
#: (every roster message starts with the roster's source: its file, or "<memory>").
ALIASES = {"data": ("<memory>",)}


def _names_it(message: str, params: tuple[str, ...], values: tuple[Any, ...]) -> bool:
    """The message names one of the wrong arguments: its name, its command-line flag, or the value given."""
    text = message.lower()
    for p, v in zip(params, values):
        names = (p, p.replace("_", "-"), p.replace("_", " "), *ALIASES.get(p, ()))
        if any(n.lower() in text for n in names):
            return True
        for item in (v if isinstance(v, (list, tuple, set, frozenset)) else [v]):  # the value, or one of its items
            if isinstance(item, (str, int, float, Path)) and not isinstance(item, bool):
                shown = str(item).strip().lower()
                if repr(item).lower() in text or (len(shown) > 1 and shown[:100] in text) or \
                        (shown and text.startswith(f"{shown}:")):
                    return True
    return False


OUTCOMES: Counter[str] = Counter()
#: Methods in files the lead is rewriting (analysis/runs/rebalance.py): their raw errors are counted, not failed,
#: until the check asked for in the helper's report is in (``when`` of ``nash_support``).
PENDING: set[str] = set()


@settings(max_examples=examples(1200), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(api_calls())
def test_every_bad_argument_of_every_public_function_is_the_library_error_naming_it(call: Any) -> None:
    name, first, fn, params, values = call
    try:
        fn()
    except CallbackFailed:
        OUTCOMES[f"{name}: the caller's function failed"] += 1
    except sim.MeleelabError as e:  # (before ValueError: it is one)
        message = str(e)
        assert message.strip() and "\n" not in message, (name, params, message)
        OUTCOMES[f"{name}: error"] += 1
        assert _names_it(message, params, values), (name, params, values, message)
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        if name not in PENDING:
            raise
        OUTCOMES[f"{name}: raw {type(e).__name__} (pending)"] += 1
    else:
        OUTCOMES[f"{name}: ok"] += 1


def teardown_module() -> None:
    import shutil

    if "folder" in _FX:
        shutil.rmtree(_FX["folder"], ignore_errors=True)
    if OUTCOMES:
        print(f"\nAPI signature fuzz: {sum(OUTCOMES.values())} calls of {len({k.split(':')[0] for k in OUTCOMES})} "
              "functions: " + ", ".join(f"{k} {v}" for k, v in sorted(OUTCOMES.items())))
