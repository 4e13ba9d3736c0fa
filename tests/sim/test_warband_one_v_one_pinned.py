"""warband 1 v 1 and 1 v n results are those of the code before issues 14 and 16, fight for fight.

Issue 16 changed how freed warriors re-engage and issue 14 rewrote the group
kernel; neither may move a fight where nobody is ever free (one warrior
against one or many). The digests below were computed by the code at commit
``dc0f067`` (before both issues), not by the code under test: each is the
SHA-256 of every per-fight outcome field of 20,000 kernel fights with a fixed
seed, and the tallies are ``sim.fight`` through the engine (blocks, streams).
The units are fought one a side (``budget="none"``): a roster budget would make
them equal-points groups. Only the profiles matter; their points do not.

Since the compiled kernel (``sim/rulesets/warband/compiled.py``) plays these fights
by default, the digests pin the vectorised kernel (``with_engine(plan, "numpy")``),
fight for fight, and the compiled kernel must give the pinned win tallies in
distribution (through the engine, a two-sample test against the pinned 100,000
fights).

A failure means 1 v 1 results changed. If that is intended (a rules fix), say
so in the commit and recompute the digests with the new code; if the NumPy
random streams themselves changed (a new NumPy), every seeded result moved.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import sim
from sim.rulesets.warband import RULESET as WB
from tests.helpers import assert_same_distribution

PINNED = [
    # (attacker, defender, rounds, digest of the kernel's fights, sim.fight wins (draw, attacker, defender))
    ("Mercenary Warrior", "Youngblood", "end", "155733e7acdb2c27", (0, 58558, 41442)),
    ("Mercenary Captain", "Swordsman", "end", "6c08bf4ef5f92ef8", (0, 73003, 26997)),
    ("Ogre Brute", "Dwarf Clansman", "end", "c9012f991c5990e4", (0, 81894, 18106)),
    ("Elf Blademaster", "Champion", 3, "31269fd59ef54fd5", (18121, 43187, 38692)),
    ("Zealot", "Pit Fighter", "end", "e64793e313a1a5a7", (0, 24703, 75297)),
    ("Youngbloods", "Ogre Brute", "end", "69b220fb6116256c", (0, 30105, 69895)),     # 3 v 1
    ("Spearman", "Youngbloods", 4, "befac06401a3a289", (2621, 15809, 81570)),          # 1 v 3
]
FIELDS = ("winner", "damage_to_attacker", "damage_to_defender", "category_attacker", "category_defender",
          "rounds", "capped")


def _digest(out) -> str:
    h = hashlib.sha256()
    for f in FIELDS:
        h.update(np.ascontiguousarray(getattr(out, f), dtype=np.int64).tobytes())
    for e in sorted(out.extras):
        h.update(e.encode())
        h.update(np.ascontiguousarray(out.extras[e], dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("k, att, dfn, rounds, digest, wins", [(k, *row) for k, row in enumerate(PINNED)])
def test_one_warrior_fights_are_those_before_the_group_rules(k, att, dfn, rounds, digest, wins):
    plan = WB.with_engine(sim.build_matchup(WB, att, dfn, budget="none")[1], "numpy")
    out = WB.simulate(plan, 20_000, np.random.default_rng(900 + k), rounds, 50).expand()
    assert _digest(out) == digest, f"{att} v {dfn}: per-fight outcomes differ from dc0f067's"
    r = sim.fight("warband", att, dfn, trials=100_000, seed=950 + k, rounds=rounds, budget="none", method="mc")
    assert_same_distribution([int(x) for x in r.tally.wins], list(wins), what=f"{att} v {dfn}: wins")


def test_both_re_engaging_rules_give_the_pinned_fights():
    """1 v 1 never re-engages, so the old rule's switch gives the same dice too."""
    att, dfn, rounds, digest, _ = PINNED[0]
    plan = sim.build_matchup(WB, att, dfn, options={"reengage": "every_round"}, budget="none")[1]
    plan = WB.with_engine(plan, "numpy")
    assert _digest(WB.simulate(plan, 20_000, np.random.default_rng(900), rounds, 50).expand()) == digest
