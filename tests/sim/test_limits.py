"""Issue 12, bounded resources: the memory guard, group and model caps, workers, lazy block bookkeeping."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

import sim
from analysis.runs.matrix import matchup_matrix
from sim import limits
from sim.engine import run_tally
from sim.errors import TooLargeError
from sim.rng import BLOCK_TRIALS, block_rng, root_sequence
from sim.ruleset import END

W = {"strength": 3, "damage": 1, "abilities": []}


def grimdark_squad(name: str, groups: int, per_group: int, wounds: int):
    return sim.unit("grimdark", name=name, models=[
        dict(count=per_group, ws=1 + k % 10, s=1 + (k * 3) % 10, t=1 + (k * 7) % 10, i=1 + k % 10, w=wounds,
             a=1 + k % 10, save=2 + k % 5) for k in range(groups)])


#: The largest units each ruleset allows (and some smaller ones): the estimate must bound what a block uses.
BIG_UNITS = {
    "mecha": [sim.unit("mecha", name="M", defence=2, physical=0, armour="B")],
    "duel": [sim.unit("duel", name="D20", count=20, wounds=20, toughness=3, ws=3, strength=3, weapon=W,
                      second_weapon=W),
             sim.unit("duel", name="D10", count=10, wounds=10, toughness=3, ws=3, strength=3, weapon=W)],
    "pools": [sim.unit("pools", name="P1", bases=50, attack=10, courage=100, move=6, save=6, wounds=10),
              sim.unit("pools", name="P2", bases=50, attack=1, courage=1, move=0, save=2, wounds=1)],
    "warband": [sim.unit("warband", name=f"W{a}", ws=4, s=4, t=3, i=4, w=w, a=a, count=10, ld=8, armour="light",
                         weapons=["sword", "dagger"], skills=[]) for a, w in ((10, 10), (1, 1))],
}


def measured_peak(rs, a, d, n: int) -> tuple[int, int]:
    """(tracemalloc peak of prepare + one block of n fights, the ruleset's estimate).

    Three rounds: a round's arrays are dropped before the next, so the peak is reached in the first ones.
    """
    tracemalloc.start()
    try:
        _, plan = sim.build_matchup(rs, a, d, budget="none")
        rs.simulate(plan, n, block_rng(root_sequence(1), 0), 3, 50)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, rs.working_set(plan, n)


@pytest.mark.parametrize("rid", sorted(BIG_UNITS))
def test_working_set_estimate_bounds_the_measured_peak(rid):
    rs = sim.get_ruleset(rid)
    n = 8_192
    units = BIG_UNITS[rid]
    # duel's largest chains take seconds to build: the biggest pair and one mixed pair are enough there
    pairs = [(units[0], units[0]), (units[-1], units[0])] if rid == "duel" else itertools.product(units, repeat=2)
    for a, d in pairs:
        peak, estimate = measured_peak(rs, a, d, n)
        assert peak <= estimate, f"{rid} {a.name} vs {d.name}: peak {peak:,} over the estimate {estimate:,}"
        assert estimate <= limits.MEMORY_BUDGET  # the largest allowed units fit the budget


def test_grimdark_estimate_bounds_the_largest_allowed_squads():
    rs = sim.get_ruleset("grimdark")
    big = grimdark_squad("G10", limits.GRIMDARK_MAX_GROUPS, limits.GRIMDARK_MAX_MODELS // 10, 10)
    small = grimdark_squad("G1", 1, 5, 1)
    for a, d in [(big, big), (small, big)]:
        peak, estimate = measured_peak(rs, a, d, 2_048)
        assert peak <= estimate <= limits.MEMORY_BUDGET


def test_grimdark_groups_and_models_are_capped_where_the_roster_is_read(tmp_path):
    with pytest.raises(sim.InputError, match="at most 10 model groups"):
        grimdark_squad("Huge", 300, 1, 1)
    with pytest.raises(sim.InputError, match="at most 100 models"):
        grimdark_squad("Many", 2, 51, 1)
    rows = ["unit,count,ws,s,t,i,w,a"] + ["Horde,1,3,3,3,3,1,1" for _ in range(11)]
    path = tmp_path / "horde.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(sim.InputError, match="unit 'Horde'.*at most 10 model groups"):
        sim.load_roster(path, "grimdark")
    with pytest.raises(sim.InputError, match="at most 100 models"):
        sim.fight("grimdark", grimdark_squad("G", 2, 50, 1), "Troopers", trials=10,
                  overrides={"attacker": {"1.count": 60}}, budget="none", method="mc")


def test_guard_refuses_a_block_over_the_budget_with_one_line():
    rs = sim.get_ruleset("mecha")
    _, plan = sim.build_matchup(rs, "AFS", "Nutrocker", budget="none")
    with pytest.raises(TooLargeError) as e:
        limits.check_working_set(rs, plan, BLOCK_TRIALS, budget=1_000)
    msg = str(e.value)
    assert "\n" not in msg and "'AFS' vs 'Nutrocker'" in msg and "memory limit" in msg


def test_guard_in_a_matrix_leaves_the_pair_unfought_with_the_reason(monkeypatch):
    rs = sim.get_ruleset("mecha")
    real = type(rs).working_set

    def huge_for_gustav(self, plan, n):
        return 10 * limits.MEMORY_BUDGET if "Gustav" in (plan.matchup.attacker.name, plan.matchup.defender.name) \
            else real(self, plan, n)

    monkeypatch.setattr(type(rs), "working_set", huge_for_gustav)
    m = matchup_matrix("mecha", units=["AFS", "PKA", "Gustav"], max_trials=500, half_width=None, seed=1)
    assert "Gustav" in m.excluded and "memory limit" in m.excluded["Gustav"]
    with pytest.raises(sim.MeleelabError, match="memory limit"):
        sim.fight("mecha", "AFS", "Gustav", trials=10, method="mc")


def test_the_guard_never_changes_results(monkeypatch):
    a = sim.fight("mecha", "AFS", "Nutrocker", trials=100_000, seed=4, rounds="end", method="mc")
    monkeypatch.setattr(limits, "MEMORY_BUDGET", 10**15)
    b = sim.fight("mecha", "AFS", "Nutrocker", trials=100_000, seed=4, rounds="end", method="mc")
    assert a.tally.same_as(b.tally)


def test_plans_held_by_a_matrix_are_bounded_by_its_chunks_not_refused(monkeypatch):
    # a matrix streams its cells (analysis.runs.streaming): the whole-run table limit no longer refuses it, and
    # a chunk of at least one plan is fought before the next is built
    from analysis.runs import streaming

    monkeypatch.setattr(limits, "PLANS_BUDGET", 1)
    monkeypatch.setattr(limits, "STREAM_PLAN_BYTES", 1)
    chunks = []
    real = streaming.run_jobs

    def spy(rs, root, jobs, **kw):
        chunks.append(len(jobs))
        return real(rs, root, jobs, **kw)

    monkeypatch.setattr(streaming, "run_jobs", spy)
    m = matchup_matrix("grimdark", units=["Troopers", "Assault squad"], max_trials=100, seed=1, method="mc")
    assert (m.long.trials > 0).all()
    assert len(chunks) >= 2 and set(chunks[1:]) == {1}  # the first chunk: the spread that timed the building


def test_matrix_and_sweep_sizes_are_capped():
    from analysis.runs.sweep import parse_range

    with pytest.raises(sim.InputError, match="at most 1,000"):
        parse_range("points=1..1001")
    assert len(parse_range("points=1..1000")[1]) == 1000
    names = [f"U{k}" for k in range(limits.MAX_MATRIX_UNITS + 1)]
    roster = sim.roster_from_dict({"ruleset": "mecha", "unit": [
        {"name": n, "defence": 2, "physical": 0, "armour": "B"} for n in names]})
    with pytest.raises(sim.InputError, match=f"at most {limits.MAX_MATRIX_UNITS}"):
        matchup_matrix("mecha", roster, max_trials=10)


def test_paired_runs_bound_the_batch_tallies_they_keep():
    from analysis.runs.compare import compare

    with pytest.raises(sim.InputError, match="batch tallies"):
        compare("mecha", "AFS", {"defence": 3}, ["PKA"], trials=limits.MAX_KEPT_BATCHES * BLOCK_TRIALS)


# ------------------------------------------------------------------- workers
def test_workers_are_clamped_to_the_cores():
    cores = limits.cpu_count()
    assert limits.check_workers(cores + 50) == cores
    assert limits.check_workers(0) == cores and limits.check_workers(-3) == cores
    assert limits.check_workers(1) == 1
    a = sim.fight("mecha", "AFS", "Nutrocker", trials=70_000, seed=2, workers=999, method="mc")
    b = sim.fight("mecha", "AFS", "Nutrocker", trials=70_000, seed=2, workers=1, method="mc")
    assert a.tally.same_as(b.tally)


# ----------------------------------------------------------- lazy bookkeeping
class Stop(Exception):
    pass


@pytest.mark.parametrize("workers", [1, 2])
def test_a_trillion_trials_start_at_once_in_flat_memory(workers):
    rs = sim.get_ruleset("mecha")
    _, plan = sim.build_matchup(rs, "AFS", "Nutrocker", budget="none")
    seen = []

    def stop_after_first(done, total):
        seen.append((done, total))
        raise Stop

    tracemalloc.start()
    try:
        with pytest.raises(Stop):
            run_tally(rs, plan, 10**12, root_sequence(1), rounds=1, max_rounds=50, workers=workers,
                      progress=stop_after_first)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen and seen[0][1] == 10**12
    assert peak < 64 << 20, f"{peak:,} bytes traced before the first block finished"


def test_block_sizes_are_generated_lazily():
    blocks = limits.iter_block_sizes(10**15, BLOCK_TRIALS)
    assert next(blocks) == (0, BLOCK_TRIALS) and next(blocks) == (1, BLOCK_TRIALS)
    assert list(limits.iter_block_sizes(2 * BLOCK_TRIALS + 5, BLOCK_TRIALS)) == [
        (0, BLOCK_TRIALS), (1, BLOCK_TRIALS), (2, 5)]


def test_results_do_not_depend_on_task_grouping_with_the_lazy_engine():
    rs = sim.get_ruleset("mecha")
    _, plan = sim.build_matchup(rs, "AFS", "Nutrocker", budget="none")
    n = 5 * BLOCK_TRIALS + 17
    ref = run_tally(rs, plan, n, root_sequence(3), rounds=END, max_rounds=50)
    other = run_tally(rs, plan, n, root_sequence(3), rounds=END, max_rounds=50, workers=2, blocks_per_task=2)
    order = run_tally(rs, plan, n, root_sequence(3), rounds=END, max_rounds=50, block_order=[5, 3, 1, 0, 2, 4])
    assert ref.same_as(other) and ref.same_as(order)
    assert np.sum(ref.wins) == n


def test_a_trillion_trial_matrix_cell_on_an_executor_keeps_no_block_list():
    """The runner that spreads cells over workers counts a cell's blocks; it never lists them (15M entries here)."""
    from concurrent.futures import ThreadPoolExecutor

    rs = sim.get_ruleset("mecha")
    tracemalloc.start()
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            m = matchup_matrix(rs, units=["AFS", "Gustav"], max_trials=10**12, half_width=0.02, seed=1,
                               executor=pool)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (m.long["trials"] < 10**12).all()  # the stopping rule ended every cell
    assert peak < 64 << 20, f"{peak:,} bytes traced for a 2x2 matrix of 10**12-trial cells"
