"""report.html as a designer reads it: templates, human tables, findings that link, featured matchups, baseline."""

from __future__ import annotations

import html as html_module
import math
import re
from html.parser import HTMLParser
from importlib import resources

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from analysis.cli import main
from analysis.report.build import SECTIONS, build_report, write_all
from analysis.report.html import environment
from analysis.report.tables import interval_against
from sim.errors import InputError  # noqa: E402

# no twins among them (AFS/PKA and Sand Stalker/Snake Eye fight alike), so every pair is a candidate
UNITS = ["AFS", "Nutrocker", "Sand Stalker", "Kroete", "HAFS Jerry", "Gustav"]
QUICK = {"max_trials": 2_048, "half_width": 0.05}


class Page(HTMLParser):
    """The parts of a page the tests look at: ids, links, header cells, table cells with their classes."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.headers: list[str] = []
        self.cells: list[tuple[str, str]] = []  # (class, text)
        self.rows: dict[str, list[str]] = {}  # row id -> cell texts
        self._cell: list[str] | None = None
        self._cls = ""
        self._row: str | None = None
        self._table = ""
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "table":
            self._table = a.get("class", "")
        if tag == "tr":
            self._row = a.get("id")
            if self._row:
                self.rows[self._row] = []
        if tag in ("th", "td"):
            self._cell, self._cls = [], a.get("class", "")

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._cell is not None:
            text = "".join(self._cell).strip()
            if self._table == "t":  # formatted tables (not the key-value lists of rules and settings)
                (self.headers.append(text) if tag == "th" else self.cells.append((self._cls, text)))
            if tag == "td" and self._row:
                self.rows[self._row].append(text)
            self._cell = None
        if tag == "tr":
            self._row = None


def _section(html: str, sid: str) -> str:
    start = html.index(f'<section id="{sid}">')
    return html[start:html.index("</section>", start)]


@pytest.fixture(scope="module")
def report():
    return build_report("mecha", units=UNITS, seed=11, **QUICK)


@pytest.fixture(scope="module")
def html(report):
    return report.html()


def test_pages_come_from_the_packaged_templates(report, html):
    folder = resources.files("analysis.report") / "templates"
    for name in ("base.html", "report.html", "index.html", "_macros.html", "style.css"):
        assert (folder / name).is_file(), name
    env = environment()
    assert env.autoescape is True
    assert "<b>" not in env.from_string("{{ x }}").render(x="<b>")
    assert html.startswith("<!DOCTYPE html>") and ".scroll{overflow-x:auto" in html  # base layout and style sheet
    positions = [html.index(f'<section id="{sid}">') for sid in SECTIONS]
    assert positions == sorted(positions)  # every section, in the documented order, findings first


def test_tables_have_human_headers_aligned_cells_and_scroll(report, html):
    page = Page(html)
    machine = [h for h in page.headers if re.fullmatch(r"[a-z]+(_[a-z]+)+", h)]
    assert not machine, machine  # "Fair price", "95% interval"... never fair_lo or win_rate_lo
    assert {"Fair price alone", "95% interval", "Win rate", "Strength (logit)", "Nash weight"} <= set(page.headers)
    assert html.count('<table class="t">') == html.count('<div class="scroll"><table class="t">')
    assert all(cls in ("num", "text") for cls, _ in page.cells)
    number = re.compile(r"[-+]?[\d,]+(\.\d+)?%?( to |–)?([-+]?[\d,]+(\.\d+)?%?)?")
    misaligned = [text for cls, text in page.cells if number.fullmatch(text) and cls != "num"]
    assert not misaligned, misaligned  # a number (or an interval) is right-aligned
    assert not any(re.search(r"\de[-+]\d", text) or text in ("-0", "-0.0", "-0.00", "-0.0%") for _, text in page.cells)
    ranks = _section(html, "rankings")
    rows = [r for rid, r in page.rows.items() if rid.startswith("rank-")]
    assert len(rows) == len(report.matrix.units) and all(r[3].endswith("%") for r in rows)  # win rate in %
    assert "<td class=\"num\">" in ranks


@pytest.mark.usefixtures("plain_figures")  # reads the page's text, not its plots
def test_rank_ties_show_as_ties():
    # AFS and PKA fight alike: their pooled strengths are equal and they share a rank
    rep = build_report("mecha", units=["AFS", "PKA", "Gustav"], seed=2, **QUICK)
    page = Page(rep.html())
    ranks = [r[0] for rid, r in page.rows.items() if rid.startswith("rank-")]
    assert sorted(ranks) == ["1", "=2", "=2"]


def test_csv_files_keep_machine_names_and_full_precision(report, tmp_path):
    report.write(tmp_path)
    header = (tmp_path / "fair_points.csv").read_text().splitlines()[0]
    assert header.startswith("unit,points,copies,fair_points,fair_lo,fair_hi")
    assert re.search(r",\d+\.\d{6},", (tmp_path / "rankings.csv").read_text())


def test_findings_come_first_and_every_number_links_to_its_row(report, html):
    findings = _section(html, "findings")
    assert html.index('<section id="findings">') < html.index('<section id="overview">')
    ids = Page(html).ids
    links = re.findall(r'<a href="#([^"]+)">([^<]*)</a>', findings)
    assert links and all(target in ids for target, _ in links), [t for t, _ in links if t not in ids]
    bullets = findings[findings.index('<ul class="findings">'):]
    unlinked = re.sub(r"<a [^>]*>.*?</a>", "", bullets)
    text = html_module.unescape(re.sub(r"<[^>]+>", "", unlinked))  # "&#39;" is an apostrophe, not a number
    for name in sorted(report.matrix.units, key=len, reverse=True):
        text = text.replace(name, "")
    text = text.replace("95% interval", "interval")  # the name of the interval, not a number from a table
    assert not re.search(r"\d", text), text  # every number is inside a link
    # each fair-price link goes to the row of the unit it is about
    rows = Page(html).rows
    for item in re.findall(r"<li>(.*?)</li>", bullets):
        targets = set(re.findall(r'href="#(fair-\d+)"', item))
        if len(targets) == 1 and item.split(":")[0] in report.matrix.units:
            assert rows[targets.pop()][0] == item.split(":")[0]


def test_the_advice_finding_names_every_change_and_nothing_else(report, html):
    """One answer: the units the advice reprices, each with its advised price, and no other unit as mispriced."""
    v = report.balance.verdicts
    changed = v[v["verdict"].isin(["overpriced", "underpriced"])]
    findings = html_module.unescape(re.sub(r"<[^>]+>", "", _section(html, "findings")))
    block = findings[findings.index("Advice"):findings.index("Equilibrium")]
    for _, r in changed.iterrows():
        verb = "raise" if r["advised_points"] > r["points"] else "lower"
        assert f"{r['unit']}: {verb} its cost from {r['points']:,.0f} to {r['advised_points']:,.0f}" in block
    for u in v.loc[~v["unit"].isin(changed["unit"]), "unit"]:
        assert f"{u}: raise" not in block and f"{u}: lower" not in block
    for name in ("Over-priced", "Under-priced"):
        assert name not in findings
    md = report.markdown()
    assert md.index("## Findings") < md.index("## Rankings") and "(#verdicts)" in md


def test_default_featured_matchups_are_the_most_lopsided_and_most_even_cells(report, html):
    long = report.matrix.long
    cells = long[(long["attacker"] != long["defender"]) & ((long["trials"] > 0) | (long["method"] == "exact"))]
    distance = (cells["p_attacker"] + cells["p_draw"] / 2 - 0.5).abs().to_numpy()
    pairs = list(zip(cells["attacker"], cells["defender"]))
    lopsided = pairs[int(np.argmax(distance))]
    even = pairs[int(np.argmin(np.where(np.arange(len(pairs)) == np.argmax(distance), np.inf, distance)))]
    assert report.featured == (lopsided, even)
    section = _section(html, "matchup")
    assert f"{lopsided[0]} vs {lopsided[1]}" in section and f"{even[0]} vs {even[1]}" in section
    assert "most lopsided" in section and "most even" in section
    assert report.metadata()["featured_matchups"] == [list(lopsided), list(even)]


@pytest.mark.usefixtures("plain_figures")  # reads the page's text, not its plots
def test_feature_option_mirror_labels_and_bad_names(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["report", "mecha", "--units", ",".join(UNITS), "--max-trials", "1024", "--quiet", "--out", str(out),
               "--feature", "Gustav vs Gustav", "--feature", "kroete vs AFS"])
    assert rc == 0, capsys.readouterr().err
    section = _section((out / "report.html").read_text(encoding="utf-8"), "matchup")
    assert "Gustav against itself (mirror match: attacker vs defender)" in section and "Kroete vs AFS" in section
    mirror = section[:section.index("Kroete vs AFS")]
    assert "attacker wins" in mirror and "defender wins" in mirror and "Gustav wins" not in mirror
    assert "Gustav vs Gustav" not in mirror and "Gustav (attacker)" not in mirror  # never the same name twice
    capsys.readouterr()  # the note of the run above (1,024 fights are short of +-1 pp)
    for bad, what in (("Nobody vs Gustav", "Nobody"), ("Gustav", "vs"), ("Gustav vs Fliege", "left out")):
        rc = main(["report", "mecha", "--max-trials", "256", "--quiet", "--out", str(tmp_path / "bad"),
                   "--feature", bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith("meleelab: error:") and what in err[0], err
    assert main(["report", "--all", "--out", str(tmp_path / "all"), "--feature", "A vs B"]) == 2


def _roster(path, defence_of_small: int):
    path.write_text('ruleset = "mecha"\n'
                    '[[unit]]\nname = "Big"\ndefence = 3\nphysical = 0\narmour = "A"\npoints = 40\n'
                    f'[[unit]]\nname = "Small"\ndefence = {defence_of_small}\nphysical = 0\narmour = "C"\npoints = 15\n'
                    '[[unit]]\nname = "Middle"\ndefence = 2\nphysical = 0\narmour = "B"\npoints = 25\n'
                    '[[unit]]\nname = "Other"\ndefence = 3\nphysical = -1\narmour = "B"\npoints = 28\n',
                    encoding="utf-8")
    return path


def test_baseline_section_shows_what_changed_beyond_the_noise(tmp_path, capsys):
    before, after = _roster(tmp_path / "before.toml", 1), _roster(tmp_path / "after.toml", 4)
    common = ["--max-trials", "4096", "--half-width", "0.02", "--seed", "5", "--quiet"]
    assert main(["report", "mecha", "--roster", str(before), "--out", str(tmp_path / "old"), *common]) == 0
    rc = main(["report", "mecha", "--roster", str(after), "--out", str(tmp_path / "new"), "--baseline",
               str(tmp_path / "old"), *common])
    assert rc == 0, capsys.readouterr().err
    diff = pd.read_csv(tmp_path / "new" / "baseline_diff.csv")
    cells = diff[diff["kind"] == "cell"]
    small = cells["item"].str.contains("Small")
    # same seed, same dice: every cell without the changed unit is identical; a defence of 1 -> 4 shows
    assert (cells.loc[~small, "status"] == "identical").all()
    assert (cells.loc[small, "status"] == "changed").any()
    html = (tmp_path / "new" / "report.html").read_text(encoding="utf-8")
    section = _section(html, "baseline")
    changed = cells[cells["status"] == "changed"]["item"]
    assert all(item in section for item in changed) and section.count("data:image/png;base64,") == 3
    assert "Since the baseline" in _section(html, "findings")
    assert "## Changes since the baseline" in (tmp_path / "new" / "summary.md").read_text(encoding="utf-8")
    for bad in (tmp_path / "nowhere", before):
        rc = main(["report", "mecha", "--roster", str(after), "--out", str(tmp_path / "x"), "--baseline", str(bad),
                   *common])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith("meleelab: error:"), err


def test_bad_baseline_is_refused_before_any_fight(tmp_path, monkeypatch):
    import analysis.runs.matrix

    def must_not_run(*a, **k):
        raise AssertionError("the matrix ran before the baseline was checked")

    monkeypatch.setattr(analysis.runs.matrix, "matchup_matrix", must_not_run)
    with pytest.raises(InputError, match="no such folder"):
        build_report("mecha", baseline=tmp_path / "nowhere")
    (tmp_path / "duel").mkdir()
    (tmp_path / "duel" / "matrix_long.csv").write_text("attacker,defender\n")
    (tmp_path / "duel" / "metadata.json").write_text('{"ruleset": {"id": "duel"}}')
    with pytest.raises(InputError, match="no mecha report"):
        build_report("mecha", baseline=tmp_path)
    with pytest.raises(InputError, match="no unit 'Nobody'"):
        build_report("mecha", feature="Nobody vs AFS")


@pytest.mark.usefixtures("plain_figures")  # reads the page's text, not its plots
def test_report_all_with_a_baseline(tmp_path):
    first = write_all(tmp_path / "one", rulesets=["mecha"], max_trials=512)
    assert not first["failed"]
    second = write_all(tmp_path / "two", rulesets=["mecha"], max_trials=512, baseline=tmp_path / "one")
    assert not second["failed"], second["failed"]
    html = (tmp_path / "two" / "mecha" / "report.html").read_text(encoding="utf-8")
    # the same run again: every number identical, and the section says so
    assert "No number changed by more than its noise." in _section(html, "baseline")
    diff = pd.read_csv(tmp_path / "two" / "mecha" / "baseline_diff.csv")
    assert (diff.loc[diff["kind"] == "cell", "status"] == "identical").all()
    index = (tmp_path / "two" / "index.html").read_text(encoding="utf-8")
    assert 'href="mecha/report.html"' in index and "<th" in index


@pytest.mark.usefixtures("plain_figures")  # reads the page's text, not its plots
def test_every_link_of_a_budgeted_report_has_its_anchor():
    """A roster at a budget: the "Balanced table" finding's link lands on its section, in both pages."""
    rep = build_report("duel", units=["Sellsword", "Knight", "Brawler"], seed=3, **QUICK)
    page = rep.html()
    links = re.findall(r'<a href="#([^"]+)"', page)
    assert "balanced" in links and not [t for t in links if t not in Page(page).ids]
    md = rep.markdown()
    assert "(#balanced-table)" in md and "\n## Balanced table\n" in md and "meleelab rebalance duel" in md
