"""The conformance kit on real rules (our five rulesets pass it) and on broken ones (it catches each defect).

Sample sizes are kept small so the suite stays fast: 10,000 kernel against 800
reference fights per pair and rounds setting (500 for grimdark and pools, whose
references are slow or whose switches are many). Only mecha (a fast reference, 9
units) runs every ordered pair; the others run a subset of the roster's
diagonals (``pairs=k``: unit i against unit i+1, then every mirror match...),
so each unit attacks and defends at least once: grimdark and warband one
diagonal, duel and pools two (neighbours and mirror matches). The verdict is
fixed by the seed.
"""

from __future__ import annotations

import pytest

import sim
from sim.testing import ConformanceError, check_ruleset
from tests import broken_rulesets as broken

pytestmark = pytest.mark.statistical

#: Pairs per ruleset: None = every ordered pair; an int = that many pairs from the roster's diagonals.
PAIRS = {"mecha": None, "grimdark": 1, "duel": 2, "pools": 2, "warband": 1}
FAST = dict(trials=10_000, reference_trials=800)


@pytest.mark.parametrize("rid", list(PAIRS))
def test_our_rulesets_pass_the_kit(rid):
    n = len(sim.default_roster(rid))
    pairs = n * PAIRS[rid] if PAIRS[rid] else None
    sizes = FAST | {"reference_trials": 500} if rid in ("grimdark", "pools") else FAST
    report = check_ruleset(rid, pairs=pairs, **sizes)  # raises ConformanceError listing any failure
    assert report.dice == {6}, "our references roll d6 only"
    assert len(report.pairs) + len(report.refused) == (pairs or n * n)
    names = {c.name for c in report.checks}
    assert {"kernel vs reference", "kernel vs reference (pooled)", "dice", "reproducible", "kernel randomness",
            "settings round-trip", "settings accepted", "bad values", "units round-trip", "outcomes", "exact",
            "kernel vs exact", "kernel vs exact (pooled)"} <= names
    # every declared state (each side it applies to) and option was tried
    tried = {c.subject.split("=")[0].removeprefix("--set ") for c in report.checks if c.name == "settings accepted"}
    rs = sim.get_ruleset(rid)
    declared = {f"{side}.{s.name}" for s in rs.state_fields for side in s.sides}
    declared |= {f.name for f in rs.option_fields if f.kind != "str" or isinstance(f.default, str)}
    assert declared <= tried


CAUGHT = [
    # the kernel is off: both the reference and the exact answer (read from the plan's chain) disagree with it
    (broken.OFF_BY_ONE_PIP, {"kernel vs reference", "kernel vs reference (pooled)", "kernel vs exact",
                             "kernel vs exact (pooled)"}),
    (broken.WRONG_EXACT, {"kernel vs exact", "kernel vs exact (pooled)"}),
    (broken.LEAKY_EXACT, {"exact"}),
    (broken.PEEKING_REFERENCE, {"dice"}),
    (broken.HIDDEN_COIN, {"dice"}),
    (broken.FRESH_ENTROPY, {"kernel randomness", "reproducible"}),
    (broken.LOST_OPTION, {"settings round-trip"}),
    (broken.LENIENT_STATES, {"bad values"}),
    (broken.TRACEBACK_OVERRIDES, {"bad values", "units round-trip"}),
    (broken.BAD_CODES, {"outcomes"}),
    (broken.NO_REFERENCE, {"protocol"}),
]


@pytest.mark.parametrize("rs,failed", CAUGHT, ids=[rs.id for rs, _ in CAUGHT])
def test_the_kit_catches_each_defect_and_only_that(rs, failed):
    report = check_ruleset(rs, broken.roster(rs), pairs=9, raise_on_failure=False, **FAST)  # one diagonal
    assert {c.name for c in report.failures} == failed, report.summary()


def test_off_by_one_pip_fails_loudly_with_the_evidence():
    rs = broken.OFF_BY_ONE_PIP
    with pytest.raises(ConformanceError) as info:
        check_ruleset(rs, broken.roster(rs), pairs=[("AFS", "Nutrocker")], rounds=[1], settings=False, workers=1,
                      **FAST)
    text = str(info.value)
    assert "FAIL kernel vs reference: AFS v Nutrocker, rounds=1" in text
    assert "mean damage_to_attacker" in text and "kernel" in text and "reference" in text


def test_the_same_seed_gives_the_same_verdict():
    a = check_ruleset("mecha", pairs=4, rounds=[1], settings=False, workers=1, **FAST)
    b = check_ruleset("mecha", pairs=4, rounds=[1], settings=False, workers=1, **FAST)
    assert [c.line() for c in a.checks] == [c.line() for c in b.checks]
