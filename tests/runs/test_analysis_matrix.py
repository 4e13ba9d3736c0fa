"""Matchup matrices: adaptive trials, stream addressing, worker independence, deterministic files."""

from __future__ import annotations

from functools import partial

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import sim
from analysis.report.writers import write_matrix
from analysis.runs.matrix import LONG_COLUMNS, cell_stream
from analysis.runs.matrix import matchup_matrix as _matchup_matrix
from analysis.stats.estimates import Estimate, proportion, result_frame, tally_row, wilson, wilson_half_width
from sim.errors import InputError
from sim.rng import BLOCK_TRIALS, SUB_BLOCK_TRIALS, SUB_BLOCKS, root_sequence, sub_block_rng
from sim.rulesets import get_ruleset
from sim.tally import Tally
from tests.helpers import assert_proportion

# These tests hold the matrix mechanics to exact one-round answers, so they fight under the rules' own defaults
# (mecha: one round); the ruleset's balance settings have tests of their own (test_balance_settings.py).
matchup_matrix = partial(_matchup_matrix, rules_defaults=True, method="mc")  # Monte Carlo mechanics (streams, stopping)

def sub_block_fight(rid, attacker, defender, trials, seed, rounds=None, max_rounds=50, **build):
    """An adaptive matrix cell's counts, replayed independently of the runner: sub-block g of the cell's stream
    (block g // SUB_BLOCKS, sub-block g % SUB_BLOCKS) for each SUB_BLOCK_TRIALS fights, up to ``trials``."""
    rs = get_ruleset(rid)
    _, plan = sim.build_matchup(rs, attacker, defender, **build)
    root, stream = root_sequence(seed), cell_stream(attacker, defender)
    rounds = rs.default_rounds if rounds is None else rounds
    t = Tally(len(rs.outcome_categories), tuple(e.name for e in rs.extras))
    for g in range(-(-trials // SUB_BLOCK_TRIALS)):
        n = min(SUB_BLOCK_TRIALS, trials - g * SUB_BLOCK_TRIALS)
        t.add(rs.simulate(plan, n, sub_block_rng(root, *stream, block=g // SUB_BLOCKS, sub=g % SUB_BLOCKS),
                          rounds, max_rounds))
    return t

# ---------------------------------------------------------- exact mecha odds
# From the spec (docs/rules/mecha.md), independently of the code: total = d6 +
# defence + physical; letter index k (A=0): destroyed if total <= 2 + k,
# immobilised if total == 3 + k, no effect otherwise and for totals of 7 or more.
PROFILES = {"AFS": (2, 0, "B"), "PKA": (2, 0, "B"), "Nutrocker": (4, -2, "A"), "Sand Stalker": (1, 0, "C"),
            "Gustav": (3, 0, "A"), "Snake Eye": (1, 0, "C")}


def severity_probs(defence: int, physical: int, letter: str) -> list[Fraction]:
    k = "ABCDE".index(letter)
    p = [Fraction(0)] * 3
    for die in range(1, 7):
        total = die + defence + physical
        sev = 0 if total >= 7 else 2 if total <= 2 + k else 1 if total == 3 + k else 0
        p[sev] += Fraction(1, 6)
    return p


def exact_one_round(att: tuple[int, int, str], dfn: tuple[int, int, str]) -> dict[str, Fraction]:
    """P(attacker wins), P(defender wins), P(draw) of one round (lower severity wins)."""
    pa, pd_ = severity_probs(*att), severity_probs(*dfn)
    out = {"attacker": Fraction(0), "defender": Fraction(0), "draw": Fraction(0)}
    for sa in range(3):
        for sd in range(3):
            key = "attacker" if sa < sd else "defender" if sa > sd else "draw"
            out[key] += pa[sa] * pd_[sd]
    return out


UNITS = ["AFS", "Nutrocker", "Sand Stalker"]


@pytest.fixture(scope="module")
def small() -> "object":
    return matchup_matrix("mecha", units=UNITS, half_width=0.002, max_trials=2_000_000, seed=11)


# ------------------------------------------------------------------ adaptive
def test_adaptive_cells_reach_the_half_width_with_the_fewest_sub_blocks(small):
    for _, row in small.long.iterrows():
        n = int(row.trials)
        assert n % SUB_BLOCK_TRIALS == 0
        r = small.results[(row.attacker, row.defender)]
        w = r.win_counts
        assert r.tally.same_as(sub_block_fight("mecha", row.attacker, row.defender, n, 11))
        # the stopping rule holds win, loss and draw probabilities to the target
        hw = max(wilson_half_width(w[k], n) for k in ("attacker", "defender", "draw"))
        assert hw <= 0.002, (row.attacker, row.defender, hw)
        if n > SUB_BLOCK_TRIALS:  # one sub-block fewer (the same stream's prefix) was not yet narrow enough
            n0 = n - SUB_BLOCK_TRIALS
            prev = sub_block_fight("mecha", row.attacker, row.defender, n0, 11).wins
            assert max(wilson_half_width(int(prev[k]), n0) for k in (0, 1, 2)) > 0.002
        assert math.isclose((row.p_attacker_hi - row.p_attacker_lo) / 2,
                            wilson_half_width(w["attacker"], n), rel_tol=1e-12)
    # cells far from 50% need fewer trials than cells near it
    by = small.long.set_index(["attacker", "defender"])
    assert by.loc[("Nutrocker", "Nutrocker")].trials < by.loc[("AFS", "Sand Stalker")].trials


def test_trial_cap_stops_a_cell_and_may_end_on_a_partial_sub_block():
    m = matchup_matrix("mecha", units=["AFS", "PKA"], half_width=1e-4, max_trials=100_000, seed=3)
    assert (m.long.trials == 100_000).all() and 100_000 % SUB_BLOCK_TRIALS
    assert sub_block_fight("mecha", "AFS", "PKA", 100_000, 3).same_as(m.results[("AFS", "PKA")].tally)
    # the cap does not change the sub-blocks before it: a higher cap runs the same ones first
    more = matchup_matrix("mecha", units=["AFS", "PKA"], half_width=1e-4, max_trials=2 * BLOCK_TRIALS, seed=3)
    assert more.results[("AFS", "PKA")].tally.same_as(sub_block_fight("mecha", "AFS", "PKA", 2 * BLOCK_TRIALS, 3))


def test_fixed_trials_when_half_width_is_none():
    m = matchup_matrix("mecha", units=["AFS"], half_width=None, max_trials=3 * BLOCK_TRIALS, seed=3)
    assert m.long.trials.tolist() == [3 * BLOCK_TRIALS]


@pytest.mark.parametrize("rounds", [1, "end"])
def test_a_fixed_trial_cell_equals_sim_fight_on_the_same_stream(rounds):
    """Fixed trials keep the engine's blocks: the numbers of sim.fight (and of reports before sub-blocks)."""
    m = matchup_matrix("mecha", units=["AFS", "Nutrocker"], half_width=None, max_trials=2 * BLOCK_TRIALS + 5,
                       seed=5, rounds=rounds)
    for (a, d), r in m.results.items():
        f = sim.fight("mecha", a, d, trials=r.trials, seed=5, rounds=rounds, stream=cell_stream(a, d), method="mc")
        assert f.tally.same_as(r.tally), (a, d)


@pytest.mark.parametrize("rounds", [1, "end"])
def test_an_adaptive_cell_with_k_sub_blocks_equals_them_replayed(rounds):
    m = matchup_matrix("mecha", units=["AFS", "Nutrocker"], half_width=0.002, seed=5, rounds=rounds)
    assert any(r.trials > 2 * BLOCK_TRIALS for r in m.results.values())  # cells run into a second and third block
    for (a, d), r in m.results.items():
        assert r.trials % SUB_BLOCK_TRIALS == 0
        assert sub_block_fight("mecha", a, d, r.trials, 5, rounds=rounds).same_as(r.tally), (a, d)


def test_cells_do_not_depend_on_roster_order_or_other_cells():
    m1 = matchup_matrix("mecha", units=["AFS", "Nutrocker", "Gustav"], half_width=0.004, seed=9)
    m2 = matchup_matrix("mecha", units=["Gustav", "AFS"], half_width=0.004, seed=9)
    for key, r in m2.results.items():
        assert r.tally.same_as(m1.results[key].tally), key
    assert m2.units == ["Gustav", "AFS"]
    assert list(m2.wide().index) == ["Gustav", "AFS"] and list(m2.wide().columns) == ["Gustav", "AFS"]


def test_results_are_identical_for_any_worker_count():
    kw = dict(units=["AFS", "Nutrocker", "Sand Stalker"], half_width=0.003, seed=21, rounds="end")
    m1 = matchup_matrix("mecha", workers=1, **kw)
    m2 = matchup_matrix("mecha", workers=2, **kw)
    pd.testing.assert_frame_equal(m1.long, m2.long)
    for key, r in m1.results.items():
        assert r.tally.same_as(m2.results[key].tally)


def test_different_seeds_differ():
    a = matchup_matrix("mecha", units=["AFS"], seed=1)
    b = matchup_matrix("mecha", units=["AFS"], seed=2)
    assert not a.results[("AFS", "AFS")].tally.same_as(b.results[("AFS", "AFS")].tally)


# ------------------------------------------------------------- correctness
def test_cells_match_exact_one_round_probabilities(small):
    for _, row in small.long.iterrows():
        exact = exact_one_round(PROFILES[row.attacker], PROFILES[row.defender])
        r = small.results[(row.attacker, row.defender)]
        for side in ("attacker", "defender", "draw"):
            assert_proportion(r.win_counts[side], r.trials, float(exact[side]), what=f"{row.attacker}-{row.defender}")
        # the frame carries the same numbers as the result
        assert row.p_attacker == r.win["attacker"] and row.p_draw == r.win["draw"]
        lo, hi = r.ci95["defender"]
        assert (row.p_defender_lo, row.p_defender_hi) == (lo, hi)


def test_long_frame_columns_points_and_damage(small):
    assert list(small.long.columns) == LONG_COLUMNS
    row = small.long.set_index(["attacker", "defender"]).loc[("AFS", "Nutrocker")]
    assert (row.points_attacker, row.points_defender) == (20.0, 45.0)
    r = small.results[("AFS", "Nutrocker")]
    assert (row.damage_to_attacker, row.damage_to_attacker_se) == r.damage("attacker")
    assert row.mean_rounds == 1.0 and row.capped == 0.0
    assert (small.long.p_attacker + small.long.p_defender + small.long.p_draw).round(12).eq(1).all()


def test_side_averaged_and_payoff_matrix(small):
    s = small.side_averaged().set_index(["unit", "opponent"])
    by = small.long.set_index(["attacker", "defender"])
    u, o = "AFS", "Nutrocker"
    assert math.isclose(s.loc[(u, o)].p_win, (by.loc[(u, o)].p_attacker + by.loc[(o, u)].p_defender) / 2)
    assert math.isclose(s.loc[(u, o)].p_loss, (by.loc[(u, o)].p_defender + by.loc[(o, u)].p_attacker) / 2)
    assert math.isclose(s.loc[(u, o)].p_win, s.loc[(o, u)].p_loss)
    pay = small.payoff_matrix()
    np.testing.assert_allclose(pay.to_numpy(), -pay.to_numpy().T, atol=1e-15)
    np.testing.assert_allclose(np.diag(pay.to_numpy()), 0, atol=1e-15)
    assert list(pay.index) == UNITS
    # mecha's one round is symmetric in roles: the side-averaged payoff is the exact win - loss
    ex = exact_one_round(PROFILES[u], PROFILES[o])
    assert abs(pay.loc[u, o] - float(ex["attacker"] - ex["defender"])) < 6 * s.loc[(u, o)].payoff_se


def test_units_that_cannot_fight_are_left_out_with_the_reason():
    m = matchup_matrix("mecha", units=["AFS", "Fliege"], seed=1)
    assert m.units == ["AFS"] and "Fliege" in m.excluded
    assert "cannot be engaged" in m.excluded["Fliege"]
    with pytest.raises(InputError, match="no pair of these units can fight"):
        matchup_matrix("mecha", units=["AFS"], seed=1, states={"defender": {"evading": True, "immobilised": True}})


def test_states_apply_by_role():
    m = matchup_matrix("mecha", units=["AFS", "Nutrocker"], seed=1, states={"defender": {"immobilised": True}})
    r = m.results[("AFS", "Nutrocker")]
    assert r.settings["states"]["defender"]["immobilised"] is True
    f = sub_block_fight("mecha", "AFS", "Nutrocker", r.trials, 1, states={"defender": {"immobilised": True}})
    assert f.same_as(r.tally)


@pytest.mark.parametrize("kwargs, match", [
    ({"units": ["AFS", "Nobody"]}, "no unit 'Nobody'"),
    ({"units": ["AFS", "AFS"]}, "named more than once"),
    ({"half_width": 0.7}, "half_width"),
    ({"half_width": 0.0}, "half_width"),
    ({"max_trials": 0}, "max_trials"),
    ({"rounds": "often"}, "rounds"),
    ({"overrides": {"attacker": {"defence": 99}}}, "defence"),
])
def test_bad_input_is_one_clear_error(kwargs, match):
    with pytest.raises(InputError, match=match):
        matchup_matrix("mecha", **{"units": ["AFS"], **kwargs})


# ---------------------------------------------------------------- files
def test_write_is_deterministic_and_complete(tmp_path):
    kw = dict(units=["AFS", "Nutrocker", "Fliege"], half_width=0.004, seed=123)
    a = matchup_matrix("mecha", **kw)
    b = matchup_matrix("mecha", **kw)
    write_matrix(a, tmp_path / "a")
    write_matrix(b, tmp_path / "b", png=False)
    for name in ("matrix_long.csv", "matrix.csv", "matrix.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "a" / "matrix.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    long = pd.read_csv(tmp_path / "a" / "matrix_long.csv")
    for col in ("attacker", "defender", "trials", "p_attacker", "p_defender", "p_draw", "p_attacker_lo",
                "p_attacker_hi", "damage_to_attacker", "damage_to_defender", "mean_rounds"):
        assert col in long.columns
    wide = pd.read_csv(tmp_path / "a" / "matrix.csv", index_col=0)
    assert list(wide.index) == ["AFS", "Nutrocker"] and list(wide.columns) == ["AFS", "Nutrocker"]
    assert abs(wide.loc["AFS", "Nutrocker"] - a.wide().loc["AFS", "Nutrocker"]) < 1e-6
    c = matchup_matrix("mecha", **{**kw, "seed": 124})
    write_matrix(c, tmp_path / "c", png=False)
    assert (tmp_path / "c" / "matrix_long.csv").read_bytes() != (tmp_path / "a" / "matrix_long.csv").read_bytes()


# ------------------------------------------------------------- estimates
def test_estimates_helpers():
    e = proportion(30, 100)
    assert isinstance(e, Estimate) and e.value == 0.3 and e.n == 100
    assert math.isclose(e.se, math.sqrt(0.3 * 0.7 / 100))
    assert (e.lo, e.hi) == wilson(30, 100)
    assert math.isclose(e.half_width, wilson_half_width(30, 100))
    assert wilson_half_width(0, 0) == math.inf
    assert math.isnan(proportion(0, 0).value)


def test_result_frame_is_tidy_and_consistent():
    r = sim.fight("mecha", "AFS", "Nutrocker", trials=BLOCK_TRIALS, seed=1, method="mc")
    f = result_frame(r).set_index(["quantity", "side"])
    assert f.loc[("win", "attacker")].value == r.win["attacker"]
    assert (f.loc[("win", "draw")].lo, f.loc[("win", "draw")].hi) == r.ci95["draw"]
    assert f.loc[("damage_to", "defender")].value == r.damage("defender")[0]
    cats = [q for q in f.index.get_level_values(0) if q.startswith("category:")]
    assert len(cats) == 2 * len(r.ruleset.outcome_categories)
    assert math.isclose(sum(f.loc[(f"category:{c}", "attacker")].value for c in r.ruleset.outcome_categories), 1)
    row = tally_row(r.tally)
    assert row["trials"] == BLOCK_TRIALS and row["p_attacker"] == r.win["attacker"]


# ------------------------------------------------------- every ruleset
@pytest.mark.parametrize("rid", [rs.id for rs in sim.rulesets()])
def test_every_registered_ruleset_works_through_the_generic_protocol(rid):
    from analysis.runs.compare import compare
    compare = partial(compare, rules_defaults=True, method="mc")
    from analysis.runs.sweep import sweep
    sweep = partial(sweep, rules_defaults=True, method="mc")

    rs = sim.get_ruleset(rid)
    names = sim.default_roster(rid).names[:2]
    # whole copies: the cell is exactly sim.fight at the roster's budget (expected fielding mixes such cells)
    m = matchup_matrix(rid, units=names, half_width=None, max_trials=2000, seed=1, fielding="whole")
    assert m.units and (m.long.trials[m.long.note == ""] == 2000).all()
    a = m.units[0]
    f = sim.fight(rid, a, a, trials=2000, seed=1, stream=cell_stream(a, a),
                  method="mc")  # the roster's budget, as the matrix
    assert f.tally.same_as(m.results[(a, a)].tally)
    row = rs.unit_rows(sim.default_roster(rid).unit(a))[0]
    field = next(f for f in rs.unit_fields if f.kind == "int" and row.get(f.name) is not None and f.hi is not None
                 and row[f.name] + 1 <= f.hi)
    s = sweep(rid, a, field.name, [row[field.name], row[field.name] + 1], [a], trials=2000, seed=1)
    assert (s.trials == 2000).all()
    c = compare(rid, a, {field.name: row[field.name] + 1}, [a], trials=2000, seed=1)
    # compare and sweep address the same stream with the same batches: base = first value, variant = second
    assert (c.iloc[0]["p_win_base"], c.iloc[0]["p_win_variant"]) == (s.iloc[0]["p_win"], s.iloc[1]["p_win"])


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_reports_every_cell(workers):
    calls: list[tuple[int, int]] = []
    matchup_matrix("mecha", units=["AFS", "Nutrocker", "Gustav"], seed=1, workers=workers,
                   progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (9, 9)
    assert all(t == 9 for _, t in calls) and [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_the_draw_probability_alone_can_keep_a_cell_running():
    # AFS v Nutrocker, one round: P(win) 4/36, P(loss) 11/36, P(draw) 21/36 (the spec's chart). At +-0.36 pp the
    # win probabilities need about 29,000 and 63,000 fights, the draw about 72,000: the sub-blocks between run
    # for the draw alone
    m = matchup_matrix("mecha", units=["AFS", "Nutrocker"], half_width=0.0036, max_trials=10 * BLOCK_TRIALS, seed=5)
    row = m.long.set_index(["attacker", "defender"]).loc[("AFS", "Nutrocker")]
    n = int(row.trials)
    w = m.results[("AFS", "Nutrocker")].win_counts
    assert wilson_half_width(w["draw"], n) <= 0.0036
    prev = sub_block_fight("mecha", "AFS", "Nutrocker", n - SUB_BLOCK_TRIALS, 5).wins  # one sub-block earlier
    n0 = n - SUB_BLOCK_TRIALS
    assert wilson_half_width(int(prev[1]), n0) <= 0.0036 and wilson_half_width(int(prev[2]), n0) <= 0.0036
    assert wilson_half_width(int(prev[0]), n0) > 0.0036
    one = {k: Fraction(v) for k, v in {"attacker": 4, "defender": 11, "draw": 21}.items()}
    assert max(float(1.96 * (p * (1 - p) / n0) ** 0.5) for p in (one["attacker"] / 36,
                                                                 one["defender"] / 36)) < 0.0036
