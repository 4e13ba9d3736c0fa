"""Every number a designer reads agrees with its caption (issue 37, items 5 and 6).

* A featured cell under expected fielding is a mixture of whole-copy fights: its caption's score is the
  mixture's, so the section shows the mixture (each fight with its weight, then the weighted mean), and the
  detailed tables are labelled as its heaviest part.
* A Nash mix as shown adds up to 100% (largest remainders); the CSV keeps every digit.
* No Python repr (``{}``, ``True``, ``None``) in a report's text; settings read in words.
* The round cap is reported where many fights reach it.
* One heading on the index page; the docs say what the loader accepts.
"""

from __future__ import annotations

import html as html_lib
import re
from fractions import Fraction
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from analysis.report import tables as rt  # noqa: E402
from analysis.report.build import build_report  # noqa: E402
from tests.plain_figures import blank_figures  # noqa: E402

#: The pages' text is checked here, never a plot: the plots are built but not rasterised (tests/plain_figures.py).
pytestmark = pytest.mark.usefixtures("plain_figures")

ROOT = Path(__file__).resolve().parents[2]
#: duel at 100 points a side: Sellsword (30) fields 10/3 copies, Duellist (40) 5/2, Knight (60) 5/3.
DUEL = dict(units=["Sellsword", "Duellist", "Knight"], budget=100, max_trials=1024, seed=3)
COPIES = {"Sellsword": Fraction(100, 30), "Duellist": Fraction(100, 40), "Knight": Fraction(100, 60)}


def _text(fragment: str) -> str:
    """The visible text of an HTML fragment, one line per element."""
    fragment = re.sub(r"<pre>.*?</pre>|<style>.*?</style>|<img[^>]*>", "", fragment, flags=re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", "\n", fragment))


@pytest.fixture(scope="module")
def duel_report():
    return build_report("duel", **DUEL)


@pytest.fixture(scope="module")
def duel_html(duel_report):
    with blank_figures():
        return duel_report.html()


def _mixture_by_hand(a: str, d: str) -> dict[tuple[int, int], Fraction]:
    """Whole copies and weights of a cell, from the copies alone: k + f copies are k with weight 1 - f, k + 1
    with weight f; the two sides draw independently."""
    def side(c: Fraction) -> dict[int, Fraction]:
        k = c.numerator // c.denominator
        f = c - k
        return {k: 1 - f, k + 1: f} if f else {k: Fraction(1)}

    return {(ka, kd): wa * wd for ka, wa in side(COPIES[a]).items() for kd, wd in side(COPIES[d]).items()}


def _sections(page: str) -> list[str]:
    """The featured matchups' parts of the page, one per matchup."""
    start = page.index('<section id="matchup">')
    body = page[start:page.index("</section>", start)]
    return re.split(r'<h3 id="matchup-\d+">', body)[1:]


def test_a_featured_caption_is_the_mixture_it_shows(duel_report, duel_html):
    """Before: the caption said the attacker scores 34.7% while the only table showed one whole-copy fight
    (3 Sellswords against 2 Knights, 17.5%). Now the first table is the mixture: every whole-copy fight with the
    weight the copies give it, and the weighted mean, whose score is the caption's."""
    from analysis.report.mixture import mixture_parts

    sections = _sections(duel_html)
    assert len(sections) == len(duel_report.featured) == 2
    for (a, d), why, section in zip(duel_report.featured, duel_report.featured_why, sections):
        caption = float(re.search(r"scores (\d+\.\d)%", why).group(1))
        parts = mixture_parts(duel_report.matrix, (a, d))
        expected = _mixture_by_hand(a, d)
        assert len(expected) > 1  # every unit here fields fractional copies: each cell is a mixture
        assert {(p.attacker_copies, p.defender_copies): p.weight for p in parts} == pytest.approx(
            {k: float(w) for k, w in expected.items()})
        assert sum(p.weight for p in parts) == pytest.approx(1.0)
        mean = sum(p.weight * p.score for p in parts)
        assert 100 * mean == pytest.approx(caption, abs=0.05)  # the caption is the weighted mean, to its decimal
        lines = [x.strip() for x in _text(section).splitlines() if x.strip()]
        # one row per whole-copy fight, with its weight as shown and its own score
        for p in parts:
            row = f"{p.attacker_copies} × {a}"
            assert any(line.startswith(row) and f"{p.defender_copies} × {d}" in line for line in lines), row
            assert f"{100 * p.score:.1f}%" in lines
        # the weighted mean's row ends with the caption's score; the shown weights add up to 100%
        mean_row = lines.index("expected fielding (the weighted mean: the matrix cell)")
        assert lines[mean_row + 1] == "100%" and lines[mean_row + 6] == f"{caption:.1f}%"
        shown = [float(lines[lines.index(x) + 1].rstrip("%")) for x in lines
                 if x.startswith(tuple(f"{k} × {a}" for k in range(1, 9))) and " against " in x]
        assert len(shown) == len(parts) and round(sum(shown), 1) == 100.0
        # the detailed tables are the heaviest fight's, and say so with its weight
        heaviest = parts[0]
        res = duel_report.matrix.results[(a, d)]
        assert res.settings["copies"] == {"attacker": heaviest.attacker_copies, "defender": heaviest.defender_copies}
        assert res.win["attacker"] == pytest.approx(heaviest.numbers["p_attacker"])
        assert "heaviest of these fights in detail" in _text(section)


def test_a_cell_of_one_fight_shows_no_mixture(duel_report):
    """Whole copies on both sides (or one a side): the cell is the fight itself, no mixture table."""
    from analysis.report.mixture import mixture_parts, mixture_table

    one = build_report("duel", units=["Sellsword", "Duellist", "Knight"], budget=120, max_trials=256, seed=3)
    assert all(float(c).is_integer() for c in one.matrix.copies.values())  # 4, 3 and 2 copies
    assert mixture_parts(one.matrix, ("Sellsword", "Knight")) == [] and mixture_table(one.matrix, ("Sellsword",
                                                                                                  "Knight")) is None
    assert "weighted mean" not in one.html()


# ------------------------------------------------------------------ shares that add up
def test_shares_add_up_to_the_whole_and_stay_within_a_last_digit():
    from analysis.report.shares import rounded_shares, share_texts

    # duel's shipped Nash mix (reports/duel/nash.csv before this fix): shown alone 13.0 + 35.3 + 51.6 = 99.9%
    weights = [0.130449, 0.353107, 0.516444]
    texts = share_texts(weights)
    assert sum(float(t.rstrip("%")) for t in texts) == pytest.approx(100.0)
    assert all(abs(float(t.rstrip("%")) - 100 * w) < 0.1 for t, w in zip(texts, weights))
    thirds = rounded_shares([1 / 3] * 3, 2)
    assert sorted(thirds) == [0.33, 0.33, 0.34] and sum(thirds) == pytest.approx(1.0)
    assert share_texts([1.0, 0.0, float("nan")]) == ["100.0%", "0%", "–"]
    assert rounded_shares([0.5, None, 0.5], 1) == [0.5, None, 0.5]


def test_the_nash_table_adds_up_to_100_percent():
    nash = pd.DataFrame({"unit": ["Reaver", "Brawler", "Ogre", "Knight"], "weight": [0.130449, 0.353107, 0.516444, 0],
                         "weight_min": [0.130449, 0.353107, 0.516444, 0], "weight_max": [0.130449, 0.353107, 0.516444, 0],
                         "weight_lo": [0.0] * 4, "weight_hi": [1.0] * 4, "support_share": [1.0, 1.0, 1.0, 0.0]})
    view = rt.table_view(rt.with_ranges(nash), rt.NASH)
    col = [h.text for h in view.headers].index("Weight in the mix")
    shown = [r.cells[col].text for r in view.rows]
    assert sum(float(t.rstrip("%")) for t in shown) == pytest.approx(100.0) and shown[-1] == "0%"
    md = rt.markdown_table(rt.with_ranges(nash), rt.NASH)
    rows = [line.split("|")[2].strip() for line in md.splitlines()[2:]]  # the weight column of each unit's row
    assert rows == shown
    assert nash["weight"].iloc[0] == 0.130449  # the frame itself (and its CSV) keeps every digit


def test_the_headline_mix_adds_up_to_100_percent(duel_report):
    support = duel_report.headline()["nash_support"]
    shares = [int(x) for x in re.findall(r"(\d+)%", support)]
    assert shares and sum(shares) == 100


# ------------------------------------------------------------------ no Python reprs
@pytest.fixture(scope="module")
def mecha_report():
    # one a side, every cell exact (fast); Gustav cannot be harmed, so its mirror match never ends
    return build_report("mecha", units=["AFS", "Nutrocker", "Kroete", "Gustav"], max_trials=1024, seed=1)


def test_no_python_reprs_in_the_report(mecha_report, duel_html):
    """Before: the Switches table said False, the Settings {} for no states and no overrides."""
    for page in (mecha_report.html(), duel_html):
        text = _text(page)
        for word in ("{}", "[]", "True", "False", "None", "nan"):
            hits = [line.strip() for line in text.splitlines() if re.search(rf"(^|\W){re.escape(word)}(\W|$)", line)]
            assert not hits, (word, hits[:3])
    md = mecha_report.markdown()
    assert not re.search(r"\{\}|\bTrue\b|\bFalse\b|\bNone\b", md)
    switches = _text(mecha_report.html())
    assert "second_m_destroys" in switches


def test_settings_read_in_words():
    from analysis.report.words import value_text

    assert value_text({}) == "none" and value_text(None) == "none" and value_text(False) == "no"
    assert value_text({"attacker": {"engaged": 10, "supporting": 10}, "defender": {}}) == \
        "attacker: engaged 10, supporting 10; defender: none"
    assert value_text({"Troopers": {"weapon": "ccw"}}) == "Troopers: weapon: ccw"
    assert rt.fmt(True, "value") == "yes" and rt.fmt({}, "value") == "none"


# ------------------------------------------------------------------ the round cap
def test_the_report_names_the_cells_stopped_by_the_round_cap(mecha_report):
    """Gustav cannot be harmed (docs/rules/mecha.md: armour A against every die): Gustav against Gustav never
    ends, so all its fights reach the cap; no other cell comes near 10%."""
    from analysis.report.capped import capped_cells, capped_finding, capped_sentence

    cells = capped_cells(mecha_report.matrix)
    assert list(zip(cells["attacker"], cells["defender"])) == [("Gustav", "Gustav")]
    assert cells["capped"].iloc[0] == pytest.approx(1.0)
    sentence = capped_sentence(mecha_report.matrix)
    assert "Gustav against itself 100.0%" in sentence and "50-round cap" in sentence
    assert sentence in _text(mecha_report.html()) and "Gustav against itself 100.0%" in mecha_report.markdown()
    finding = capped_finding(mecha_report.matrix)
    assert finding.title == "Round cap" and any(getattr(p, "text", "") == "100.0%" for p in finding.parts)


def test_few_capped_fights_say_nothing():
    from analysis.report.capped import capped_cells, capped_sentence

    long = pd.DataFrame({"attacker": ["A", "A", "B"], "defender": ["A", "B", "A"], "capped": [0.618, 0.10, 0.103]})
    cells = capped_cells(long)
    assert list(cells["attacker"] + cells["defender"]) == ["AA", "BA"]  # 10% itself is not "more than 10%"
    assert capped_sentence(long.assign(capped=0.05)) == ""


# ------------------------------------------------------------------ index, docs
def test_the_index_has_one_heading():
    from analysis.report.html import render_index

    page = render_index([], {})
    assert page.count("<h1>") == 1 and "<h2>Balance reports</h2>" not in page


def test_docs_say_what_the_loader_accepts(tmp_path):
    from sim.errors import InputError
    from sim.roster import load_roster

    roster = tmp_path / "zero.toml"
    roster.write_text('ruleset = "mecha"\n[[unit]]\nname = "A"\ndefence = 2\nphysical = 0\narmour = "B"\n'
                      "points = 0\n", encoding="utf-8")
    with pytest.raises(InputError):
        load_roster(roster)
    readme = (ROOT / "docs" / "rules" / "README.md").read_text(encoding="utf-8")
    assert "a number at least 0" not in readme and "0 is refused" in readme
    for rid in ("duel", "pools", "warband", "grimdark"):  # expected fielding is the default under a budget
        text = (ROOT / "sim" / "rosters" / f"{rid}.toml").read_text(encoding="utf-8")
        budget_line = next(line for line in text.splitlines() if line.startswith("budget"))
        assert "floor(" not in budget_line and "on average" in budget_line, rid


def test_the_settings_say_what_racing_did(duel_report, duel_html):
    """Racing (analysis.runs.racing) is said where the score target is: the settings table, summary.md and
    metadata.json's settings.matrix.score_target.racing."""
    from analysis.report.markdown import summary

    target = duel_report.matrix.settings["score_target"]
    racing = target["racing"]
    assert {"tolerance", "rounds", "cells", "in_doubt"} <= set(racing) and racing["tolerance"] == 0.02
    sentence = target["text"][target["text"].index("racing:"):]
    assert sentence in _text(duel_html).replace("\n", " ") or sentence.split(" (")[0] in _text(duel_html)
    assert "racing:" in summary(duel_report)


def test_the_heatmap_caption_names_the_cells_racing_fought_further():
    from types import SimpleNamespace

    from analysis.report.score_target import cell_rule

    target = {"score_half_width": 0.005, "cell_score_half_width": 0.07, "racing": {"rounds": [["Knight", "Ogre"],
                                                                                              ["Knight"]]}}
    rep = SimpleNamespace(matrix=SimpleNamespace(settings={"score_target": target, "cell_half_width": None}),
                          settings={"half_width": 0.01})
    assert "The cells of Knight, Ogre (near a verdict bound) were fought further by racing" in cell_rule(rep)
    target["racing"]["rounds"] = []
    assert "racing" not in cell_rule(rep)
