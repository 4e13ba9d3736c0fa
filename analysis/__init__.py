"""meleelab analysis: matchup matrices, balance tables, fair prices, reports and the ``meleelab`` command.

The package is four layers, and imports only point down (``pyproject.toml``
holds the contracts that CI checks):

``analysis.stats``
    Numbers from arrays and tables: estimates and intervals, Bradley-Terry
    strengths, the equilibrium, dominance and cycles, copy curves and fair prices.
    Nothing fights, nothing is written.
``analysis.runs``
    Everything that fights: matrices, copy-count fights, sweeps, compares, the
    solver, the block runner, executors and the results store. A run returns data.
``analysis.report``
    What a person reads: reports, findings, tables, plots, diff, and the safe
    CSV/HTML/Markdown writers.
``analysis.cli``
    The ``meleelab`` command: parse, call, print.

Public names (loaded on first use, like ``sim``'s)
--------------------------------------------------
matchup_matrix    every unit against every unit -> MatchupMatrix
balance           every balance table of a matrix -> BalanceSummary (also ``balance_summary``)
fair_points       each unit's fair price with its interval and verdict
sweep             vary one field of a unit on common random numbers
marginal_value    the value of one stat point from a sweep
compare           a base unit against a variant on common random numbers
balance_pair      the value of a field at which two units are even
rebalance         one points table that balances the whole roster, proved by a fresh run -> RebalanceResult
list_matrix       every army list against every list -> MatchupMatrix (list names as its units)
unit_values       what each unit adds to each list of a list matrix -> UnitValues
meta              the lists the prices make strong at a budget (double oracle) -> MetaResult
diff              what changed beyond the noise between two runs -> RunDiff (also ``diff_runs``)
build_report      a report's content -> Report (``Report.write`` writes it)
write_all         one report per ruleset and an index
result_frame      a FightResult as a tidy table
payoff_matrix, nash_equilibrium, dominated_units, intransitive_triples, bradley_terry
                  the balance metrics on their own
explorer          the notebooks' interactive explorer
plots             plot functions that draw on a matplotlib ``ax``
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> (module, attribute). Loaded on first use (PEP 562): ``import analysis`` stays free of pandas.
_LAZY = {
    "matchup_matrix": (".runs.matrix", "matchup_matrix"),
    "MatchupMatrix": (".runs.matrix", "MatchupMatrix"),
    "balance": (".runs.balance", "balance_summary"),
    "balance_summary": (".runs.balance", "balance_summary"),
    "BalanceSummary": (".stats.summary", "BalanceSummary"),
    "fair_points": (".runs.pricing", "fair_points"),
    "sweep": (".runs.sweep", "sweep"),
    "marginal_value": (".runs.sweep", "marginal_value"),
    "compare": (".runs.compare", "compare"),
    "balance_pair": (".runs.solver", "balance_pair"),
    "rebalance": (".runs.rebalance", "rebalance"),
    "RebalanceResult": (".runs.rebalance", "RebalanceResult"),
    "list_matrix": (".runs.lists", "list_matrix"),
    "unit_values": (".runs.unit_value", "unit_values"),
    "meta": (".runs.meta", "meta"),
    "MetaResult": (".runs.meta", "MetaResult"),
    "diff": (".report.diff", "diff_runs"),
    "diff_runs": (".report.diff", "diff_runs"),
    "build_report": (".report.build", "build_report"),
    "write_all": (".report.build", "write_all"),
    "Report": (".report.build", "Report"),
    "result_frame": (".stats.estimates", "result_frame"),
    "payoff_matrix": (".stats.strength", "payoff_matrix"),
    "side_averaged": (".stats.strength", "side_averaged"),
    "bradley_terry": (".stats.strength", "bradley_terry"),
    "nash_equilibrium": (".stats.equilibrium", "nash_equilibrium"),
    "dominated_units": (".stats.dominance", "dominated_units"),
    "intransitive_triples": (".stats.dominance", "intransitive_triples"),
    "explorer": (".explore", "explorer"),
    "plots": (".report.plots", None),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    mod = importlib.import_module(module, __name__)
    value = mod if attribute is None else getattr(mod, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
