"""Paired comparisons on common random numbers: correct differences, honest and smaller standard errors."""

from __future__ import annotations

from functools import partial

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import sim
from analysis.runs.compare import COMPARE_COLUMNS, batch_trials_for, paired_difference
from analysis.runs.compare import compare as _compare
from analysis.runs.matrix import cell_stream
from sim.errors import InputError
from sim.rng import BLOCK_TRIALS

# These tests hold the paired comparisons to exact one-round answers, so they fight under the rules' own defaults
# (mecha: one round); the ruleset's balance settings have tests of their own (test_balance_settings.py).
compare = partial(_compare, rules_defaults=True, method="mc")  # Monte Carlo mechanics (paired batches, streams)

BATCH16 = 16 * BLOCK_TRIALS


def p_attacker_wins(att: tuple[int, int, str], dfn: tuple[int, int, str]) -> Fraction:
    """Exact one-round P(attacker wins) from the spec's reconstructed chart (independent of the code)."""
    def sev(defence: int, physical: int, letter: str) -> list[Fraction]:
        k = "ABCDE".index(letter)
        p = [Fraction(0)] * 3
        for die in range(1, 7):
            t = die + defence + physical
            p[0 if t >= 7 else 2 if t <= 2 + k else 1 if t == 3 + k else 0] += Fraction(1, 6)
        return p
    a, d = sev(*att), sev(*dfn)
    return sum((a[i] * d[j] for i in range(3) for j in range(3) if i < j), Fraction(0))


def test_paired_difference_by_hand():
    # batches of 10: d = (2, 4, 0, 2), diff = 8/40 = 0.2, residuals d - 10*0.2 = (0, 2, -2, 0)
    diff, se, lo, hi = paired_difference([1, 2, 3, 4], [3, 6, 3, 6], [10, 10, 10, 10])
    assert diff == pytest.approx(0.2)
    sigma2 = (0 + 4 / 10 + 4 / 10 + 0) / 3
    assert se == pytest.approx(math.sqrt(sigma2 / 40))
    t = stats.t.ppf(0.975, 3)
    assert (lo, hi) == pytest.approx((0.2 - t * se, 0.2 + t * se))
    assert math.isnan(paired_difference([1], [2], [10])[1])


def test_batches():
    assert batch_trials_for(16 * BLOCK_TRIALS) == BLOCK_TRIALS
    assert batch_trials_for(16 * BLOCK_TRIALS - 1) == BLOCK_TRIALS  # ceil((16B - 1) / 16)
    assert batch_trials_for(1600) == 100


@pytest.fixture(scope="module")
def paired():
    return compare("mecha", "AFS", {"defence": 3}, ["Nutrocker", "Sand Stalker"], trials=BATCH16, seed=4)


def test_frame_shape_and_overall_rows(paired):
    assert list(paired.columns) == COMPARE_COLUMNS
    assert paired[["opponent", "role"]].values.tolist() == [
        ["Nutrocker", "attacker"], ["Nutrocker", "defender"], ["Sand Stalker", "attacker"],
        ["Sand Stalker", "defender"], ["(all)", "attacker"], ["(all)", "defender"], ["(all)", "both"]]
    assert (paired["batches"].iloc[:4] == 16).all()
    rows = paired.iloc[:4]
    both = paired.iloc[-1]
    assert both["diff"] == pytest.approx(rows["diff"].mean())
    assert both["diff_se"] == pytest.approx(math.sqrt((rows["diff_se"] ** 2).sum()) / 4)
    assert paired.attrs["variant"] == "AFS[defence=3]" and paired.attrs["base"] == "AFS"


def test_differences_match_exact_probabilities(paired):
    afs, afs3 = (2, 0, "B"), (3, 0, "B")
    opp = {"Nutrocker": (4, -2, "A"), "Sand Stalker": (1, 0, "C")}
    for _, r in paired.iloc[:4].iterrows():
        o = opp[r.opponent]
        # one round of mecha without states is role-symmetric: both sides roll and the lower
        # severity wins, so P(unit wins) is the same attacking or defending
        exact = p_attacker_wins(afs3, o) - p_attacker_wins(afs, o)
        assert abs(r["diff"] - float(exact)) < 6 * r["diff_se"], (r.opponent, r.role, r["diff"], float(exact))
        assert r.diff_lo < r["diff"] < r.diff_hi


def test_base_runs_on_the_matrix_cell_stream(paired):
    f = sim.fight("mecha", "AFS", "Nutrocker", trials=BATCH16, seed=4, stream=cell_stream("AFS", "Nutrocker"),
                  method="mc")
    assert paired.iloc[0].p_win_base == f.win["attacker"]
    g = sim.fight("mecha", "Nutrocker", "AFS", trials=BATCH16, seed=4, stream=cell_stream("Nutrocker", "AFS"),
                  method="mc")
    assert paired.iloc[1].p_win_base == g.win["defender"]
    h = sim.fight("mecha", "AFS", "Nutrocker", trials=BATCH16, seed=4, stream=cell_stream("AFS", "Nutrocker"),
                  overrides={"attacker": {"defence": 3}}, method="mc")
    assert paired.iloc[0].p_win_variant == h.win["attacker"]


def test_paired_beats_independent_runs_on_the_same_budget(paired):
    indep = compare("mecha", "AFS", {"defence": 3}, ["Nutrocker", "Sand Stalker"], trials=BATCH16, seed=4,
                    paired=False)
    for (_, p), (_, q) in zip(paired.iloc[:4].iterrows(), indep.iloc[:4].iterrows()):
        # same base numbers, the variant from another stream
        assert p.p_win_base == q.p_win_base and p.p_win_variant != q.p_win_variant
        # independent runs: the batch-means SE estimates the binomial SE of two independent proportions
        assert 0.5 < q.diff_se / q.diff_se_independent < 1.6
        # paired: far smaller than either
        # paired: far smaller than the error of two independent runs (the binomial formula; the batch-means
        # estimate of the independent run, q.diff_se, is itself noisy with 16 batches)
        assert p.diff_se < 0.7 * p.diff_se_independent
    assert paired.iloc[-1].diff_se < 0.75 * indep.iloc[-1].diff_se


def test_paired_standard_error_is_calibrated_over_seeds():
    # 40 independent repetitions: the spread of the paired estimate matches its reported SE
    diffs, ses = [], []
    for seed in range(40):
        f = compare("mecha", "AFS", {"defence": 3}, ["Nutrocker"], roles=["attacker"], trials=16 * 4096, seed=seed)
        diffs.append(f.iloc[0]["diff"])
        ses.append(f.iloc[0]["diff_se"])
    ratio = np.std(diffs, ddof=1) / np.sqrt(np.mean(np.square(ses)))
    # sd of a 40-sample standard deviation is ~11%; batch-means SEs (15 df) add a little
    assert 0.65 < ratio < 1.45, ratio
    exact = float(p_attacker_wins((3, 0, "B"), (4, -2, "A")) - p_attacker_wins((2, 0, "B"), (4, -2, "A")))
    assert abs(np.mean(diffs) - exact) < 6 * np.std(diffs, ddof=1) / math.sqrt(40)


def test_identical_variant_gives_zero_difference_and_variant_by_name():
    same = compare("mecha", "AFS", "AFS", ["Gustav"], trials=BATCH16 // 4, seed=1)
    assert (same["diff"] == 0).all() and (same["diff_se"] == 0).all()
    other = compare("mecha", "AFS", "PKA", ["Nutrocker"], trials=BATCH16 // 4, seed=1)
    assert other.attrs["variant"] == "PKA"
    # AFS and PKA have the same fighting profile: on common numbers they tie exactly
    assert (other["diff"] == 0).all()


def test_opponents_that_cannot_fight_are_noted_and_left_out_of_the_average():
    f = compare("mecha", "AFS", {"defence": 3}, ["Nutrocker", "Fliege"], trials=BATCH16 // 4, seed=1)
    fl = f[f.opponent == "Fliege"]
    assert (fl.trials == 0).all() and fl.note.str.contains("cannot be engaged").all()
    both = f[(f.opponent == "(all)") & (f.role == "both")].iloc[0]
    assert both["diff"] == pytest.approx(f[(f.opponent == "Nutrocker")]["diff"].mean())


def test_results_do_not_depend_on_workers():
    kw = dict(trials=BATCH16 // 4, seed=8, rounds="end")
    a = compare("mecha", "AFS", {"defence": 1}, ["Nutrocker", "Gustav"], workers=1, **kw)
    b = compare("mecha", "AFS", {"defence": 1}, ["Nutrocker", "Gustav"], workers=2, **kw)
    assert a.equals(b)


@pytest.mark.parametrize("variant, kwargs, match", [
    ({}, {}, "no field changes"),
    ({"defence": 42}, {}, "defence"),
    ({"nonsense": 1}, {}, "nonsense"),
    ("Nobody", {}, "no unit 'Nobody'"),
    ({"defence": 3}, {"opponents": ["Nobody"]}, "no unit 'Nobody'"),
    ({"defence": 3}, {"roles": ["charger"]}, "--role"),
    ({"defence": 3}, {"trials": 0}, "--trials"),
    ({"defence": 3}, {"opponents": ["Fliege"]}, "can fight none"),
])
def test_bad_input(variant, kwargs, match):
    with pytest.raises(InputError, match=match):
        compare("mecha", "AFS", variant, **{"opponents": ["Gustav"], "trials": 1000, **kwargs})
