"""``mecha``: armoured-suit physical combat (fan rule for the SF3D / Ma.K hex game).

Rules: ``docs/rules/mecha.md``; written from the original text ``000_ecd8aa549f6b9c33.txt`` (not distributed).

Each side that rolls adds 1d6, its defence strength and physical modifier, -2 if
immobilised and +2 if evading, and reads its *own* total under its *own* armour
letter in the Armour Resistance Chart: ``-`` no effect, ``M`` immobilised, ``D``
destroyed. An evading defender's opponent does not roll. The chart in the text
is missing; the default is the spec's reconstruction (kept as data, replaceable
by a ``[chart]`` table in a roster or a chart file).

A fight is a 9-state Markov chain (each side unharmed / immobilised / destroyed)
driven by one joint roll of two dice per round, so the kernel draws one integer
in 0..35 per fight and round and moves every fight through a 9 x 36 table.

Modules: ``units`` (the unit, the chart and its result codes), ``plan`` (the
transition table), ``kernel`` (the vectorised kernel), ``exact`` (the chain
propagated: exact answers) and ``reference`` (the scalar reference the kernel is
tested against).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...dice import DiceStream
from ...errors import MatchupError, Where
from ...outcomes import Outcomes, TrialOutcome
from ...ruleset import END, BalanceSettings, ExactOutcome, Matchup, Rounds, Ruleset
from ...schema import Field, StateField, points_field
from . import exact as exact_chain
from . import kernel
from .plan import MechaPlan, _transition_table
from .reference import resolve_fight
from .units import RESULTS, Chart, MechaUnit, load_chart_file

__all__ = ["MechaUnit", "Chart", "Mecha", "RULESET", "RESULTS"]


class Mecha(Ruleset):
    id = "mecha"
    title = "Armoured-suit physical combat (SF3D / Ma.K fan rule)"
    source = "000_ecd8aa549f6b9c33.txt: futchfactor 'Physical Combat' page"
    spec = "docs/rules/mecha.md"
    damage_unit = "severity (0 unharmed, 1 immobilised, 2 destroyed)"
    default_rounds = 1
    outcome_categories = ("unharmed", "immobilised", "destroyed")
    unit_type = MechaUnit
    unit_fields = (
        Field("name", "str", "unit name"),
        Field("defence", "int", "defence strength", lo=0, hi=10),
        Field("physical", "int", "physical combat modifier: 0 suit, -1 limited walker, -2 vehicle", lo=-5, hi=5),
        Field("armour", "str", "armour letter of the chart, A (heaviest) .. E"),
        Field("engageable", "bool", "false for fliers and Neuspotters (cannot be engaged)", default=True),
        points_field("points cost"),
    )
    state_fields = (
        StateField(Field("immobilised", "bool", "starts the fight immobilised (-2, cannot evade)", default=False)),
        StateField(Field("evading", "bool", "evades: rolls with +2, its opponent does not roll", default=False),
                   sides=("defender",)),
    )
    option_fields = (
        Field("second_m_destroys", "bool", "an M result on an immobilised unit destroys it", default=False),
        Field("chart", "str", 'chart: "reconstructed" (default), "wide", "custom" (the roster\'s [chart]) or a chart file',
              default="reconstructed"),
        Field("custom_chart", "table", "the roster's [chart] table (set by the roster loader)", default=None,
              optional=True),
    )
    roster_tables = ("chart",)
    #: One physical-combat round mostly ends with no result on either side (a draw); balance asks who wins.
    balance_settings = BalanceSettings(
        rounds=END, max_rounds=50,
        why=("Fights go to the end (a cap of 50 rounds): one round mostly ends with no result on either side, "
             "which says little about which suit is better.",))


    # ------------------------------------------------------------ validation
    def parse_unit(self, mapping: Mapping[str, Any], where: Where, *, from_text: bool = False) -> MechaUnit:
        unit = super().parse_unit(mapping, where, from_text=from_text)
        if not (len(unit.armour) == 1 and unit.armour.isalpha() and unit.armour.isupper()):
            raise where.error("armour", unit.armour, "one armour letter A..Z")
        return unit

    def parse_roster_table(self, name: str, value: Any, where: Where) -> dict[str, Any]:
        chart = Chart.from_table(value, where)
        return {"chart": "custom", "custom_chart": {k: list(v) for k, v in chart.rows.items()}}

    def chart_of(self, options: Mapping[str, Any], where: Where = Where("options")) -> Chart:
        """The chart the options select."""
        name = options.get("chart", "reconstructed")
        if name == "reconstructed":
            return Chart.reconstructed()
        if name == "wide":
            return Chart.wide()
        if name == "custom":
            if options.get("custom_chart") is None:
                raise where.error("chart", name, "a roster with a [chart] table for chart = \"custom\"")
            return Chart.from_table(options["custom_chart"], where)
        if str(name).endswith(".toml"):
            return load_chart_file(str(name))
        raise where.error("chart", name, '"reconstructed", "wide", "custom" or a .toml chart file')

    def check_roster(self, units: list[Any], options: Mapping[str, Any], where: Where) -> None:
        chart = self.chart_of(options, where)
        for u in units:
            if u.armour not in chart.rows:
                raise where.at(u.name).error("armour", u.armour, f"a letter of the {chart.name} chart ({', '.join(chart.rows)})")

    def prepare(self, matchup: Matchup) -> MechaPlan:
        for side in ("attacker", "defender"):
            u = matchup.unit(side)
            if not u.engageable:
                raise MatchupError(
                    f"mecha: {side} {u.name!r} cannot be engaged in physical combat "
                    "(engageable = false: fliers and Neuspotters never fight physically)"
                )
        if matchup.state("defender", "evading") and matchup.state("defender", "immobilised"):
            raise MatchupError(f"mecha: defender {matchup.defender.name!r} is immobilised and so cannot evade")
        chart = self.chart_of(matchup.options)
        self.check_roster([matchup.attacker, matchup.defender], matchup.options, Where("matchup"))
        second_m = bool(matchup.options["second_m_destroys"])
        transition = _transition_table(matchup, chart, second_m)
        start = 3 * int(matchup.state("attacker", "immobilised")) + int(matchup.state("defender", "immobilised"))
        return MechaPlan(matchup, chart, transition, start, second_m)

    # ---------------------------------------------------------------- kernel
    def simulate(self, plan: MechaPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
        return kernel.simulate(plan, n, rng, rounds, max_rounds)

    def final_states(self, plan: MechaPlan, n: int, roll, rounds: Rounds, max_rounds: int) -> tuple[NDArray, NDArray]:
        """Final state (3*sev_a + sev_d) and rounds fought of ``n`` fights (:func:`.kernel.final_states`)."""
        return kernel.final_states(plan, n, roll, rounds, max_rounds)

    @staticmethod
    def outcomes_from_states(states: NDArray, n_rounds: NDArray, weights: NDArray, rounds: Rounds, limit: int) -> Outcomes:
        """Outcomes of fights ending in these states (:func:`.kernel.outcomes_from_states`)."""
        return kernel.outcomes_from_states(states, n_rounds, weights, rounds, limit)

    # ----------------------------------------------------------------- exact
    def exact_work(self, plan: MechaPlan, rounds: Rounds, max_rounds: int) -> int:
        """Every mecha fight is a 9-state chain: always exact (:mod:`.exact`)."""
        return exact_chain.exact_work(plan, rounds, max_rounds)

    def exact(self, plan: MechaPlan, rounds: Rounds, max_rounds: int) -> ExactOutcome:
        return exact_chain.exact(plan, rounds, max_rounds)

    # ------------------------------------------------------------- reference
    def working_set(self, plan: MechaPlan, n: int) -> int:
        """Memory guard estimate: tiny tables, a few small arrays per fight (measured under 40 bytes)."""
        from ...limits import table_bytes

        return table_bytes(plan) + 256 * int(n)

    def resolve_one(self, plan: MechaPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        return resolve_fight(plan, dice, rounds, max_rounds)

    def bench_matchup(self):
        return "AFS", "Nutrocker", {}, 1


RULESET = Mecha()
