"""``pools`` plan: the matchup's fixed numbers, its first engagement and the kernel's tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...ruleset import Matchup
from .kernel import ReceivedTables, RoundSetup, SideStats, SingleTable, build_tables, single_engagement_table

__all__ = ["PoolsPlan", "build_plan", "SIDES"]

SIDES = ("attacker", "defender")


@dataclass(frozen=True)
class PoolsPlan:
    """What the kernel and the reference need: the matchup and its fixed numbers."""

    matchup: Matchup
    sides: tuple[SideStats, SideStats]
    setup: RoundSetup
    #: Exact joint table of the first engagement (``None`` for very large pools).
    single: SingleTable | None
    #: Per-process lazy tables (built on first use; dropped when pickled)
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def tables(self) -> tuple[ReceivedTables | None, ReceivedTables | None]:
        """Per receiving side, inverse-CDF tables for fights over several rounds (``None``: too large).

        Built on first use: a one-engagement fight (the balance settings') never needs them, and they
        cost far more to build than the engagement's own table.
        """
        if "tables" not in self.cache:
            self.cache["tables"] = build_tables(self.sides, self.setup)
        return self.cache["tables"]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["cache"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def build_plan(matchup: Matchup) -> PoolsPlan:
    """The plan of a validated matchup: each side's numbers, the first engagement's setup and the tables."""
    sides = tuple(
        SideStats(u.attack, u.bases, u.wounds, 1.0 if u.save is None else (u.save - 1) / 6.0, u.courage,
                  float(u.move), bool(u.vehicle))
        for u in (matchup.attacker, matchup.defender)
    )
    o = matchup.options
    setup = RoundSetup(
        charge=bool(matchup.state("attacker", "charge")),
        shaken=tuple(bool(matchup.state(s, "shaken")) for s in SIDES),
        flanked=tuple(bool(matchup.state(s, "flanked")) for s in SIDES),
        dash=tuple(bool(matchup.state(s, "dash")) for s in SIDES),
        cover=tuple(bool(matchup.state(s, "cover")) for s in SIDES),
        dash_shift=int(o["dash_shift"]), cover_shift=int(o["cover_shift"]),
        flank_shift=int(o["flank_shift"]), target_dash_shift=int(o["target_dash_shift"]),
        rally=bool(o["rally"]),
    )
    return PoolsPlan(matchup, sides, setup, single_engagement_table(sides, setup))
