"""Reproducibility: a result depends on the seed and the trial count only."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import sim
from sim.engine import run_tally
from sim.rng import BLOCK_TRIALS, block_rng, block_sizes, root_sequence, stable_key
from sim.stats import wilson_interval
from sim.tally import Tally


def _mecha_plan(rounds="end"):
    _, plan = sim.build_matchup("mecha", "AFS", "Nutrocker")
    return sim.get_ruleset("mecha"), plan


def test_block_streams_are_addressed_not_spawned():
    root = np.random.SeedSequence(1234)
    g = block_rng(root, 7, 3)
    assert g.bit_generator.seed_seq.spawn_key == (7, 3)
    assert g.bit_generator.seed_seq.entropy == 1234
    # the same address gives the same stream, whatever was drawn before
    a = block_rng(root, 2).integers(0, 1 << 30, 5)
    block_rng(root, 1).integers(0, 10, 1000)
    b = block_rng(root, 2).integers(0, 1 << 30, 5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(block_rng(root, 3).integers(0, 1 << 30, 5), a)


def test_block_sizes():
    assert block_sizes(1) == [1]
    assert block_sizes(2 * BLOCK_TRIALS + 5) == [BLOCK_TRIALS, BLOCK_TRIALS, 5]
    with pytest.raises(ValueError):
        block_sizes(0)


def test_stable_key_is_a_collision_free_digest():
    import hashlib
    import zlib

    assert stable_key("AFS") == stable_key("AFS") != stable_key("PKA")
    assert stable_key("") == int.from_bytes(hashlib.blake2b(b"", digest_size=16).digest(), "big")
    # CRC-32 gave these two names one stream; the 128-bit digest does not
    assert zlib.crc32(b"plumless") == zlib.crc32(b"buckeroo")
    assert stable_key("plumless") != stable_key("buckeroo")
    keys = {stable_key(f"unit {i}") for i in range(200_000)}
    assert len(keys) == 200_000


@pytest.mark.parametrize("rounds", [1, "end"])
def test_same_result_for_any_grouping_order_and_worker_count(rounds):
    rs, plan = _mecha_plan()
    n = 3 * BLOCK_TRIALS + 1234
    root = root_sequence(42)
    base = run_tally(rs, plan, n, root, rounds=rounds, max_rounds=50)
    assert base.trials == n
    variants = [
        run_tally(rs, plan, n, root, rounds=rounds, max_rounds=50, blocks_per_task=3),
        run_tally(rs, plan, n, root, rounds=rounds, max_rounds=50, block_order=[3, 1, 0, 2]),
        run_tally(rs, plan, n, root, rounds=rounds, max_rounds=50, workers=2),
        run_tally(rs, plan, n, root, rounds=rounds, max_rounds=50, workers=2, blocks_per_task=1),
    ]
    for v in variants:
        assert v.same_as(base)


def test_fight_results_identical_across_workers():
    a = sim.fight("mecha", "AFS", "Nutrocker", trials=200_000, seed=3, rounds="end", workers=1, method="mc")
    b = sim.fight("mecha", "AFS", "Nutrocker", trials=200_000, seed=3, rounds="end", workers=2, method="mc")
    assert a.tally.same_as(b.tally)
    assert a.to_dict() == b.to_dict()


def test_seed_none_records_entropy_that_reproduces_the_run():
    a = sim.fight("mecha", "AFS", "Nutrocker", trials=100_000, seed=None, rounds="end", method="mc")
    entropy = a.provenance["seed_entropy"]
    assert isinstance(entropy, int) and entropy > 0
    b = sim.fight("mecha", "AFS", "Nutrocker", trials=100_000, seed=entropy, rounds="end", method="mc")
    assert a.tally.same_as(b.tally)
    c = sim.fight("mecha", "AFS", "Nutrocker", trials=100_000, seed=entropy + 1, rounds="end", method="mc")
    assert not a.tally.same_as(c.tally)


def test_streams_separate_matchups():
    a = sim.fight("mecha", "AFS", "Nutrocker", trials=50_000, seed=1, rounds="end", stream=(1,), method="mc")
    b = sim.fight("mecha", "AFS", "Nutrocker", trials=50_000, seed=1, rounds="end", stream=(2,), method="mc")
    assert not a.tally.same_as(b.tally)


def test_progress_callback_reaches_the_total():
    seen = []
    sim.fight("mecha", "AFS", "Nutrocker", trials=2 * BLOCK_TRIALS + 1, seed=1,
              progress=lambda d, t: seen.append((d, t)), method="mc")
    assert seen[-1] == (2 * BLOCK_TRIALS + 1, 2 * BLOCK_TRIALS + 1)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_tally_moments_and_merge_are_exact():
    from sim.outcomes import Outcomes

    def outcomes(values):
        v = np.array(values)
        z = np.zeros_like(v)
        return Outcomes(z.astype(np.int8), v, z, z, z, np.ones_like(v), z.astype(bool))

    t1, t2 = Tally(3), Tally(3)
    t1.add(outcomes([0, 1, 2]))
    t2.add(outcomes([2, 2]))
    t = t1.merge(t2)
    assert t.trials == 5 and t.damage_to_attacker.total == 7 and t.damage_to_attacker.total_sq == 13
    np.testing.assert_array_equal(t.damage_to_attacker.hist, [1, 1, 3])
    mean, se = t.damage_to_attacker.mean_se(5)
    assert mean == pytest.approx(1.4)
    assert se == pytest.approx(np.std([0, 1, 2, 2, 2], ddof=1) / np.sqrt(5))


def test_wilson_matches_scipy():
    from scipy.stats import binomtest

    for k, n in [(0, 10), (3, 10), (10, 10), (5000, 12345), (1, 1_000_000)]:
        lo, hi = wilson_interval(k, n)
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def test_sim_does_not_import_pandas_or_matplotlib():
    code = ("import sys, sim; sim.fight('mecha', 'AFS', 'Nutrocker', trials=1000, seed=1, method='mc'); "
            "bad = [m for m in ('pandas', 'matplotlib', 'analysis') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_memory_does_not_grow_with_trials():
    """10^8 fights run in well under 1 GiB (peak RSS of a fresh process).

    On Linux the peak is the process's own ``VmHWM``: ``ru_maxrss`` survives ``exec``,
    so in a subprocess of a large pytest worker it reports the worker's peak, not ours.
    """
    code = ("import re, resource, sys, sim; "
            "r = sim.fight('mecha', 'AFS', 'Nutrocker', trials=100_000_000, seed=1, method='mc'); "
            "assert r.trials == 100_000_000; "
            "hwm = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()) "
            "if sys.platform.startswith('linux') else None; "
            "print(hwm.group(1) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    peak_kib = int(out.stdout.strip())
    assert peak_kib < 512 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"
