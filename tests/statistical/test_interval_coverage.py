"""Coverage of the paired intervals (issue 10): compare's rows and marginal_value's slopes use a t quantile on the
batch-means degrees of freedom, so their 95% intervals cover the truth 95% of the time, where the normal quantile
covers about 93% with 16 batches.

The batch counts are drawn here from an exact joint law of (base wins, variant wins) per fight, so the true
difference is known; the intervals are the library's own (``paired_difference``, compare's ``(all)`` row,
``marginal_value``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.runs.compare import _overall, paired_difference
from analysis.runs.sweep import marginal_value

#: Per fight: (base wins, variant wins) = (1, 1), (0, 1), (1, 0), (0, 0). Common random numbers make the two
#: outcomes agree in most fights; the variant wins 6 pp more often.
JOINT = [0.30, 0.08, 0.02, 0.60]
TRUE_DIFF = (JOINT[0] + JOINT[1]) - (JOINT[0] + JOINT[2])
BATCHES, BATCH = 16, 256
REPS = 3000
Z95 = 1.959963984540054


def _batches(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    c = rng.multinomial(BATCH, JOINT, size=BATCHES)
    return c[:, 0] + c[:, 2], c[:, 0] + c[:, 1]


def _part(rng: np.random.Generator) -> dict[str, float]:
    base, variant = _batches(rng)
    diff, se, lo, hi = paired_difference(base, variant, [BATCH] * BATCHES)
    zero = {c: 0.0 for c in ("p_win_base", "p_win_variant", "diff_se_independent", "p_loss_base", "p_loss_variant",
                             "loss_diff", "loss_diff_se", "damage_dealt_base", "damage_dealt_variant",
                             "damage_taken_base", "damage_taken_variant")}
    return {**zero, "diff": diff, "diff_se": se, "diff_lo": lo, "diff_hi": hi, "trials": BATCH * BATCHES,
            "batches": BATCHES}


def _coverage(intervals: list[tuple[float, float, float, float]]) -> tuple[float, float]:
    """(coverage of the intervals given, coverage of estimate +- 1.96 s.e. on the same runs)."""
    a = np.array(intervals)
    est, se, lo, hi = a.T
    t_cov = float(np.mean((lo <= TRUE_DIFF) & (TRUE_DIFF <= hi)))
    z_cov = float(np.mean(np.abs(est - TRUE_DIFF) <= Z95 * se))
    return t_cov, z_cov


def _check(t_cov: float, z_cov: float) -> None:
    # 3,000 runs: coverage s.e. 0.4 pp. The t interval is within 2.5 s.e. of 95%; the normal one on the same runs
    # covers clearly less (about 93%), so this test fails if the quantile goes back to 1.96.
    assert abs(t_cov - 0.95) < 0.01, t_cov
    assert t_cov - z_cov > 0.01, (t_cov, z_cov)


def test_compare_rows_cover_95_percent():
    rng = np.random.default_rng(20261201)
    per_opponent, overall = [], []
    for _ in range(REPS):
        part = _part(rng)
        per_opponent.append((part["diff"], part["diff_se"], part["diff_lo"], part["diff_hi"]))
        row = _overall(pd.DataFrame([part]), "attacker")  # one opponent: the "(all)" row has 15 df
        overall.append((row["diff"], row["diff_se"], row["diff_lo"], row["diff_hi"]))
    _check(*_coverage(per_opponent))
    _check(*_coverage(overall))


def _sweep_rows(runs: list[tuple[float, float]]) -> pd.DataFrame:
    """A sweep() result with one opponent per run: its value 3 (the base) and 5 (the variant, ``(diff, se)``)."""
    n = len(runs)
    diff, se = np.array(runs, dtype=float).T
    return pd.DataFrame({"opponent": np.repeat([f"X{k}" for k in range(n)], 2), "value": np.tile([3, 5], n),
                         "trials": BATCH * BATCHES, "p_win_change": np.column_stack([np.zeros(n), diff]).ravel(),
                         "p_win_change_se": np.column_stack([np.zeros(n), se]).ravel(),
                         "p_win_change_df": np.tile([np.inf, BATCHES - 1], n)})


def test_marginal_value_covers_95_percent():
    rng = np.random.default_rng(7)
    runs = []
    for _ in range(REPS):
        base, variant = _batches(rng)
        diff, se, _, _ = paired_difference(base, variant, [BATCH] * BATCHES)
        runs.append((diff, se))
    # one call, one opponent per run: marginal_value computes each opponent's row on its own rows alone (3,000
    # calls of one opponent each took 6 s); the first runs, one call each, give the same rows to the bit
    mv = marginal_value(_sweep_rows(runs)).set_index("opponent")
    cols = ["win_points_per_point", "se", "df", "lo", "hi"]
    for k in range(25):
        alone = marginal_value(_sweep_rows([runs[k]]).assign(opponent="X")).iloc[0]
        assert alone[cols].tolist() == mv.loc[f"X{k}", cols].tolist(), k
    # slope per point over a span of 2, in percentage points: scale back to the difference
    rows = [(2 * mv.loc[f"X{k}", "win_points_per_point"] / 100, 2 * mv.loc[f"X{k}", "se"] / 100,
             2 * mv.loc[f"X{k}", "lo"] / 100, 2 * mv.loc[f"X{k}", "hi"] / 100) for k in range(REPS)]
    _check(*_coverage(rows))


@pytest.mark.parametrize("opponents", [2, 4])
def test_the_all_row_pools_degrees_of_freedom_and_still_covers(opponents):
    rng = np.random.default_rng(100 + opponents)
    out = []
    for _ in range(REPS // 2):
        row = _overall(pd.DataFrame([_part(rng) for _ in range(opponents)]), "both")
        out.append((row["diff"], row["diff_se"], row["diff_lo"], row["diff_hi"]))
    t_cov, z_cov = _coverage(out)
    assert abs(t_cov - 0.95) < 0.014, t_cov  # 1,500 runs: s.e. 0.56 pp
    assert t_cov >= z_cov
