"""meleelab diff: paired comparison of two runs, checked on two runs of one seed with one changed unit.

The oracle is the mecha chart as docs/rules/mecha.md prints it (typed here, not
taken from the code): a one-round fight is two independent d6 rolls, so every
cell's probability is exact, and so is the variance of the paired difference
when both runs read the same dice (common random numbers).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli import main
from analysis.report.diff import COLUMNS, diff_runs, find_runs
from sim.errors import InputError
from tests.plain_figures import blank_figures

#: Every check here reads the runs' CSV files (and diff's own diff.png, drawn as ever), never a report's plot:
#: the reports' plots are built but not rasterised (tests/plain_figures.py), a third of the time of each report.
pytestmark = pytest.mark.usefixtures("plain_figures")

SEED = 7
TRIALS = 16_384
#: name: (defence, physical, armour letter, points); the new run gives the AFS defence 3.
UNITS = {"AFS": (2, 0, "B", 20), "Nutrocker": (4, -2, "A", 45), "PKA": (2, 0, "B", 24), "Gustav": (3, 0, "A", 60)}
CHANGED = "AFS"


def _severity(defence: int, physical: int, letter: str, die: int) -> int:
    """0 unharmed, 1 immobilised, 2 destroyed (reconstructed chart: D if total <= 2+k, M if total == 3+k)."""
    k = "ABCDE".index(letter)
    total = die + defence + physical
    return 0 if total >= 7 else 2 if total <= 2 + k else 1 if total == 3 + k else 0


def _attacker_wins(att: tuple, dfn: tuple, a: int, d: int) -> int:
    return int(_severity(*att[:3], a) < _severity(*dfn[:3], d))


def _side_wins(side: str, att: tuple, dfn: tuple, a: int, d: int) -> int:
    """1 if ``side`` wins the one-round fight on dice (a, d): its final state is strictly less severe."""
    return _attacker_wins(att, dfn, a, d) if side == "attacker" else _attacker_wins(dfn, att, d, a)


def _profiles(new: bool) -> dict[str, tuple]:
    units = dict(UNITS)
    if new:
        units[CHANGED] = (3,) + UNITS[CHANGED][1:]
    return units


def _roster(path: Path, new: bool) -> Path:
    lines = ['ruleset = "mecha"', ""]
    for name, (defence, physical, letter, points) in _profiles(new).items():
        lines += ["[[unit]]", f'name = "{name}"', f"defence = {defence}", f"physical = {physical}",
                  f'armour = "{letter}"', f"points = {points}", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _report(tmp: Path, name: str, new: bool, seed: int = SEED) -> Path:
    out = tmp / name
    roster = _roster(tmp / f"{name}.toml", new)
    rc = main(["report", "mecha", "--roster", str(roster), "--seed", str(seed), "--half-width", "0.0001",
               "--max-trials", str(TRIALS), "--out", str(out), "--quiet", "--rules-defaults",
               "--method", "mc"])  # Monte Carlo pairing on common random numbers is what these tests check
    # --rules-defaults: the cells are held to exact one-round probabilities
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("diff")
    with blank_figures():
        return _report(tmp, "old", new=False), _report(tmp, "new", new=True)


def test_unchanged_cells_are_identical_and_changed_cells_are_paired(runs) -> None:
    old, new = runs
    d = diff_runs(old, new)
    cells = d.table[d.table["kind"] == "cell"]
    assert len(cells) == 2 * len(UNITS) ** 2
    touched = cells["item"].str.split(" vs ").apply(lambda pair: CHANGED in pair)
    # the same seed puts a cell on the same dice: without the changed unit, exactly the same numbers
    assert (cells.loc[~touched, "status"] == "identical").all()
    assert (cells.loc[~touched, "diff"] == 0).all()
    old_p, new_p = _profiles(False), _profiles(True)
    n = TRIALS
    for _, row in cells[touched].iterrows():
        a_name, d_name = row["item"].split(" vs ")
        side = "attacker" if row["quantity"] == "p_attacker" else "defender"
        dice = [(a, d) for a in range(1, 7) for d in range(1, 7)]
        won_old = [_side_wins(side, old_p[a_name], old_p[d_name], a, d) for a, d in dice]
        won_new = [_side_wins(side, new_p[a_name], new_p[d_name], a, d) for a, d in dice]
        p_old, p_new = Fraction(sum(won_old), 36), Fraction(sum(won_new), 36)
        diffs = [y - x for x, y in zip(won_old, won_new)]
        mean = Fraction(sum(diffs), 36)
        paired_var = Fraction(sum(x * x for x in diffs), 36) - mean ** 2
        paired_se = math.sqrt(paired_var / n)
        independent_se = math.sqrt((p_old * (1 - p_old) + p_new * (1 - p_new)) / n)
        assert row["trials_old"] == row["trials_new"] == n
        if p_old == p_new and paired_var == 0:
            # the change cannot touch this cell: the same dice give the same fights
            assert row["status"] == "identical", row.to_dict()
            continue
        # the difference is centred on the exact one, and diff_se never understates the paired error:
        # it is the independent-runs formula, conservative on common random numbers
        assert abs(row["diff"] - float(p_new - p_old)) < 6 * max(paired_se, 1e-12), row.to_dict()
        assert row["diff_se"] >= paired_se * (1 - 1e-9) - 1e-6, row.to_dict()
        assert row["diff_se"] == pytest.approx(independent_se, rel=0.1, abs=2e-4), row.to_dict()
        if abs(float(p_new - p_old)) > 10 * independent_se:
            assert row["status"] == "changed", row.to_dict()


def test_rankings_and_fair_prices_are_compared(runs) -> None:
    old, new = runs
    d = diff_runs(old, new)
    kinds = set(d.table["kind"])
    assert {"cell", "ranking", "fair price"} <= kinds
    fair = d.table[d.table["kind"] == "fair price"]
    assert set(fair["item"]) == set(UNITS)
    assert fair["context_old"].str.startswith("points").all()
    # the AFS got better: its strength rises beyond the noise
    afs = d.table[(d.table["kind"] == "ranking") & (d.table["item"] == CHANGED) & (d.table["quantity"] == "strength")]
    assert afs["status"].iloc[0] == "changed" and afs["diff"].iloc[0] > 0


def test_a_run_against_itself_changes_nothing(runs) -> None:
    old, _ = runs
    d = diff_runs(old, old)
    assert set(d.table["status"]) <= {"identical", "not fought"}
    assert not len(d.changed())
    assert "no number changed" in d.text()


def test_cli_prints_and_writes(runs, tmp_path, capsys) -> None:
    old, new = runs
    out = tmp_path / "d"
    assert main(["diff", str(old), str(new), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "changed beyond the noise" in text and "AFS" in text
    table = pd.read_csv(out / "diff.csv")
    assert {"kind", "item", "quantity", "old", "new", "diff", "diff_se", "z", "status"} <= set(table.columns)
    assert (out / "diff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    changed = pd.read_csv(out / "diff_changed.csv")
    assert changed["status"].isin(["changed", "edited", "flipped"]).all() and len(changed) > 0
    # what the designer changed comes first: the roster's edits, then the verdicts that flipped, then numbers
    kinds = list(dict.fromkeys(changed["kind"]))
    assert kinds[0] == "roster" and kinds == sorted(kinds, key=["roster", "verdict", "fair price", "cell",
                                                               "ranking"].index)
    edits = changed[changed["kind"] == "roster"]
    assert ((edits["item"] == "AFS") & edits["status"].eq("edited")).any()
    # the folder is replaced whole (issue 11): a stale file of an earlier run goes, no temporary folder stays
    # beside it; the earlier run wrote it, so its marker names it (a file the user added is refused, issue 30)
    (out / "stale.csv").write_text("from an earlier run")
    marker = json.loads((out / ".meleelab").read_text())
    stale = hashlib.sha256(b"from an earlier run").hexdigest()
    (out / ".meleelab").write_text(json.dumps({**marker, "files": {**marker["files"], "stale.csv": stale}}))
    assert main(["diff", str(old), str(new), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".meleelab", "diff.csv", "diff.png", "diff_changed.csv"]
    (out / "mine.csv").write_text("the user's")
    assert main(["diff", str(old), str(new), "--out", str(out)]) == 2 and (out / "mine.csv").exists()
    assert "mine.csv" in capsys.readouterr().err
    (out / "mine.csv").unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    for into in (old, new, old.parent):  # replacing it would delete a run being compared
        assert main(["diff", str(old), str(new), "--out", str(into)]) == 2
        err = capsys.readouterr().err
        assert "holds the" in err and "input" in err and len(err.strip().splitlines()) == 1, err


def test_renamed_columns_are_read_by_their_role(runs, tmp_path) -> None:
    """The equal-points rework may rename fair_points to fair_price: COLUMNS maps both."""
    old, new = runs
    moved = tmp_path / "new"
    shutil.copytree(new, moved)
    fair = pd.read_csv(moved / "fair_points.csv").rename(columns={"fair_points": "fair_price"})
    fair.to_csv(moved / "fair_points.csv", index=False)
    rankings = pd.read_csv(moved / "rankings.csv").drop(columns=["strength_se"])
    rankings.to_csv(moved / "rankings.csv", index=False)
    assert "fair_price" in COLUMNS["fair_points.csv"]["fair_price"]
    d, before = diff_runs(old, moved), diff_runs(old, new)
    fair_rows, fair_before = (t.table[t.table["kind"] == "fair price"] for t in (d, before))
    assert fair_rows["new"].notna().any()
    pd.testing.assert_series_equal(fair_rows["new"].reset_index(drop=True), fair_before["new"].reset_index(drop=True))
    strength = d.table[(d.table["kind"] == "ranking") & (d.table["quantity"] == "strength")]
    assert (strength["status"] != "changed").all()  # no standard error: never called a change


def test_report_all_folders_are_compared_ruleset_by_ruleset(runs, tmp_path) -> None:
    old, new = runs
    for name, src in (("a", old), ("b", new)):
        shutil.copytree(src, tmp_path / name / "mecha")
    assert set(find_runs(tmp_path / "a")) == {"mecha"}
    d = diff_runs(tmp_path / "a", tmp_path / "b")
    assert set(d.table["ruleset"]) == {"mecha"} and len(d.changed()) > 0


def test_different_seeds_are_noted(runs, tmp_path) -> None:
    old, _ = runs
    other = _report(tmp_path, "other", new=False, seed=SEED + 1)
    d = diff_runs(old, other)
    assert any("different seeds" in n for n in d.notes)
    assert (d.table.loc[d.table["kind"] == "cell", "status"] != "identical").any()


@pytest.mark.parametrize("case", ["missing", "file", "empty", "mismatch", "bad_z"])
def test_bad_input_is_one_line_and_exit_2(case, runs, tmp_path, capsys) -> None:
    old, _ = runs
    if case == "missing":
        args = [str(old), str(tmp_path / "nowhere")]
    elif case == "file":
        (tmp_path / "f.txt").write_text("x")
        args = [str(old), str(tmp_path / "f.txt")]
    elif case == "empty":
        (tmp_path / "empty").mkdir()
        args = [str(tmp_path / "empty"), str(old)]
    elif case == "mismatch":
        other = tmp_path / "other"
        shutil.copytree(old, other)
        meta = (other / "metadata.json").read_text(encoding="utf-8").replace('"id": "mecha"', '"id": "duel"', 1)
        (other / "metadata.json").write_text(meta, encoding="utf-8")
        args = [str(old), str(other)]
    else:
        args = [str(old), str(old), "--z", "-1"]
    assert main(["diff", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("meleelab: error:") and "\n" not in err and "Traceback" not in err
    if case == "mismatch":
        assert "compare runs of one ruleset" in err
    with pytest.raises((InputError, ValueError)):
        diff_runs(*[a for a in args if not a.startswith("--") and a != "-1"], z=-1 if case == "bad_z" else 3)


def test_units_named_like_missing_values_keep_their_names(tmp_path, capsys) -> None:
    """pandas reads NA, None and null as missing by default: all three units became 'nan' and their cells merged."""
    rows = "name,defence,physical,armour,points\nNA,{d},0,B,20\nNone,3,0,C,25\nnull,4,-2,A,40\n"
    for name, d in (("old", 2), ("new", 3)):
        (tmp_path / f"{name}.csv").write_text(rows.format(d=d), encoding="utf-8")
        assert main(["report", "mecha", "--roster", str(tmp_path / f"{name}.csv"), "--max-trials", "3000",
                     "--seed", "1", "--quiet", "--out", str(tmp_path / name)]) == 0
    d = diff_runs(tmp_path / "old", tmp_path / "new")
    cells = d.table[d.table["kind"] == "cell"]
    assert {"NA vs NA", "None vs null", "null vs NA"} <= set(cells["item"]) and len(set(cells["item"])) == 9
    changed = set(d.changed()["item"])
    assert "NA vs None" in changed and "None vs null" not in changed  # only the cells of the changed unit moved


def test_a_points_edit_and_a_verdict_flip_are_shown_first_whatever_the_noise(tmp_path) -> None:
    """One a side (mecha), a points edit changes no fight: before, diff said "no change"; now it leads."""
    def report(name: str, afs_points: int) -> Path:
        path = tmp_path / f"{name}.toml"
        lines = ['ruleset = "mecha"', ""]
        for unit, (defence, physical, letter, points) in UNITS.items():
            points = afs_points if unit == "AFS" else points
            lines += ["[[unit]]", f'name = "{unit}"', f"defence = {defence}", f"physical = {physical}",
                      f'armour = "{letter}"', f"points = {points}", ""]
        path.write_text("\n".join(lines), encoding="utf-8")
        out = tmp_path / name
        assert main(["report", "mecha", "--roster", str(path), "--seed", "5", "--max-trials", "4096", "--out",
                     str(out), "--quiet", "--rules-defaults"]) == 0
        return out

    old, new = report("cheap", 20), report("dear", 60)
    d = diff_runs(old, new)
    ch = d.changed()
    assert ch.iloc[0]["kind"] == "roster" and ch.iloc[0]["item"] == "AFS" and ch.iloc[0]["quantity"] == "points"
    assert (ch.iloc[0]["old"], ch.iloc[0]["new"]) == (20.0, 60.0)
    cells = d.table[d.table["kind"] == "cell"]
    assert (cells["status"] == "identical").all()  # no fight changed
    # the reconciled verdicts (verdicts.csv), one per unit, as the report shows them
    verdicts = pd.read_csv(old / "verdicts.csv").set_index("unit")["verdict"], \
        pd.read_csv(new / "verdicts.csv").set_index("unit")["verdict"]
    flipped = {u for u in verdicts[0].index if verdicts[0][u] != verdicts[1][u]}
    assert set(ch.loc[ch["kind"] == "verdict", "item"]) == flipped and flipped  # (AFS stays dominated by Gustav)
    text = d.text()
    assert "AFS: points 20 → 60" in text and "no number changed" not in text
    for u in flipped:  # each flip in words, old -> new, in the API's text and the terminal's
        assert f"{u}: {verdicts[0][u]} → {verdicts[1][u]}" in text


def test_exact_runs_show_exactly_what_changed(tmp_path) -> None:
    """Two exact runs (one round, every cell a chain): each cell's change is the enumerated one to the CSV files'
    six decimals, every
    cell the edit touches and that moves is "changed" however small, the rest "identical"; nothing is noise."""
    def exact_report(name: str, new: bool) -> Path:
        out = tmp_path / name
        rc = main(["report", "mecha", "--roster", str(_roster(tmp_path / f"{name}.toml", new)), "--out", str(out),
                   "--quiet", "--rules-defaults", "--method", "exact"])
        assert rc == 0
        return out

    d = diff_runs(exact_report("old", False), exact_report("new", True))
    cells = d.table[d.table["kind"] == "cell"]
    assert len(cells) == 2 * len(UNITS) ** 2
    old_p, new_p = _profiles(False), _profiles(True)
    dice = [(a, b) for a in range(1, 7) for b in range(1, 7)]
    for _, row in cells.iterrows():
        a_name, d_name = row["item"].split(" vs ")
        side = "attacker" if row["quantity"] == "p_attacker" else "defender"
        p_old = Fraction(sum(_side_wins(side, old_p[a_name], old_p[d_name], a, b) for a, b in dice), 36)
        p_new = Fraction(sum(_side_wins(side, new_p[a_name], new_p[d_name], a, b) for a, b in dice), 36)
        assert row["diff"] == pytest.approx(float(p_new - p_old), abs=1.01e-6), row.to_dict()  # two 6-decimal values
        assert row["diff_se"] == 0, row.to_dict()
        assert row["status"] == ("identical" if p_new == p_old else "changed"), row.to_dict()
    assert (cells["status"] == "changed").any() and (cells["status"] == "identical").any()


@pytest.fixture(scope="module")
def squads(tmp_path_factory) -> tuple[Path, Path]:
    """Two grimdark reports of the shipped roster's Assault squad and Horde mob (each one row per model group in
    units.csv, the points on the first), the second with the prices the issue names: 150 -> 132, 120 -> 63.
    One a side, so the edit changes no fight and the runs stay quick."""
    from analysis.report.build import build_report

    tmp = tmp_path_factory.mktemp("squads")
    text = (Path(__file__).resolve().parents[2] / "sim" / "rosters" / "grimdark.toml").read_text(encoding="utf-8")
    assert text.count("\npoints = 150\n") == text.count("\npoints = 120\n") == 1  # the two squads' prices
    edited = text.replace("\npoints = 150\n", "\npoints = 132\n").replace("\npoints = 120\n", "\npoints = 63\n")
    (tmp / "new.toml").write_text(edited, encoding="utf-8")
    out = []
    for name, roster in (("old", None), ("new", tmp / "new.toml")):
        rep = build_report("grimdark", roster=roster, units=["Assault squad", "Horde mob"], budget="none",
                           max_trials=256, seed=1)
        with blank_figures():
            rep.write(tmp / name)
        out.append(tmp / name)
    return out[0], out[1]


def test_a_price_edit_of_a_squad_of_several_groups_is_seen(squads, capsys) -> None:
    """Before: units.csv rows were keyed by the unit's name, so a squad's last group row (no points) hid its
    first (the points): diff missed grimdark's Assault squad 150 -> 132 and Horde mob 120 -> 63."""
    old, new = squads
    assert (pd.read_csv(old / "units.csv")["name"] == "Assault squad").sum() == 2  # two model groups
    d = diff_runs(old, new)
    edits = d.table[(d.table["kind"] == "roster") & (d.table["quantity"] == "points")]
    got = {r["item"]: (r["old"], r["new"]) for _, r in edits.iterrows()}
    assert got == {"Assault squad": (150.0, 132.0), "Horde mob": (120.0, 63.0)}
    assert (d.table.loc[d.table["kind"] == "roster", "status"] == "edited").all()  # the group rows are unchanged
    assert main(["diff", str(old), str(new)]) == 0
    text = capsys.readouterr().out
    assert "Assault squad: points 150 → 132" in text and "Horde mob: points 120 → 63" in text


def test_verdict_flips_are_printed_old_to_new(squads, tmp_path, capsys) -> None:
    """Before: a flip was a row of "-" and "-" in the terminal, and only fair_points.csv's price verdicts were read;
    now the reconciled verdicts of verdicts.csv, in words, and in diff.csv as rows of kind "verdict"."""
    old, _ = squads
    flipped = tmp_path / "flipped"
    shutil.copytree(old, flipped)
    verdicts = pd.read_csv(flipped / "verdicts.csv", keep_default_na=False)
    before = dict(zip(verdicts["unit"], verdicts["verdict"]))
    verdicts.loc[verdicts["unit"] == "Horde mob", "verdict"] = "underpriced"
    verdicts.to_csv(flipped / "verdicts.csv", index=False)
    assert before["Horde mob"] != "underpriced"
    assert main(["diff", str(old), str(flipped), "--out", str(tmp_path / "d")]) == 0
    text = capsys.readouterr().out
    assert "Verdicts that flipped (1):" in text and f"Horde mob: {before['Horde mob']} → underpriced" in text
    rows = pd.read_csv(tmp_path / "d" / "diff.csv", keep_default_na=False)
    flips = rows[rows["kind"] == "verdict"]
    assert list(zip(flips["item"], flips["context_old"], flips["context_new"], flips["status"])) == [
        ("Horde mob", before["Horde mob"], "underpriced", "flipped")]
