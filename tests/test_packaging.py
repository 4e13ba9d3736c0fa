"""The report templates ship in the wheel and load from an installed copy (package data, not the source tree).

The project is built as a wheel from a copy of its source (``pip wheel --no-deps
--no-build-isolation``, as in the plugin example's test, so nothing is downloaded
and the repository gets no build files), installed into a folder of its own,
and a fresh process that imports ``analysis`` from that folder renders a page.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ("base.html", "report.html", "index.html", "_macros.html", "style.css")

pytestmark = pytest.mark.slow


def test_wheel_ships_the_templates_and_an_installed_copy_renders_them(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("sim", "analysis"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                            str(tmp_path / "dist"), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("meleelab-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"analysis/report/templates/{t}" for t in TEMPLATES} <= names, sorted(n for n in names if "templates" in n)
    target = tmp_path / "installed"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                                str(wheel)], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr[-2000:]
    script = (
        "import analysis, analysis.report.html as h\n"
        "print(analysis.__file__)\n"
        "for name in ('report.html', 'index.html', 'base.html', '_macros.html'):\n"
        "    h.environment().get_template(name)\n"
        "row = dict(ruleset='mecha', title='<Mecha>', units=8, budget='one a side', trials=1024, strongest='Gustav',\n"
        "           nash_support='Gustav 100%', cycles=0, dominated=7, fair_points_flags='AFS')\n"
        "print(h.render_index([row], {'duel': 'broken'}))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert str(target) in out.stdout.splitlines()[0]  # the installed copy, not the source tree
    assert 'href="mecha/report.html"' in out.stdout and "&lt;Mecha&gt;" in out.stdout and "broken" in out.stdout
