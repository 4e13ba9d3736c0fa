"""Plugin rulesets: entry points found, checked on load, broken ones left out with one line each."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import sim
import sim.plugins
from analysis.cli import main
from sim.errors import InputError
from sim.plugins import GROUP, check_protocol, discover
from sim.rulesets import get_ruleset

BUILTIN = {rs.id: rs for rs in sim.rulesets()}

# A working plugin (mecha's rules under another id, with its own roster), and broken ones.
PLUGIN_MODULES = {
    "goodgame/__init__.py": "",
    "goodgame/rules.py": """
        from sim.rulesets.mecha import Mecha

        class GoodGame(Mecha):
            id = "goodgame"
            title = "Mecha again, from a plugin"

        RULESET = GoodGame()
        """,
    "goodgame/rosters/goodgame.toml": """
        ruleset = "goodgame"
        [[unit]]
        name = "A"
        defence = 2
        physical = 0
        armour = "B"
        [[unit]]
        name = "B"
        defence = 3
        physical = 0
        armour = "C"
        """,
    "badimport.py": "import no_such_module_anywhere\n",
    "badproto.py": """
        from sim.ruleset import Ruleset

        class Half(Ruleset):
            id = "badproto"
            title = "Half a ruleset"
            source = spec = ""
            damage_unit = "wounds"
            outcome_categories = ("only",)
            unit_type = dict
            unit_fields = ()

            def prepare(self, matchup):
                return matchup

        RULESET = Half()
        CLASS = Half
        """,
    "wrongid.py": """
        from sim.rulesets.mecha import Mecha

        class Other(Mecha):
            id = "something-else"

        RULESET = Other()
        """,
}


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    for rel, text in PLUGIN_MODULES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def eps(*pairs):
    return lambda: [EntryPoint(name, value, GROUP) for name, value in pairs]


def test_every_builtin_satisfies_the_protocol():
    for rs in BUILTIN.values():
        assert check_protocol(rs) == [], rs.id


def test_protocol_problems_are_named(plugin_dir):
    import badproto

    problems = " | ".join(check_protocol(badproto.RULESET))
    for needle in ("outcome_categories", "unit_type must be a dataclass", 'Field("name", "str")',
                   "simulate() is not implemented", "resolve_one() is not implemented"):
        assert needle in problems
    assert "prepare" not in problems
    assert "is a class" in check_protocol(badproto.CLASS)[0]
    assert "expected an instance" in check_protocol(object())[0]


def test_signature_is_checked():
    from sim.rulesets.mecha import Mecha

    class Typo(Mecha):
        def simulate(self, plan, n, rng):  # forgot rounds and max_rounds
            return None

    assert check_protocol(Typo()) == ["simulate() must accept (plan, n, rng, rounds, max_rounds)"]


def test_discover_sorts_good_from_bad(plugin_dir):
    loaded, origins, problems = discover(BUILTIN, eps(
        ("goodgame", "goodgame.rules:RULESET"),
        ("badimport", "badimport:RULESET"),
        ("badproto", "badproto:RULESET"),
        ("classy", "badproto:CLASS"),
        ("wrongid", "wrongid:RULESET"),
        ("mecha", "goodgame.rules:RULESET"),
        ("twice", "goodgame.rules:RULESET"),
        ("twice", "wrongid:RULESET"),
    ))
    assert list(loaded) == ["goodgame"] and origins["goodgame"] == "plugin (goodgame.rules:RULESET)"
    reasons = {(p.ruleset_id, p.target): p.reason for p in problems}
    assert "import failed: ModuleNotFoundError" in reasons[("badimport", "badimport:RULESET")]
    assert "does not satisfy the ruleset protocol" in reasons[("badproto", "badproto:RULESET")]
    assert "(and 2 more)" in reasons[("badproto", "badproto:RULESET")]
    assert "is a class" in reasons[("classy", "badproto:CLASS")]
    assert "'something-else'" in reasons[("wrongid", "wrongid:RULESET")]
    assert "built-in" in reasons[("mecha", "goodgame.rules:RULESET")]
    assert "claimed by 2 plugins" in reasons[("twice", "wrongid:RULESET")]
    assert all("\n" not in p.line for p in problems)


@pytest.fixture
def registry_with_plugins(plugin_dir, monkeypatch):
    fake = eps(("goodgame", "goodgame.rules:RULESET"), ("badimport", "badimport:RULESET"),
               ("mecha", "wrongid:RULESET"))
    monkeypatch.setattr(sim.plugins.metadata, "entry_points", lambda group=None: fake())
    sim.plugins.refresh()
    yield
    monkeypatch.undo()
    sim.plugins.refresh()


def test_registry_lists_plugins_after_builtins_and_raises_only_on_use(registry_with_plugins):
    assert [rs.id for rs in sim.rulesets()] == [*BUILTIN, "goodgame"]
    assert get_ruleset("mecha") is BUILTIN["mecha"]  # a plugin cannot replace a built-in
    with pytest.raises(InputError, match=r"^plugin ruleset 'badimport' \(badimport:RULESET\): import failed"):
        get_ruleset("badimport")
    assert sim.default_roster("goodgame").names == ["A", "B"]
    r = sim.fight("goodgame", "A", "B", trials=2_000, seed=1, budget="none", method="mc")
    assert r.trials == 2_000 and sim.plugins.origin("goodgame").startswith("plugin")


def test_cli_lists_with_warnings_and_fails_in_one_line_on_use(registry_with_plugins, capsys):
    assert main(["rulesets"]) == 0
    out, err = capsys.readouterr()
    assert "goodgame" in out and "built-in" in out and "plugin (goodgame.rules:RULESET)" in out
    warnings = err.strip().splitlines()
    assert len(warnings) == 2 and all(w.startswith("meleelab: warning: plugin ruleset") for w in warnings)
    assert main(["fight", "badimport", "A", "B"]) == 2
    _, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "import failed" in err
    assert main(["fight", "goodgame", "A", "B", "--trials", "1000", "--seed", "1"]) == 0


def test_real_entry_points_from_installed_metadata(tmp_path):
    """A dist-info folder on the path is found by importlib.metadata, in a fresh process."""
    (tmp_path / "brokenplug.py").write_text("raise RuntimeError('boom at import')\n", encoding="utf-8")
    info = tmp_path / "brokenplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nbrokenplug = brokenplug:RULESET\n", encoding="utf-8")
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path.cwd())])}
    listed = subprocess.run([sys.executable, "-m", "analysis", "rulesets"], capture_output=True, text=True, env=env)
    assert listed.returncode == 0 and "warband" in listed.stdout
    assert listed.stderr.strip() == ("meleelab: warning: plugin ruleset 'brokenplug' (brokenplug:RULESET from "
                                     "brokenplug 0.1): import failed: RuntimeError: boom at import")
    used = subprocess.run([sys.executable, "-m", "analysis", "units", "brokenplug"], capture_output=True, text=True,
                          env=env)
    assert used.returncode == 2 and len(used.stderr.strip().splitlines()) == 1 and "boom at import" in used.stderr
