"""The example plugin, examples/ironclash, installed the way a designer installs it.

The suite copies the example's folder and runs ``pip install --no-deps
--no-build-isolation --target DIR`` on the copy (the same build and install as
``pip install ./examples/ironclash``, into a folder of its own, so the test
environment itself is left as it was and the repository gets no build files).
Commands then run in fresh processes with ``PYTHONPATH=DIR``: the entry point
is found through the installed metadata, exactly as after a real install. With
pytest-xdist the workers share one install (a file lock).
"""

from __future__ import annotations

import ast
import fcntl
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# pip-installs the example plugin: run by pytest -m slow (.ci/run does), not in the five-minute suite
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "ironclash"


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> dict[str, str]:
    """Environment for a subprocess that sees the installed example plugin."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this run's folder, shared by workers
    target, done = shared / "ironclash-installed", shared / "ironclash-installed.ok"
    with open(shared / "ironclash-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            source = shared / "ironclash-source"
            shutil.rmtree(source, ignore_errors=True)
            shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                                  "--target", str(target), str(source)], capture_output=True, text=True)
            assert out.returncode == 0, out.stderr[-2000:]
            done.touch()
    return os.environ | {"PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}


def run(env, *args, cwd=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd or ROOT)


def test_installed_example_is_listed_as_a_plugin(installed, tmp_path):
    out = run(installed, "-m", "analysis", "rulesets", "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    assert rows["ironclash"]["origin"] == "plugin meleelab-ironclash 0.1.0 (ironclash.rules:RULESET)"
    assert rows["mecha"]["origin"] == "built-in" and rows["ironclash"]["default_rounds"] == "end"
    where = run(installed, "-c", "import ironclash; print(ironclash.__file__)", cwd=tmp_path)
    assert "ironclash-installed" in where.stdout, where.stdout + where.stderr  # the install, not the source tree


def test_installed_example_fights_with_set_and_refuses_bad_values(installed):
    out = run(installed, "-m", "analysis", "fight", "ironclash", "Knight", "Gladiator", "--trials", "20000",
              "--seed", "1", "--set", "defender.braced=true", "--set", "ties=both_strike", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["ruleset"] == "ironclash" and result["trials"] == 20_000
    bad = run(installed, "-m", "analysis", "fight", "ironclash", "Knight", "Gladiator", "--set",
              "attacker.wounds_taken=6")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "wounds_taken" in bad.stderr


def test_installed_example_passes_its_own_tests_and_the_kit(installed, tmp_path):
    # run from a folder of our own: `ironclash` is imported from the install, not from the source tree
    out = run(installed, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests"), cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-4000:]
    assert "14 passed" in out.stdout


def test_installed_example_gets_a_report(installed, tmp_path):
    out = run(installed, "-m", "analysis", "report", "ironclash", "--out", str(tmp_path / "report"), "--max-trials",
              "2048", "--seed", "7", "--quiet")
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "Ironclash" in html and "plugin meleelab-ironclash 0.1.0" in html and "Veteran" in html
    meta = json.loads((tmp_path / "report" / "metadata.json").read_text(encoding="utf-8"))
    assert meta["ruleset"]["id"] == "ironclash"
    assert meta["ruleset"]["outcome_categories"] == ["unhurt", "wounded", "down"]
    assert (tmp_path / "report" / "matrix_long.csv").read_text(encoding="utf-8").count("\n") == 1 + 7 * 7


def test_example_imports_only_public_names():
    """A plugin imports from sim only what sim, sim.ruleset and sim.testing export in __all__."""
    allowed = {name: set(importlib.import_module(name).__all__) for name in ("sim", "sim.ruleset", "sim.testing")}
    seen = 0
    for path in EXAMPLE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sim":
                assert node.module in allowed, f"{path.name}: imports from {node.module}"
                for alias in node.names:
                    assert alias.name in allowed[node.module], f"{path.name}: {alias.name} is not public"
                    seen += 1
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] != "sim" or alias.name in allowed, f"{path.name}: {alias.name}"
    assert seen > 10
