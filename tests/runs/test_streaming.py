"""Issue 39: a matrix streams its cells (a chunk of plans at a time) and fights twins' cells once.

* the numbers do not depend on the chunking or the worker count (every cell on its own addressed stream);
* a 52-unit roster is no longer refused for the size of its tables;
* twins (same profile and points) show one fight's numbers, on the stream of the first twin in the roster;
* (slow) the peak memory of a matrix does not grow with the roster.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import sim
import sim.limits
from analysis.runs import pairs, streaming
from analysis.runs.matrix import matchup_matrix

ROOT = Path(__file__).resolve().parents[2]


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def warband_roster(path: Path, n: int, twins: int = 0) -> Path:
    """``n`` warband units: the shipped profiles, then variants of them (WS, S, T or I moved by one, points
    scaled), deterministic in ``n``; the last ``twins`` of them renamed copies of the first ones."""
    src = tomllib.loads((ROOT / "sim" / "rosters" / "warband.toml").read_text(encoding="utf-8"))
    rng = random.Random(n)
    units: list[dict] = []
    base = src["unit"]
    while len(units) < n - twins:
        k = len(units)
        u = dict(base[k % len(base)])
        if k >= len(base):
            field = rng.choice(["ws", "s", "t", "i"])
            u[field] = max(1, min(6, u[field] + (k // len(base)) * rng.choice([-1, 1])))
            u["points"] = max(5, round(u["points"] * rng.uniform(0.8, 1.2)))
            u["name"] = f"{u['name']} v{k}"
        units.append(u)
    units += [{**units[k], "name": f"{units[k]['name']} twin"} for k in range(twins)]
    lines = ['ruleset = "warband"', f"budget = {src['budget']}", ""]
    for u in units:
        lines += ["[[unit]]", *(f"{k} = {_value(v)}" for k, v in u.items()), ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _same(a, b) -> None:
    assert a.units == b.units
    assert a.long.equals(b.long)
    assert a.results.keys() == b.results.keys()
    for key, r in a.results.items():
        assert r.tally.same_as(b.results[key].tally), key


@pytest.mark.parametrize("budget", [None, "none"])  # expected fielding (whole-copy cells), then one a side
def test_numbers_do_not_depend_on_the_chunks_or_the_workers(monkeypatch, budget):
    kw = dict(units=["Sellsword", "Goblin Mob", "Militia", "Ogre"], max_trials=4096, half_width=0.03, seed=5,
              method="mc", budget=budget)
    whole = matchup_matrix("duel", **kw)
    monkeypatch.setattr(sim.limits, "STREAM_PLAN_BYTES", 1)  # one cell a chunk (after the timed spread)
    monkeypatch.setattr(streaming, "SPREAD_CELLS", 2)
    monkeypatch.setattr("analysis.runs.progress.TIMED_BUILDS", 1)
    chunks: list[int] = []
    real = streaming.run_jobs

    def spy(rs, root, jobs, **kw):
        chunks.append(len(jobs))
        return real(rs, root, jobs, **kw)

    monkeypatch.setattr(streaming, "run_jobs", spy)
    monkeypatch.setattr(pairs, "run_jobs", spy)  # the one-a-side cells name their runner
    one = matchup_matrix("duel", **kw)
    assert len(chunks) > 4 and max(chunks[1:]) == 1  # the first chunk: the spread that timed the building
    two = matchup_matrix("duel", workers=2, **kw)
    _same(whole, one)
    _same(whole, two)


def test_a_52_unit_roster_is_not_refused_for_its_size(monkeypatch, tmp_path):
    """The 52-unit roster was refused ("the tables of its 2,704 matchups would take about 5.5 GiB"): now the
    first chunk of its plans is built and fought before the others are built."""
    roster = warband_roster(tmp_path / "wb52.toml", 52)
    monkeypatch.setattr(sim.limits, "STREAM_PLAN_BYTES", 4 << 20)

    class FirstChunk(Exception):
        pass

    chunks: list[int] = []

    def stop(rs, root, jobs, **kw):
        chunks.append(len(jobs))
        raise FirstChunk

    monkeypatch.setattr(streaming, "run_jobs", stop)
    with pytest.raises(FirstChunk):
        matchup_matrix("warband", roster, max_trials=100, half_width=None, method="mc")
    assert chunks and chunks[0] < 100  # the first of many chunks, not 2,704 matchups (or four times as many)


def test_twins_are_fought_once_on_the_first_twins_stream(tmp_path):
    roster = warband_roster(tmp_path / "wb.toml", 4, twins=1)  # the fourth unit: a renamed copy of the first
    ros = sim.load_roster(roster, "warband")
    first, twin = ros.names[0], ros.names[-1]
    kw = dict(max_trials=2000, half_width=0.05, seed=3, method="mc")
    for budget in (None, "none"):
        m = matchup_matrix("warband", ros, budget=budget, **kw)
        by = m.long.set_index(["attacker", "defender"])
        numbers = ["trials", "p_attacker", "p_defender", "p_draw", "damage_to_attacker", "mean_rounds"]
        for other in ros.names:
            assert by.loc[(twin, other), numbers].equals(by.loc[(first, other), numbers])
            assert by.loc[(other, twin), numbers].equals(by.loc[(other, first), numbers])
        assert m.results[(twin, ros.names[1])].provenance["stream"] == \
            m.results[(first, ros.names[1])].provenance["stream"]
        if m.bank is not None:
            assert m.bank.twinned > 0
        # without the twin, the other cells are the same numbers (a unit's streams are its first twin's)
        alone = matchup_matrix("warband", ros, units=ros.names[:-1], budget=budget, **kw)
        kept = m.long[(m.long.attacker != twin) & (m.long.defender != twin)].reset_index(drop=True)
        assert kept[numbers].equals(alone.long[numbers])


def test_pooled_twins_count_one_fight_not_two(tmp_path):
    from analysis.stats.pooling import collapse, twin_classes

    roster = warband_roster(tmp_path / "wb.toml", 3, twins=1)
    m = matchup_matrix("warband", roster, max_trials=2000, half_width=0.05, seed=3, method="mc", budget="none")
    classes = twin_classes(m, list(m.units))
    assert any(len(members) == 2 for members in classes.values())
    pooled = collapse(m.long, classes).set_index(["attacker", "defender"])
    rep = m.units[0]
    assert pooled.loc[(rep, rep), "trials"] == m.long.set_index(["attacker", "defender"]).loc[(rep, rep), "trials"]


_PEAK = """
import resource, sys
from analysis.runs.matrix import matchup_matrix
m = matchup_matrix("warband", sys.argv[1], budget="none", max_trials=256, half_width=None, seed=1, method="mc")
assert (m.long.trials == 256).all()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


@pytest.mark.slow  # about 2.5 minutes: 8,400 plans built (the three sizes run side by side)
def test_peak_memory_does_not_grow_with_the_roster(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = {n: subprocess.Popen([sys.executable, "-c", _PEAK, str(warband_roster(tmp_path / f"wb{n}.toml", n))],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in (80, 40, 20)}
    peaks = {}
    for n, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        peaks[n] = int(out.split()[-1])
    # 16 times the cells, the same plans in flight: what grows is the cells' numbers (tallies, frame)
    assert peaks[80] < 1.5 * peaks[20] + (64 << 20), peaks
