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
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...dice import DiceStream
from ...errors import InputError, MatchupError, Where
from ...outcomes import ATTACKER, DEFENDER, DRAW, Outcomes, TrialOutcome
from ...ruleset import END, Matchup, Rounds, Ruleset
from ...schema import Field, StateField, points_field

__all__ = ["MechaUnit", "Chart", "Mecha", "RULESET", "RESULTS"]

#: Chart result codes and their severity (the damage unit).
RESULTS = {"-": 0, "M": 1, "D": 2}
UNHARMED, IMMOBILISED, DESTROYED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class MechaUnit:
    """One armoured suit, walker or vehicle."""

    name: str
    defence: int
    physical: int
    armour: str
    engageable: bool = True
    points: float | None = None


@dataclass(frozen=True)
class Chart:
    """Armour Resistance Chart: per letter, the result for totals <=1, 2, 3, 4, 5, 6.

    Totals below 1 read the first column; totals of 7 or more are no effect.
    """

    rows: Mapping[str, tuple[str, ...]]
    name: str = "custom"

    def lookup(self, letter: str, total: int) -> str:
        """The result code a unit with armour ``letter`` takes on ``total``."""
        if total >= 7:
            return "-"
        return self.rows[letter][max(total, 1) - 1]

    def to_jsonable(self) -> dict[str, Any]:
        return {"name": self.name, "rows": {k: "".join(v) for k, v in self.rows.items()}}

    @staticmethod
    def reconstructed() -> "Chart":
        """The spec's default: letter index k (A=0): D if total <= 2+k, M if total = 3+k."""
        rows = {}
        for k, letter in enumerate("ABCDE"):
            rows[letter] = tuple("D" if t <= 2 + k else "M" if t == 3 + k else "-" for t in range(1, 7))
        return Chart(rows, "reconstructed")

    @staticmethod
    def wide() -> "Chart":
        """The spec's alternative: the M band is two totals wide (3+k..4+k)."""
        rows = {}
        for k, letter in enumerate("ABCDE"):
            rows[letter] = tuple("D" if t <= 2 + k else "M" if t <= 4 + k else "-" for t in range(1, 7))
        return Chart(rows, "wide")

    @staticmethod
    def from_table(table: Any, where: Where) -> "Chart":
        """Validate a ``[chart]`` table: ``A = ["D", "D", "M", "-", "-", "-"]`` (totals <=1..6)."""
        if not isinstance(table, Mapping) or not table:
            raise where.error("chart", table, "a table of armour letters, each a list of 6 results")
        rows = {}
        for letter, cells in table.items():
            if not (isinstance(letter, str) and len(letter) == 1 and letter.isupper()):
                raise where.error(f"chart.{letter}", cells, "an armour letter A..Z as the key")
            if isinstance(cells, str):
                cells = list(cells)
            if not isinstance(cells, list) or len(cells) != 6 or any(c not in RESULTS for c in cells):
                raise where.error(f"chart.{letter}", cells, 'six results for totals <=1..6, each "-", "M" or "D"')
            rows[letter] = tuple(cells)
        return Chart(rows, "custom")


def load_chart_file(path: str) -> Chart:
    """A chart from a TOML file holding a ``[chart]`` table (or the letters at top level)."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such chart file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InputError(f"{path}: cannot read chart file ({e})") from None
    return Chart.from_table(data.get("chart", data), Where(path))


@dataclass(frozen=True)
class MechaPlan:
    matchup: Matchup
    chart: Chart
    #: transition[s, j]: state after one round from state s = 3*sev_a + sev_d on joint dice j = 6*(a-1) + (d-1)
    transition: NDArray[np.int8]
    start: int
    second_m_destroys: bool


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
        limit = max_rounds if rounds == END else int(rounds)
        if limit == 1:
            # One round from a single start state: only the joint dice matter, so
            # count them (36 bins) and map the counts to final states.
            counts = np.bincount(rng.integers(0, 36, size=n, dtype=np.int8), minlength=36).astype(np.int64)
            by_state = np.bincount(plan.transition[plan.start], weights=counts, minlength=9).astype(np.int64)
            return self.outcomes_from_states(np.arange(9), np.ones(9, np.int64), by_state, rounds, limit)
        state, n_rounds = self.final_states(
            plan, n, lambda r, idx: rng.integers(0, 36, size=len(idx), dtype=np.int8), rounds, max_rounds)
        code = state.astype(np.int64) * (limit + 1) + n_rounds
        counts = np.bincount(code, minlength=9 * (limit + 1))
        nz = np.flatnonzero(counts)
        return self.outcomes_from_states(nz // (limit + 1), nz % (limit + 1), counts[nz].astype(np.int64), rounds, limit)

    def final_states(self, plan: MechaPlan, n: int, roll, rounds: Rounds, max_rounds: int) -> tuple[NDArray, NDArray]:
        """Final state (3*sev_a + sev_d) and rounds fought of ``n`` fights.

        Dice come from ``roll(round, trial_indices)``, which returns one joint
        roll 6*(a-1) + (d-1) per listed fight: the kernel draws them, tests pass
        the same dice they give the reference.
        """
        limit = max_rounds if rounds == END else int(rounds)
        T = plan.transition
        all_idx = np.arange(n)
        state = T[plan.start][roll(1, all_idx)]
        n_rounds = np.ones(n, np.int64)
        alive = all_idx[~_ABSORBING[state]]
        r = 1
        while alive.size and r < limit:
            r += 1
            state[alive] = T[state[alive], roll(r, alive)]
            n_rounds[alive] = r
            alive = alive[~_ABSORBING[state[alive]]]
        return state, n_rounds

    @staticmethod
    def outcomes_from_states(states: NDArray, n_rounds: NDArray, weights: NDArray, rounds: Rounds, limit: int) -> Outcomes:
        states = np.asarray(states)
        sev_a, sev_d = states // 3, states % 3
        capped = (rounds == END) & (n_rounds >= limit) & ~_ABSORBING[states]
        winner = np.where(sev_a < sev_d, ATTACKER, np.where(sev_a > sev_d, DEFENDER, DRAW))
        winner = np.where(capped, DRAW, winner).astype(np.int8)
        return Outcomes(winner, sev_a, sev_d, sev_a.astype(np.int8), sev_d.astype(np.int8),
                        np.asarray(n_rounds, np.int64), capped, weights=weights)

    # ------------------------------------------------------------- reference
    def working_set(self, plan: MechaPlan, n: int) -> int:
        """Memory guard estimate: tiny tables, a few small arrays per fight (measured under 40 bytes)."""
        from ...limits import table_bytes

        return table_bytes(plan) + 256 * int(n)

    def resolve_one(self, plan: MechaPlan, dice: DiceStream, rounds: Rounds, max_rounds: int) -> TrialOutcome:
        m, chart = plan.matchup, plan.chart
        immobilised = {side: bool(m.state(side, "immobilised")) for side in ("attacker", "defender")}
        destroyed = {"attacker": False, "defender": False}
        wants_to_evade = bool(m.state("defender", "evading"))
        limit = max_rounds if rounds == END else int(rounds)
        fought = 0
        while fought < limit:
            fought += 1
            # Declarations: the defender evades if it chose to and is not immobilised.
            evading = wants_to_evade and not immobilised["defender"]
            # Rolls: the evader's opponent does not roll at all.
            rollers = ["defender"] if evading else ["attacker", "defender"]
            results = {}
            for side in rollers:
                unit = m.unit(side)
                total = dice.d6() + unit.defence + unit.physical
                if immobilised[side]:
                    total -= 2
                if side == "defender" and evading:
                    total += 2
                # Each unit reads its own total under its own armour letter.
                results[side] = chart.lookup(unit.armour, total)
            # Results apply after both rolls: the rolls are simultaneous.
            for side, result in results.items():
                if result == "D":
                    destroyed[side] = True
                elif result == "M":
                    if not immobilised[side]:
                        immobilised[side] = True
                    elif plan.second_m_destroys:
                        destroyed[side] = True
            if destroyed["attacker"] or destroyed["defender"]:
                break
        severity = {
            side: DESTROYED if destroyed[side] else IMMOBILISED if immobilised[side] else UNHARMED
            for side in ("attacker", "defender")
        }
        capped = rounds == END and fought >= limit and not (destroyed["attacker"] or destroyed["defender"])
        if capped or severity["attacker"] == severity["defender"]:
            winner = DRAW
        else:
            winner = ATTACKER if severity["attacker"] < severity["defender"] else DEFENDER
        return TrialOutcome(winner, severity["attacker"], severity["defender"], severity["attacker"],
                            severity["defender"], fought, capped)

    def bench_matchup(self):
        return "AFS", "Nutrocker", {}, 1


#: States where a side is destroyed: the fight is over.
_ABSORBING = np.array([s // 3 == DESTROYED or s % 3 == DESTROYED for s in range(9)])


def _transition_table(matchup: Matchup, chart: Chart, second_m: bool) -> NDArray[np.int8]:
    """Next state for every (state, joint dice) pair, from per-side result tables."""
    att, dfn = matchup.attacker, matchup.defender
    wants_to_evade = bool(matchup.state("defender", "evading"))
    dice = np.arange(1, 7)

    def result_codes(unit: MechaUnit, immobilised: bool, evading: bool) -> NDArray[np.int64]:
        totals = dice + unit.defence + unit.physical - 2 * immobilised + 2 * evading
        return np.array([RESULTS[chart.lookup(unit.armour, int(t))] for t in totals])

    def after(sev: int, code: int) -> int:
        if sev == DESTROYED or code == 2:
            return DESTROYED
        if code == 1:
            return DESTROYED if (sev == IMMOBILISED and second_m) else IMMOBILISED
        return sev

    T = np.zeros((9, 36), np.int8)
    for s in range(9):
        sa, sd = divmod(s, 3)
        if _ABSORBING[s]:
            T[s] = s
            continue
        evading = wants_to_evade and sd == UNHARMED
        res_a = result_codes(att, sa == IMMOBILISED, False)
        res_d = result_codes(dfn, sd == IMMOBILISED, evading)
        for j in range(36):
            a, d = divmod(j, 6)
            na = sa if evading else after(sa, int(res_a[a]))
            nd = after(sd, int(res_d[d]))
            T[s, j] = 3 * na + nd
    return T


RULESET = Mecha()
