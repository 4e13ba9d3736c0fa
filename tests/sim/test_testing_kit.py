"""The kit's parts: its statistics, its dice guards, the values it tries, its pair choice."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from sim.dice import RandomDice
from sim.errors import InputError
from sim.schema import Field
from sim.testing import DiceAccessError, GuardedDice, ReplayDice, choose_pairs
from sim.testing._stats import detectable_shift, homogeneity, mean_difference
from sim.testing._values import invalid_texts, to_text, valid_values


def test_homogeneity_is_zero_on_proportional_histograms_and_large_on_different_ones():
    assert homogeneity(np.array([100, 200, 300]), np.array([10, 20, 30])) == (0.0, 2)
    chi2, dof = homogeneity(np.array([500, 500]), np.array([300, 700]))
    assert dof == 1 and chi2 > 50
    assert homogeneity(np.array([10]), np.array([0, 0, 0])) == (0.0, 0)  # nothing to compare


def test_homogeneity_pools_sparse_cells():
    _, dof = homogeneity(np.array([1000, 1000, 1, 1, 1]), np.array([100, 100, 0, 0, 1]))
    assert dof == 1  # the three sparse cells pooled, then merged into a full one


def test_homogeneity_holds_its_level(rng):
    """Under the null the p-values are uniform: about 5% fall below 0.05."""
    from scipy import stats

    p = np.array([0.5, 0.3, 0.15, 0.05])
    pvals = []
    for _ in range(400):
        chi2, dof = homogeneity(rng.multinomial(2000, p), rng.multinomial(300, p))
        pvals.append(stats.chi2.sf(chi2, dof))
    rate = np.mean(np.array(pvals) < 0.05)
    assert abs(rate - 0.05) < 6 * np.sqrt(0.05 * 0.95 / 400)


def test_mean_difference():
    assert mean_difference(np.array([0, 10]), np.array([0, 3])) == 1.0  # both constant 1
    assert mean_difference(np.array([10]), np.array([0, 3])) == 0.0
    assert mean_difference(np.array([500, 500]), np.array([300, 700])) < 1e-10
    assert 0.01 < detectable_shift(20_000, 2_000, 1e-6) < 0.1


def test_guarded_dice_allow_d6_and_d_only_and_record(rng):
    dice = GuardedDice(rng, record=True)
    rolls = [dice.d6(), dice.d(10), dice.d(6)]
    assert GuardedDice.log_of(dice) == [(6, rolls[0]), (10, rolls[1]), (6, rolls[2])]
    assert GuardedDice.sides_of(dice) == {6, 10}
    for grab in (lambda: dice._dice, lambda: dice.rng, lambda: dice.d(1), lambda: setattr(dice, "x", 1)):
        with pytest.raises(DiceAccessError):
            grab()


def test_replay_dice_give_back_the_same_dice_and_check_their_kind():
    replay = ReplayDice([(6, 3), (10, 9)])
    assert (replay.d6(), replay.d(10), replay.remaining) == (3, 9, 0)
    with pytest.raises(DiceAccessError, match="more than"):
        replay.d6()
    with pytest.raises(DiceAccessError, match="d8"):
        ReplayDice([(6, 3)]).d(8)


def test_random_dice_of_any_size_are_uniform(rng):
    dice = RandomDice(rng)
    rolls = np.array([dice.d(10) for _ in range(20_000)])
    assert rolls.min() == 1 and rolls.max() == 10
    counts = np.bincount(rolls, minlength=11)[1:]
    assert np.all(np.abs(counts / 20_000 - 0.1) < 6 * np.sqrt(0.09 / 20_000))


FIELDS = [
    Field("n", "int", lo=0, hi=5, default=2),
    Field("x", "number", lo=-1.5, hi=2, default=0.5),
    Field("open", "int", default=3),
    Field("b", "bool", default=False),
    Field("c", "choice", choices=("x", "y", "none"), default="x"),
    Field("l", "str_list", choices=("p", "q"), default=(), min_items=0),
    Field("s", "str", default="abc"),
    Field("o", "int", lo=0, hi=1000, default=None, optional=True),
]


@pytest.mark.parametrize("f", FIELDS, ids=[f.name for f in FIELDS])
def test_valid_values_parse_back_from_their_text_and_invalid_texts_are_refused(f):
    values = valid_values(f, f.default)
    assert values
    for v in values:
        assert f.parse_text(to_text(v)) == v
    for text in invalid_texts(f):
        with pytest.raises(InputError):
            f.parse_text(text)


def test_choose_pairs_covers_every_unit_in_each_diagonal():
    names = list("abcde")
    assert len(choose_pairs(names, None)) == 25 and len(set(choose_pairs(names, None))) == 25
    first = choose_pairs(names, 5)
    assert sorted(a for a, _ in first) == names and sorted(d for _, d in first) == names
    assert choose_pairs(names, 10)[5:] == [(n, n) for n in names]  # then the mirror matches
    assert choose_pairs(["solo"], None) == [("solo", "solo")]
    assert choose_pairs(names, [("a", "b")]) == [("a", "b")]


def test_the_kit_imports_no_analysis_pandas_or_matplotlib():
    code = ("import sys, sim.testing; bad = [m for m in ('analysis', 'pandas', 'matplotlib') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
