"""Property tests (hypothesis): invariants that must hold for any input, not just the examples."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import sim
from sim.dice import ScriptedDice
from sim.outcomes import Outcomes
from sim.rulesets.mecha import RULESET as MECHA
from sim.rulesets.mecha import MechaUnit
from sim.stats import wilson_interval
from sim.tally import Tally

units = st.builds(MechaUnit, name=st.sampled_from(["A", "B"]), defence=st.integers(0, 10),
                  physical=st.integers(-5, 5), armour=st.sampled_from("ABCDE"))


@settings(max_examples=60, deadline=None)
@given(att=units, dfn=units, imm_a=st.booleans(), imm_d=st.booleans(), evading=st.booleans(),
       second_m=st.booleans(), wide=st.booleans(), rounds=st.sampled_from([1, 2, 5, "end"]),
       seed=st.integers(0, 2**32 - 1))
def test_mecha_kernel_equals_reference_on_identical_dice_for_any_units(att, dfn, imm_a, imm_d, evading, second_m,
                                                                       wide, rounds, seed):
    evading = evading and not imm_d
    states = {"attacker": {"immobilised": imm_a}, "defender": {"immobilised": imm_d, "evading": evading}}
    _, plan = sim.build_matchup("mecha", att, dfn, states=states,
                                options={"second_m_destroys": second_m, "chart": "wide" if wide else "reconstructed"})
    max_rounds = 6
    limit = max_rounds if rounds == "end" else rounds
    joint = np.random.default_rng(seed).integers(0, 36, size=(40, limit))
    state, n_rounds = MECHA.final_states(plan, 40, lambda r, idx: joint[idx, r - 1], rounds, max_rounds)
    kernel = MECHA.outcomes_from_states(state, n_rounds, np.ones(40, np.int64), rounds, limit)
    for k in range(40):
        # the reference reads only the dice it rolls: the evader's alone while it still evades
        script, evades = [], evading
        sev_d_before = int(imm_d)
        ref = None
        for r in range(limit):
            a, d = divmod(int(joint[k, r]), 6)
            script += [d + 1] if (evades and sev_d_before == 0) else [a + 1, d + 1]
            dice = ScriptedDice(script)
            ref = MECHA.resolve_one(plan, dice, r + 1 if rounds != "end" else "end", r + 1)
            if ref.rounds < r + 1 or ref.category_attacker == 2 or ref.category_defender == 2:
                break
            sev_d_before = ref.category_defender
        full = MECHA.resolve_one(plan, ScriptedDice(script), rounds, max_rounds)
        assert (full.category_attacker, full.category_defender, full.rounds, full.capped, full.winner) == (
            int(kernel.category_attacker[k]), int(kernel.category_defender[k]), int(kernel.rounds[k]),
            bool(kernel.capped[k]), int(kernel.winner[k]))


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.integers(0, 30), min_size=1, max_size=60), cut=st.integers(0, 60))
def test_tally_merge_equals_one_tally_of_everything(values, cut):
    cut = min(cut, len(values))

    def outcomes(v):
        v = np.asarray(v, dtype=np.int64)
        z = np.zeros_like(v)
        return Outcomes((v % 3).astype(np.int8), v, z, (v % 2).astype(np.int8), z.astype(np.int8), v + 1, v > 25)

    whole, a, b = Tally(2), Tally(2), Tally(2)
    whole.add(outcomes(values))
    if cut:
        a.add(outcomes(values[:cut]))
    if cut < len(values):
        b.add(outcomes(values[cut:]))
    assert a.merge(b).same_as(whole) and b.merge(a).same_as(whole)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 10**9), frac=st.floats(0, 1))
def test_wilson_interval_is_a_valid_interval_around_the_estimate(n, frac):
    k = int(round(frac * n))
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n + 1e-12 and k / n - 1e-12 <= hi <= 1.0
