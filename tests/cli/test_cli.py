"""The CLI, run in-process: tables, JSON contract, one-line errors with exit status 2."""

from __future__ import annotations

import json

import pytest

from analysis.cli import main

JSON_KEYS = {"ruleset", "attacker", "defender", "trials", "seed", "rounds", "win", "ci95", "damage", "outcomes",
             "mean_rounds", "provenance"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_rulesets_lists_mecha(capsys):
    code, out, _ = run(capsys, "rulesets")
    assert code == 0 and "mecha" in out and "000_ecd8aa549f6b9c33.txt" in out


def test_units_table(capsys):
    code, out, _ = run(capsys, "units", "mecha")
    assert code == 0 and "Nutrocker" in out and "defence" in out


def test_fight_json_contract(capsys):
    code, out, err = run(capsys, "fight", "mecha", "AFS", "Nutrocker", "--json", "--trials", "200000", "--seed", "5")
    assert code == 0
    data = json.loads(out)
    assert JSON_KEYS <= set(data)
    assert set(data["win"]) == {"attacker", "defender", "draw"} == set(data["ci95"])
    assert abs(sum(data["win"].values()) - 1) < 1e-12
    assert set(data["damage"]) == {"to_attacker", "to_defender"}
    assert {"mean", "se"} <= set(data["damage"]["to_attacker"])
    assert set(data["outcomes"]["attacker"]) == {"unharmed", "immobilised", "destroyed"}
    assert data["provenance"]["seed_entropy"] == 5 and data["seed"] == 5 and data["rounds"] == 1
    # exact: P(defender wins) = 11/36; the interval from 200k trials is about +-0.002
    lo, hi = data["ci95"]["defender"]
    assert hi - lo < 0.005 and abs(data["win"]["defender"] - 11 / 36) < 0.006


def test_fight_table_and_set(capsys):
    code, out, _ = run(capsys, "fight", "mecha", "AFS", "Nutrocker", "--trials", "10000", "--seed", "1",
                       "--set", "defender.immobilised=true", "--set", "attacker.defence=3", "--rounds", "end")
    assert code == 0 and "AFS wins" in out and "rounds=end" in out


def test_same_seed_same_json(capsys):
    args = ["fight", "mecha", "PKA", "Gustav", "--json", "--trials", "70000", "--seed", "9", "--rounds", "end"]
    _, a, _ = run(capsys, *args)
    _, b, _ = run(capsys, *args, "--workers", "2")
    assert a == b


@pytest.mark.parametrize("argv,needle", [
    (["fight", "chess", "A", "B"], "unknown ruleset 'chess'"),
    (["fight", "mecha", "AFS", "Zeppelin"], "no unit 'Zeppelin'"),
    (["fight", "mecha", "AFS", "Fliege"], "cannot be engaged"),
    (["fight", "mecha", "AFS", "Nutrocker", "--set", "attacker.defence=99"], "field 'defence'"),
    (["fight", "mecha", "AFS", "Nutrocker", "--set", "attacker.evading=true"], "defender only"),
    (["fight", "mecha", "AFS", "Nutrocker", "--set", "defender.immobilised=maybe"], "true or false"),
    (["fight", "mecha", "AFS", "Nutrocker", "--set", "nonsense"], "SIDE.KEY=VALUE"),
    (["fight", "mecha", "AFS", "Nutrocker", "--set", "warp=1"], "an option of mecha"),
    (["fight", "mecha", "AFS", "Nutrocker", "--rounds", "zero"], "rounds"),
    (["fight", "mecha", "AFS", "Nutrocker", "--trials", "0"], "--trials"),
    (["fight", "mecha", "AFS", "Nutrocker", "--trials", "many"], "many"),
    (["fight", "mecha", "AFS", "Nutrocker", "--roster", "/nonexistent.toml"], "no such roster file"),
    (["units", "mecha", "--roster", "/nonexistent.toml"], "no such roster file"),
])
def test_errors_are_one_line_with_status_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


def test_bad_roster_file_is_one_line(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text('ruleset = "mecha"\n[[unit]]\nname = "X"\ndefence = 2\nphysical = 0\narmour = "B"\ncolour = "red"\n')
    code, _, err = run(capsys, "fight", "mecha", "X", "X", "--roster", str(p))
    assert code == 2 and str(p) in err and "unit 'X'" in err and "field 'colour'" in err and len(err.splitlines()) == 1


def test_bench_json(capsys):
    code, out, _ = run(capsys, "bench", "mecha", "--json", "--seconds", "0.05")
    data = json.loads(out)
    entry = data["rulesets"]["mecha"]
    assert data["d6_per_second"] > 0
    assert set(entry) >= {"matchup", "kernel_per_second", "reference_per_second", "speedup", "d6_equivalents"}


def test_python_m_analysis_runs():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "analysis", "rulesets"], capture_output=True, text=True, check=True)
    assert "mecha" in out.stdout


def test_public_api_names_import():
    import sim

    for name in sim.__all__:
        assert hasattr(sim, name), name


def test_unit_builds_a_validated_profile():
    import sim

    afs = sim.unit("mecha", name="AFS2", defence=2, physical=0, armour="B", points=20)
    assert afs.defence == 2 and afs.engageable is True
    with pytest.raises(sim.InputError, match="field 'defence'"):
        sim.unit("mecha", name="X", defence=99, physical=0, armour="B")
