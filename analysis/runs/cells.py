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

``a`` and ``d`` in the stream are the first units of the roster with the cell's
profiles and prices (:func:`~analysis.runs.fielding.twin_representatives`): the
cells of twins at the same copies are one fight, fought once and shown in each of
them, so a roster of many copies costs what its distinct fights cost. A
batch of cells is streamed (:mod:`analysis.runs.streaming`): each plan is built
when its fights are near and dropped after them, so memory does not grow with
the roster.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.errors import MatchupError
from sim.tally import Tally

from ..stats.copy_curves import score_and_var
from ..stats.estimates import exact_row, mix_rows, tally_row
from .fielding import RunContext, copy_mixture, profile_key, twin_representatives
from .remote_cells import Remote
from .streaming import stream_cells
from .streams import whole_stream

__all__ = ["WholeCell", "CellBank", "Cell", "mixed_cells", "pair_mixtures", "mixed_numbers"]


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

    Cells that are the same fight are fought once: the same attacker and defender
    profiles (:func:`~analysis.runs.fielding.profile_key`) at the same copies, on the
    same stream. A cell's stream is that of each side's first twin in the roster
    (same profile and points, :func:`~analysis.runs.fielding.twin_representatives`),
    so the cells of twins are one fight, and every one of them shows its numbers.

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
        Cells answered (fought, taken from the store, or given a same fight's answer) by this bank.
    reused : int
        Requests for a cell the bank already held (fought once, used again).
    twinned : int
        Cells given the answer of the same fight in another cell (same profiles, copies and stream)
        instead of being fought.
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
    twinned: int = 0
    #: Cells taken from the store (:meth:`take_stored`) that no :meth:`fight` has asked for yet.
    _unasked: set[WholeCell] = field(default_factory=set, repr=False)
    #: Label -> its profile key; roster name -> its first twin in the roster (whose streams it uses).
    _profiles: dict[str, str] = field(default_factory=dict, repr=False)
    _representatives: dict[str, str] | None = field(default=None, repr=False)
    #: Fight (:meth:`fight_key`) -> the cell that answered it (fought, stored or refused).
    _answered: dict[tuple, WholeCell] = field(default_factory=dict, repr=False)
    #: Cells whose answer came from the results store.
    _stored: set[WholeCell] = field(default_factory=set, repr=False)
    #: Units without their points, by label (:meth:`_unpriced`).
    _unpriced_units: dict[str, Any] = field(default_factory=dict, repr=False)
    #: What a score reads of each answered cell (:meth:`_parts`).
    _part_rows: dict[WholeCell, tuple[float, float, float, float]] = field(default_factory=dict, repr=False)

    def unit(self, label: str) -> Any:
        return self.units[label] if label in self.units else self.context.roster.unit(label)

    def _unpriced(self, label: str) -> Any:
        """The unit of ``label`` without its points (made once: every cell of a matrix asks for its two)."""
        if label not in self._unpriced_units:
            self._unpriced_units[label] = _unpriced(self.unit(label))
        return self._unpriced_units[label]

    def stream(self, cell: WholeCell) -> tuple[int, ...]:
        """The stream address of ``cell``: its labels' stream names, each taken to the first roster unit with
        that unit's profile and points (:func:`~analysis.runs.fielding.twin_representatives`)."""
        if self._representatives is None:
            self._representatives = twin_representatives(self.context.rs, self.context.roster)
        reps, names = self._representatives, self.stream_names
        a, d = names.get(cell.attacker, cell.attacker), names.get(cell.defender, cell.defender)
        return whole_stream(reps.get(a, a), cell.attacker_copies, reps.get(d, d), cell.defender_copies)

    def fight_key(self, cell: WholeCell) -> tuple:
        """What ``cell`` fights: two cells with the same key are the same fight (the same numbers)."""
        return (self.stream(cell), self._profile(cell.attacker), cell.attacker_copies,
                self._profile(cell.defender), cell.defender_copies)

    def _profile(self, label: str) -> str:
        if label not in self._profiles:
            self._profiles[label] = profile_key(self.context.rs, self.unit(label))
        return self._profiles[label]

    def known(self, cell: WholeCell) -> bool:
        """Answered, or refused, already."""
        return cell in self.tallies or cell in self.exact or cell in self.refused

    def _matchup(self, c: WholeCell) -> Any:
        return self.context.matchup(self._unpriced(c.attacker), self._unpriced(c.defender),
                                    {"attacker": c.attacker_copies, "defender": c.defender_copies})

    def take_stored(self, cells: Iterable[WholeCell]) -> int:
        """Take every cell not known yet that the results store holds, before any plan is built; return how many.

        A stored cell needs neither its plan nor a fight (:meth:`RunContext.stored`):
        a rerun after a kill, or a rebalance after its report, builds only the plans
        of the cells still missing.
        """
        ctx = self.context
        if ctx.store is None or getattr(ctx.store, "holds_nothing", False):
            return 0
        taken = 0
        for c in dict.fromkeys(cells):
            if self.known(c) or c in self.matchups:
                continue
            try:
                matchup = self._matchup(c)
            except MatchupError:
                continue  # refused again, with its reason, when it is fought
            hit = ctx.stored(c, matchup, self.stream(c))
            if hit is None:
                continue
            self.matchups[c] = matchup
            if hit.exact is not None:
                self.exact[c] = hit.exact
            else:
                self.tallies[c] = hit.tally
            self._answered.setdefault(self.fight_key(c), c)
            self._stored.add(c)
            self.from_store += 1
            self.fought += 1
            self._unasked.add(c)
            taken += 1
        return taken

    def fight(self, cells: Iterable[WholeCell], progress: Any = None) -> int:
        """Fight every cell not fought yet (one batch, streamed: :func:`~analysis.runs.streaming.stream_cells`);
        return how many were fought or answered now (the cells taken from the store are counted in
        :attr:`from_store`, those given a same fight's answer in :attr:`twinned`)."""
        ctx = self.context
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
        fights: dict[tuple, list[WholeCell]] = {}
        for c in todo:
            fights.setdefault(self.fight_key(c), []).append(c)
        fresh = [members[0] for key, members in fights.items() if key not in self._answered]

        def job(c: WholeCell, matchup: Any, plan: Any, took: float) -> Any:
            self.matchups[c] = matchup
            return ctx.job(c, plan, self.stream(c), _label(c), identity=matchup, built_in=took)

        remote = Remote(self._recipe, self.stream, _label, self.matchups.__setitem__)
        done, refused = stream_cells(ctx, fresh, self._build, job, progress=progress, stored=stored, remote=remote)
        for c, res in done.items():
            if res.exact is not None:
                self.exact[c] = res.exact
            else:
                self.tallies[c] = res.tally
            if res.from_store:
                self._stored.add(c)
                self.from_store += 1
        for c, why in refused.items():
            self.refused[c] = why
        for c in fresh:
            self._answered[self.fight_key(c)] = c
        self.fought += len(done)
        for key, members in fights.items():
            for c in members:
                if not self.known(c):
                    self._twin(c, self._answered[key])
        return len(done)

    def race(self, cells: Iterable[WholeCell], score_variance: float, progress: Any = None) -> int:
        """Fight ``cells`` on until each side's cell-score variance is at most ``score_variance`` (tighter than
        the bank's), and answer them with that; return how many were answered anew (fought, taken from the
        results store, or given the answer of the same fight among them).

        A cell continues on its own stream: its first steps are those it was fought with, so the
        answer is the one a run fought to the tighter bound from the start would give
        (:mod:`analysis.runs.racing`). Exact cells have no noise and are left as they are.
        """
        tighter = CellBank(dataclasses.replace(self.context, score_variance=float(score_variance)),
                           units=self.units, stream_names=self.stream_names)
        tighter._profiles, tighter._representatives = self._profiles, self._representatives
        tighter._unpriced_units = self._unpriced_units
        wanted = [c for c in dict.fromkeys(cells) if c in self.tallies]
        tighter.fight(wanted, progress)
        for c in wanted:
            if c in tighter.exact:  # a tighter bound can make the chain the cheaper answer
                self.exact[c] = tighter.exact[c]
                del self.tallies[c]
            elif c in tighter.tallies:
                self.tallies[c] = tighter.tallies[c]
            self._part_rows.pop(c, None)
        self.from_store += tighter.from_store
        return tighter.fought

    def _twin(self, c: WholeCell, same: WholeCell) -> None:
        """Give ``c`` the answer of ``same``, the same fight (with its own matchup: its units' names); a twin
        of a cell taken from the results store counts as taken from it too."""
        if same in self.refused:
            self.refused[c] = self.refused[same]
            return
        try:
            self.matchups[c] = self._matchup(c)
        except MatchupError as e:
            self.refused[c] = str(e)
            return
        if same in self.exact:
            self.exact[c] = self.exact[same]
        else:
            self.tallies[c] = self.tallies[same]
        if same in self._stored:
            self._stored.add(c)
            self.from_store += 1
        self.twinned += 1
        self.fought += 1

    def _build(self, c: WholeCell) -> tuple[Any, Any]:
        """The matchup and plan of a cell."""
        return self.context.build(*self._recipe(c))

    def _recipe(self, c: WholeCell) -> tuple:
        """The arguments of :meth:`RunContext.build` for a cell (picklable: a worker may build its plan)."""
        return (self._unpriced(c.attacker), self._unpriced(c.defender),
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
            parts = self._parts(cell)
            if parts is None:
                return math.nan, math.nan
            p_attacker, p_defender, p_draw, n = parts
            si, vi = score_and_var(p_attacker if role == "attacker" else p_defender, p_draw, n)
            s += w * si
            v += w * w * vi
        return s, v

    def _parts(self, cell: WholeCell) -> tuple[float, float, float, float] | None:
        """``(p_attacker, p_defender, p_draw, trials)`` of an answered cell (``inf`` trials when exact: no Monte
        Carlo variance), kept: a 100-unit advice reads each cell's row hundreds of thousands of times."""
        if cell in self._part_rows:
            return self._part_rows[cell]
        row = self.row(cell)
        if row is None:
            return None  # not kept: it may be fought later
        n = math.inf if row["method"] == "exact" else row["trials"]
        out = self._part_rows[cell] = (row["p_attacker"], row["p_defender"], row["p_draw"], n)
        return out

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
    mixes = pair_mixtures(names, copies)
    whole = list(dict.fromkeys(WholeCell(a, ka, d, kd) for (a, d), mix in mixes.items() for ka, kd, _ in mix))
    bank.fight(whole, progress)  # streamed; a rerun builds no plan for the cells a killed run finished
    return mixed_numbers(bank, mixes)


def pair_mixtures(names: Iterable[str], copies: Mapping[str, float], pairs: Iterable[tuple[str, str]] | None = None
                  ) -> dict[tuple[str, str], list[tuple[int, int, float]]]:
    """Each pair's whole-copy cells and weights, ``(attacker copies, defender copies, weight)`` (every pair of
    ``names`` unless ``pairs`` are given)."""
    names = list(names)
    wanted = pairs if pairs is not None else ((a, d) for a in names for d in names)
    return {(a, d): [(ka, kd, wa * wd) for ka, wa in copy_mixture(copies[a]) for kd, wd in copy_mixture(copies[d])]
            for a, d in wanted}


def mixed_numbers(bank: CellBank, mixes: Mapping[tuple[str, str], list[tuple[int, int, float]]]
                  ) -> tuple[dict[tuple[str, str], Cell], dict[tuple[str, str], str]]:
    """The cells of ``mixes`` (:func:`pair_mixtures`) from the bank's whole-copy cells, answered already, and
    why each pair that could not be fought was not."""
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
                             bank.stream(main), bank.exact.get(main))
    return cells, notes
