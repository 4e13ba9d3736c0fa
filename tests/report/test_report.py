"""Reports build, contain every section, write every file atomically and reproducibly; CLI in-process."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import markupsafe  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from analysis.cli import main
from analysis.report.build import SECTIONS, build_report, write_all

SMALL = {"max_trials": 4_096, "half_width": 0.05}


@pytest.fixture(scope="module")
def report():
    return build_report("mecha", seed=7, options={"second_m_destroys": True}, **SMALL)


@pytest.fixture(scope="module")
def written(report, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    report.write(out)
    return out


def test_report_contains_every_section(report, written):
    html = (written / "report.html").read_text(encoding="utf-8")
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in html, sid
    assert html.count("data:image/png;base64,") >= 8
    assert "http://" not in html and "https://" not in html  # self-contained
    rs = report.ruleset
    for text in (rs.title, rs.source, rs.spec, "second_m_destroys", "seed", "linprog", "Fair price alone: the points at which"):
        assert str(markupsafe.escape(text)) in html, text  # escaped as the templates escape (' is &#39;)


def test_report_files_and_metadata(report, written):
    for name in report.file_names():
        assert (written / name).is_file(), name
    assert not list(written.glob(".*.tmp"))  # atomic writes leave no temporaries
    meta = json.loads((written / "metadata.json").read_text())
    assert meta["settings"]["seed"] == 7 and meta["provenance"]["seed_entropy"] == 7
    assert meta["ruleset"]["id"] == "mecha" and meta["ruleset"]["spec"] == report.ruleset.spec
    switches = {s["option"]: s for s in meta["switches"]}
    assert switches["second_m_destroys"]["value"] is True and switches["second_m_destroys"]["set_by"] == "command"
    assert "Fliege" in meta["roster"]["excluded"]
    long = pd.read_csv(written / "matrix_long.csv")
    assert set(long["attacker"]) == set(report.matrix.units)
    ranks = pd.read_csv(written / "rankings.csv")
    # competition ranks: twins (AFS and PKA fight alike one a side) share a rank
    assert ranks["rank"].is_monotonic_increasing and ranks["rank"].iloc[0] == 1
    by = ranks.set_index("unit")
    assert by.loc["AFS", "rank"] == by.loc["PKA", "rank"]
    # a rank is shared only by units whose score intervals overlap: a better rank is surely better
    for r in sorted(set(ranks["rank"]))[1:]:
        above = ranks[ranks["rank"] < r]
        below = ranks[ranks["rank"] == r]
        assert (above["score_lo"].max() > below["score_hi"]).all()
    md = (written / "summary.md").read_text()
    for heading in ("## Rankings", "## Nash equilibrium", "## Dominated units", "## Intransitive triples",
                    "## Fair prices"):
        assert heading in md


@pytest.mark.usefixtures("plain_figures")  # compares the CSV and JSON files
def test_same_seed_gives_identical_csv_files(written, tmp_path):
    again = build_report("mecha", seed=7, options={"second_m_destroys": True}, **SMALL)
    again.write(tmp_path)
    csvs = sorted(p.name for p in written.glob("*.csv"))
    assert "matrix_long.csv" in csvs and "fair_points.csv" in csvs
    for name in csvs:
        assert (tmp_path / name).read_bytes() == (written / name).read_bytes(), name
    assert (tmp_path / "metadata.json").read_bytes() == (written / "metadata.json").read_bytes()


def test_report_headline(report):
    head = report.headline()
    assert head["ruleset"] == "mecha" and head["units"] == len(report.matrix.units)
    assert head["strongest"] == report.balance.rankings.iloc[0]["unit"]


def test_cli_balance_prints_tables_and_writes_csv(tmp_path, capsys):
    rc = main(["balance", "mecha", "--max-trials", "4096", "--quiet", "--out", str(tmp_path), "--method", "mc"])
    # (Monte Carlo cells: exact cells near 0 or 1 lose more to the 6-decimal rounding, see test_exact_cells.py)
    out = capsys.readouterr().out
    assert rc == 0
    for heading in ("Rankings", "Nash equilibrium", "Dominated units", "Intransitive triples", "Fair prices"):
        assert heading in out
    for name in ("rankings.csv", "nash.csv", "fair_points.csv", "matrix_long.csv"):
        assert (tmp_path / name).is_file()
    rc = main(["balance", "mecha", "--from-matrix", str(tmp_path), "--out", str(tmp_path / "again")])
    assert rc == 0
    # the saved matrix holds probabilities to 6 decimals: the same rankings up to that rounding
    saved, direct = pd.read_csv(tmp_path / "again" / "rankings.csv"), pd.read_csv(tmp_path / "rankings.csv")
    assert list(saved["unit"]) == list(direct["unit"])
    pd.testing.assert_series_equal(saved["strength"], direct["strength"], atol=1e-4)


def test_cli_report_one_ruleset(tmp_path, capsys):
    rc = main(["report", "mecha", "--out", str(tmp_path), "--seed", "3", "--max-trials", "4096", "--quiet",
               "--units", "AFS,PKA,Nutrocker,Gustav"])
    assert rc == 0
    assert (tmp_path / "report.html").is_file() and (tmp_path / "summary.md").is_file()
    assert "report.html" in capsys.readouterr().out


@pytest.mark.usefixtures("plain_figures")  # reads the index, not the plots
def test_cli_report_all_writes_an_index(tmp_path, monkeypatch):
    import sim

    # every registered ruleset is exercised by `meleelab report --all` itself; here one keeps the test fast
    monkeypatch.setattr(sim, "rulesets", lambda: [sim.get_ruleset("mecha")])
    rc = main(["report", "--all", "--out", str(tmp_path), "--max-trials", "1024", "--quiet"])
    assert rc == 0
    index = (tmp_path / "index.html").read_text()
    assert (tmp_path / "mecha" / "report.html").is_file()
    assert 'href="mecha/report.html"' in index
    assert "[mecha](mecha/report.html)" in (tmp_path / "index.md").read_text()


@pytest.mark.usefixtures("plain_figures")  # reads the index, not the plots
def test_write_all_carries_on_past_a_failing_ruleset(tmp_path):
    result = write_all(tmp_path, rulesets=["nosuch", "mecha"], max_trials=1024)
    assert [r["ruleset"] for r in result["ok"]] == ["mecha"]
    assert "nosuch" in result["failed"] and "unknown ruleset" in result["failed"]["nosuch"]
    assert "nosuch" in (tmp_path / "index.html").read_text()


def test_cli_report_errors_are_one_line(tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path)]) == 2
    assert main(["report", "mecha", "--all", "--out", str(tmp_path)]) == 2
    assert main(["report", "nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("meleelab: error:") for line in err)


def test_report_without_points_and_with_awkward_names(tmp_path):
    from sim.roster import roster_from_dict

    units = [{"name": "Big <Suit>", "defence": 3, "physical": 0, "armour": "A"},
             {"name": "Small & Fast", "defence": 1, "physical": 0, "armour": "C"},
             {"name": "Middle", "defence": 2, "physical": 0, "armour": "B"}]
    ros = roster_from_dict({"ruleset": "mecha", "unit": units}, source="hand-made roster")
    rep = build_report("mecha", ros, seed=1, **SMALL)
    rep.write(tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "Big &lt;Suit&gt;" in html and "Big <Suit>" not in html
    assert rep.balance.fair_points["fair_points"].isna().all()  # no points: no price, and the report says so
    assert "at least three units with points" in (tmp_path / "summary.md").read_text()
    assert pd.read_csv(tmp_path / "rankings.csv")["unit"].tolist()[0] == "Big <Suit>"
