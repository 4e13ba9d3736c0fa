"""``warband`` mixed sides (army lists): the plan of a fight whose sides field several warrior profiles.

A side of the matchup is a :class:`sim.lists.MixedSide` (its groups in listed order) or
one profile with ``count`` warriors. Its warriors are lined up group by group, in
listed order (:func:`warriors`); the rules then play them exactly as a side of one
profile, every warrior with its own profile (the reference :func:`.reference.resolve_fight`
reads the line-up warrior by warrior).

The kernels read the tables of each *pair of profiles* (one attacking, one defending):
the blows of :func:`.plan._blows_of` and, when every pair's batches are tabulated,
the phase tables of :func:`.compiled.phase_tables` (strike, isolated pair, two-leaf
star), all built once per process per pair of profiles. :class:`MixedPlan` holds
them; :func:`simulate_mixed_loop` plays the fights on the compiled loop of
:mod:`._mixed_loop` where it can, and :mod:`.mixed_kernel` (vectorised) plays the rest
(a switch on, a batch of more than :data:`.batches.MAX_TABLE_ATTACKS` attacks, no Numba).

Pairing (option ``pairing``): ``"listed"`` (the default) lines each side up in the list's
order, so the round-robin of the initial contacts follows the order the list names its
units (the charging player's choice, written down); ``"random"`` shuffles each side with
more than one profile at the start of every fight (a side of one profile is the same
whatever its order, so nothing is drawn for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...kernels.uniforms import play_buffered
from ...outcomes import Outcomes
from ...ruleset import END, Rounds
from .arena import ARENA, Gathered
from .compiled import BUFFER, HEADROOM, _PATTERN, available, phase_tables
from .fused import _profile
from .plan import KernelPlan, SideInfo, _blows_of, _side
from .single import auto_hit_cdf
from .units import WarbandUnit, line_up

__all__ = ["PAIRINGS", "warriors", "side_profiles", "MixedPlan", "MixedLoopTables", "build_mixed_plan",
           "simulate_mixed_loop"]

#: Values of the ``pairing`` option: the default first.
PAIRINGS = ("listed", "random")


def warriors(side: Any) -> tuple[WarbandUnit, ...]:
    """The side's warriors in line-up order (:func:`.units.line_up`)."""
    return line_up(side)


def side_profiles(side: Any) -> tuple[tuple[WarbandUnit, ...], NDArray[np.int64]]:
    """The side's distinct warrior profiles (in first appearance) and each warrior's index among them."""
    profiles: list[WarbandUnit] = []
    index: list[int] = []
    for w in warriors(side):
        if w not in profiles:
            profiles.append(w)
        index.append(profiles.index(w))
    return tuple(profiles), np.array(index, np.int64)


@dataclass(frozen=True)
class MixedLoopTables:
    """The compiled loop's constants: per profile (the attacker's, then the defender's), and the pairs' tables
    (:class:`.arena.Gathered` views of this process's :data:`.arena.ARENA`). Pickles as the profiles it was built
    from (``key``), gathered again where it is unpickled."""

    PW: NDArray[np.int64]
    PI: NDArray[np.int64]
    PC1: NDArray[np.int64]
    PCL: NDArray[np.int64]
    PRF: NDArray[np.bool_]
    irank: NDArray[np.int64]
    NI: int
    strike: Gathered
    pair: Gathered
    star: Gathered
    key: tuple

    @property
    def nbytes(self) -> int:
        """Bytes of the matchup's own arrays (the arena's are shared by every matchup of the process)."""
        own = [self.PW, self.PI, self.PC1, self.PCL, self.PRF, self.irank]
        own += [a for g in (self.strike, self.pair, self.star) for a in (g.base, g.bits, g.off)]
        return sum(int(a.nbytes) for a in own)

    def __reduce__(self):
        return _loop_tables, self.key


@dataclass(frozen=True)
class MixedPlan:
    """A prepared fight between mixed sides.

    Attributes
    ----------
    profiles : (tuple, tuple)
        Each side's distinct warrior profiles.
    prof : (ndarray, ndarray)
        Each warrior's profile index on its side, in line-up order.
    infos : (tuple, tuple)
        :class:`.plan.SideInfo` of each profile (as a target and in the strike order).
    pairs : tuple of tuple of KernelPlan
        ``pairs[i][j]``: the blows of attacker profile ``i`` and defender profile ``j``.
    ld : (ndarray, ndarray)
        Each warrior's Leadership (0 if none; read only by the switches).
    auto_hit : tuple or None
        ``auto_hit[striker side][i][j][kind]``: All Alone's automatic-hit wound CDF.
    loop : MixedLoopTables or None
        The compiled loop's tables (None: the vectorised kernel plays). Not a field: they are derived from
        the fields (so a results store's key, which digests the fields, need not hash the arena's arrays).
    """

    profiles: tuple[tuple[WarbandUnit, ...], tuple[WarbandUnit, ...]]
    prof: tuple[NDArray[np.int64], NDArray[np.int64]]
    infos: tuple[tuple[SideInfo, ...], tuple[SideInfo, ...]]
    pairs: tuple[tuple[KernelPlan, ...], ...]
    charging: bool
    all_alone: bool = False
    rout: bool = False
    reengage: str = "own_turn_charge"
    pairing: str = "listed"
    ld: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
    auto_hit: tuple | None = None

    @property
    def loop(self) -> MixedLoopTables | None:
        return self.__dict__.get("_loop")

    @property
    def counts(self) -> tuple[int, int]:
        return int(self.prof[0].size), int(self.prof[1].size)

    def shuffled(self, k: int) -> bool:
        """Whether side ``k``'s line-up is drawn at random in each fight."""
        return self.pairing == "random" and len(self.profiles[k]) > 1


def _pair_plan(a: WarbandUnit, d: WarbandUnit, charging: bool, fist_as_user: bool) -> KernelPlan:
    """The one-against-one plan of a pair of profiles: both sides' blows and target infos."""
    sides = (_side(a, True, charging), _side(d, False, charging))
    return KernelPlan(sides, _blows_of(_profile(a), _profile(d), charging, fist_as_user))


def build_mixed_plan(att: Any, dfn: Any, charging: bool, fist_as_user: bool, *, all_alone: bool = False,
                     rout: bool = False, reengage: str = "own_turn_charge", pairing: str = "listed",
                     engine: str = "auto") -> MixedPlan:
    """The tables of a fight between the sides ``att`` and ``dfn`` (see the module docstring)."""
    (pa, ia), (pd, id_) = side_profiles(att), side_profiles(dfn)
    infos = (tuple(_side(u, True, charging) for u in pa), tuple(_side(u, False, charging) for u in pd))
    pairs = tuple(tuple(_pair_plan(a, d, charging, fist_as_user) for d in pd) for a in pa)
    ld = (np.array([w.ld or 0 for w in warriors(att)], np.int64), np.array([w.ld or 0 for w in warriors(dfn)], np.int64))
    auto = None
    if all_alone:
        # auto[striker side][attacker profile][defender profile][kind]
        auto = tuple(tuple(tuple(tuple(auto_hit_cdf(b, pairs[i][j].sides[1 - k].step_aside)
                                       for b in pairs[i][j].blows[k]) for j in range(len(pd))) for i in range(len(pa)))
                     for k in (0, 1))
    mp = MixedPlan((pa, pd), (ia, id_), infos, pairs, charging, all_alone, rout, reengage, pairing, ld, auto)
    if engine == "auto" and not (all_alone or rout) and available():
        object.__setattr__(mp, "_loop", mixed_loop_tables(mp, fist_as_user))
    return mp


def mixed_loop_tables(mp: MixedPlan, fist_as_user: bool) -> MixedLoopTables | None:
    """The loop's tables of a mixed plan (its pairs of profiles in this process's arena, built once a pair), or
    None if some pair's batch rolls dice (then the vectorised kernel plays the fight)."""
    return _loop_tables(tuple(_profile(u) for u in mp.profiles[0]), tuple(_profile(u) for u in mp.profiles[1]),
                        mp.charging, fist_as_user)


@lru_cache(maxsize=64)
def _loop_tables(pa: tuple[WarbandUnit, ...], pd: tuple[WarbandUnit, ...], charging: bool,
                 fist_as_user: bool) -> MixedLoopTables | None:
    for _ in range(2):  # (again if the arena started afresh while the pairs were put in it)
        generation = ARENA.generation
        ids = []
        for a in pa:
            for d in pd:
                i = ARENA.pair((a, d, charging, fist_as_user),
                               lambda a=a, d=d: phase_tables(_pair_plan(a, d, charging, fist_as_user)))
                if i is None:
                    return None
                ids.append(i)
        if ARENA.generation == generation:
            break
    strike, pair, star = ARENA.gather(ids)
    infos = tuple(_side(u, True, charging) for u in pa) + tuple(_side(u, False, charging) for u in pd)
    values = sorted({s.i for s in infos}, reverse=True)
    irank = np.zeros(11, np.int64)
    for r, v in enumerate(values):
        irank[v] = r
    return MixedLoopTables(
        np.array([s.w for s in infos], np.int64), np.array([s.i for s in infos], np.int64),
        np.array([s.class_round1 for s in infos], np.int64), np.array([s.class_later for s in infos], np.int64),
        np.array([s.lightning_reflexes for s in infos], np.bool_), irank, len(values), strike, pair, star,
        (pa, pd, charging, fist_as_user))


def simulate_mixed_loop(mp: MixedPlan, n: int, rng: np.random.Generator, rounds: Rounds, max_rounds: int) -> Outcomes:
    """``n`` fights of the mixed plan ``mp`` on the compiled loop (:mod:`._mixed_loop`)."""
    from ._mixed_loop import play_mixed

    lt = mp.loop
    limit = max_rounds if rounds == END else int(rounds)
    na, nd = mp.counts
    nw = na + nd
    per_fight = 2 * nw * limit + nw                 # a key and a batch per warrior and round, and the line-up
    winner, cat_a, cat_d = (np.empty(n, np.int8) for _ in range(3))
    dmg_a, dmg_d, rounds_out, ooa_a, ooa_d = (np.empty(n, np.int64) for _ in range(5))
    capped = np.empty(n, np.bool_)
    prof0 = np.concatenate(mp.prof).astype(np.int64)
    shuffle = np.array([mp.shuffled(0), mp.shuffled(1)], np.bool_)
    Pd = len(mp.profiles[1])

    def step(done, u):
        return play_mixed(done, n, u, per_fight, na, nd, prof0, shuffle, Pd, lt.PW, lt.PI, lt.PC1, lt.PCL, lt.PRF,
                          mp.reengage == "own_turn_charge", limit, rounds == END, lt.irank, lt.NI,
                          *lt.strike.args(), *lt.pair.args(), *lt.star.args(), _PATTERN,
                          winner, dmg_a, dmg_d, cat_a, cat_d, rounds_out, capped, ooa_a, ooa_d)

    play_buffered(step, rng, n, per_fight, buffer=BUFFER, headroom=HEADROOM)
    return Outcomes(winner, dmg_a, dmg_d, cat_a, cat_d, rounds_out, capped,
                    {"out_of_action_attacker": ooa_a, "out_of_action_defender": ooa_d})
