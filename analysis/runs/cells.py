"""Whole-copy cells: one side's k copies against the other side's j copies, each fought once on its own stream.

Under expected fielding (:mod:`analysis.runs.fielding`) a unit that a budget
buys ``k + f`` copies of fields ``k + 1`` copies in a fraction ``f`` of its
fights and ``k`` in the rest, so every cell of a matrix, every point of a copy
curve and every step of a rebalance is a weighted sum of *whole-copy cells*:
``a`` fielding ``ka`` copies against ``d`` fielding ``kd``. A :class:`CellBank`
fights each whole-copy cell once per run, on the stream
``(key(a), key(d), key("whole copies"), ka, kd)``: the same cell has the same
numbers wherever it is used (a matrix, a curve, a rebalance's verification), and
its results-store key holds the profiles and copies but not the points, so a
price change reuses every cell whose whole copies it does not change.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.errors import MatchupError
from sim.limits import PlanBudget, table_bytes
from sim.tally import Tally

from ..stats.copy_curves import score_and_var
from ..stats.estimates import exact_row, mix_rows, tally_row
from .fielding import RunContext, copy_mixture
from .jobs import run_jobs
from .progress import BuildTimer, phase
from .streams import whole_stream

__all__ = ["WholeCell", "CellBank", "Cell", "mixed_cells"]


def _label(c: "WholeCell") -> str:
    return f"{c.attacker_copies} x {c.attacker} v {c.defender_copies} x {c.defender}"


@dataclass(frozen=True, order=True)
class WholeCell:
    """``attacker`` fielding ``attacker_copies`` copies against ``defender`` fielding ``defender_copies``."""

    attacker: str
    attacker_copies: int
    defender: str
    defender_copies: int


def _unpriced(unit: Any) -> Any:
    """The unit without its points: points never enter a fight, so the cell's store key must not hold them."""
    if dataclasses.is_dataclass(unit) and any(f.name == "points" for f in dataclasses.fields(unit)):
        return dataclasses.replace(unit, points=None)
    return unit


@dataclass
class CellBank:
    """The whole-copy cells of one run, each fought once (or taken from the results store).

    Attributes
    ----------
    context : RunContext
        Seed, settings and precision of every cell.
    units : dict
        Label -> unit profile (default: the roster's units by name); a label not in
        the roster (a sweep's variant) fights as its profile.
    stream_names : dict
        Label -> the name whose streams it uses (a variant shares its base's).
    tallies : dict
        :class:`WholeCell` -> tally, for the cells fought by Monte Carlo.
    exact : dict
        :class:`WholeCell` -> :class:`sim.exact.ExactOutcome`, for the cells answered exactly.
    refused : dict
        :class:`WholeCell` -> why it cannot be fought (a one-line ``MatchupError``).
    matchups : dict
        :class:`WholeCell` -> the matchup fought (its units carry no points).
    from_store : int
        Cells taken from the results store instead of fought.
    fought : int
        Cells run (fought, or taken from the store) by this bank.
    reused : int
        Requests for a cell the bank already held (fought once, used again).
    """

    context: RunContext
    units: dict[str, Any] = field(default_factory=dict)
    stream_names: dict[str, str] = field(default_factory=dict)
    tallies: dict[WholeCell, Tally] = field(default_factory=dict)
    exact: dict[WholeCell, Any] = field(default_factory=dict)
    refused: dict[WholeCell, str] = field(default_factory=dict)
    matchups: dict[WholeCell, Any] = field(default_factory=dict)
    from_store: int = 0
    fought: int = 0
    reused: int = 0
    #: Matchups built ahead (the mirror matches that size a batch, the spread that times its building:
    #: :func:`_check_table_estimate`), used again when they are fought.
    _prebuilt: dict[WholeCell, tuple[Any, Any]] = field(default_factory=dict, repr=False)
    #: Cells taken from the store (:meth:`take_stored`) that no :meth:`fight` has asked for yet.
    _unasked: set[WholeCell] = field(default_factory=set, repr=False)
    #: The seconds each matchup built ahead took, and how many of them time the batch and their seconds in all
    #: (the next :meth:`fight` estimates its building from them).
    _prebuilt_took: dict[WholeCell, float] = field(default_factory=dict, repr=False)
    _sized: tuple[int, float] = (0, 0.0)

    def unit(self, label: str) -> Any:
        return self.units[label] if label in self.units else self.context.roster.unit(label)

    def known(self, cell: WholeCell) -> bool:
        """Answered, or refused, already."""
        return cell in self.tallies or cell in self.exact or cell in self.refused

    def take_stored(self, cells: Iterable[WholeCell]) -> int:
        """Take every cell not known yet that the results store holds, before any plan is built; return how many.

        A stored cell needs neither its plan nor a fight (:meth:`RunContext.stored`):
        a rerun after a kill, or a rebalance after its report, builds only the plans
        of the cells still missing.
        """
        ctx = self.context
        if ctx.store is None:
            return 0
        taken = 0
        for c in dict.fromkeys(cells):
            if self.known(c) or c in self.matchups:
                continue
            try:
                matchup = ctx.matchup(_unpriced(self.unit(c.attacker)), _unpriced(self.unit(c.defender)),
                                      {"attacker": c.attacker_copies, "defender": c.defender_copies})
            except MatchupError:
                continue  # refused again, with its reason, when it is fought
            stream = whole_stream(c.attacker, c.attacker_copies, c.defender, c.defender_copies, self.stream_names)
            hit = ctx.stored(c, matchup, stream)
            if hit is None:
                continue
            self.matchups[c] = matchup
            if hit.exact is not None:
                self.exact[c] = hit.exact
            else:
                self.tallies[c] = hit.tally
            self.from_store += 1
            self.fought += 1
            self._unasked.add(c)
            taken += 1
        return taken

    def fight(self, cells: Iterable[WholeCell], progress: Any = None) -> int:
        """Fight every cell not fought yet (one batch); return how many were fought or answered now (the cells
        taken from the store are counted in :attr:`from_store`)."""
        ctx = self.context
        rs = ctx.rs
        guard = PlanBudget("matrix")
        jobs = []
        wanted = list(dict.fromkeys(cells))
        self.take_stored(wanted)
        todo, stored = [], 0
        for c in wanted:
            if c in self._unasked:  # taken from the store for this request: new to the bank, not a second use
                self._unasked.discard(c)
                stored += 1
            elif self.known(c):
                self.reused += 1
            else:
                todo.append(c)
        sample, self._sized = self._sized, (0, 0.0)
        timer = BuildTimer(rs.id, len([c for c in todo if c not in self._prebuilt]), stored, sample)
        with phase("building matchups", len(todo), "matchups") as building:
            for c in todo:
                try:
                    ahead = self._prebuilt.pop(c, None)
                    matchup, plan = ahead if ahead is not None else timer.timed(lambda: self._build(c))
                    guard.add(rs, plan)
                except MatchupError as e:
                    self.refused[c] = str(e)
                    continue
                finally:
                    building.advance()
                self.matchups[c] = matchup
                stream = whole_stream(c.attacker, c.attacker_copies, c.defender, c.defender_copies,
                                      self.stream_names)
                took = self._prebuilt_took.pop(c, 0.0) if ahead is not None else timer.last
                jobs.append(ctx.job(c, plan, stream, _label(c), identity=matchup, built_in=took))
        if jobs:
            done = run_jobs(rs, ctx.root, jobs, rounds=ctx.rounds, max_rounds=ctx.max_rounds, workers=ctx.workers,
                            progress=progress, executor=ctx.executor, store=ctx.store)
            for c, res in done.items():
                if res.exact is not None:
                    self.exact[c] = res.exact
                else:
                    self.tallies[c] = res.tally
                self.from_store += int(res.from_store)
            self.fought += len(done)
        return len(jobs)

    def _build(self, c: WholeCell) -> tuple[Any, Any]:
        """The matchup and plan of a cell."""
        ctx = self.context
        return ctx.build(_unpriced(self.unit(c.attacker)), _unpriced(self.unit(c.defender)),
                         {"attacker": c.attacker_copies, "defender": c.defender_copies})

    def row(self, cell: WholeCell) -> dict[str, Any] | None:
        """The long-frame row of a cell answered (Monte Carlo with trials, or exact); None otherwise."""
        if cell in self.exact:
            return exact_row(self.exact[cell])
        t = self.tallies.get(cell)
        return tally_row(t) if t is not None and t.trials else None

    def answered(self, cell: WholeCell) -> bool:
        return cell in self.exact or cell in self.tallies

    # ------------------------------------------------------------- scores
    def score(self, unit: str, k: int, opponent: str, opponent_copies: float, role: str) -> tuple[float, float]:
        """Score (win + draw / 2) and its variance of ``unit`` x ``k`` against ``opponent`` at its expected copies,
        in one role; NaN when a cell cannot be fought."""
        s = v = 0.0
        for ko, w in copy_mixture(opponent_copies):
            cell = (WholeCell(unit, k, opponent, ko) if role == "attacker" else WholeCell(opponent, ko, unit, k))
            row = self.row(cell)
            if row is None:
                return math.nan, math.nan
            n = math.inf if row["method"] == "exact" else row["trials"]  # exact: no Monte Carlo variance
            si, vi = score_and_var(row["p_attacker" if role == "attacker" else "p_defender"], row["p_draw"], n)
            s += w * si
            v += w * w * vi
        return s, v

    def side_averaged(self, unit: str, k: int, opponent: str, opponent_copies: float) -> tuple[float, float]:
        """Score of ``unit`` x ``k`` against ``opponent``, its two roles averaged (one role if only one fought)."""
        parts = [p for p in (self.score(unit, k, opponent, opponent_copies, r) for r in ("attacker", "defender"))
                 if math.isfinite(p[0])]
        if not parts:
            return math.nan, math.nan
        n = len(parts)
        return sum(p[0] for p in parts) / n, sum(p[1] for p in parts) / n ** 2

    def cells_for(self, unit: str, k: int, opponent: str, opponent_copies: float) -> list[WholeCell]:
        """The whole-copy cells behind ``unit`` x ``k`` against ``opponent`` at its expected copies, both roles."""
        out = []
        for ko, _ in copy_mixture(opponent_copies):
            out += [WholeCell(unit, k, opponent, ko), WholeCell(opponent, ko, unit, k)]
        return out


@dataclass(frozen=True)
class Cell:
    """A matrix cell: its numbers (a :func:`~analysis.stats.estimates.tally_row` row plus ``fights``), and the
    whole-copy fight shown in detail (the heaviest one of a mixture), its matchup, copies and stream."""

    numbers: dict[str, Any]
    tally: Tally | None
    matchup: Any
    copies: tuple[int, int]
    stream: tuple[int, ...]
    #: The shown fight's exact outcome, when it was answered exactly (then ``tally`` is None).
    exact: Any = None


def mixed_cells(bank: CellBank, names: list[str], copies: Mapping[str, float], progress: Any = None
                ) -> tuple[dict[tuple[str, str], Cell], dict[tuple[str, str], str]]:
    """Every pair's cell under expected fielding: the weighted sum of its whole-copy cells.

    Returns the cells that could be fought and, for the others, why not.
    """
    mixes = {(a, d): [(ka, kd, wa * wd) for ka, wa in copy_mixture(copies[a]) for kd, wd in copy_mixture(copies[d])]
             for a in names for d in names}
    whole = list(dict.fromkeys(WholeCell(a, ka, d, kd) for (a, d), mix in mixes.items() for ka, kd, _ in mix))
    bank.take_stored(whole)  # a rerun builds no plan for the cells a killed run finished
    missing = [c for c in whole if not bank.known(c)]
    if missing:
        _check_table_estimate(bank, list(dict.fromkeys(u for c in missing for u in (c.attacker, c.defender))),
                              copies, missing)
    bank.fight(whole, progress)
    cells, notes = {}, {}
    for (a, d), mix in mixes.items():
        parts = [(WholeCell(a, ka, d, kd), w) for ka, kd, w in mix]
        refused = [bank.refused[c] for c, _ in parts if c in bank.refused]
        if refused:
            notes[(a, d)] = refused[0]
            continue
        rows = [bank.row(c) or tally_row(bank.tallies[c]) for c, _ in parts]
        numbers = mix_rows(rows, [w for _, w in parts])
        numbers["fights"], numbers["trials"] = numbers["trials"], numbers.pop("effective_trials")
        main = max(parts, key=lambda cw: (cw[1], -cw[0].attacker_copies, -cw[0].defender_copies))[0]
        cells[(a, d)] = Cell(numbers, bank.tallies.get(main), bank.matchups[main],
                             (main.attacker_copies, main.defender_copies),
                             whole_stream(a, main.attacker_copies, d, main.defender_copies, bank.stream_names),
                             bank.exact.get(main))
    return cells, notes


def _check_table_estimate(bank: CellBank, names: list[str], copies: Mapping[str, float],
                          whole: list[WholeCell]) -> None:
    """Refuse before the other plans are built when each unit's mirror match says the whole-copy cells' tables
    would not fit (a cell ``(a, d)`` counts as the mean of the two mirror matches' tables; a mirror match already
    taken from the results store is not built again, and its unit counts as the mean of the others)."""
    ctx = bank.context
    sizes = {}
    wanted = set(whole)
    count, seconds = 0, 0.0
    with phase("sizing the matchups (each unit's mirror match)", len(names), "matchups") as sizing:
        for a in names:
            k = max(1, copy_mixture(copies[a])[0][0])
            cell = WholeCell(a, k, a, k)
            if bank.known(cell):  # taken from the store: its plan is not needed (the others size the batch)
                sizing.advance()
                continue
            t0 = time.process_time()
            try:
                built = ctx.build(_unpriced(bank.unit(a)), _unpriced(bank.unit(a)), {"attacker": k, "defender": k})
            except MatchupError:
                continue
            finally:
                took = time.process_time() - t0
                count, seconds = count + 1, seconds + took
                sizing.advance()
            sizes[a] = table_bytes(built[1])
            if cell in wanted:
                bank._prebuilt[cell] = built  # fought as it is: built once
                bank._prebuilt_took[cell] = took
    bank._sized = (count, seconds)
    if not sizes:
        return
    mean = sum(sizes.values()) / len(sizes)
    estimate = sum((sizes.get(c.attacker, mean) + sizes.get(c.defender, mean)) / 2 for c in dict.fromkeys(whole))
    PlanBudget("matrix").check_estimate(estimate, len(names) ** 2, "estimated from each unit's mirror match")
    _time_a_spread(bank, [c for c in whole if c not in bank._prebuilt])


#: Cells of a batch built ahead, spread over it, to time its building (a unit against itself is cheaper to
#: build than against others: a group against a single model has more states); and the seconds spent at most.
SPREAD_CELLS = 16
SPREAD_SECONDS = 1.0


def _time_a_spread(bank: CellBank, cells: list[WholeCell]) -> None:
    """Build up to :data:`SPREAD_CELLS` of ``cells``, evenly spread, for the estimate of the batch's building
    (kept, and fought as they are)."""
    if len(cells) <= SPREAD_CELLS:
        return  # a small batch: the mirror matches' times will do
    ctx = bank.context
    count, seconds = 0, 0.0
    for c in cells[::max(1, len(cells) // SPREAD_CELLS)][:SPREAD_CELLS]:
        t0 = time.process_time()
        try:
            built = ctx.build(_unpriced(bank.unit(c.attacker)), _unpriced(bank.unit(c.defender)),
                              {"attacker": c.attacker_copies, "defender": c.defender_copies})
        except MatchupError:
            continue  # refused again when it is fought
        finally:
            took = time.process_time() - t0
            count, seconds = count + 1, seconds + took
        # how it is answered: a method it cannot have (--method exact, no chain) is one line now, before the estimate
        ctx.job(c, built[1], (), _label(c), identity=built[0])
        bank._prebuilt[c] = built
        bank._prebuilt_took[c] = took
        if seconds > SPREAD_SECONDS:
            break
    if count:
        bank._sized = (count, seconds)
